"""GPU busy/idle: hand-checked semantics, properties, and per-GPU/total consistency on real traces."""

from __future__ import annotations

import polars as pl
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from profui.analysis.busy import gpu_busy, temporal_breakdown, total_busy


def kernel(ts, dur, device=0, name="k", kind="kernel", **kw) -> dict:
    return {"ts": ts, "dur": dur, "kind": kind, "name": name, "device": device, "stream": 7, **kw}


def test_busy_idle_hand_checked(make_events) -> None:
    ev = make_events(
        [
            {"ts": -10, "dur": 60, "kind": "cpu_op"},  # profiled window [-10, 50)
            kernel(0, 10),
            kernel(5, 10),  # union [0, 15)
            kernel(20, 5, kind="memcpy", name="Memcpy HtoD"),  # [20, 25)
            kernel(30, 10, kind="sync", name="Context Sync"),  # sync: not busy, not in span
            kernel(100, 0, kind="instant"),  # instants never count
        ]
    )
    r = gpu_busy(ev).collect().row(0, named=True)
    assert (r["busy_ns"], r["sum_dur_ns"], r["n_events"]) == (20, 25, 3)
    assert (r["first_ns"], r["last_ns"], r["span_ns"], r["idle_ns"]) == (0, 25, 25, 5)
    assert r["sync_ns"] == 10
    assert (r["window_start_ns"], r["window_end_ns"], r["window_ns"], r["idle_window_ns"]) == (
        -10,
        50,
        60,
        40,
    )
    assert r["busy_share"] == 0.8 and r["busy_share_window"] == 20 / 60


def test_per_gpu_and_total(make_events) -> None:
    ev = make_events(
        [
            kernel(0, 10, device=0),
            kernel(0, 30, device=1),
            kernel(40, 10, device=1),
            {"ts": 0, "dur": 50, "kind": "cpu_op"},
        ]
    )
    per = gpu_busy(ev).collect()
    assert per.select("device", "busy_ns", "span_ns").rows() == [(0, 10, 10), (1, 40, 50)]
    tot = total_busy(per).collect().row(0, named=True)
    assert (tot["n_gpus"], tot["busy_ns"], tot["span_ns"], tot["idle_ns"]) == (2, 50, 60, 10)
    assert tot["window_ns"] == 100  # each GPU's rank window is [0, 50)
    # across all devices as one union
    assert gpu_busy(ev, by=()).collect()["busy_ns"].item() == 40


def test_temporal_breakdown_hand_checked(make_events) -> None:
    ev = make_events(
        [
            kernel(0, 10, name="gemm"),
            kernel(5, 15, name="ncclKernel_AllReduce"),
            kernel(30, 10, kind="memset", name="Memset (Device)"),
        ]
    )
    r = temporal_breakdown(ev).collect().row(0, named=True)
    # span 40, busy 30 -> idle 10; compute 10; non-compute = 40 - 10 - 10 = 20 (comm 10 + memset 10)
    assert (r["kernel_time_ns"], r["idle_ns"], r["compute_ns"], r["non_compute_ns"]) == (40, 10, 10, 20)
    assert r["idle_share"] + r["compute_share"] + r["non_compute_share"] == pytest.approx(1.0)


iv = st.tuples(st.integers(0, 1000), st.integers(0, 200), st.integers(0, 1))


@settings(max_examples=40, deadline=None)
@given(st.lists(iv, min_size=1, max_size=30))
def test_busy_properties(make_events, rows) -> None:
    ev = make_events([kernel(t, d, device=g) for t, d, g in rows])
    per = gpu_busy(ev).collect()
    for r in per.to_dicts():
        assert r["busy_ns"] + r["idle_ns"] == r["span_ns"]  # busy + idle = window
        assert r["busy_ns"] <= r["sum_dur_ns"]  # busy ≤ sum of durations
        assert r["busy_ns"] + r["idle_window_ns"] == r["window_ns"]
        assert 0 <= r["busy_ns"] <= r["span_ns"] <= r["window_ns"]
    assert total_busy(per).collect()["busy_ns"].item() == per["busy_ns"].sum()


def test_real_multirank_per_gpu(imported_trace) -> None:
    t = imported_trace("trace_filter-sampled_rank-0", "trace_filter-sampled_rank-1")
    per = t.gpu_busy()
    assert per.select("rank").to_series().to_list() == [0, 1]
    for r in per.to_dicts():
        assert r["busy_ns"] + r["idle_ns"] == r["span_ns"] and r["busy_ns"] <= r["sum_dur_ns"]
        assert r["window_ns"] >= r["span_ns"] and r["busy_share_window"] <= r["busy_share"]
    one = gpu_busy(t.cached_events().filter(pl.col("rank") == 1)).collect()
    assert one.drop("rank").rows() == per.filter(pl.col("rank") == 1).drop("rank").rows()
