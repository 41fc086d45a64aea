"""Quitting while the first analysis of a trace runs (#37 item 2).

``profui open`` of a trace never analysed starts the analysis pipeline; a user who presses ``q``
before it ends has stopped that run, not seen it fail. The run's record must then read
``stopped`` (the pipeline's own word for a run cut short), never ``failed`` with the viewer's
own errors ("NoMatches: No nodes match '#dash-status'", "App is not running") as its cause, and
the next open of the same trace must finish the analysis and draw the dashboard.
"""

from __future__ import annotations

import asyncio
import subprocess
import sys
import time
from pathlib import Path

from pilotwait import wait_dashboard, wait_for

from profui.analysis.pipeline.outputs import list_runs
from profui.tui.app import OpenTarget, ProfuiApp
from profui.tui.views.dashboard import DashboardView

from realdata import SAMPLES

UI_ERRORS = ("NoMatches", "App is not running", "#dash-status", "call_from_thread")


def _settled(trace: Path, timeout: float = 120.0) -> list:
    """The trace's run records once none is executing (the analysis thread outlives the app)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        runs = list_runs(trace)
        if runs and all(r.status != "executing" for r in runs):
            return runs
        time.sleep(0.1)
    raise AssertionError(f"a run of {trace} still executing after {timeout:.0f} s")


def _status_line(app: ProfuiApp) -> str:
    try:
        view = app.screen.query_one(DashboardView)
        return str(view.query_one("#dash-status").render())
    except Exception:
        return ""


def test_quit_during_first_analysis_stops_the_run(tmp_path: Path) -> None:
    # the bundled generator's trace, large enough that its first analysis lasts seconds on a
    # small machine: the quit lands while stages are still to run
    trace = tmp_path / "synthetic"
    subprocess.run(
        [sys.executable, str(SAMPLES / "generate_synthetic.py"), "-o", str(trace), "--events", "2000000"],
        check=True,
        capture_output=True,
    )

    async def quit_while_running() -> None:
        app = ProfuiApp(OpenTarget("trace", trace), poll_s=60)
        async with app.run_test(size=(80, 24)) as pilot:
            # a stage of the recorded run is under way: "[i/n] stage …"
            assert await wait_for(pilot, lambda: _status_line(app).startswith("["), tries=3000)
            assert any(r.status == "executing" for r in list_runs(trace))
            # the key as the terminal sends it, without Pilot's wait for the screen to settle
            # (which lets a busy dashboard finish the run before the key is even read)
            app.simulate_key("q")
            await pilot.pause()

    asyncio.run(quit_while_running())
    runs = _settled(trace)
    assert len(runs) == 1, [r.id for r in runs]
    (run,) = runs
    assert run.status == "stopped", (run.status, run.error)
    said = " ".join(filter(None, [run.error, *(s.error or "" for s in run.stages.values())]))
    assert not any(e in said for e in UI_ERRORS), said
    # what ran to its end before the quit is kept; nothing is marked failed
    assert not [s for s, rec in run.stages.items() if rec.status == "failed"]

    async def open_again() -> None:
        app = ProfuiApp(OpenTarget("trace", trace), poll_s=60)
        async with app.run_test(size=(80, 24)) as pilot:
            view = await wait_dashboard(pilot, app)
            assert not view.query_one("#dash-status").render().plain.startswith("analysis failed")

    asyncio.run(open_again())
    runs = _settled(trace)
    assert [r.status for r in runs] == ["stopped", "succeeded"], [(r.id, r.status) for r in runs]


def test_only_a_view_that_is_gone_stops_the_run() -> None:
    """A view's callback failing because its widgets or app are gone stops the run; any other
    error of the callback is a bug and is raised as itself, so its run reads failed, not stopped."""
    import pytest
    from textual.css.query import NoMatches

    from profui.tui.views.session import ViewerGone, _followed

    def raising(exc: Exception):
        def tell(*_: object) -> None:
            raise exc

        return _followed(tell)

    for gone in (NoMatches("No nodes match '#dash-status'"), RuntimeError("App is not running")):
        with pytest.raises(ViewerGone):
            raising(gone)("steps")
    with pytest.raises(TypeError):
        raising(TypeError("unsupported operand type(s) for +: 'NoneType' and 'int'"))("steps")
