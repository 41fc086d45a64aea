"""The dashboard's headline says why there is no finding with the same reasons as ``profui
summary``'s first line: a trace with step markers whose critical path analysed no step says
so (not "nothing ≥ 1%"), because the dashboard passes the critical path's ``steps.parquet``
along with the step windows, on a cold open and on a warm one (the pipeline's cached outputs,
no kept dashboard)."""

from __future__ import annotations

import asyncio
import shutil
from pathlib import Path

import polars as pl
from pilotwait import wait_dashboard

from profui.analysis.pipeline.result import Result
from profui.capture.format import private_dir_for
from profui.tui.app import OpenTarget, ProfuiApp
from profui.tui.views import dashboard_charts as dc

from realdata import SAMPLES

NO_STEP = "No finding: no step was analysed, so no critical path to rank changes on."
NOTHING = "No finding: nothing on the critical path would save ≥ 1% of a step, and no risk was found."


def dashboard_outputs(trace: Path) -> tuple[dict, str, str]:
    """The stage outputs the dashboard holds once drawn, its headline and where they came from."""

    async def go() -> tuple[dict, str, str]:
        app = ProfuiApp(OpenTarget("trace", trace), poll_s=3600)
        async with app.run_test(size=(100, 30)) as pilot:
            view = await wait_dashboard(pilot, app)
            return (
                dict(view.result.outputs),
                str(view.query_one("#dash-headline").render()),
                view.session.source or "",
            )

    return asyncio.run(go())


def test_no_analysed_step_is_said_cold_and_warm(tmp_path: Path) -> None:
    trace = tmp_path / "mlp_cpu"
    shutil.copytree(SAMPLES / "mlp_cpu", trace, ignore=shutil.ignore_patterns(".profui"))
    for how in ("cold", "warm"):
        if how == "warm":  # no kept dashboard: the stage outputs are read from the pipeline's cache
            (private_dir_for(trace) / "tui" / "dashboard.json").unlink()
        outputs, line, source = dashboard_outputs(trace)
        assert source.startswith("computed" if how == "cold" else "cache"), (how, source)
        # the raw events: mlp_cpu has ProfilerStep markers, so "no step markers" is not the reason
        names = {
            str(n)
            for f in sorted(trace.glob("node=*/rank=*/events-*.parquet"))
            for n in pl.read_parquet(f, columns=["name"])["name"].cast(pl.Utf8).unique()
        }
        marked = sum(n.startswith("ProfilerStep#") for n in names)
        assert marked > 0
        steps = outputs["critical_path"]["steps.parquet"]
        assert steps.height > 0, how  # the stage reached the dashboard
        findings = outputs["findings"]["findings.parquet"]
        assert line == dc.build_headline(Result(outputs, source)).text.plain
        # the same outputs with no finding: the reason follows the critical path's analysed steps
        none = {**outputs, "findings": {"findings.parquet": findings.head(0)}}
        assert dc.build_headline(Result(none, source)).text.plain == NOTHING
        no_step = {**none, "critical_path": {**outputs["critical_path"], "steps.parquet": steps.head(0)}}
        assert dc.build_headline(Result(no_step, source)).text.plain == NO_STEP
        # a dashboard without the stage's output cannot say that reason, and does not
        without = {k: v for k, v in none.items() if k != "critical_path"}
        assert dc.build_headline(Result(without, source)).text.plain == NOTHING
