"""The steps × ranks heatmap: hand-checked cells and bands, and in the Steps view on a
64-rank trace (synthetic: the corpus has no 64-rank job) at 80×24 without colour."""

from __future__ import annotations

import asyncio
import subprocess
import sys
from collections import Counter
from pathlib import Path

import polars as pl
import pytest
from pilotwait import wait_for
from textual.widgets import Static

from profui.analysis import open_trace
from profui.analysis.steps import rank_step_ratios
from profui.tui.app import OpenTarget, ProfuiApp
from profui.tui.views.steps import StepsView
from profui.tui.widgets.heatmap import rank_heatmap, shade

from realdata import SAMPLES


def _windows(rows: list[tuple[int, int, int]]) -> pl.DataFrame:
    return pl.DataFrame(
        [{"node": "n", "rank": r, "step": s, "dur_ns": d} for r, s, d in rows],
        schema={"node": pl.String, "rank": pl.Int64, "step": pl.Int64, "dur_ns": pl.Int64},
    )


def test_cells_are_each_ranks_time_over_the_steps_median_rank() -> None:
    # 3 ranks, 2 steps; rank 2 straggles in step 2 (150 against a median of 100)
    w = _windows([(0, 1, 100), (1, 1, 100), (2, 1, 104), (0, 2, 100), (1, 2, 90), (2, 2, 150)])
    r = rank_step_ratios(w).collect()
    got = {(a, b): v for a, b, v in r.select("rank", "step", "vs_step_median").iter_rows()}
    assert got == {(0, 1): 1.0, (1, 1): 1.0, (2, 1): 1.04, (0, 2): 1.0, (1, 2): 0.9, (2, 2): 1.5}
    assert [shade(v) for v in (1.0, 1.04, 1.1, 1.2, 1.5, 2.0, None)] == ["·", "·", "░", "▒", "▓", "█", " "]
    lines = rank_heatmap(r, 40, 8).plain.splitlines()
    assert lines[1:4] == ["rank 0   ··", "rank 1   ··", "rank 2   ·▓"]
    # four rows of room for 3 ranks: unbanded; two rows: ranks 0-1 and 2, each its slowest shade
    banded = rank_heatmap(r, 40, 2).plain.splitlines()
    assert banded[1:3] == ["r0–1     ··", "rank 2   ·▓"]
    # global ranks on two nodes need no node name; rank numbers that repeat do
    two = pl.concat(
        [w.filter(pl.col("rank") < 2), w.filter(pl.col("rank") == 2).with_columns(node=pl.lit("m"))]
    )
    assert [
        ln.split("  ")[0]
        for ln in rank_heatmap(rank_step_ratios(two).collect(), 40, 8).plain.splitlines()[1:4]
    ] == [
        "rank 0",
        "rank 1",
        "rank 2",
    ]
    again = two.with_columns(pl.when(pl.col("node") == "m").then(0).otherwise(pl.col("rank")).alias("rank"))
    lines = rank_heatmap(rank_step_ratios(again).collect(), 40, 8).plain.splitlines()
    assert [ln[:10].rstrip() for ln in lines[1:4]] == ["m r0", "n r0", "n r1"]


@pytest.fixture(scope="module")
def job64(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("heat") / "job"
    subprocess.run(
        [sys.executable, str(SAMPLES / "generate_synthetic.py"), "-o", str(out), "--events", "60000"]
        + ["--nodes", "8", "--gpus-per-node", "8", "--steps", "12"],
        check=True,
        capture_output=True,
    )
    return out


def test_the_steps_view_shows_64_ranks_in_bands_and_names_the_slowest(job64: Path, monkeypatch) -> None:
    monkeypatch.setenv("NO_COLOR", "1")
    windows = open_trace(job64).result("steps")["windows.parquet"]
    # plain Python: the slowest rank of every step, and who is slowest most often
    by_step: dict[int, tuple[int, int]] = {}
    for rank, step, dur in windows.select("rank", "step", "dur_ns").iter_rows():
        best = by_step.get(step)
        if best is None or dur > best[0] or (dur == best[0] and rank < best[1]):
            by_step[step] = (dur, rank)
    counts = Counter(rank for _, rank in by_step.values())
    top = min(counts.items(), key=lambda kv: (-kv[1], kv[0]))

    async def go() -> None:
        app = ProfuiApp(OpenTarget("trace", job64), poll_s=60)
        async with app.run_test(size=(80, 24)) as pilot:
            await pilot.press("3")
            view = app.screen.query_one(StepsView)
            assert await wait_for(pilot, lambda: view.ready, 3000)
            await pilot.pause()
            heat = view.query_one("#steps-heatmap", Static)
            assert heat.display
            lines = heat.render().plain.splitlines()
            assert lines[0].strip() == "steps 1–12"
            bands = [ln for ln in lines if ln.startswith("r")]
            assert [b.split()[0] for b in bands] == [f"r{8 * i}–{8 * i + 7}" for i in range(8)]
            assert all(len(b.split()[1]) == 12 for b in bands)  # one column per step
            assert f"longest step: rank {top[0]} in {top[1]} of 12 steps" in lines

    asyncio.run(go())


def test_legend_reads_as_a_sentence_of_the_shades() -> None:
    """The legend names each shade's bound, the last one as '>1.6×' (it read '█ more the step's
    median rank'), against what a cell is: a rank's step time over the step's median over the
    ranks. The shades' bounds are shade()'s, checked above."""
    r = pl.DataFrame({"node": ["n"] * 2, "rank": [0, 1], "step": [1, 1], "vs_step_median": [1.0, 2.0]})
    legend = rank_heatmap(r, 80, 8).plain.splitlines()[-1].strip()
    assert legend == "· ≤1.05×  ░ ≤1.15×  ▒ ≤1.3×  ▓ ≤1.6×  █ >1.6× the step's median over ranks", legend
