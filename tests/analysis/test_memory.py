"""Memory operations by direction: counts, bytes, time, bandwidth."""

from __future__ import annotations

import polars as pl
import pytest

from profui.analysis.memory import bandwidth_histogram, memory_ops


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
