"""Idle-time breakdown and queue length: hand-checked small frames, then real traces vs HTA."""

from __future__ import annotations

import polars as pl

from profui.analysis.idle import idle_breakdown, idle_intervals, queue_length, queue_length_summary
from profui.analysis.trace import EVENTS_POLARS_SCHEMA


def ev(rows: list[dict]) -> pl.LazyFrame:
    base = {
        "ts": 0, "dur": 0, "kind": "cpu_op", "name": "x", "pid": 1, "tid": 1, "device": -1, "stream": -1,
        "correlation": None, "external_id": None, "bytes": None, "memcpy_kind": None, "args": None,
        "node": "n", "rank": 0,
    }
    return pl.DataFrame([{**base, **r} for r in rows], schema=EVENTS_POLARS_SCHEMA).lazy()


def k(ts, dur, corr, stream=7, name="k"):
    return {"ts": ts, "dur": dur, "kind": "kernel", "name": name, "device": 0, "stream": stream, "correlation": corr}


def launch(ts, corr, dur=1_000):
    return {"ts": ts, "dur": dur, "kind": "runtime", "name": "cudaLaunchKernel", "correlation": corr}


# stream 7: k1 [10_000, 20_000); k2 launched at 5_000 starts 25_000 (gap 5 µs, launched early:
# kernel_wait); k3 launched at 100_000 after k2 ended at 30_000, starts 101_000 (gap 71 µs:
# host_wait); k4 launched early at 6_000, starts 200_000 (gap 89 µs >= 30 µs: other);
# k5 overlaps k4 (starts before k4 ends): no idle by default, negative gap in HTA's rule.
SMALL = [
    launch(1_000, 1), k(10_000, 10_000, 1),
    launch(5_000, 2), k(25_000, 5_000, 2),
    launch(100_000, 3), k(101_000, 10_000, 3),
    launch(6_000, 4), k(200_000, 50_000, 4),
    launch(7_000, 5), k(240_000, 5_000, 5),
    k(300_000, 1_000, 6, stream=9),  # a second stream with a single kernel, no launch recorded
]


def test_idle_intervals_categories():
    iv = idle_intervals(ev(SMALL)).collect().sort("end")
    assert iv["idle_ns"].to_list() == [5_000, 71_000, 89_000]
    assert iv["category"].to_list() == ["kernel_wait", "host_wait", "other"]
    assert iv["start"].to_list() == [20_000, 30_000, 111_000]


def test_idle_breakdown_ratio_and_all_categories():
    b = idle_breakdown(ev(SMALL)).collect()
    s7 = b.filter(pl.col("stream") == 7).sort("category")
    assert s7["category"].to_list() == ["host_wait", "kernel_wait", "other"]
    assert s7["idle_ns"].to_list() == [71_000, 5_000, 89_000]
    assert s7["ratio"].to_list() == [71_000 / 165_000, 5_000 / 165_000, 89_000 / 165_000]
    assert s7["count"].to_list() == [1, 1, 1]
    s9 = b.filter(pl.col("stream") == 9)
    assert s9["idle_ns"].to_list() == [0, 0, 0]
    assert s9["ratio"].null_count() == 3


def test_queue_length_counts_launched_not_finished():
    q = queue_length(ev(SMALL)).collect().filter(pl.col("stream") == 7)
    # +1 at 1_000, 5_000, 6_000, 7_000; -1 at 20_000, 30_000; +1 at 100_000; -1 at 111_000, 245_000, 250_000
    assert q["ts"].to_list() == [1_000, 5_000, 6_000, 7_000, 20_000, 30_000, 100_000, 111_000, 245_000, 250_000]
    assert q["queue_length"].to_list() == [1, 2, 3, 4, 3, 2, 3, 2, 1, 0]
    s = queue_length_summary(ev(SMALL)).collect().row(0, named=True)
    assert (s["count"], s["max"], s["min"]) == (10, 4, 0)
    assert s["mean"] == sum([1, 2, 3, 4, 3, 2, 3, 2, 1, 0]) / 10
    held = [4_000, 1_000, 1_000, 13_000, 10_000, 70_000, 11_000, 134_000, 5_000]
    assert s["time_mean"] == sum(v * h for v, h in zip([1, 2, 3, 4, 3, 2, 3, 2, 1], held, strict=True)) / 249_000
