"""The Findings view on the real Nsight Systems export ``nsys/h100_2gpu_1s`` (two GPUs copying
host→device most of the run): its top row is the transfer finding, and Enter opens the timeline
on the window the critical path was taken over (the export has no step markers: the stage's one
step is the whole trace) with that path drawn. Oracles: what the trace is known to do (copies,
issue 36) and ``profui explain --json`` (the path's stretches of that step and rank)."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

from pilotwait import wait_dashboard, wait_for
from typer.testing import CliRunner

from profui.tui.app import OpenTarget, ProfuiApp
from profui.tui.cli import app as cli_app
from profui.tui.timeline import TimelineView
from profui.tui.timeline.canvas import TimelineCanvas
from profui.tui.views.findings import FindingsView
from profui.tui.widgets.frame_table import FrameTable

from realdata import shared_trace

H100 = "nsys/h100_2gpu_1s.sqlite"


def test_the_top_finding_is_the_copies_and_enter_draws_its_path(tmp_path: Path) -> None:
    trace = tmp_path / "h100"
    res = CliRunner().invoke(cli_app, ["import", str(shared_trace(H100)), "-o", str(trace)])
    assert res.exit_code == 0, res.output
    doc = json.loads(CliRunner().invoke(cli_app, ["explain", str(trace), "--json"]).stdout)
    top = doc["findings"][0]
    at = top["timeline"]
    cp = json.loads(
        CliRunner()
        .invoke(
            cli_app, ["explain", str(trace), "--json", "--step", str(at["step"]), "--rank", str(at["rank"])]
        )
        .stdout
    )["critical_path"]

    async def go() -> None:
        app = ProfuiApp(OpenTarget("trace", trace), poll_s=3600)
        async with app.run_test(size=(80, 24)) as pilot:
            await wait_dashboard(pilot, app)
            await pilot.press("F")
            view = app.screen.query_one(FindingsView)
            assert await wait_for(pilot, lambda: view.ready)
            first = view.query_one("#findings", FrameTable).get_row_at(0)
            assert str(first[1]) == "transfer" == top["category"]
            # no step markers: the time saved is per trace (explain's words), and the worst
            # instance names no step (its 0 is the window's number, not a step of the run)
            table = view.query_one("#findings", FrameTable)
            heads = [str(c.label) for c in table.columns.values()]
            assert any("per trace" in h for h in heads) and not any("per step" in h for h in heads), heads
            assert " per trace (" in top["title"]
            where = str(view.query_one("#finding-where").render())
            assert f"worst at rank {at['rank']}\n" in where + "\n" and "step" not in where.split("look at")[0]
            assert not any(f["category"] == "launch" for f in doc["findings"])
            await pilot.press("enter")
            tl = app.screen.query_one(TimelineView)
            assert await wait_for(pilot, lambda: tl.state is not None and tl.state.paths is not None)
            await pilot.pause()
            st = tl.state
            base = st.ix.base_ns
            start = min(e["start_ns"] for e in cp["events"]) - base
            end = max(e["end_ns"] for e in cp["events"]) - base
            assert st.path_on and st.step_in_view() == at["step"]
            assert st.t0 <= start and end <= st.t1 and (st.t1 - st.t0) <= 1.1 * (end - start)
            assert st.path_message().startswith(f"critical path of step {at['step']}, rank {at['rank']}")
            # the path line names each column by the kind with the most path time in it: the
            # copies alternate with µs stream gaps (no run of one kind was two columns wide, so
            # the line had no word); the columns' kinds computed here from explain's stretches
            canvas = tl.query_one(TimelineCanvas)
            lw = canvas.renderer.label_width(canvas.size.width)
            line = "".join(seg.text for seg in canvas.frame()[2])[lw:]
            w = (st.t1 - st.t0) / len(line)
            most = []
            for c in range(len(line)):
                lo, hi = st.t0 + c * w, st.t0 + (c + 1) * w
                by: dict[str, float] = {}
                for e in cp["events"]:
                    cut = min(e["end_ns"] - base, hi) - max(e["start_ns"] - base, lo)
                    if cut > 0:
                        by[e["kind"]] = by.get(e["kind"], 0) + cut
                most.append(max(by, key=by.get) if by else None)
            copies = [c for c, k in enumerate(most) if k == "transfer"]
            assert len(copies) >= len(line) // 2, most  # 685 of 969 ms
            first = copies[0]
            assert line[first : first + 5] == "├copy", line

    asyncio.run(go())
