"""The Findings view driven by keys at 80×24 on a real CPU run recorded here: the injected host
stall (``tests/analysis/injected/host_stall.py``: 25 ms of sleep outside any op every step).

The oracles: the stall the script injects (``STALL_S``, a hand-set number), ``profui explain
--json`` (the command line's document of the same findings, read as JSON) for every cell, and
the raw events (pyarrow, no analysis) for where Enter takes the timeline: the rank's
``ProfilerStep#N`` window and the gap on its thread that no op covers.
"""

from __future__ import annotations

import asyncio
import json
import shutil
import sys
from pathlib import Path

import pyarrow.parquet as pq
import pytest
from pilotwait import wait_dashboard, wait_for
from typer.testing import CliRunner

from profui.analysis.formatting import fmt_ns, fmt_pct
from profui.capture.ingest import import_trace
from profui.tui.app import OpenTarget, ProfuiApp
from profui.tui.cli import app as cli_app
from profui.tui.timeline import TimelineView
from profui.tui.timeline.canvas import TimelineCanvas
from profui.tui.timeline.render import PATH_GAP_CHAR
from profui.tui.views.findings import FindingsView
from profui.tui.widgets.frame_table import FrameTable

from realdata import REPO

sys.path.insert(0, str(REPO / "tests" / "analysis" / "injected"))
import host_stall  # noqa: E402  (the script: its STALL_S)
from runs import CAUSES, record  # noqa: E402

SIZE = (80, 24)


@pytest.fixture(scope="module")
def stalled(tmp_path_factory) -> Path:
    """The host-stall script recorded under profcap (steps 4-9 traced)."""
    trace = tmp_path_factory.mktemp("findings") / "host_stall"
    proc = record(CAUSES["host_stall"], trace)
    assert proc.returncode == 0, proc.stderr[-2000:]
    return trace


def explain(trace: Path) -> dict:
    res = CliRunner().invoke(cli_app, ["explain", str(trace), "--json"])
    assert res.exit_code == 0, res.output
    return json.loads(res.stdout)


def cells(table: FrameTable) -> list[dict[str, str]]:
    """Every row as shown: column name -> the cell's text."""
    return [
        {
            c: getattr(v, "plain", None) or str(v)
            for c, v in zip(table.columns_shown, table.get_row_at(i), strict=True)
        }
        for i in range(table.row_count)
    ]


def raw_thread_events(trace: Path) -> list[dict]:
    """The trace's host events (cpu_op and step markers), read with pyarrow."""
    rows = []
    for f in sorted(trace.glob("node=*/rank=*/events-*.parquet")):
        rank = int(f.parent.name.split("=")[1])
        for r in pq.read_table(f, columns=["ts", "dur", "kind", "name", "tid"]).to_pylist():
            if r["kind"] in ("cpu_op", "step"):
                rows.append({**r, "rank": rank})
    return rows


def longest_uncovered(events: list[dict], rank: int, step: int) -> tuple[int, int, int]:
    """``(tid, start, end)`` of the longest stretch of step ``step``'s window on ``rank`` that no
    op covers, on the thread holding its ``ProfilerStep#`` marker (plain Python)."""
    marker = next(e for e in events if e["rank"] == rank and e["name"] == f"ProfilerStep#{step}")
    lo, hi = marker["ts"], marker["ts"] + marker["dur"]
    ops = sorted(
        (e["ts"], e["ts"] + e["dur"])
        for e in events
        if e["rank"] == rank and e["tid"] == marker["tid"] and e["kind"] == "cpu_op" and e["ts"] < hi
        if e["ts"] + e["dur"] > lo
    )
    best, at = (0, lo, lo), lo
    for s, e in [*ops, (hi, hi)]:
        if s > at and s - at > best[0]:
            best = (s - at, at, min(s, hi))
        at = max(at, e)
    return marker["tid"], best[1], best[2]


