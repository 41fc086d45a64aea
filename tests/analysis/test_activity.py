"""GPU activity distribution: exclusive shares with kernel > memcpy > memset > sync priority."""

from __future__ import annotations

import polars as pl
import pytest

from profui.analysis.activity import activity_shares
from profui.analysis.busy import gpu_busy


def d(ts, dur, kind) -> dict:
    return {"ts": ts, "dur": dur, "kind": kind, "device": 0, "stream": 7}


def test_hand_checked(make_events) -> None:
    ev = make_events([d(0, 10, "kernel"), d(5, 10, "memcpy"), d(20, 5, "memset"), d(22, 10, "sync")])
    a = {r["activity"]: (r["time_ns"], r["overlap_ns"]) for r in activity_shares(ev).collect().to_dicts()}
    # span [0, 32): kernel 10, memcpy 5 (5 hidden), memset 5, sync 7 (3 hidden), idle 5
    assert a == {"kernel": (10, 0), "memcpy": (5, 5), "memset": (5, 0), "sync": (7, 3), "idle": (5, 0)}


@pytest.mark.parametrize(
    "name",
    ["nccl_parser_config-nccl_data", "critical_path-simple_add-benchmark_result_493459_1694039959_trace"],
)
def test_real_shares(imported_trace, name) -> None:
    t = imported_trace(name)
    a = t.activity()
    assert a["share"].sum() == pytest.approx(1.0)
    assert a["time_ns"].sum() == a["span_ns"][0]
    kernels_only = gpu_busy(t.cached_events().filter(pl.col("kind") == "kernel")).collect()["busy_ns"].item()
    assert a.filter(pl.col("activity") == "kernel")["time_ns"].item() == kernels_only
