"""One answer, one place, for the analysis views: on every trace ``tests/test_one_answer.py``
reads, the Communication, Launches, Idle and Sync views — driven by keys — show in every cell
a number of ``profui summary --json``, formatted by its declared unit.

Each row a view shows is looked up in the summary's table of the same stage output (by all the
row's shown values) and each cell must read as that table's value does through the project's
formatting (``analysis/formatting.py`` via the declared units).
"""

from __future__ import annotations

import asyncio
import json
import re
import statistics

import pytest
from pilotwait import wait_for
from test_one_answer import _trace_files, imported  # noqa: F401  (imported is a fixture)
from typer.testing import CliRunner

from profui.analysis.formatting import _bare
from profui.tui.app import OpenTarget, ProfuiApp
from profui.tui.cli import app as cli_app
from profui.tui.views.table_sections import SectionsView
from profui.tui.widgets.frame_table import FrameTable, format_cell

from realdata import same_numbers

#: The analysis views by key.
VIEWS = {"6": "comm", "7": "launches", "8": "idle", "9": "sync"}


def _text(cell: object) -> str:
    return getattr(cell, "plain", None) or str(cell)


def _find(row: dict, rows: list[dict]) -> dict | None:
    """The summary row that has ``row``'s values (JSON-normalised) in all its keys."""
    want = json.loads(json.dumps(row, default=str))
    for r in rows:
        if all(k in r and same_numbers(want[k], r[k]) for k in want):
            return r
    return None


def _elided_from(got: str, want: str) -> bool:
    """``got`` is ``want`` (or its bare kernel name) with parts left out where ``…`` stands."""
    pattern = ".*".join(map(re.escape, got.split("…")))
    return any(re.fullmatch(pattern, w, re.S) for w in (want, _bare(want)))


def _shown_rows(table: FrameTable) -> list[dict]:
    frame = table.shown_frame().select(table.columns_shown)
    return [
        {k: (None if isinstance(v, float) and v != v else v) for k, v in r.items()}
        for r in frame.iter_rows(named=True)
    ]


@pytest.mark.parametrize("name", _trace_files())
def test_analysis_views_show_the_summary_numbers(name: str, imported) -> None:  # noqa: F811
    trace = imported(name)
    res = CliRunner().invoke(cli_app, ["summary", str(trace), "--json"])
    assert res.exit_code == 0, res.output
    doc = json.loads(res.stdout)
    checked = {"cells": 0, "empty": []}

    async def go() -> None:
        app = ProfuiApp(OpenTarget("trace", trace), poll_s=600)
        async with app.run_test(size=(160, 48)) as pilot:
            for key, view_id in VIEWS.items():
                await pilot.press(key)
                assert await wait_for(pilot, lambda v=view_id: bool(app.screen.query(f"#{v}")))
                view = app.screen.query_one(f"#{view_id}", SectionsView)
                assert await wait_for(pilot, lambda v=view: v.ready), view_id
                takeaway = _text(view.query_one(".view-takeaway").render())
                if view.empty(view.result):
                    checked["empty"].append(view_id)
                    assert not view.query_one(FrameTable).row_count
                    continue
                assert takeaway.split() == doc["takeaways"].get(view.TAKEAWAY, "").split()
                for _ in view.all_sections:
                    sec = view.section
                    table = view.query_one(FrameTable)
                    summary_rows = doc["sections"][sec.stage][sec.file.removesuffix(".parquet")]
                    for i, row in enumerate(_shown_rows(table)):
                        found = _find(row, summary_rows)
                        assert found is not None, (view_id, sec.title, row)
                        cells = table.get_row_at(i)
                        for col, cell in zip(table.columns_shown, cells, strict=True):
                            want = _text(format_cell(col, found[col], sec.units.get(col)))
                            got = _text(cell)
                            if got != want and isinstance(found[col], str):  # a long name elided
                                assert _elided_from(got, found[col]), (view_id, sec.title, col, got)
                            else:
                                assert got == want, (view_id, sec.title, col)
                            checked["cells"] += 1
                    await pilot.press("right_square_bracket")
                    await pilot.pause()

    asyncio.run(go())
    assert checked["cells"] or len(checked["empty"]) == len(VIEWS)


