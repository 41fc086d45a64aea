"""A step thread idle while gloo's worker threads run its all-reduce waits for them (review
finding, issue 36): on HTA's CPU-only rank-34 trace, ProfilerStep#551 (210 ms) has no event of
its own on thread 1074 while threads 3553 and 3554 run ``gloo:all_reduce`` inside it. Checked
against the raw JSON read in plain Python: the path follows the collective, its communication
is the span of the collectives it follows, and the ``host`` what-if removes only the stall
after them, never their span."""

from __future__ import annotations

import gzip
import json

import numpy as np

from realdata import shared_trace

TRACE = "hta-cpu_only-rank-34.Jul_15_10_52_41.1074.pt.trace.json.gz"
US = 1000  # ns per µs


def union_us(iv: list[tuple[float, float]]) -> float:
    total, end = 0.0, None
    for lo, hi in sorted(iv):
        if end is None or lo > end:
            total, end = total + hi - lo, hi
        elif hi > end:
            total, end = total + hi - end, hi
    return total


def test_step_thread_waits_for_the_worker_threads_all_reduce(imported_trace):
    out = imported_trace(TRACE).result("critical_path")
    with gzip.open(shared_trace(TRACE), "rt") as f:
        ev = json.load(f)["traceEvents"]
    step = next(e for e in ev if e.get("name") == "ProfilerStep#551")
    lo, hi = step["ts"], step["ts"] + step["dur"]
    inside = [
        e
        for e in ev
        if e.get("ph") == "X"
        and e.get("cat") != "Trace"
        and e["ts"] < hi
        and e["ts"] + e["dur"] > lo
        and e is not step
    ]
    gloo = [e for e in inside if e["name"] == "gloo:all_reduce"]
    # the premise: nothing else in the step (but the profiler's own range), nothing on its thread
    assert len(inside) == len(gloo) == 2 and {e["tid"] for e in gloo} == {3553, 3554}
    last_end = max(e["ts"] + e["dur"] for e in gloo)

    row = out["steps.parquet"].filter(step=551).row(0, named=True)
    assert abs(row["length_ns"] - step["dur"] * US) <= 1 * US
    path = out["events.parquet"].filter(step=551).sort("seq")
    comm = path.filter(kind="communication")
    # the path's communication is the union of the collectives it follows, as the JSON has them
    followed = [e for e in gloo if e["tid"] in set(comm["tid"].to_list())]
    assert followed and set(comm["name"]) == {"gloo:all_reduce"}
    spans = (comm["end_ns"] - comm["start_ns"]).sum()
    assert abs(spans - union_us([(e["ts"], e["ts"] + e["dur"]) for e in followed]) * US) <= 1 * US
    # then the step thread's own time to the step's end (12.9 ms): the last collective's end on
    assert comm["end_ns"].max() == path["start_ns"][-1]
    assert abs(path["start_ns"][-1] - row["start_ns"] - (last_end - lo) * US) <= 1 * US
    assert path["tid"][-1] == 1074 and path["kind"][-1] == "host_overhead"
    # the host change removes that stall only: none of the collectives' span
    saved = out["what_if.parquet"].filter(step=551, change="host")["saved_ns"][0]
    assert abs(saved - (hi - last_end) * US) <= 1 * US
    assert saved <= (step["dur"] - union_us([(e["ts"], e["ts"] + e["dur"]) for e in gloo])) * US


def test_a_host_collective_of_another_thread_is_no_stall():
    """By hand: ops [0, 100] and [5000, 5100] µs; another thread's collective [1000, 4500] µs.
    Without it, the 4,900 µs between the ops is a stall; with it, what lies outside it (900 µs
    before, 500 µs after) is under a millisecond each: no stall."""
    from profui.analysis.critical_path_inputs import STALL, _thread_time

    starts = np.array([0, 5_000_000], dtype=np.int64)
    ends = np.array([100_000, 5_100_000], dtype=np.int64)
    names = (starts, ends, ["a", "b"])
    span = np.array([0, 5_100_000], dtype=np.int64)
    alone = _thread_time(starts, ends, np.zeros(2, dtype=bool), names, (0, 5_100_000))
    assert np.diff(alone.at(span)[STALL])[0] == 4_900_000
    coll = (np.array([1_000_000]), np.array([4_500_000]))
    waiting = _thread_time(starts, ends, np.zeros(2, dtype=bool), names, (0, 5_100_000), coll)
    at = waiting.at(span)
    assert np.diff(at[STALL])[0] == 0
    assert np.diff(at[2])[0] == 4_900_000  # still host overhead: no op ran
    # a longer gap after the collective is a stall again: [4500, 6000] -> 1,500 µs
    ends2 = np.array([100_000, 6_100_000], dtype=np.int64)
    starts2 = np.array([0, 6_000_000], dtype=np.int64)
    later = _thread_time(
        starts2, ends2, np.zeros(2, dtype=bool), (starts2, ends2, ["a", "b"]), (0, 6_100_000), coll
    )
    assert np.diff(later.at(np.array([0, 6_100_000]))[STALL])[0] == 1_500_000
