"""The critical path across host threads of one rank, against the raw Kineto JSON read in plain
Python: on HTA's NCCL DDP trace the main thread is blocked in ``backward`` (no op of its own
for ~100 ms) while the autograd thread runs the backward ops; the path follows that thread."""

from __future__ import annotations

import gzip
import json

import polars as pl

from profui.analysis import critical_path as cp

from realdata import traces_dir

NCCL = "hta-nccl_parser_config-nccl_data.json.gz"
AUTOGRAD_TID = 2919752
US = 1000


def _raw() -> tuple[dict[int, tuple[int, int]], list[tuple[int, int]], list[tuple[int, int, str]]]:
    """The trace's step windows by number, the main thread's backward annotations and the
    autograd thread's events (start, end, category), in epoch ns, from the JSON itself."""
    with gzip.open(traces_dir() / NCCL, "rt") as f:
        raw = json.load(f)
    base = raw["baseTimeNanoseconds"]

    def ns(us: float) -> int:
        return base + round(us * 1000)

    xs = [e for e in raw["traceEvents"] if e.get("ph") == "X"]
    steps = {
        int(e["name"].split("#")[1]): (ns(e["ts"]), ns(e["ts"] + e["dur"]))
        for e in xs
        if e["name"].startswith("ProfilerStep#")
    }
    backward = [(ns(e["ts"]), ns(e["ts"] + e["dur"])) for e in xs if e["name"] == "## backward ##"]
    autograd = [(ns(e["ts"]), ns(e["ts"] + e["dur"]), e["cat"]) for e in xs if e.get("tid") == AUTOGRAD_TID]
    return steps, backward, autograd


def _union(intervals: list[tuple[int, int]]) -> int:
    total, end = 0, None
    for a, b in sorted(intervals):
        if end is None or a > end:
            total, end = total + b - a, b
        elif b > end:
            total, end = total + b - end, b
    return total


def test_nccl_backward_follows_the_autograd_thread(imported_trace):
    trace = imported_trace(NCCL)
    out, clamped = cp.analyse(
        trace.events(),
        trace.result("steps")["windows.parquet"],
        trace.result("correlate")["launches.parquet"],
        False,
    )
    assert clamped == []
    steps, backward, autograd = _raw()
    path = out["events.parquet"]
    assert set(path["step"]) == {4, 5, 6}
    for step in (4, 5, 6):
        lo, hi = steps[step]
        (b_lo, b_hi) = next((a, b) for a, b in backward if lo <= a < hi)
        # the autograd thread's work inside the main thread's backward: its first event's start
        # to its last event's end
        mine = [(a, b, c) for a, b, c in autograd if b_lo <= a < b_hi]
        assert len(mine) > 1000
        first, last = min(a for a, _, _ in mine), max(b for _, b, _ in mine)
        rows = path.filter(step=step)
        on = rows.filter(tid=AUTOGRAD_TID)
        # the path is on the autograd thread from its first op to its last, without a break
        assert abs(on["start_ns"].min() - first) <= US and abs(on["end_ns"].max() - last) <= US
        assert abs((on["end_ns"] - on["start_ns"]).sum() - (last - first)) <= 2 * US
        # and nowhere else meanwhile (the main thread only waits then)
        other = rows.filter(
            pl.col("tid") != AUTOGRAD_TID, pl.col("end_ns") > first + US, pl.col("start_ns") < last - US
        )
        assert other.height == 0, other
        # its time inside the thread's ops (their union) is host compute, the rest overhead
        ops = _union([(a, b) for a, b, c in mine if c == "cpu_op"])
        compute = on.filter(kind="host_compute")
        assert abs((compute["end_ns"] - compute["start_ns"]).sum() - ops) <= 0.001 * ops
        assert set(on["kind"]) == {"host_compute", "host_overhead"}
