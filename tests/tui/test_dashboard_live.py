"""Live traces and the custom annotation chart, on real data.

Live: a trace whose manifest says ``running`` holds rank 0 of HTA's 2-rank NCCL job; while the
dashboard is open, rank 1's Kineto file is converted into the same trace (as profcap's daemon
does). The dashboard must reload by itself and then show analysis' numbers for both ranks.
"""

from __future__ import annotations

import asyncio
from dataclasses import replace
from pathlib import Path

from profui.analysis import open_trace
from profui.analysis.annotations import annotation_per_step
from profui.analysis.formatting import fmt_count, fmt_ns, fmt_pct
from profui.capture.format import read_manifest, write_manifest
from profui.capture.ingest import import_trace
from profui.capture.kineto.file_import import convert_kineto_file
from profui.tui.app import OpenTarget, ProfuiApp
from profui.tui.views.dashboard import DashboardView
from profui.tui.views.pick import PickScreen
from profui.tui.widgets.bars import Bars

from realdata import shared_trace

RANK0 = "hta-trace_filter-sampled_rank-0.json.gz"
RANK1 = "hta-trace_filter-sampled_rank-1.json.gz"
NCCL = "hta-nccl_parser_config-nccl_data.json.gz"


async def until(pilot, cond, what: str, tries: int = 1500) -> None:
    for _ in range(tries):
        await pilot.pause()
        if cond():
            return
        await asyncio.sleep(0.02)
    raise AssertionError(f"timed out waiting for {what}")


def kernel_total_text(view: DashboardView) -> str:
    return str(view.panel("kernel_total").query_one(".chart-text").render())


def test_running_trace_reloads_when_a_rank_lands(tmp_path: Path) -> None:
    trace = tmp_path / "live"
    import_trace([shared_trace(RANK0)], trace)
    write_manifest(trace, replace(read_manifest(trace), status="running", end_ns=None))
    one_rank = open_trace(trace).kernels()

    async def go() -> None:
        app = ProfuiApp(OpenTarget("trace", trace), poll_s=0.2)
        async with app.run_test(size=(80, 24)) as pilot:
            view = app.screen.query_one(DashboardView)
            await until(pilot, lambda: view.complete, "first dashboard")
            assert f"{fmt_count(one_rank['count'].sum())} kernel launches" in kernel_total_text(view)
            assert "● live" in str(app.screen.query_one("#trace-title").render())
            generation = view.session.generation
            await asyncio.to_thread(convert_kineto_file, shared_trace(RANK1), trace)
            await until(pilot, lambda: view.session.generation > generation and view.complete, "live reload")
            both = open_trace(trace).kernels()
            assert both["count"].sum() > one_rank["count"].sum()
            assert f"{fmt_count(both['count'].sum())} kernel launches" in kernel_total_text(view)
            assert f"{fmt_ns(both['total_ns'].sum())} summed kernel durations" in kernel_total_text(view)
            # the live trace was analysed in memory: nothing recorded in its folder
            assert not (trace / ".profui" / "runs").exists()

    asyncio.run(go())


def test_annotation_picked_from_the_list_shows_its_time_per_step(tmp_path: Path) -> None:
    trace = tmp_path / "nccl"
    import_trace([shared_trace(NCCL)], trace)

    async def go() -> None:
        app = ProfuiApp(OpenTarget("trace", trace), poll_s=60)
        async with app.run_test(size=(80, 24)) as pilot:
            view = app.screen.query_one(DashboardView)
            await until(pilot, lambda: view.complete, "dashboard")
            await pilot.press("a")
            assert isinstance(app.screen, PickScreen)
            choices = app.screen.choices
            assert len(choices) > 1
            await pilot.press("down", "enter")  # the second longest annotation
            await pilot.pause()
            assert not isinstance(app.screen, PickScreen)
            side, _, name = choices[1][0].partition(":")
            t = open_trace(trace)
            from profui.analysis.pipeline import load_output

            windows = load_output(trace, "steps", "windows.parquet")
            expected = (
                annotation_per_step(t.events(), windows.lazy(), names=[name], side=side)
                .collect()
                .sort("step")
            )
            lines = view.panel("annotation").query_one(Bars).render().plain.splitlines()
            assert len(lines) == expected.height
            for line, row in zip(lines, expected.iter_rows(named=True), strict=True):
                assert line.startswith(f"step {row['step']}")
                assert line.rstrip().endswith(f"{fmt_ns(row['time_ns'])} ({fmt_pct(row['share'])})")
            title = str(view.panel("annotation").query_one(".chart-text").render())
            assert name in title

    asyncio.run(go())
