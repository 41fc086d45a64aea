"""The Steps view's "vs rank median" column: every step's time over its rank's median step, as a
ratio with × (``4.02×``), for the steps at the median too (it showed ``4.022`` for an outlier and
``-`` for every other step). Oracle: each rank's step times in the steps stage's windows, the
median taken here with :func:`statistics.median`."""

from __future__ import annotations

import asyncio
import statistics

import polars as pl
import pytest
from pilotwait import wait_for
from textual.widgets import Static

from profui.analysis import open_trace
from profui.analysis.pipeline.result import Result
from profui.tui.app import OpenTarget, ProfuiApp
from profui.tui.views.steps import StepsView
from profui.tui.widgets.frame_table import FrameTable

from realdata import SAMPLES


@pytest.mark.parametrize("sample", ["mlp_cpu", "synthetic_gpu"])  # one outlier (step 6); none
def test_every_step_shows_its_ratio_to_its_rank_median_with_times_sign(sample: str) -> None:
    trace = SAMPLES / sample
    windows = open_trace(trace).result("steps")["windows.parquet"]
    want = {}
    for (node, rank), part in windows.group_by(["node", "rank"]):
        med = statistics.median(part["dur_ns"].to_list())
        for step, dur in part.select("step", "dur_ns").rows():
            want[(node, rank, step)] = f"{dur / med:.2f}×"
    assert len(set(want.values())) > 2  # the steps differ: the check can tell them apart
    assert "1.00×" in want.values() or len(want) % 2 == 0  # an odd count has a step at the median

    async def go() -> None:
        app = ProfuiApp(OpenTarget("trace", trace), poll_s=60)
        async with app.run_test(size=(200, 40)) as pilot:
            await pilot.press("3")
            view = app.screen.query_one(StepsView)
            assert await wait_for(pilot, lambda: view.ready)
            table = view.query_one(FrameTable)
            col = table.columns_shown.index("vs_rank_median")
            shown = table.shown_frame()
            assert shown.height == len(want)
            got = {}
            for i, row in enumerate(shown.select("node", "rank", "step").rows()):
                cell = table.get_row_at(i)[col]
                got[row] = getattr(cell, "plain", str(cell))
            assert got == want
            line = view.query_one("#steps-status", Static).render().plain
            assert "vs rank median = step ÷ its rank's median step" in line

    asyncio.run(go())


def test_outliers_keep_analysis_ratio() -> None:
    """The flagged steps' ratio is analysis' own ``vs_rank_median`` (outliers.parquet)."""
    from profui.tui.views.steps import per_step_frame

    trace = SAMPLES / "mlp_cpu"

    res = open_trace(trace).result("steps")
    out = res["outliers.parquet"]
    frame = per_step_frame(Result({"steps": res}, "notebook"))
    keys = ["node", "rank", "step"]
    joined = out.select(*keys, pl.col("vs_rank_median").alias("a")).join(frame, on=keys)
    assert joined.height == out.height >= 1
    assert joined["a"].to_list() == joined["vs_rank_median"].to_list()
