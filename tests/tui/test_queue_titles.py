"""The launch queue table's title says what a launch in the queue is, by the rule that made the
table (hand-checked in ``tests/analysis/test_idle.py``: by default a launch leaves when its work
ends, with ``hta_compat`` when it starts). The Idle view said "not yet started" of the default
table while ``profui summary`` said "not finished" of the same numbers."""

from __future__ import annotations

import shutil

from profui.analysis.notebook import stage_run
from profui.analysis.trace import open_trace
from profui.tui.views.idle import idle_sections

from realdata import SAMPLES, run_profui


def test_summary_and_view_name_the_rule_of_their_table(tmp_path) -> None:
    trace = tmp_path / "gpu"
    shutil.copytree(SAMPLES / "synthetic_gpu", trace, ignore=shutil.ignore_patterns(".profui"))
    default = run_profui("summary", trace, cache=tmp_path / "c")
    assert default.returncode == 0, default.stderr
    assert "Launch queue length per stream (launched, not finished)" in default.stdout
    hta = run_profui("summary", trace, "--hta-compat", cache=tmp_path / "c")
    assert hta.returncode == 0, hta.stderr
    assert "Launch queue length per stream (launched, not yet started)" in hta.stdout
    assert "not finished" not in hta.stdout

    result = stage_run(open_trace(trace), "idle", {})  # the notebook facade's run, as the view's
    titles = [s.title for s in idle_sections(result)]
    assert "Launch queue length per stream (launched, not finished)" in titles
