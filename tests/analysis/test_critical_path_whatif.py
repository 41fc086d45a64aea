"""The ``compute`` what-if ("host ops and kernels 2x faster") against the path it replays: on a
hand-made single-thread CPU trace it saves half the path's host compute (nested ops counted
once), and on HTA's MTIA trace, whose 22,359 DMA requests carry no correlation, it saves half the
host ops' time read from the raw JSON (review finding: it saved 4 ms of a 13.3 s path of host
ops, the DMA requests pinned to their observed times)."""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import polars as pl

from profui.analysis import open_trace
from profui.capture.ingest import import_trace

from realdata import shared_trace

US = 1000  # ns per µs
MTIA = "hta-mtia_trace_single_rank-mtia_rank_0.json.gz"


def op(name: str, ts: int, dur: int, cat: str = "cpu_op") -> dict:
    return {"ph": "X", "cat": cat, "name": name, "pid": 1, "tid": 100, "ts": ts, "dur": dur}


def hand_trace(tmp: Path) -> Path:
    """One step [0, 1000] µs on thread 100: ``aten::linear`` [0, 400] holding ``aten::addmm``
    [50, 350]; ``aten::relu`` [410, 600]; ``aten::sum`` [700, 1000]. Host compute 400 + 190 +
    300 = 890 µs (the nested op once), outside ops 10 + 100 = 110 µs (dispatch: under a
    millisecond, no stall). Twice faster ops: 445 µs saved."""
    base = 1_700_000_000_000_000
    ev = [
        op("ProfilerStep#1", 0, 1000, "user_annotation"),
        op("aten::linear", 0, 400),
        op("aten::addmm", 50, 300),
        op("aten::relu", 410, 190),
        op("aten::sum", 700, 300),
    ]
    for e in ev:
        e["ts"] += base
    src = tmp / "hand.json.gz"
    with gzip.open(src, "wt") as f:
        json.dump({"traceEvents": ev, "distributedInfo": {"rank": 0}}, f)
    out = tmp / "trace"
    import_trace([src], out)
    return out


def saved(out: dict, change: str) -> int:
    return out["what_if.parquet"].filter(change=change)["saved_ns"].sum()


def by_kind(out: dict) -> dict[str, int]:
    return dict(out["by_kind.parquet"].group_by("kind").agg(pl.col("ns").sum()).iter_rows())


def test_single_thread_compute_saving_is_half_its_host_compute(tmp_path):
    out = open_trace(hand_trace(tmp_path)).result("critical_path")
    assert out["steps.parquet"]["length_ns"].to_list() == [1000 * US]
    kinds = by_kind(out)
    assert kinds == {"host_compute": 890 * US, "host_overhead": 110 * US}
    assert abs(saved(out, "compute") - 445 * US) <= 0.05 * 445 * US
    assert saved(out, "host") == 0  # its gaps are dispatch, not stalls


def union_us(iv: list[tuple[float, float]]) -> float:
    total, end = 0.0, None
    for lo, hi in sorted(iv):
        if end is None or lo > end:
            total, end = total + hi - lo, hi
        elif hi > end:
            total, end = total + hi - end, hi
    return total


def test_mtia_compute_saving_is_half_its_host_ops(imported_trace):
    out = imported_trace(MTIA).result("critical_path")
    # the raw JSON in plain Python: the step's host ops (both threads, nested once) and its
    # device events (MTIA's kernels and DMA requests)
    with gzip.open(shared_trace(MTIA), "rt") as f:
        ev = json.load(f)["traceEvents"]
    step = next(e for e in ev if e.get("name") == "ProfilerStep#1")
    lo, hi = step["ts"], step["ts"] + step["dur"]
    host = union_us(
        [
            (max(e["ts"], lo), min(e["ts"] + e["dur"], hi))
            for e in ev
            if e.get("cat") == "cpu_op" and e["ts"] < hi and e["ts"] + e["dur"] > lo
        ]
    )
    device = union_us([(e["ts"], e["ts"] + e["dur"]) for e in ev if e.get("cat") == "mtia_ccp_events"])
    assert host == 13_266_053.337402344 and 7.7e6 < device < 7.71e6
    # the main thread waits for each barrier it asks for: a c10d::barrier, then a gloo:barrier on
    # a worker thread while the main thread runs no op (inside its own annotation), resuming
    # within 0.1 ms of the barrier's end
    main = step["tid"]
    ops = sorted((e["ts"], e["ts"] + e["dur"]) for e in ev if e.get("cat") == "cpu_op" and e["tid"] == main)
    asked, gloo = (
        sorted((e for e in ev if e.get("name") == name and lo <= e["ts"] < hi), key=lambda e: e["ts"])
        for name in ("c10d::barrier", "gloo:barrier")
    )
    assert len(asked) == len(gloo) == 48
    for a, g in zip(asked, gloo, strict=True):
        g_end = g["ts"] + g["dur"]
        assert g["tid"] != main and a["ts"] + a["dur"] <= g["ts"]
        resume = min(s for s, _e in ops if s >= g_end)
        assert resume - g_end < 100 and not any(s < resume and e > a["ts"] + a["dur"] for s, e in ops)
    # the path: the step, all host ops but the barrier calls (their span is the wait for the
    # barrier, reached through the worker's barrier), the barriers, no device work
    kinds = by_kind(out)
    calls = sum(e["dur"] for e in asked)
    assert abs(kinds["host_compute"] - (host - calls) * US) <= 1 * US
    assert abs(kinds["communication"] - sum(g["dur"] for g in gloo) * US) <= 1 * US
    assert set(kinds) == {"host_compute", "host_overhead", "communication"}
    # twice faster, the host (13.27 s of ops -> 6.63 s) still outlasts the device's busy time
    # halved (3.85 s): the step shortens by half its host ops
    assert device / 2 < (hi - lo) - host / 2
    assert abs(saved(out, "compute") - host / 2 * US) <= 0.05 * host / 2 * US
