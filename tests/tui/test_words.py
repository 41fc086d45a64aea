"""The words around the numbers, as a user reads them at 80×24 on a real trace (HTA's NCCL
trace): the GPU count in the title, the keys ``?`` lists, long kernel names in the Kernels view
and its full-name detail line. Oracles: the raw Kineto JSON and hand-checked names."""

from __future__ import annotations

import asyncio
import gzip
import json
from pathlib import Path

import pytest
from pilotwait import wait_dashboard, wait_for
from textual.widgets import Static

from profui.analysis.formatting import fmt_ns
from profui.capture.ingest import import_trace
from profui.tui.app import OpenTarget, ProfuiApp
from profui.tui.screens.help import HelpScreen
from profui.tui.views.kernels import KernelsView
from profui.tui.widgets.frame_table import FrameTable

from realdata import shared_trace

NCCL = "hta-nccl_parser_config-nccl_data.json.gz"


@pytest.fixture(scope="module")
def trace(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("words") / "nccl"
    import_trace([shared_trace(NCCL)], out)
    return out


@pytest.fixture(scope="module")
def raw() -> dict:
    return json.loads(gzip.decompress(shared_trace(NCCL).read_bytes()))


def test_title_says_how_many_of_the_listed_gpus_ran_anything(trace: Path, raw: dict) -> None:
    listed = len(raw["deviceProperties"])
    used = {e["args"]["device"] for e in raw["traceEvents"] if e.get("cat") == "kernel"}
    assert (listed, len(used)) == (8, 1)

    async def go() -> None:
        app = ProfuiApp(OpenTarget("trace", trace), poll_s=60)
        async with app.run_test(size=(80, 24)) as pilot:
            await wait_dashboard(pilot, app)
            title = app.screen.query_one("#trace-title", Static).render().plain
            assert " · 1 of 8 GPUs active · " in title, title

    asyncio.run(go())  # cold: analysed in the app
    asyncio.run(go())  # warm: the answers read back from the stage cache


def test_help_lists_this_apps_keys_once_each(trace: Path) -> None:
    async def go() -> None:
        app = ProfuiApp(OpenTarget("trace", trace), poll_s=60)
        async with app.run_test(size=(80, 24)) as pilot:
            await wait_dashboard(pilot, app)
            await pilot.press("question_mark")
            assert await wait_for(pilot, lambda: isinstance(app.screen, HelpScreen))
            keys = app.screen.keys
            descriptions = [d for _, d in keys]
            assert "Copy selected text" not in descriptions  # Textual's, not ours
            assert descriptions.count("Quit") == 1
            quit_keys = dict((d, k) for k, d in keys)["Quit"]
            assert set(quit_keys.split(", ")) == {"q", "^c"}
            assert len(descriptions) == len(set(descriptions)) or all(
                descriptions.count(d) == 1 for d in ("Next view", "Keys", "Reload")
            )

    asyncio.run(go())


def test_kernel_names_stay_distinct_at_80_columns_and_the_detail_line_has_the_full_name(
    trace: Path, raw: dict
) -> None:
    names = {e["name"] for e in raw["traceEvents"] if e.get("cat") == "kernel"}

    async def go() -> None:
        app = ProfuiApp(OpenTarget("trace", trace), poll_s=60)
        async with app.run_test(size=(80, 24)) as pilot:
            await wait_dashboard(pilot, app)
            await pilot.press("2")
            view = app.screen.query_one(KernelsView)
            assert await wait_for(pilot, lambda: view.ready)
            table = view.query_one(FrameTable)
            shown = [str(table.get_cell_at((i, 0))) for i in range(table.row_count)]
            assert table.row_count == len(names)
            # cut at the end, 70 kernels collapse into fewer distinct strings; elided, they do not
            assert len(set(shown)) == len(names)
            assert max(len(s) for s in shown) <= table.columns[table.ordered_columns[0].key].width
            for row in (0, 3):
                table.move_cursor(row=row)
                await pilot.pause()
                detail = view.query_one("#kernels-detail", Static).render().plain
                row = table.row_at_cursor()
                stats, full = detail.split("\n", 1)
                assert full == row["name"] and full in names
                # the distribution the 80-column table cannot show beside the name
                assert stats == (
                    f"mean {fmt_ns(row['mean_ns'])} · p50 {fmt_ns(row['p50_ns'])} · "
                    f"p95 {fmt_ns(row['p95_ns'])} · max {fmt_ns(row['max_ns'])}"
                )

    asyncio.run(go())
