"""The timeline's critical-path highlight, driven by keys on a real 3-rank gloo run recorded here
(``tests/analysis/injected/late_rank.py`` under ``profcap -- torchrun``), with ``NO_COLOR``.

The oracle is ``profui explain --json --step N --rank R`` (the command line's document, read as
JSON): the path's stretches of that rank and step. The path line must cover exactly the columns
those stretches touch (the column rule worked out here in plain Python), and ``p`` must take
the path line away again.
"""

from __future__ import annotations

import asyncio
import json
import math
import shutil
import sys
from pathlib import Path

import pytest
from pilotwait import wait_for, wait_timeline
from typer.testing import CliRunner

from profui.analysis.formatting import fmt_ns
from profui.tui.cli import app as cli_app
from profui.tui.timeline import TimelineApp
from profui.tui.timeline.canvas import TimelineCanvas
from profui.tui.timeline.render import PATH_EVENT, PATH_GAP_CHAR, STYLES

from realdata import REPO

sys.path.insert(0, str(REPO / "tests" / "analysis" / "injected"))
from runs import CAUSES, record  # noqa: E402

SIZE = (120, 40)


@pytest.fixture(scope="module")
def late(tmp_path_factory) -> Path:
    """The late-rank script recorded under profcap with torchrun (3 ranks, steps 4-9 traced)."""
    trace = tmp_path_factory.mktemp("cp") / "late_rank"
    proc = record(CAUSES["late_rank"], trace)
    assert proc.returncode == 0, proc.stderr[-2000:]
    return trace


def explain(trace: Path, *args: str) -> dict:
    res = CliRunner().invoke(cli_app, ["explain", str(trace), "--json", *args])
    assert res.exit_code == 0, res.output
    return json.loads(res.stdout)


def lines_of(canvas: TimelineCanvas) -> list[str]:
    return ["".join(seg.text for seg in strip) for strip in canvas.frame()]


def test_p_draws_the_step_in_views_path_where_explain_says_it_runs(
    late: Path, tmp_path: Path, monkeypatch
) -> None:
    monkeypatch.setenv("NO_COLOR", "1")
    trace = tmp_path / "t"
    shutil.copytree(late, trace)
    step = explain(trace)["step"]  # the job's median analysed step
    paths = {r: explain(trace, "--step", str(step), "--rank", str(r))["critical_path"] for r in (0, 1, 2)}
    assert all(p["events"] for p in paths.values())

    async def go() -> None:
        app = TimelineApp(trace)
        async with app.run_test(size=SIZE) as pilot:
            view = await wait_timeline(pilot, app)
            st = view.state
            canvas = view.query_one(TimelineCanvas)
            await pilot.press("g", *str(step), "enter")
            await pilot.pause()
            before = lines_of(canvas)
            assert st.step_in_view() == step and not st.path_on
            await pilot.press("p")
            assert await wait_for(pilot, lambda: st.paths is not None and st.path_on)
            await pilot.pause()
            base = st.ix.base_ns
            lw = canvas.renderer.label_width(canvas.size.width)
            cw = canvas.size.width - lw
            w = (st.t1 - st.t0) / cw
            for rank in (0, 1, 2):
                st.path_rank = rank
                st.version += 1
                canvas.refresh()
                await pilot.pause()
                lines = lines_of(canvas)
                label, cells = lines[2][: lw - 1].strip(), lines[2][lw:]
                assert label == f"path #{step} r{rank}"
                want: set[int] = set()
                for e in paths[rank]["events"]:
                    a = math.floor((e["start_ns"] - base - st.t0) / w)
                    b = max(a, math.ceil((e["end_ns"] - base - st.t0) / w) - 1)
                    want |= {c for c in range(a, b + 1) if 0 <= c < cw}
                assert {c for c, ch in enumerate(cells) if ch != " "} == want, rank
                # the status line gives the path's length as explain does
                length = fmt_ns(paths[rank]["length_ns"])
                assert st.path_message().startswith(f"critical path of step {step}, rank {rank}: {length}")
            # the path is drawn on the lanes too: between events ━, its events underlined
            assert any(PATH_GAP_CHAR * 3 in ln[lw:] for ln in lines[3:])
            styles = [seg.style for strip in canvas.frame()[3:] for seg in strip]
            assert STYLES[PATH_EVENT] in styles and STYLES[PATH_EVENT].underline
            await pilot.press("p")  # off again: the frame is the one before
            await pilot.pause()
            assert not st.path_on and lines_of(canvas)[2:] == before[2:]

    asyncio.run(go())
