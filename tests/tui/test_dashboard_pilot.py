"""The dashboard and the Kernels / Steps / Runs views, driven by keys on a real trace (HTA's NCCL
trace, imported with the project's importer). What is shown must equal what analysis returns:
each test computes the numbers with the analysis functions and compares them to the screen."""

from __future__ import annotations

import asyncio
import re
import shutil
from pathlib import Path

import pytest
from pilotwait import wait_dashboard, wait_for

from profui.analysis import open_trace
from profui.analysis.formatting import _bare, fmt_count, fmt_ns, fmt_pct
from profui.capture.ingest import import_trace
from profui.tui.app import OpenTarget, ProfuiApp
from profui.tui.views.dashboard import DashboardView
from profui.tui.views.dashboard_charts import kernel_label
from profui.tui.widgets.bars import Bars
from profui.tui.widgets.charts import ChartPanel

from realdata import shared_trace

NCCL = "hta-nccl_parser_config-nccl_data.json.gz"


@pytest.fixture(scope="module")
def imported(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("dash") / "nccl"
    import_trace([shared_trace(NCCL)], out)
    return out


@pytest.fixture()
def trace(imported: Path, tmp_path: Path) -> Path:
    """A fresh copy per test (the dashboard writes analysis outputs into .profui/)."""
    dst = tmp_path / "nccl"
    shutil.copytree(imported, dst)
    return dst


def bar_lines(panel: ChartPanel) -> list[str]:
    return panel.query_one(Bars).render().plain.splitlines()


def run(coro) -> None:
    asyncio.run(coro)


def test_kernel_charts_show_analysis_numbers(trace: Path) -> None:
    stats = open_trace(trace).kernels().sort(["total_ns", "name"], descending=[True, False])
    by_count = stats.sort(["count", "name"], descending=[True, False])

    async def go() -> None:
        app = ProfuiApp(OpenTarget("trace", trace), poll_s=60)
        async with app.run_test(size=(80, 24)) as pilot:
            view = await wait_dashboard(pilot, app)
            lines = bar_lines(view.panel("top_time"))
            assert len(lines) == min(15, stats.height)
            for line, row in zip(lines, stats.head(15).iter_rows(named=True), strict=True):
                assert line.rstrip().endswith(fmt_ns(row["total_ns"]))
                label = kernel_label(row["name"])
                shown = re.split("[█▏▎▍▌▋▊▉]", line)[0].rstrip()
                # whole, or elided in the middle (made bare first): its parts, in order, are the name's
                pieces = ".*".join(map(re.escape, shown.split("…")))
                assert any(re.fullmatch(pieces, n, re.S) for n in (label, _bare(label))), (shown, label)
            lines = bar_lines(view.panel("top_count"))
            for line, row in zip(lines, by_count.head(15).iter_rows(named=True), strict=True):
                assert line.rstrip().endswith(f"{fmt_count(row['count'])}×")
            total = view.panel("kernel_total").query_one(".chart-text").render()
            assert f"{fmt_ns(stats['total_ns'].sum())} summed kernel durations" in str(total)
            assert f"{fmt_count(stats.height)} distinct kernels" in str(total)

    run(go())


def test_gpu_active_per_gpu_and_overall(trace: Path) -> None:
    from profui.analysis.busy import total_busy

    t = open_trace(trace)
    per_gpu = t.gpu_busy()
    overall = total_busy(per_gpu).collect().row(0, named=True)

    async def go() -> None:
        app = ProfuiApp(OpenTarget("trace", trace), poll_s=60)
        async with app.run_test(size=(80, 24)) as pilot:
            view = await wait_dashboard(pilot, app)
            lines = bar_lines(view.panel("gpu_active"))
            expected = [per_gpu.row(i, named=True) for i in range(per_gpu.height)]
            if per_gpu.height > 1:
                expected.insert(0, overall)
            assert len(lines) == len(expected)
            for line, row in zip(lines, expected, strict=True):
                assert f"{fmt_pct(row['busy_share'])} active" in line
                assert fmt_ns(row["idle_ns"]) in line

    run(go())


def test_views_by_number_keys_and_kernels_table_sorts(trace: Path) -> None:
    stats = open_trace(trace).kernels()

    async def go() -> None:
        app = ProfuiApp(OpenTarget("trace", trace), poll_s=60)
        async with app.run_test(size=(80, 24)) as pilot:
            await wait_dashboard(pilot, app)
            await pilot.press("2")
            screen = app.screen
            assert screen.current == "kernels"
            table = screen.query_one("#kernels-table")
            await wait_for(pilot, lambda: table.row_count, 200)
            assert table.row_count == stats.height
            top = stats.sort(["total_ns"], descending=True, maintain_order=True).row(0, named=True)
            assert table.row_at_cursor()["name"] == top["name"]
            await pilot.press("s")  # next column after total: count
            assert table.sort_by == "count"
            await pilot.press("r")
            first = table.row_at_cursor()
            assert first["count"] == stats["count"].min()
            await pilot.press("tab")
            assert screen.current == "steps"
            await pilot.press("4")
            assert screen.current == "runs"
            runs = screen.query_one("#runs-table")
            await wait_for(pilot, lambda: runs.row_count, 200)
            from profui.analysis.pipeline import list_runs

            recorded = list_runs(trace)
            assert runs.row_count == len(recorded) >= 1
            assert runs.row_at_cursor()["id"] == recorded[-1].id
            stages = screen.query_one("#stages-table")
            assert stages.row_count == len(recorded[-1].stages)
            await pilot.press("1")
            assert screen.current == "dashboard"

    run(go())


def test_steps_view_rows_and_outliers(trace: Path) -> None:
    async def go() -> None:
        app = ProfuiApp(OpenTarget("trace", trace), poll_s=60)
        async with app.run_test(size=(80, 24)) as pilot:
            await wait_dashboard(pilot, app)
            from profui.analysis.pipeline import load_output

            windows = load_output(trace, "steps", "windows.parquet")
            await pilot.press("3")
            table = app.screen.query_one("#steps-table")
            await wait_for(pilot, lambda: table.row_count or windows is None, 200)
            if windows is None:
                pytest.skip("steps stage not available in this build")
            assert table.row_count == windows.height
            shown = sorted(table.frame["step"].to_list())
            assert shown == sorted(windows["step"].to_list())

    run(go())


def test_help_lists_keys_and_q_quits(trace: Path) -> None:
    async def go() -> None:
        app = ProfuiApp(OpenTarget("trace", trace), poll_s=60)
        async with app.run_test(size=(80, 24)) as pilot:
            await wait_dashboard(pilot, app)
            await pilot.press("question_mark")
            text = str(app.screen.query_one("#help-text").render())
            for words in (
                "Next chart",
                "Annotation",
                "Quit",
                "Next view",
                "Dashboard",
                "Kernels",
                "Timeline",
            ):
                assert words in text
            await pilot.press("escape")
            assert isinstance(app.screen.query_one(DashboardView), DashboardView)
            await pilot.press("q")
        assert app.return_code == 0

    run(go())


def test_second_open_reads_cached_outputs(trace: Path) -> None:
    async def open_once() -> str:
        app = ProfuiApp(OpenTarget("trace", trace), poll_s=60)
        async with app.run_test(size=(80, 24)) as pilot:
            view = await wait_dashboard(pilot, app)
            return view.session.source

    first = asyncio.run(open_once())
    second = asyncio.run(open_once())
    assert first.startswith("computed")
    assert second == "cache"
    from profui.analysis.pipeline import list_runs

    assert len(list_runs(trace)) == 1  # the warm open recorded no new run


def test_enter_jumps_from_chart_to_table_and_from_table_to_timeline(trace: Path) -> None:
    stats = open_trace(trace).kernels().sort(["total_ns", "name"], descending=[True, False])

    async def go() -> None:
        app = ProfuiApp(OpenTarget("trace", trace), poll_s=60)
        calls: list[dict] = []
        real = app.goto_timeline

        def spy(**where):
            calls.append(where)
            return real(**where)

        app.goto_timeline = spy  # type: ignore[method-assign]
        async with app.run_test(size=(80, 24)) as pilot:
            await wait_dashboard(pilot, app)
            screen = app.screen
            for _ in range(4):
                await pilot.press("right_square_bracket")
            assert app.focused.id == "chart-top_time"
            await pilot.press("enter")
            assert screen.current == "kernels"
            table = screen.query_one("#kernels-table")
            await wait_for(pilot, lambda: table.row_count, 200)
            await pilot.press("down", "enter")
            assert calls[-1] == {"kernel": stats["name"][1]}
            assert screen.current == ("timeline" if screen.has_view("timeline") else "kernels")
            await pilot.press("3")
            steps = screen.query_one("#steps-table")
            await wait_for(pilot, lambda: screen.query_one("#steps").ready, 500)
            first = steps.row_at_cursor()
            await pilot.press("enter")
            assert calls[-1] == {"step": first["step"], "rank": first["rank"], "node": first["node"]}

    run(go())


def test_kernels_filter_by_name(trace: Path) -> None:
    stats = open_trace(trace).kernels()
    expected = stats.filter(stats["name"].str.to_lowercase().str.contains("nccl", literal=True)).height

    async def go() -> None:
        app = ProfuiApp(OpenTarget("trace", trace), poll_s=60)
        async with app.run_test(size=(80, 24)) as pilot:
            await wait_dashboard(pilot, app)
            await pilot.press("2")
            view = app.screen.query_one("#kernels")
            await wait_for(pilot, lambda: view.ready, 200)
            table = app.screen.query_one("#kernels-table")
            await pilot.press("slash", "N", "C", "C", "L", "enter")
            assert 0 < expected < stats.height
            assert table.row_count == expected
            assert all("nccl" in n.lower() for n in table.frame["name"])
            await pilot.press("escape")
            assert table.row_count == stats.height

    run(go())


def test_a_registered_view_is_built_from_its_class(trace: Path) -> None:
    from textual.widgets import Static

    from profui.tui.app import VIEWS, ViewSpec
    from profui.tui.views.base import TraceView

    class PlainView(TraceView):
        def compose(self):
            yield Static("plain view", classes="plain")

    views = [*VIEWS, ViewSpec("plain", "Plain", "0", PlainView)]  # 1-9 are taken

    async def go() -> None:
        app = ProfuiApp(OpenTarget("trace", trace), views=views, poll_s=60)
        async with app.run_test(size=(80, 24)) as pilot:
            await wait_dashboard(pilot, app)
            assert "0 Plain" in str(app.screen.query_one("#view-tabs").render())
            await pilot.press("0")
            await pilot.pause()
            assert app.screen.current == "plain"
            assert str(app.screen.query_one("#plain .plain").render()) == "plain view"
            assert app.goto_view("plain", anything=1) is True  # no goto(): ignored, no crash
            assert app.goto_view("nope") is False

    run(go())
