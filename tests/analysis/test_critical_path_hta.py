"""The ``hta_compat`` critical path equals HTA 0.5.0's on the shared traces.

The oracle is ``reference/critical_path-*.json``: HTA's own ``critical_path_analysis`` run by
``benchmarks/critical_path_vs_hta.py --write-reference`` on the same windows (one file per
trace: every host instance of the annotation, per rank, the length and time by HTA's kinds, or
the error HTA raised). profui's path must equal each within 1%, length and every kind. One
hand-checked case shows the rules HTA's graph follows where the real traces show them only
mixed together.
"""

from __future__ import annotations

import json
from pathlib import Path

import polars as pl
import pytest
from eventrows import events_frame, kernel

from profui.analysis import critical_path_hta as ch
from profui.analysis.hta import hta_events

REFERENCE = Path(__file__).resolve().parent / "reference"
FILES = sorted(REFERENCE.glob("critical_path-*.json"))


def launch(ts: int, dur: int, corr: int) -> dict:
    return {"ts": ts, "dur": dur, "kind": "runtime", "name": "cudaLaunchKernel", "correlation": corr}


def within(ours: int, theirs: int, rel: float = 0.01) -> bool:
    return abs(ours - theirs) <= rel * abs(theirs)


def test_references_exist():
    assert FILES, (
        f"no critical-path reference in {REFERENCE}: run benchmarks/critical_path_vs_hta.py --write-reference"
    )


@pytest.mark.parametrize("ref_file", FILES, ids=[f.stem.removeprefix("critical_path-") for f in FILES])
def test_equals_hta(ref_file, imported_trace):
    ref = json.loads(ref_file.read_text())
    assert ref["hta_version"] == "0.5.0" or ref["error"]
    t = imported_trace(ref["trace"])
    got = {(rank, i): p for _node, rank, i, _name, _s, _e, p in ch.paths(t.hta_events(), ref["annotation"])}
    compared = 0
    for w in ref["windows"]:
        if "error" in w:
            continue  # HTA raised on this window: no number to hold ours to
        p = got[(w["rank"], w["order"])]
        assert p is not None, f"{w['name']}: HTA has a path, we refused the graph"
        assert within(p.length_ns, w["length_ns"]), (w["name"], p.length_ns, w["length_ns"])
        for k in set(w["by_kind_ns"]) | set(p.by_kind):
            assert within(p.by_kind.get(k, 0), w["by_kind_ns"].get(k, 0)), (
                w["name"],
                k,
                p.by_kind,
                w["by_kind_ns"],
            )
        compared += 1
    hta_windows = [w for w in ref["windows"] if "error" not in w]
    assert compared == len(hta_windows)


def test_hand_checked_rules():
    """One step, hand-computed with HTA's rules (µs).

    Host thread: ProfilerStep#1 [0, 100]; op A [0, 30] holding cudaLaunchKernel L1 [10, 20];
    op B [50, 60] holding L2 [52, 55]. Kernels on one stream: K1 [40, 70] (L1's; the queue
    was empty, so a launch delay 10 -> 40), K2 [75, 95] (L2's; K1 still ran at L2's call, so a
    kernel-kernel delay 70 -> 75). Path: A.start -> L1.start (10, cpu) -> K1.start (30, launch)
    -> K1.end (30, compute) -> K2.start (5, kernel-kernel) -> K2.end (20, compute) = 95. The
    host's 20 µs between A and B never count (HTA's zero-weight dependency).
    """
    us = 1000
    rows = [
        {"ts": 0, "dur": 100 * us, "kind": "step", "name": "ProfilerStep#1"},
        {"ts": 0, "dur": 30 * us, "kind": "cpu_op", "name": "A"},
        launch(10 * us, 10 * us, 1),
        {"ts": 50 * us, "dur": 10 * us, "kind": "cpu_op", "name": "B"},
        launch(52 * us, 3 * us, 2),
        kernel(40 * us, 30 * us, 1, name="K1"),
        kernel(75 * us, 20 * us, 2, name="K2"),
    ]
    events = hta_events(events_frame(rows))
    [(_n, _r, _i, name, start, end, p)] = ch.paths(events, "ProfilerStep")
    assert (name, start, end) == ("ProfilerStep#1", 0, 100 * us)
    assert p.length_ns == 95 * us
    assert p.by_kind == {
        "cpu_bound": 10 * us,
        "gpu_kernel_launch_overhead": 30 * us,
        "gpu_compute_bound": 50 * us,
        "gpu_kernel_kernel_overhead": 5 * us,
    }
    out = ch.stage(events)
    assert out["steps.parquet"].select("step", "length_ns").rows() == [(1, 95 * us)]
    assert out["by_kind.parquet"]["ns"].sum() == 95 * us
    assert out["what_if.parquet"].height == 0


def test_stage_under_hta_compat(imported_trace):
    """The pipeline's ``critical_path`` stage with ``hta_compat`` gives HTA's numbers, per step."""
    from profui.analysis.pipeline import store

    ref = json.loads(
        (
            REFERENCE / "critical_path-hta-ns_resolution_trace-rank-0.Apr_03_18_51_38.1102.pt.trace.json"
        ).read_text()
    )
    t = imported_trace(ref["trace"])
    out = store.compute(t, ["critical_path"], {"hta_compat": True})["critical_path"]
    steps = dict(out["steps.parquet"].select("step", "length_ns").iter_rows())
    kinds = {(s, k): ns for s, k, ns in out["by_kind.parquet"].select("step", "kind", "ns").iter_rows()}
    assert sorted(steps) == sorted(int(w["name"].split("#")[1]) for w in ref["windows"])
    for w in ref["windows"]:
        step = int(w["name"].split("#")[1])
        assert within(steps[step], w["length_ns"])
        assert {k: ns for (s, k), ns in kinds.items() if s == step} == pytest.approx(
            w["by_kind_ns"], rel=0.01
        )
    assert out["what_if.parquet"].height == 0


def test_stage_on_a_cpu_only_trace(imported_trace):
    """HTA raises on a CPU-only trace (its queue-length step); the stage under ``hta_compat``
    gives every window a row whose kinds sum to nothing on the device and no stretch row that
    names a device, and never fails (it did: a path without edges had no stretch columns)."""
    from profui.analysis.pipeline import store

    t = imported_trace("hta-cpu_only-rank-34.Jul_15_10_52_41.1074.pt.trace.json.gz")
    out = store.compute(t, ["critical_path"], {"hta_compat": True})["critical_path"]
    assert out["events.parquet"].filter(pl.col("lane") == "device").is_empty()
    gpu_kinds = {"gpu_compute_bound", "gpu_communication_bound", "gpu_kernel_kernel_overhead"}
    assert not set(out["by_kind.parquet"]["kind"]) & gpu_kinds
