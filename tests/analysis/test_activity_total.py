"""GPU activity over all GPUs: per-activity time summed over GPUs, over the summed GPU spans."""

from __future__ import annotations

import polars as pl
import pytest

from profui.analysis.activity import activity_shares, activity_total


def d(ts, dur, kind, device) -> dict:
    return {"ts": ts, "dur": dur, "kind": kind, "device": device, "stream": 7}


def test_hand_checked(make_events) -> None:
    # gpu0 span [0, 10): kernel 10; gpu1 span [0, 30): kernel 5, memcpy 5, idle 20
    ev = make_events(
        [d(0, 10, "kernel", 0), d(0, 5, "kernel", 1), d(10, 5, "memcpy", 1), d(25, 5, "memcpy", 1)]
    )
    tot = activity_total(activity_shares(ev)).collect()
    got = {r["activity"]: (r["time_ns"], r["span_ns"], r["n_gpus"]) for r in tot.iter_rows(named=True)}
    assert got == {
        "kernel": (15, 40, 2),
        "memcpy": (10, 40, 2),
        "memset": (0, 40, 2),
        "sync": (0, 40, 2),
        "idle": (15, 40, 2),
    }
    assert tot["activity"].to_list() == ["kernel", "memcpy", "memset", "sync", "idle"]
    assert tot.filter(pl.col("activity") == "kernel")["share"].item() == pytest.approx(15 / 40)


def test_real_two_ranks(imported_trace) -> None:
    t = imported_trace("trace_filter-sampled_rank-0", "trace_filter-sampled_rank-1")
    per_gpu = t.activity()
    gpus = per_gpu.select("node", "rank", "device").unique()
    assert gpus.height >= 2
    tot = activity_total(per_gpu).collect()
    assert tot["share"].sum() == pytest.approx(1.0)
    spans = per_gpu.unique(["node", "rank", "device"])["span_ns"].sum()
    for r in tot.iter_rows(named=True):
        assert r["span_ns"] == spans and r["n_gpus"] == gpus.height
        assert r["time_ns"] == per_gpu.filter(pl.col("activity") == r["activity"])["time_ns"].sum()
