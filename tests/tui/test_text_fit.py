"""Text cut to the terminal's width (#37 item 10): numbers and their units are never cut, long
names are elided in the middle, and rows that differ still read differently.

Real two-rank trace (``hta-trace_filter-sampled_rank-{0,1}``: node names that share their first
29 characters), ``profui summary`` at 80 and 120 columns, read as a user reads the screen.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
from rich.cells import cell_len

from profui.analysis.formatting import elide, elide_all
from profui.capture.ingest import import_trace

from realdata import shared_trace

PROFUI = str(Path(sys.executable).with_name("profui"))
NODES = [f"hta-trace_filter-sampled_rank-{r}" for r in (0, 1)]

#: A number as a reader expects it: digits (maybe ``<``, ``>``, ``-``, thousands commas,
#: a decimal point) and then, whole, one unit of those profui prints.
NUMBER = re.compile(
    r"[<>]?-?[\d,]+(\.\d+)?(e[+-]?\d+)?"
    r"( ?(ns|µs|ms|s|%|B|kB|MB|GB|TB|(?:B|kB|MB|GB)/s|[kMGTPE]?FLOP(/s)?))?"
    r"|\d+m\d\ds|\d+h\d\dm"
)


@pytest.fixture(scope="module")
def two_ranks(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("fit") / "two"
    import_trace([shared_trace(f"{n}.json.gz") for n in NODES], out)
    return out


def summary_at(trace: Path, columns: int, cache: Path) -> str:
    env = {**os.environ, "COLUMNS": str(columns), "NO_COLOR": "1", "PROFUI_CACHE": str(cache)}
    proc = subprocess.run(
        [PROFUI, "summary", str(trace)],
        capture_output=True,
        text=True,
        timeout=300,
        stdin=subprocess.DEVNULL,
        env=env,
    )
    assert proc.returncode == 0, proc.stderr
    assert "Traceback" not in proc.stderr
    return proc.stdout


def tables(text: str) -> list[tuple[str, list[str], list[list[str]]]]:
    """Each table printed: (title, headers, rows of cells), from the box-drawn lines."""
    out: list[tuple[str, list[str], list[list[str]]]] = []
    title = ""
    for line in text.splitlines():
        if line.startswith("┃"):
            out.append((title, [c.strip() for c in line.strip("┃").split("┃")], []))
        elif line.startswith("│") and out:
            out[-1][2].append([c.strip() for c in line.strip("│").split("│")])
        elif line.strip() and line[0] not in "┏┡└":
            title = line.strip()
    return out


@pytest.mark.parametrize("columns", [80, 120])
def test_summary_cuts_no_number_and_keeps_rows_distinct(
    two_ranks: Path, tmp_path: Path, columns: int
) -> None:
    text = summary_at(two_ranks, columns, tmp_path / "cache")
    for line in text.splitlines():
        assert cell_len(line.rstrip()) <= columns, line
    found = tables(text)
    assert len(found) > 20
    numbers = 0
    for title, headers, rows in found:
        for row in rows:
            assert len(row) == len(headers), (title, row)
            for header, cell in zip(headers, row, strict=True):
                assert header and "…" not in header, (title, headers)  # headers whole
                if cell[:1].isdigit() or cell[:1] in "<>":
                    numbers += 1
                    # a number with its unit, whole ("15.…", "213 M…" fail)
                    assert NUMBER.fullmatch(cell), (title, header, cell)
        if headers[0] == "node":
            # rows of both nodes (per rank, activity, stream...): the two never read the same
            seen = {row[0] for row in rows}
            assert len(seen) == 2, (title, seen)
            for cell in seen:
                assert cell in NODES or (cell.startswith("hta-") and cell[-7:] in ("_rank-0", "_rank-1")), (
                    cell
                )
        if headers[0] == "kernel" and title.startswith("Top 15 kernels by"):
            names = [row[0] for row in rows]
            assert len(set(names)) == len(names), (title, names)  # one row per kernel name
    assert numbers > 300


def test_info_device_lines_keep_the_nodes_apart(two_ranks: Path) -> None:
    proc = subprocess.run(
        [PROFUI, "info", str(two_ranks)],
        capture_output=True,
        text=True,
        timeout=120,
        stdin=subprocess.DEVNULL,
    )
    assert proc.returncode == 0, proc.stderr
    lines = proc.stdout.splitlines()
    at = next(i for i, line in enumerate(lines) if line.split()[:2] == ["device", "events"])
    devices = [line.split()[0] for line in lines[at + 1 :] if line.strip()]
    assert len(devices) == 2 and devices[0] != devices[1], devices  # was "hta-trace_filter-s" twice
    for node, cell in zip(NODES, devices, strict=True):
        assert cell == node or (cell.startswith("hta-") and "…" in cell and cell.endswith(node[-6:])), cell


def test_elide_keeps_head_and_tail_of_any_text() -> None:
    a, b = elide_all(NODES, 16, bare=False)
    assert a != b
    assert a.endswith("rank-0") and b.endswith("rank-1")
    assert a.startswith("hta-") and len(a) == 16 and "…" in a
    # text that is not a kernel name keeps its "ns::" and "(...)": nothing is made bare
    assert elide("a::b::c(int, float) and more", 12, bare=False) == "a::b::… more"


def screen_lines(app) -> list[str]:
    """The screen as drawn, one string per terminal line."""
    return [strip.text for strip in app.screen._compositor.render_strips()]


DURATION = re.compile(r"[\d.,]+ (ns|µs|ms|s)")


def test_kernels_view_cuts_no_cell_at_the_screen_edge(tmp_path: Path) -> None:
    """The JAX sample's short op names leave the p95/max columns at the right edge of 80
    columns: a column is on screen whole or not at all ("32" of "320 µs" read as a number)."""
    import asyncio

    from pilotwait import wait_for

    from profui.tui.app import OpenTarget, ProfuiApp
    from profui.tui.views.kernels import KernelsView

    from realdata import SAMPLES

    trace = tmp_path / "jax_cpu"
    import_trace([SAMPLES / "jax_cpu"], trace)

    async def go() -> None:
        app = ProfuiApp(OpenTarget("trace", trace), poll_s=600)
        async with app.run_test(size=(80, 24)) as pilot:
            await pilot.press("2")
            assert await wait_for(pilot, lambda: bool(app.screen.query(KernelsView)))
            view = app.screen.query_one(KernelsView)
            assert await wait_for(pilot, lambda: view.ready)
            await pilot.pause()
            lines = screen_lines(app)
            at = next(i for i, line in enumerate(lines) if line.split()[:1] == ["name"])
            headers = re.split(r" {2,}", lines[at].replace("▼", "").strip())
            rows = [re.split(r" {2,}", line.strip()) for line in lines[at + 1 : at + 6]]
            assert len(headers) >= 5, headers
            for row in rows:
                assert len(row) == len(headers), (headers, row)
                for header, cell in zip(headers, row, strict=True):
                    if header.strip() in ("total", "mean", "p50", "p95", "max", "min"):
                        assert DURATION.fullmatch(cell), (header, cell, row)

    asyncio.run(go())


def test_jobs_list_at_80_columns_keeps_every_column_and_says_the_whole_name(
    two_ranks: Path, tmp_path: Path
) -> None:
    """A jobs list with a long trace name beside a short one at 80x24: every column on screen
    whole (Size last), the names distinct, elided in the middle, and the highlighted trace's
    whole name in the status line."""
    import asyncio

    from pilotwait import wait_for

    from profui.tui.app import OpenTarget, ProfuiApp

    root = tmp_path / "jobs"
    long_name = "hta-trace_filter-sampled_rank-0+1-of-the-nightly-run"
    import_trace([shared_trace(f"{n}.json.gz") for n in NODES], root / long_name)
    import_trace([shared_trace("hta-trace_filter-sampled_rank-0.json.gz")], root / "r0")

    async def go() -> None:
        app = ProfuiApp(OpenTarget("jobs", root), poll_s=600)
        async with app.run_test(size=(80, 24)) as pilot:
            assert await wait_for(pilot, lambda: "2 of 2 traces" in "\n".join(screen_lines(app)))
            await pilot.pause()
            lines = screen_lines(app)
            head = next(i for i, line in enumerate(lines) if line.split()[:1] == ["Name"])
            assert lines[head].split()[-1] == "Size", lines[head]  # the last column on screen, whole
            rows = [line for line in lines[head + 1 : head + 3]]
            assert all(re.search(r"\d+(\.\d+)? (B|kB|MB|GB)\s*$", row) for row in rows), rows
            shown = {row.split()[0] for row in rows}
            assert "r0" in shown and len(shown) == 2
            (cut,) = shown - {"r0"}
            assert (
                "…" in cut
                and long_name.startswith(cut.split("…")[0])
                and long_name.endswith(cut.split("…")[1])
            )
            table = app.screen.query_one("#jobs-table")
            while not str(table.coordinate_to_cell_key((table.cursor_row, 0)).row_key.value).endswith(
                long_name
            ):
                await pilot.press("down")
            await pilot.pause()
            lines = screen_lines(app)
            at = next(i for i, line in enumerate(lines) if "traces · sorted by" in line)
            assert lines[at + 1].strip() == long_name, lines[at : at + 2]

    asyncio.run(go())
