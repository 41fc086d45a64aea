"""Sync: host blocking in synchronize calls and device sync events; hand-checked, then real traces."""

from __future__ import annotations

import polars as pl
import pytest
from eventrows import events_frame

from profui.analysis.sync import gpu_sync_summary, sync_calls, sync_summary, sync_totals


def ev(rows: list[dict]) -> pl.LazyFrame:
    return events_frame([{"ts": 0, "dur": 0, "kind": "cpu_op", **r} for r in rows], node="n")


SMALL = [
    {"ts": 0, "dur": 1_000_000, "kind": "cpu_op", "name": "aten::mm"},  # host window 0..1 ms
    {"ts": 100, "dur": 300, "kind": "runtime", "name": "cudaStreamSynchronize", "correlation": 1},
    {"ts": 500, "dur": 200, "kind": "runtime", "name": "cudaStreamSynchronize", "correlation": 2},
    {"ts": 900, "dur": 50_000, "kind": "runtime", "name": "cudaDeviceSynchronize", "correlation": 3},
    {"ts": 60_000, "dur": 7_000, "kind": "runtime", "name": "cudaMemcpy", "correlation": 4},
    {"ts": 70_000, "dur": 9_000, "kind": "runtime", "name": "cudaStreamWaitEvent", "correlation": 5},
    {"ts": 80_000, "dur": 100, "kind": "runtime", "name": "cudaLaunchKernel", "correlation": 6},
    {"ts": 90_000, "dur": 4_000, "kind": "sync", "name": "Event Sync", "device": 0, "stream": 7},
    {"ts": 95_000, "dur": 1_000, "kind": "sync", "name": "Event Sync", "device": 0, "stream": 7},
    {"ts": 99_000, "dur": 2_000, "kind": "sync", "name": "Stream Wait Event", "device": 0, "stream": 9},
]


def test_sync_calls_categories_exclude_non_blocking():
    c = sync_calls(ev(SMALL)).collect()
    assert c["name"].to_list() == [
        "cudaStreamSynchronize",
        "cudaStreamSynchronize",
        "cudaDeviceSynchronize",
        "cudaMemcpy",
    ]
    assert c["category"].to_list() == ["stream", "stream", "device", "blocking_copy"]


def test_sync_summary_and_totals():
    s = sync_summary(ev(SMALL)).collect()
    assert s["name"].to_list() == ["cudaDeviceSynchronize", "cudaMemcpy", "cudaStreamSynchronize"]
    stream = s.filter(pl.col("name") == "cudaStreamSynchronize").row(0, named=True)
    assert (stream["calls"], stream["total_ns"], stream["max_ns"], stream["mean_ns"]) == (2, 500, 300, 250.0)
    assert stream["window_ns"] == 1_000_000
    t = sync_totals(ev(SMALL)).collect().row(0, named=True)
    assert t["blocked_ns"] == 500 + 50_000 + 7_000
    assert t["share"] == pytest.approx(57_500 / 1_000_000)


def test_gpu_sync_events():
    g = gpu_sync_summary(ev(SMALL)).collect()
    assert g["name"].to_list() == ["Event Sync", "Stream Wait Event"]
    assert g["count"].to_list() == [2, 1]
    assert g["total_ns"].to_list() == [5_000, 2_000]


# -- real traces ------------------------------------------------------------------------------


def test_event_sync_trace(imported_trace):
    """critical_path event_sync: one cudaDeviceSynchronize (20 µs) blocks the host; on the
    device 3 Event Sync (4 µs each), 1 Stream Wait Event (2 µs) and 1 Context Sync (19 µs)."""
    ev = imported_trace("critical_path-cuda_event_sync_multi_stream-event_sync_trace").events()
    host = sync_summary(ev).collect()
    assert host.select("name", "calls", "total_ns").rows() == [("cudaDeviceSynchronize", 1, 20_000)]
    dev = gpu_sync_summary(ev).collect()
    assert dev.select("name", "count", "total_ns").rows() == [
        ("Context Sync", 1, 19_000),
        ("Event Sync", 3, 12_000),
        ("Stream Wait Event", 1, 2_000),
    ]


def test_simple_add_sync_trace(imported_trace):
    """simple_add: every host sync call and every cuda_sync event of the source is counted."""
    ev = imported_trace("critical_path-simple_add-benchmark_result_493459_1694039959_trace").events()
    calls = sync_calls(ev).collect()
    raw = ev.filter(pl.col("kind") == "runtime").filter(pl.col("name").str.contains("Synchronize")).collect()
    assert calls.height == raw.height > 0
    t = sync_totals(ev).collect().row(0, named=True)
    assert t["blocked_ns"] == calls["dur"].sum()
    assert 0 < t["share"] < 1
    dev = gpu_sync_summary(ev).collect()
    assert dev["count"].sum() == 41  # the trace's 41 cuda_sync events


def test_a_host_window_without_length_has_no_share():
    """A rank whose host events all start and end at one instant (a lone zero-length sync call)
    has a host window of 0 ns: its share is null (the schema declares it so), not an infinity
    that the schema check refuses and JSON would print as null anyway."""
    from profui.analysis.schemas import conform

    one = ev([{"ts": 5_000, "dur": 0, "kind": "runtime", "name": "cudaDeviceSynchronize", "correlation": 1}])
    s = sync_summary(one).collect()
    t = sync_totals(one).collect()
    assert (s["window_ns"].to_list(), s["share"].to_list()) == ([0], [None])
    assert (t["calls"].to_list(), t["share"].to_list()) == ([1], [None])
    conform("sync", "host.parquet", s)
    conform("sync", "totals.parquet", t)