def test_findings_view_shows_explains_findings_and_enter_opens_the_stall(
    stalled: Path, tmp_path: Path
) -> None:
    trace = tmp_path / "t"
    shutil.copytree(stalled, trace)
    doc = explain(trace)
    want = doc["findings"]
    assert want, "the recorded stall gives findings"
    events = raw_thread_events(trace)

    async def go() -> None:
        app = ProfuiApp(OpenTarget("trace", trace), poll_s=3600)
        async with app.run_test(size=SIZE) as pilot:
            await wait_dashboard(pilot, app)
            await pilot.press("F")
            view = app.screen.query_one(FindingsView)
            assert await wait_for(pilot, lambda: view.ready)
            table = view.query_one("#findings", FrameTable)
            shown = cells(table)
            assert [r["#"] for r in shown] == [str(i) for i in range(1, len(want) + 1)]
            for row, f in zip(shown, want, strict=True):
                assert row["category"] == f["category"]
                assert row["per_step_ns"] == fmt_ns(f["recoverable_ns_per_step"])
                assert row["share"] == fmt_pct(f["recoverable_share"])
            # the top finding names the stall, and the time it would save is the sleep's, within 25%
            top = want[0]
            at = top["timeline"]  # explain's worst instance: rank, step, ts_ns
            assert top["category"] == "host"
            assert (
                abs(top["recoverable_ns_per_step"] - host_stall.STALL_S * 1e9)
                <= 0.25 * host_stall.STALL_S * 1e9
            )
            where = str(view.query_one("#finding-where").render())
            assert where.startswith(top["title"].split(":")[0]) and top["next_step"][:40] in where
            assert f"worst at rank {at['rank']}, step {at['step']}" in where
            ev = cells(view.query_one("#evidence", FrameTable))
            for r, e in zip(ev, top["evidence"], strict=True):  # a long label is cut in its middle
                head, cut, tail = r["label"].partition("…")
                assert r["label"] == e["label"] or (
                    cut and e["label"].startswith(head) and e["label"].endswith(tail)
                )
            for r, e in zip(ev, top["evidence"], strict=True):  # each value read by its own unit
                if e["unit"] == "ns":
                    assert r["value"] == fmt_ns(e["value"])
                elif e["unit"] == "fraction":
                    assert r["value"] == fmt_pct(e["value"])

            await pilot.press("enter")
            tl = app.screen.query_one(TimelineView)
            assert await wait_for(pilot, lambda: tl.state is not None and tl.state.paths is not None)
            await pilot.pause()
            st = tl.state
            assert st.path_on and st.step_in_view() == at["step"]
            # the window is the rank's step (1% margins), as the raw marker says
            tid, gap0, gap1 = longest_uncovered(events, at["rank"], at["step"])
            marker = next(
                e for e in events if e["rank"] == at["rank"] and e["name"] == f"ProfilerStep#{at['step']}"
            )
            base = min(e["ts"] for e in events)
            assert st.t0 <= marker["ts"] - base and marker["ts"] + marker["dur"] - base <= st.t1
            canvas = tl.query_one(TimelineCanvas)
            lines = ["".join(seg.text for seg in strip) for strip in canvas.frame()]
            assert lines[2].split("│")[0].strip() == f"path #{at['step']}"
            assert "host" in lines[2].split("│", 1)[1]
            # the stall is drawn ━ on the thread, over the uncovered gap's columns (±1)
            lw = canvas.renderer.label_width(canvas.size.width)
            cw = canvas.size.width - lw
            w = (st.t1 - st.t0) / cw
            drawn = [ln[lw:] for ln in lines[3:] if PATH_GAP_CHAR * 5 in ln]
            assert drawn, "\n".join(lines)
            cols = [i for i, ch in enumerate(drawn[0]) if ch == PATH_GAP_CHAR]
            assert abs(cols[0] - (gap0 - base - st.t0) / w) <= 1.5
            assert abs(cols[-1] + 1 - (gap1 - base - st.t0) / w) <= 1.5
            assert gap1 - gap0 >= 0.9 * host_stall.STALL_S * 1e9  # the gap is the sleep

    asyncio.run(go())


def test_a_trace_without_findings_says_so_in_the_dashboard_headlines_words(tmp_path: Path) -> None:
    """A hand-made (synthetic) Kineto trace whose only event is a 50 µs Python frame: its
    critical path is 50 µs outside any op, under the stall threshold, and no op runs, so
    ``profui explain --json`` lists no finding (every shared trace has one: a compute finding
    at least); the view says why, in the words the dashboard's headline says it, and shows no
    table."""
    src = tmp_path / "python_only.json"
    frame = {
        "ph": "X",
        "cat": "python_function",
        "name": "main.py(1): f",
        "pid": 1,
        "tid": 1,
        "ts": 100,
        "dur": 50,
    }
    src.write_text(json.dumps({"traceEvents": [frame]}))
    trace = tmp_path / "python_only"
    import_trace([src], trace)
    assert explain(trace)["findings"] == []

    async def go() -> None:
        app = ProfuiApp(OpenTarget("trace", trace), poll_s=3600)
        async with app.run_test(size=SIZE) as pilot:
            dash = await wait_dashboard(pilot, app)
            headline = str(dash.query_one("#dash-headline").render())
            await pilot.press("F")
            view = app.screen.query_one(FindingsView)
            assert await wait_for(pilot, lambda: view.ready)
            status = str(view.query_one("#findings-status").render())
            assert status == headline and status.startswith("No finding")
            assert view.query_one("#findings", FrameTable).row_count == 0

    asyncio.run(go())
