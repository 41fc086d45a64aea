"""benchmarks/call_path.py: the steps between profui modules are counted as worked by hand on a
made-up path, and a real ``profui summary`` recorded in process passes through the modules it must
(the pipeline and its stages) with every step between two different profui modules."""

from __future__ import annotations

import shutil

from benchscripts import load
from realdata import REPO

cp = load("call_path")


def test_counts_worked_by_hand() -> None:
    # a → b → c, then c calls back into a (a still running: back into the stack), b → c again
    steps = [("a", "b", False), ("b", "c", False), ("c", "a", True), ("b", "c", False), ("d", "e", False)]
    d = cp.describe(steps)
    assert d["modules"] == ["a", "b", "c", "d", "e"]
    assert d["steps"] == 5 and d["pairs"] == 4
    assert d["returns"] == 2  # into a (left for b), into c a second time
    assert d["back_into_stack"] == 1 and d["back_pairs"] == [["c", "a", 1]]
    assert d["both_ways"] == []  # c → a but never a → c
    assert cp.describe([("a", "b", False), ("b", "a", True)])["both_ways"] == [["a", "b"]]


def test_a_real_summary_is_recorded(tmp_path) -> None:
    trace = tmp_path / "mlp_cpu"
    shutil.copytree(REPO / "samples" / "mlp_cpu", trace, ignore=shutil.ignore_patterns(".profui"))
    steps = cp.run_summary(trace)
    assert steps and all(a != b and a.startswith("profui.") and b.startswith("profui.") for a, b, _ in steps)
    callees = {b for _, b, _ in steps}
    for module in ("profui.analysis.pipeline.store", "profui.analysis.steps", "profui.analysis.kernels"):
        assert module in callees, module
