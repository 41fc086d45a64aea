"""Enter on a dashboard chart opens its view; on a chart with no view of its own it says so, in
a notification naming the chart, instead of doing nothing (the status line promises "Enter opens
a chart's view"; on 8 of the 13 charts of a GPU trace Enter was silent)."""

from __future__ import annotations

import asyncio
import shutil
from pathlib import Path

from pilotwait import wait_dashboard, wait_for

from profui.tui.app import OpenTarget, ProfuiApp
from profui.tui.views import dashboard_charts as dc
from profui.tui.views.steps import StepsView

SAMPLE = Path(__file__).resolve().parents[2] / "samples" / "synthetic_gpu"


def test_enter_opens_a_view_or_says_the_chart_has_none(tmp_path: Path) -> None:
    trace = tmp_path / "gpu"
    shutil.copytree(SAMPLE, trace, ignore=shutil.ignore_patterns(".profui"))
    without = [c.id for c in dc.CHARTS if c.view is None]
    assert "gpu_active" in without and "steps" not in without

    async def go() -> None:
        app = ProfuiApp(OpenTarget("trace", trace), poll_s=3600)
        async with app.run_test(size=(80, 24), notifications=True) as pilot:
            view = await wait_dashboard(pilot, app)
            view.panel("gpu_active").focus()
            await pilot.pause()
            await pilot.press("enter")
            await pilot.pause()
            notes = [str(n.message) for n in app._notifications]
            assert notes == ["GPU active vs idle: no view of its own; profui summary prints its tables"]
            assert app.screen.query_one(type(view)) is view  # still the dashboard
            view.panel("steps").focus()
            await pilot.pause()
            await pilot.press("enter")
            assert await wait_for(pilot, lambda: bool(app.screen.query(StepsView)))

    asyncio.run(go())
