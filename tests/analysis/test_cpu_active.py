"""CPU active time per rank: checked against a plain interval union of the real trace's host events."""

from __future__ import annotations

import polars as pl
import pytest

from profui.analysis.utilization import HOST_ACTIVE_KINDS, cpu_active


def union(intervals: list[tuple[int, int]]) -> int:
    total, end = 0, None
    start = None
    for a, b in sorted(intervals):
        if end is None or a > end:
            if end is not None:
                total += end - start
            start, end = a, b
        else:
            end = max(end, b)
    return total + (end - start if end is not None else 0)


@pytest.mark.parametrize(
    "names",
    [("nccl_parser_config-nccl_data",), ("trace_filter-sampled_rank-0", "trace_filter-sampled_rank-1")],
)
def test_real_trace_union(imported_trace, names) -> None:
    t = imported_trace(*names)
    ev = t.cached_events().collect()
    got = cpu_active(ev, t.metrics()).filter(pl.col("source") == "host_events").collect()
    ranks = ev.select("node", "rank").unique().height
    assert got.height == ranks
    for r in got.iter_rows(named=True):
        mine = ev.filter(pl.col("node") == r["node"], pl.col("rank") == r["rank"])
        host = mine.filter(pl.col("kind").is_in(HOST_ACTIVE_KINDS), pl.col("device") == -1)
        assert r["active_ns"] == union([(a, a + d) for a, d in host.select("ts", "dur").rows()])
        per_thread = sum(
            union([(a, a + d) for a, d in g.select("ts", "dur").rows()])
            for _, g in host.group_by("pid", "tid")
        )
        assert r["thread_ns"] == per_thread
        window = (mine["ts"] + mine["dur"]).max() - mine["ts"].min()
        assert r["window_ns"] == window
        assert r["active_share"] == pytest.approx(r["active_ns"] / window)
        assert 0 < r["active_ns"] <= window


def test_from_metrics(make_events) -> None:
    # synthetic: the shared Kineto traces carry no CPU samples; capture writes these rows
    ev = make_events(
        [{"ts": 0, "dur": 1000, "kind": "cpu_op"}, {"ts": 0, "dur": 4000, "kind": "kernel", "device": 0}]
    )
    metrics = pl.DataFrame(
        {
            "ts": [0, 1000, 2000],
            "source": ["cpu"] * 3,
            "device": [-1] * 3,
            "metric": ["util_pct"] * 3,
            "value": [20.0, 40.0, 60.0],
            "node": ["n0"] * 3,
        }
    )
    got = cpu_active(ev, metrics).collect()
    m = got.filter(pl.col("source") == "metrics").row(0, named=True)
    # over the sampled job (first to last sample: 2000 ns), not the traced events' 4000 ns
    assert (m["rank"], m["active_ns"], m["window_ns"], m["active_share"]) == (None, 800, 2000, 0.4)
    h = got.filter(pl.col("source") == "host_events").row(0, named=True)
    assert (h["active_ns"], h["window_ns"]) == (1000, 4000)