#: The Steps view's columns by the steps stage table that holds them (joined on node, rank, step).
STEP_TABLES = ("windows", "breakdown", "outliers")


@pytest.mark.parametrize("name", _trace_files())
def test_kernels_and_steps_views_show_the_summary_numbers(name: str, imported) -> None:  # noqa: F811
    """The Kernels and Steps tables, cell by cell, against ``profui summary --json``: a kernel
    row is the summary's kernels/stats row of that kernel; a step row's every column is the
    value the steps stage's windows / breakdown / outliers table has for that rank and step."""
    trace = imported(name)
    res = CliRunner().invoke(cli_app, ["summary", str(trace), "--json"])
    assert res.exit_code == 0, res.output
    doc = json.loads(res.stdout)
    steps = doc["sections"]["steps"]
    by_key = {t: {(r["node"], r["rank"], r["step"]): r for r in steps.get(t, [])} for t in STEP_TABLES}
    checked = {"kernels": 0, "steps": 0}

    def compare(table: FrameTable, i: int, found: dict, skip_first: bool) -> int:
        n = 0
        for j, (col, cell) in enumerate(zip(table.columns_shown, table.get_row_at(i), strict=True)):
            if j == 0 and skip_first:
                continue  # a long kernel name is elided: the row itself was matched by it
            assert _text(cell) == _text(format_cell(col, found[col])), (col, found.get(col))
            n += 1
        return n

    async def go() -> None:
        app = ProfuiApp(OpenTarget("trace", trace), poll_s=600)
        async with app.run_test(size=(160, 48)) as pilot:
            await pilot.press("2")
            view = app.screen.query_one("#kernels")
            assert await wait_for(pilot, lambda: view.ready)
            table = view.query_one(FrameTable)
            stats = doc["sections"]["kernels"]["stats"]
            for i, row in enumerate(_shown_rows(table)):
                found = _find(row, stats)
                assert found is not None, row
                checked["kernels"] += compare(table, i, found, skip_first=True)
            await pilot.press("3")
            view = app.screen.query_one("#steps")
            assert await wait_for(pilot, lambda: view.ready)
            table = view.query_one(FrameTable)
            frame = table.shown_frame()
            for i, row in enumerate(frame.iter_rows(named=True)):
                key = (row["node"], row["rank"], row["step"])
                for col, cell in zip(table.columns_shown, table.get_row_at(i), strict=True):
                    if col == "outlier":
                        assert _text(cell) in ("●", "") and (key in by_key["outliers"]) == (
                            _text(cell) == "●"
                        )
                        continue
                    if col == "vs_rank_median":  # every step's time ÷ its rank's median step
                        durs = [r["dur_ns"] for k, r in by_key["windows"].items() if k[:2] == key[:2]]
                        ratio = by_key["windows"][key]["dur_ns"] / statistics.median(durs)
                        assert _text(cell) == f"{ratio:.2f}×", (col, key)
                        if key in by_key["outliers"]:  # the flagged steps': analysis' own number
                            assert _text(cell) == f"{by_key['outliers'][key][col]:.2f}×", key
                        checked["steps"] += 1
                        continue
                    src = next(
                        (by_key[t][key] for t in STEP_TABLES if key in by_key[t] and col in by_key[t][key]),
                        None,
                    )
                    assert _text(cell) == _text(format_cell(col, src[col])), (col, key)
                    checked["steps"] += 1

    asyncio.run(go())
    assert checked["kernels"] or not doc["sections"]["kernels"]["stats"]
    assert checked["steps"] or not steps["windows"]
