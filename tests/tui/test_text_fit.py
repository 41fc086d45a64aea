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
from profui.capture.kineto import import_kineto

from realdata import shared_trace

PROFUI = str(Path(sys.executable).with_name("profui"))
NODES = [f"hta-trace_filter-sampled_rank-{r}" for r in (0, 1)]

#: A number as a reader expects it: digits (maybe ``<``, ``>``, ``-``, thousands commas,
#: a decimal point) and then, whole, one unit of those profui prints.
NUMBER = re.compile(
    r"[<>]?-?[\d,]+(\.\d+)?(e[+-]?\d+)?"
    r"( ?(ns|µs|ms|s|%|B|kB|MB|GB|TB|GB/s|[kMGTPE]?FLOP(/s)?))?"
    r"|\d+m\d\ds|\d+h\d\dm"
)


@pytest.fixture(scope="module")
def two_ranks(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("fit") / "two"
    import_kineto([shared_trace(f"{n}.json.gz") for n in NODES], out)
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


def test_elide_keeps_head_and_tail_of_any_text() -> None:
    a, b = elide_all(NODES, 16, bare=False)
    assert a != b
    assert a.endswith("rank-0") and b.endswith("rank-1")
    assert a.startswith("hta-") and len(a) == 16 and "…" in a
    # text that is not a kernel name keeps its "ns::" and "(...)": nothing is made bare
    assert elide("a::b::c(int, float) and more", 12, bare=False) == "a::b::… more"
