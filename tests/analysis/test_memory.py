"""Memory operations by direction: counts, bytes, time, bandwidth."""

from __future__ import annotations

import polars as pl
import pytest

from profui.analysis.hta import hta_events
from profui.analysis.hta_variants import hta_memory_bw_summary
from profui.analysis.memory import bandwidth_histogram, bandwidth_summary, memory_ops


def m(ts, dur, kind, nbytes, direction=None) -> dict:
    return {
        "ts": ts,
        "dur": dur,
        "kind": kind,
        "device": 0,
        "stream": 7,
        "bytes": nbytes,
        "memcpy_kind": direction,
        "name": "Memset" if kind == "memset" else f"Memcpy {direction}",
    }


def test_hand_checked(make_events) -> None:
    ev = make_events(
        [
            m(0, 100, "memcpy", 1000, "HtoD"),
            m(200, 100, "memcpy", 3000, "HtoD"),
            m(400, 50, "memset", 5000),
            m(500, 10, "memcpy", None, "DtoH"),
            m(600, 0, "memcpy", 8, "DtoD"),
        ]
    )
    r = {x["direction"]: x for x in memory_ops(ev).collect().to_dicts()}
    assert set(r) == {"HtoD", "Memset", "DtoH", "DtoD"}
    h = r["HtoD"]
    assert (h["count"], h["bytes"], h["time_ns"]) == (2, 4000, 200)
    assert h["achieved_gbps"] == 20.0 and (h["gbps_min"], h["gbps_max"], h["gbps_mean"]) == (10.0, 30.0, 20.0)
    assert r["Memset"]["achieved_gbps"] == 100.0
    assert r["DtoH"]["achieved_gbps"] is None and r["DtoH"]["gbps_mean"] is None  # no byte count
    assert r["DtoD"]["gbps_mean"] is None  # zero duration has no bandwidth
    assert sum(x["time_share"] for x in r.values()) == pytest.approx(1.0)
    hist = bandwidth_histogram(ev, bins_per_decade=1).collect()
    assert hist.select("direction", "bin_lo_gbps", "count").rows() == [
        ("HtoD", 10.0, 2),
        ("Memset", 100.0, 1),
    ]


def test_real_trace(imported_trace) -> None:
    t = imported_trace("nccl_parser_config-nccl_data")
    r = {x["direction"]: x for x in t.memory_ops().to_dicts()}
    raw = t.cached_events().filter(pl.col("kind").is_in(["memcpy", "memset"])).collect()
    assert r["DtoD"]["count"] == 960 and r["Memset"]["count"] == 114  # as the reference's gpu_by_cat
    assert sum(x["bytes"] for x in r.values()) == raw["bytes"].sum()
    assert sum(x["time_ns"] for x in r.values()) == raw["dur"].sum()
    hist = bandwidth_histogram(t.cached_events()).collect()
    assert hist["count"].sum() == raw.filter(pl.col("bytes") > 0, pl.col("dur") > 0).height


def test_concurrent_bandwidth_hand_checked(make_events) -> None:
    """A [0,10) 10 GB/s and B [5,15) 5 GB/s overlap; C [15,20) 2 GB/s starts as B ends (half-open:
    no overlap). Totals per change: 10, 15, 5, 2, then 0 (dropped). A 0-duration op has none."""
    ev = make_events(
        [
            m(0, 10, "memcpy", 100, "HtoD"),
            m(5, 10, "memcpy", 50, "HtoD"),
            m(15, 5, "memcpy", 10, "HtoD"),
            m(30, 0, "memcpy", 8, "HtoD"),
            m(40, 10, "memset", 30),
        ]
    )
    r = {x["name"]: x for x in bandwidth_summary(ev).collect().to_dicts()}
    h = r["Memcpy HtoD"]
    assert h["count"] == 4 and h["mean_gbps"] == 8.0 and (h["min_gbps"], h["max_gbps"]) == (2.0, 15.0)
    assert h["p50_gbps"] == 7.5 and h["active_ns"] == 20
    assert h["time_mean_gbps"] == (10 * 5 + 15 * 5 + 5 * 5 + 2 * 5) / 20
    assert (r["Memset"]["count"], r["Memset"]["max_gbps"], r["Memset"]["std_gbps"]) == (1, 3.0, None)


def test_hta_bandwidth_uses_kinetos_value_and_counts_every_point(make_events) -> None:
    """HTA takes args' "memory bandwidth (GB/s)", makes a 0 µs op 1 µs, and samples a point at
    every start and end (two at a time where one ends as another starts)."""
    bw = '{"memory bandwidth (GB/s)": %s}'
    rows = [
        {**m(0, 10_000, "memcpy", 1, "HtoD"), "args": bw % 4.0, "stream": 7, "correlation": 1},
        {**m(10_000, 0, "memcpy", 1, "HtoD"), "args": bw % 2.0, "stream": 7, "correlation": 2},
    ]
    rows += [
        {"ts": 0, "dur": 500, "kind": "runtime", "name": "cudaMemcpyAsync", "correlation": c} for c in (1, 2)
    ]
    r = hta_memory_bw_summary(hta_events(make_events(rows))).collect().row(0, named=True)
    # HTA's array [starts; ends] = [0, 10, 10, 11] µs; numpy's quicksort of 4 items is an
    # insertion sort, so B's start stays before A's end: totals 4, 6, 2, then 0 (dropped)
    assert r["name"] == "Memcpy HtoD"
    assert (r["count"], r["max_gbps"], r["min_gbps"], r["mean_gbps"]) == (3, 6.0, 2.0, 4.0)
