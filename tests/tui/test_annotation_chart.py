"""The custom-annotation chart as a user drives it on the bundled CPU sample (a real torch run
whose script wraps ``data_loading`` and ``forward_backward`` in ``record_function``): the
user's own ranges come before PyTorch's, the default chart is the user's longest, and after
picking another annotation the takeaway speaks of the one shown. Oracle: the sample's events."""

from __future__ import annotations

import asyncio
import shutil
from pathlib import Path

import polars as pl
from pilotwait import wait_dashboard, wait_for

from profui.analysis import open_trace
from profui.analysis.formatting import fmt_ns
from profui.tui.app import OpenTarget, ProfuiApp
from profui.tui.views.pick import PickScreen

SAMPLE = Path(__file__).resolve().parents[2] / "samples" / "mlp_cpu"


def test_users_annotations_first_and_the_takeaway_follows_the_pick(tmp_path: Path) -> None:
    trace = tmp_path / "mlp"
    shutil.copytree(SAMPLE, trace, ignore=shutil.ignore_patterns(".profui"))
    ev = open_trace(trace).events().collect()
    ann = ev.filter(pl.col("kind") == "annotation")
    totals = dict(ann.group_by("name").agg(pl.col("dur").sum()).rows())
    user = sorted((n for n in totals if not n.startswith("Optimizer.")), key=lambda n: -totals[n])
    assert user == ["forward_backward", "data_loading"]  # the sample script's record_function names
    # data_loading runs once per step: its mean time per step is the mean of its ranges
    loading = ann.filter(pl.col("name") == "data_loading")["dur"]
    steps = ev.filter(pl.col("kind") == "step").height
    assert loading.len() == steps

    async def go() -> None:
        app = ProfuiApp(OpenTarget("trace", trace), poll_s=60)
        async with app.run_test(size=(80, 24)) as pilot:
            view = await wait_dashboard(pilot, app)
            panel = view.panel("annotation")
            said = lambda: "→ " + panel.takeaway_shown()  # noqa: E731
            assert said().startswith("→ 'forward_backward' takes ")
            await pilot.press("a")
            assert await wait_for(pilot, lambda: isinstance(app.screen, PickScreen))
            labels = [label for _, label in app.screen.choices]
            assert [lb.split(" (")[0] for lb in labels[:2]] == user
            assert all("PyTorch" in lb for lb in labels[2:]) and len(labels) == 4
            await pilot.press("down", "enter")
            assert await wait_for(pilot, lambda: "data_loading" in said())
            assert said() == (
                f"→ 'data_loading' takes {said().split(' takes ')[1].split(' of')[0]} of a step on average "
                f"({fmt_ns(loading.mean())})."
            )
            assert "forward_backward" not in said()

    asyncio.run(go())


def test_a_cold_open_shows_every_charts_takeaway(tmp_path: Path) -> None:
    """Charts drawn stage by stage while the trace is analysed get their takeaways when the
    summary lands: the same sentences ``t.summary()`` has."""
    trace = tmp_path / "mlp"
    shutil.copytree(SAMPLE, trace, ignore=shutil.ignore_patterns(".profui"))
    want = open_trace(trace).summary().takeaways
    shutil.rmtree(trace / ".profui", ignore_errors=True)

    async def go() -> None:
        from profui.tui.views import dashboard_charts as dc

        app = ProfuiApp(OpenTarget("trace", trace), poll_s=60)
        async with app.run_test(size=(80, 24)) as pilot:
            view = await wait_dashboard(pilot, app)
            for chart in dc.CHARTS:
                assert view.panel(chart.id).takeaway_shown() == want.get(chart.id, ""), chart.id

    asyncio.run(go())
