"""Rough edges of keys and wording (#37 item 12), checked as a user meets them: the CLI's text,
``--help`` at 80 columns, and the app driven by keys."""

from __future__ import annotations

import re
import subprocess
from itertools import pairwise
from pathlib import Path

import pytest

from profui.capture.ingest import import_trace

from realdata import nsys_export, run_profui, shared_trace


def profui(*args: str | Path, columns: int = 80, cache: Path | None = None) -> subprocess.CompletedProcess:
    return run_profui(*args, cache=cache, COLUMNS=str(columns), NO_COLOR="1", TERM="dumb")


@pytest.fixture(scope="module")
def one_rank(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("rough") / "one"
    import_trace([shared_trace("hta-trace_filter-sampled_rank-1.json.gz")], out)
    return out


def test_summary_says_rank_1_not_ranks_1(one_rank: Path, tmp_path: Path) -> None:
    proc = profui("summary", one_rank, columns=120, cache=tmp_path)
    assert proc.returncode == 0, proc.stderr
    # the status line, found by what it says: the headline above it may wrap to any number of lines
    head = next((line for line in proc.stdout.splitlines() if line.startswith("status ")), "")
    # the trace's one rank is rank 1 (distributedInfo), on one node
    assert re.search(r"(^|· )1 node · rank 1 ·", head), head
    assert "ranks" not in head and "nodes" not in head, head


COMMANDS = ["open", "import", "info", "summary", "analyze", "runs", "diff", "export"]


def _first_word(text: str) -> str:
    return text.split()[0] if text.split() else ""


#: The columns click lays a help out in at 80 columns (``min(columns, 80) - 2``).
HELP_WIDTH = 78
#: A description's continuation lines start at its column: past the widest term and its gap.
_ROW = re.compile(r"^  (\S(?:.*?\S)?)  +(?=\S)")


def broken_lines(help_text: str, width: int = HELP_WIDTH) -> list[tuple[str, str]]:
    """Pairs of lines of one paragraph where the second's first word would have fitted on the
    first: a line broken before the width ran out (mid-sentence), as a reader sees it.

    Click's plain help: prose indented 2; an option's or a command's description in a column of
    its own (8 or more), its lines after the first indented to it; a paragraph kept as written
    (examples) indented 3 to 7, or under a heading ending in ':'."""
    bad: list[tuple[str, str]] = []
    in_list = False  # under "Options:", "Commands:", "Arguments:": a line indented 2 is a term
    for a, b in pairwise(help_text.splitlines()):
        if a and not a[0].isspace():
            in_list = a.rstrip().endswith(":") and not a.startswith("Usage:")
        if not a.strip() or not b.strip():
            continue
        indent_a, indent_b = len(a) - len(a.lstrip()), len(b) - len(b.lstrip())
        row = _ROW.match(a) if in_list else None
        prose = not in_list and indent_a == indent_b == 2 and not a.rstrip().endswith(":")
        described = (
            in_list
            and indent_b >= 8
            and (indent_a == indent_b or (row is not None and row.end() == indent_b))
        )
        if (prose or described) and len(a.rstrip()) + 1 + len(_first_word(b)) <= width:
            bad.append((a, b))
    return bad


def test_broken_lines_finds_a_line_broken_early_and_only_that() -> None:
    """The rule on hand-made help: each kind of line it reads, broken early and wrapped well."""
    wrapped = (
        "Usage: profui demo [OPTIONS]\n\n"
        "  First paragraph that fills the line to the width of the help before it\n"
        "  breaks.\n\n"
        "  Examples:\n"
        "    profui demo a\n"
        "    profui demo b\n\n"
        "Options:\n"
        "  --top <int>  Rows in the top-N tables (kernels, launches, annotations);\n"
        "               top_n, 15 by default.\n"
        "  --a-very-long-option-name-that-fills-the-term-column <int>\n"
        "               Its description, on a line of its own.\n"
    )
    assert broken_lines(wrapped) == []
    early_prose = "  A paragraph broken\n  early.\n"
    early_row = "Options:\n  --top <int>  Rows in the\n               top-N tables.\n"
    early_more = "Options:\n  --top <int>  Rows in the top-N tables (kernels, launches, annotations);\n" + (
        "               top_n,\n               15 by default.\n"
    )
    assert broken_lines(early_prose) == [("  A paragraph broken", "  early.")]
    assert broken_lines(early_row) == [("  --top <int>  Rows in the", "               top-N tables.")]
    assert broken_lines(early_more) == [("               top_n,", "               15 by default.")]


@pytest.mark.parametrize("command", [None, *COMMANDS, "explain", "mcp", "schema"])
def test_help_breaks_no_line_mid_sentence_at_80_columns(command: str | None) -> None:
    proc = profui(*([command] if command else []), "--help", columns=80)
    assert proc.returncode == 0, proc.stderr
    assert "Traceback" not in proc.stderr
    assert all(len(line) <= 80 for line in proc.stdout.splitlines())
    assert broken_lines(proc.stdout) == []


@pytest.mark.parametrize("columns", [50, 60, 80])
@pytest.mark.parametrize("command", [None, *COMMANDS, "explain", "mcp", "schema"])
def test_help_never_breaks_a_line_inside_a_hyphenated_word(command: str | None, columns: int) -> None:
    """``--separate-jobs``, ``dask-jobqueue``, ``comma-separated`` stay whole on one line: a
    line that ends in a hyphen after a letter is a word cut in two (click's wrapper breaks there)."""
    proc = profui(*([command] if command else []), "--help", columns=columns)
    assert proc.returncode == 0, proc.stderr
    cut = [line for line in proc.stdout.splitlines() if re.search(r"\w-$", line)]
    assert cut == []
    words = " ".join(proc.stdout.split())
    assert "\u2011" not in proc.stdout  # the formatter's stand-in never reaches the user
    if command == "import":
        assert "--separate-jobs" in words


def test_bracket_presses_right_after_entering_the_launch_view_all_count(one_rank: Path) -> None:
    """``7`` then ``]`` three times, typed at once on first entering the Launch view (its tables
    still loading): the view shows its fourth table, as after three presses on a loaded view."""
    import asyncio

    from pilotwait import wait_for

    from profui.tui.app import OpenTarget, ProfuiApp
    from profui.tui.views.launches import LaunchesView

    async def go() -> None:
        app = ProfuiApp(OpenTarget("trace", one_rank), poll_s=600)
        async with app.run_test(size=(80, 24)) as pilot:
            await pilot.pause()
            await pilot.press("7", "right_square_bracket", "right_square_bracket", "right_square_bracket")
            assert await wait_for(pilot, lambda: bool(app.screen.query(LaunchesView)))
            view = app.screen.query_one(LaunchesView)
            assert await wait_for(pilot, lambda: view.ready)
            await pilot.pause()
            assert len(view.all_sections) > 4
            assert view.index == 3, view.section.title if view.section else None
            assert view.section.title == "Per kernel"  # Launches' 4th table

    asyncio.run(go())


def test_enter_on_an_aten_op_row_opens_the_timeline_at_its_first_call(one_rank: Path) -> None:
    """Launch view, table "ATen op → kernels": Enter on an op row shows the timeline with that
    op's earliest call selected (it did nothing: only kernel rows answered Enter)."""
    import asyncio
    import gzip
    import json

    from pilotwait import wait_for, wait_timeline

    from profui.tui.app import OpenTarget, ProfuiApp
    from profui.tui.views.launches import LaunchesView
    from profui.tui.widgets.frame_table import FrameTable

    with gzip.open(shared_trace("hta-trace_filter-sampled_rank-1.json.gz"), "rt") as f:
        raw = [e for e in json.load(f)["traceEvents"] if e.get("ph") == "X" and e.get("cat") == "cpu_op"]

    async def go() -> None:
        app = ProfuiApp(OpenTarget("trace", one_rank), poll_s=600)
        async with app.run_test(size=(80, 24)) as pilot:
            await pilot.pause()
            await pilot.press("7")
            assert await wait_for(pilot, lambda: bool(app.screen.query(LaunchesView)))
            view = app.screen.query_one(LaunchesView)
            assert await wait_for(pilot, lambda: view.ready)
            while view.section.title != "ATen op → kernels":
                await pilot.press("right_square_bracket")
            assert "Enter: timeline" in str(view.query_one(".view-status").render())
            table = view.query_one(FrameTable)
            table.focus()
            await pilot.press("enter")
            op = table.row_at_cursor()["aten_op"]
            assert await wait_for(pilot, lambda: app.screen.current == "timeline")
            tl = await wait_timeline(pilot, app)
            assert await wait_for(pilot, lambda: tl.state.selected >= 0)
            ix, pos = tl.state.ix, tl.state.selected
            assert ix.names[int(ix.name[pos])] == op
            first_us = min(e["ts"] for e in raw if e["name"] == op)
            assert abs(int(ix.t[pos]) + ix.base_ns - round(first_us * 1000)) <= 1000, (op, first_us)
            # the search the jump made reads as typed: one slash each side, not "//^op$/"
            from profui.tui.timeline.details import status_text

            line = status_text(tl.state).plain
            assert f" · /^{re.escape(op)}$/ " in line and "//" not in line, line

    asyncio.run(go())


def test_question_mark_lists_the_keys_in_open_diff(one_rank: Path, tmp_path: Path) -> None:
    """``profui open --diff``: ``?`` shows the diff's keys (it did nothing), ``?`` again closes."""
    import asyncio

    from pilotwait import wait_for

    from profui.analysis.diff import diff, profile_of
    from profui.tui.screens.diff import DiffApp
    from profui.tui.screens.help import HelpScreen

    other = tmp_path / "rank0"
    import_trace([shared_trace("hta-trace_filter-sampled_rank-0.json.gz")], other)
    result = diff(profile_of(other), profile_of(one_rank))

    async def go() -> None:
        app = DiffApp(other, one_rank, result)
        async with app.run_test(size=(80, 24)) as pilot:
            await pilot.pause()
            await pilot.press("question_mark")
            assert await wait_for(pilot, lambda: isinstance(app.screen, HelpScreen))
            text = str(app.screen.query_one("#help-text").render())
            for words in ("Quit", "Next table"):
                assert words in text, text
            assert "number keys" not in text  # the diff has no views to switch
            await pilot.press("question_mark")
            assert await wait_for(pilot, lambda: not isinstance(app.screen, HelpScreen))

    asyncio.run(go())


def test_monochrome_line_chart_gives_each_series_its_own_marker(tmp_path: Path, monkeypatch) -> None:
    """NO_COLOR, the two-rank trace's utilization chart (one line per node): each series is
    drawn with a glyph of its own that its legend shows (the first was braille, which reads as
    the second's "•"), and the points the nodes share are marked as shared, not hidden under
    the last line drawn."""
    import asyncio

    from pilotwait import wait_dashboard

    from profui.tui.app import OpenTarget, ProfuiApp
    from profui.tui.widgets.charts import LinePlot

    monkeypatch.setenv("NO_COLOR", "1")
    trace = tmp_path / "two"
    import_trace([shared_trace(f"hta-trace_filter-sampled_rank-{r}.json.gz") for r in (0, 1)], trace)

    async def go() -> None:
        app = ProfuiApp(OpenTarget("trace", trace), poll_s=600)
        async with app.run_test(size=(80, 24)) as pilot:
            view = await wait_dashboard(pilot, app)
            panel = view.panel("gpu_util")
            series = panel.data.series
            assert len(series) == 2
            text = re.sub(r"\x1b\[[0-9;]*m", "", panel.query_one(LinePlot).plt.build())
            assert not re.search("[\u2800-\u28ff]", text), "braille in a monochrome chart"
            legend = {}
            for s in series:
                line = next(ln for ln in text.splitlines() if f" {s.label}" in ln)
                mark = re.search(r"(\S)\1 " + re.escape(s.label), line)
                assert mark, line
                legend[s.label] = mark.group(1)
            assert len(set(legend.values())) == 2, legend
            plot_area = "\n".join(ln.split("┤", 1)[-1] for ln in text.splitlines())
            for s in series:
                assert plot_area.count(legend[s.label]) > 2, (s.label, legend)  # drawn, beyond the legend
            shared = set(zip(series[0].xs, series[0].ys, strict=True)) & set(
                zip(series[1].xs, series[1].ys, strict=True)
            )
            assert shared  # both nodes idle (0%) or full (100%) in the same buckets
            assert "## several" in text and plot_area.count("#") > 2

    asyncio.run(go())


def test_header_names_no_gpu_the_same_way_while_loading_and_after(tmp_path: Path) -> None:
    """The CPU MLP sample opened cold: the header never says "0 GPUs listed" (it read "no GPU"
    in one view and "0 GPUs listed" in another), before the analysis is in or after."""
    import asyncio
    import shutil

    from pilotwait import wait_dashboard

    from profui.tui.app import OpenTarget, ProfuiApp

    from realdata import SAMPLES

    trace = tmp_path / "mlp_cpu"
    shutil.copytree(SAMPLES / "mlp_cpu", trace, ignore=shutil.ignore_patterns(".profui"))
    seen: list[str] = []

    async def go() -> None:
        app = ProfuiApp(OpenTarget("trace", trace), poll_s=600)
        async with app.run_test(size=(80, 24)) as pilot:
            await pilot.pause()
            seen.append(app.screen._compositor.render_strips()[0].text)
            await wait_dashboard(pilot, app)
            for key in ("2", "3", "1"):
                await pilot.press(key)
                await pilot.pause()
                seen.append(app.screen._compositor.render_strips()[0].text)

    asyncio.run(go())
    for head in seen:
        assert "1 node · 1 rank" in head, head
        assert not re.search(r"\b0 GPUs?\b|GPUs listed", head), head
    assert len({re.sub(r"\s+", " ", h).strip() for h in seen[1:]}) == 1, seen  # one wording in every view


def test_keys_typed_in_one_burst_while_the_launch_view_mounts_all_count(one_rank: Path) -> None:
    """``7]]]]`` arriving in one burst (as a terminal sends a fast typist's or a paste's keys):
    the ``]`` that land before the Launch view is mounted and focused go to it, not to the
    dashboard left behind."""
    import asyncio

    from pilotwait import wait_dashboard, wait_for
    from textual import events

    from profui.tui.app import OpenTarget, ProfuiApp
    from profui.tui.views.launches import LaunchesView

    async def go() -> None:
        app = ProfuiApp(OpenTarget("trace", one_rank), poll_s=600)
        async with app.run_test(size=(80, 24)) as pilot:
            dash = await wait_dashboard(pilot, app)
            focused_chart = app.focused
            for key, char in [("7", "7"), *[("right_square_bracket", "]")] * 4]:
                app.post_message(events.Key(key, char))
            assert await wait_for(pilot, lambda: bool(app.screen.query(LaunchesView)))
            view = app.screen.query_one(LaunchesView)
            assert await wait_for(pilot, lambda: view.ready)
            for _ in range(5):
                await pilot.pause()
            assert view.index == 4, view.section.title if view.section else None
            assert dash.query(type(focused_chart)) is not None

    asyncio.run(go())


def test_a_rank_of_one_step_says_1_step(tmp_path: Path) -> None:
    """The step charts' rank line counts steps in words that agree with the count: an Nsight
    export whose ranks each ran one step ('modal rank 0 · 1 step', not '1 steps')."""
    from profui.analysis import open_trace
    from profui.analysis.notebook import stage_run
    from profui.tui.views.dashboard_charts import build_steps

    trace = tmp_path / "one_step"
    import_trace([nsys_export("mfu_2gpu_before")], trace)
    result = stage_run(open_trace(trace), "summary", {})
    windows = result.steps.windows
    first = windows.sort("node", "rank").row(0, named=True)
    steps = windows.filter((windows["node"] == first["node"]) & (windows["rank"] == first["rank"])).height
    assert steps == 1  # the case this test is for
    line = str(build_steps(result, None).text)
    assert f"rank {first['rank']} · 1 step" in line and "1 steps" not in line, line


def test_each_view_has_one_name() -> None:
    """A view's tab at 80 columns shows its short title, at 200 its title; ``?`` and ``profui open
    --help`` name it too. The short title is the title cut short (Dash, Time, Find), so every
    place names one view: view 4 was 'Runs' at 80 columns and 'Analyses' everywhere else."""
    from profui.tui.app import VIEWS

    for view in VIEWS:
        assert view.title.startswith(view.short or view.title), view
    helped = " ".join(profui("open", "--help", columns=200).stdout.split())
    listed = re.search(r"switch views \(([^)]*)\)", helped)
    assert listed is not None, helped
    numbered = [v for v in VIEWS if v.key.isdigit()]
    names = listed.group(1).split(", ")
    assert len(names) == len(numbered)
    assert all(name in (v.title, v.short) for name, v in zip(names, numbered, strict=True)), names
    assert "analyses" not in helped.lower()


def test_the_keys_line_keeps_its_help_key_at_80_columns(one_rank: Path) -> None:
    """The keys line at the bottom of every view, at 80 columns: the timeline's 12 keys do not
    fit, and the line was cut after 'Next step/match', losing '? Keys', the key that lists
    them all. It now keeps the first keys that fit, then '…' and '? Keys'; at 200 columns every
    key is shown. Checked on the dashboard, a table view and the timeline."""
    import asyncio

    from pilotwait import wait_for

    from profui.tui.app import OpenTarget, ProfuiApp
    from profui.tui.widgets.keyline import KeyLine

    def line(app) -> str:
        return str(app.screen.query_one(KeyLine).render()).rstrip()

    async def go(width: int) -> dict[str, str]:
        seen = {}
        app = ProfuiApp(OpenTarget("trace", one_rank), poll_s=600)
        async with app.run_test(size=(width, 24)) as pilot:
            # a key of each view's own on the line says its bindings are the active ones
            for key, own in (("1", "] Next chart"), ("7", "] Next table"), ("5", "+ Zoom in")):
                await pilot.press(key)
                assert await wait_for(pilot, lambda own=own: own in line(app)), line(app)
                await pilot.pause()
                seen[key] = line(app)
        return seen

    narrow, wide = asyncio.run(go(80)), asyncio.run(go(200))
    for key in narrow:
        assert narrow[key].endswith("? Keys") and len(narrow[key]) <= 78, narrow[key]
    assert "…" in narrow["5"] and "…" not in wide["5"], (narrow["5"], wide["5"])
    assert "g Go to step" in wide["5"] and "/ Search" in wide["5"]


def test_a_views_status_line_wraps_at_80_columns(tmp_path: Path) -> None:
    """The Idle view of HTA's CPU-only trace at 80 columns says why it is empty in one sentence
    of 110 characters: all of it, on two lines (it was cut at 'the host's time')."""
    import asyncio

    from pilotwait import wait_for
    from textual.widgets import Static

    from profui.analysis.devices import does_not_apply
    from profui.tui.app import OpenTarget, ProfuiApp
    from profui.tui.views.idle import IdleView

    trace = tmp_path / "cpu_only"
    import_trace([shared_trace("hta-cpu_only-rank-34.Jul_15_10_52_41.1074.pt.trace.json.gz")], trace)
    said = does_not_apply("the host's time outside any op per step is in the Steps view")
    assert len(said) > 78  # the case this test is for

    async def go() -> str:
        app = ProfuiApp(OpenTarget("trace", trace), poll_s=600)
        async with app.run_test(size=(80, 24)) as pilot:
            await pilot.pause()
            await pilot.press("8")
            assert await wait_for(pilot, lambda: bool(app.screen.query(IdleView)))
            view = app.screen.query_one(IdleView)
            status = view.query_one(".view-status", Static)
            assert await wait_for(pilot, lambda: "Does not apply" in str(status.render()))
            await pilot.pause()
            # the lines drawn on screen, at the widget's size
            return " ".join(strip.text for strip in status.render_lines(status.region.reset_offset))

    shown = asyncio.run(go())
    assert " ".join(said.split()) in " ".join(shown.split()), shown
