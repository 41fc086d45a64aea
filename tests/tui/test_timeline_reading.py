"""Reading the timeline as a user does at 80×24 without colour: every step drawn on its
thread, the training loop's thread open, folded rows never blank, a lane cursor that is a
glyph (not only bold), a selection let go when a jump moves it off screen. On HTA's NCCL
trace and on a real profcap CPU run (whose steps end inside the optimizer's range). Oracle:
the trace's step events read with pyarrow, the raw events of the trace."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import numpy as np
import polars as pl
import pyarrow.parquet as pq
import pytest

from profui.analysis import open_trace
from profui.analysis.lod_open import open_lod
from profui.capture.ingest import import_trace
from profui.tui.timeline.render import Renderer
from profui.tui.timeline.state import TimelineState

from realdata import shared_trace

NCCL = "hta-nccl_parser_config-nccl_data.json.gz"
JOB = r"""
import torch
torch.manual_seed(0)
torch.set_num_threads(1)
model = torch.nn.Sequential(torch.nn.Linear(64, 128), torch.nn.ReLU(), torch.nn.Linear(128, 10))
opt = torch.optim.SGD(model.parameters(), lr=0.01)
for i in range(20):
    x, y = torch.randn(32, 64), torch.randint(0, 10, (32,))
    loss = torch.nn.functional.cross_entropy(model(x), y)
    opt.zero_grad()
    loss.backward()
    opt.step()
"""


@pytest.fixture(scope="module")
def nccl(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("tlread") / "nccl"
    import_trace([shared_trace(NCCL)], out)
    return out


@pytest.fixture(scope="module")
def profcap_run(tmp_path_factory) -> Path:
    tmp = tmp_path_factory.mktemp("tlread_pc")
    (tmp / "job.py").write_text(JOB)
    trace = tmp / "trace"
    cmd = [sys.executable, "-m", "profui.capture.profcap", "-o", str(trace), "--steps", "10-12", "--no-perf"]
    proc = subprocess.run(
        [*cmd, "--", sys.executable, str(tmp / "job.py")], capture_output=True, text=True, timeout=180
    )
    assert proc.returncode == 0, proc.stderr
    return trace


def frame_text(state: TimelineState, width: int = 80, height: int = 22) -> list[str]:
    return ["".join(seg.text for seg in strip) for strip in Renderer(state).render(width, height)]


def row_line(state: TimelineState, lines: list[str], pred) -> str:
    rows = state.visible_rows()[state.top :]
    i = next(i for i, vr in enumerate(rows) if pred(vr))
    return lines[2 + i]  # below the ruler and the step band


def test_every_step_is_drawn_on_its_thread_in_a_profcap_trace(profcap_run: Path) -> None:
    steps = [
        r
        for f in sorted(profcap_run.glob("node=*/rank=*/events-*.parquet"))
        for r in pq.read_table(f).to_pylist()
        if r["kind"] == "step"
    ]
    assert sorted(s["name"] for s in steps) == ["ProfilerStep#10", "ProfilerStep#11", "ProfilerStep#12"]
    ops = [
        r
        for f in sorted(profcap_run.glob("node=*/rank=*/events-*.parquet"))
        for r in pq.read_table(f).to_pylist()
        if r["name"].startswith("Optimizer.step")
    ]
    # why nesting alone would hide them: a step ends inside the optimizer's range
    assert any(o["ts"] < s["ts"] + s["dur"] < o["ts"] + o["dur"] for o in ops for s in steps)
    ix = open_lod(profcap_run)
    st = TimelineState(ix)
    thread = next(ln for ln in ix.lanes() if ln.kind == "thread" and ln.tid == steps[0]["tid"])
    first = thread.rows[0]
    names = [ix.name_of(p) for p in range(ix.row_start[first], ix.row_start[first + 1])]
    assert sorted(names) == sorted(s["name"] for s in steps)
    assert thread.id not in st.collapsed  # the training loop's thread starts open
    base = min(
        r["ts"]
        for f in sorted(profcap_run.glob("node=*/rank=*/events-*.parquet"))
        for r in pq.read_table(f).to_pylist()
    )
    lines = frame_text(st)
    line = row_line(st, lines, lambda vr: vr.row == first)
    cells = line[18:]  # after the 18-column label
    w = (st.t1 - st.t0) / len(cells)
    for s in steps:  # each step's columns are drawn, not blank
        a = int((s["ts"] - base - st.t0) / w) + 1
        b = int((s["ts"] + s["dur"] - base - st.t0) / w) - 1
        assert cells[a:b].strip(), s["name"]


def test_folded_rows_are_never_blank_and_the_cursor_is_a_glyph(nccl: Path, monkeypatch) -> None:
    monkeypatch.setenv("NO_COLOR", "1")
    ev = open_trace(nccl).events().collect()
    loop_tid = ev.filter(pl.col("kind") == "step")["tid"][0]
    ix = open_lod(nccl)
    st = TimelineState(ix)
    loop = next(ln for ln in ix.lanes() if ln.kind == "thread" and ln.tid == loop_tid)
    busiest = max((ln for ln in ix.lanes() if ln.kind == "thread"), key=lambda ln: ln.n_events)
    assert busiest.tid != loop_tid  # the loop's thread is open although another has more events
    assert loop.id not in st.collapsed
    lines = frame_text(st)
    cursor_rows = [ln for ln in lines[2:] if ln.startswith("▶")]
    assert len(cursor_rows) == 1 and "▾" in cursor_rows[0][:4]  # the first lane, marked by a glyph
    # fold the loop's thread and its rank: each still shows its activity over the steps
    for lane in (loop, next(ln for ln in ix.lanes() if ln.kind == "rank")):
        st.collapsed.add(lane.id)
        st._rebuild()
        lines = frame_text(st)
        line = row_line(st, lines, lambda vr, lid=lane.id: vr.lane.id == lid)
        assert len(line[18:].replace("┊", "").strip()) > 40, line  # busy nearly all the time


def test_a_jump_lets_go_of_a_selection_it_moves_off_screen(nccl: Path) -> None:
    ix = open_lod(nccl)
    st = TimelineState(ix)
    assert st.goto_step(4)
    in_4 = next(
        p for p in range(ix.n_events) if st.t0 < ix.t[p] < ix.end[p] < st.t1 and ix.end[p] - ix.t[p] > 1000
    )
    st.select(int(in_4))
    assert st.selected == in_4
    assert st.goto_step(5)  # the next step: step 4's event is out of view
    assert not (st.t0 <= float(np.float64(ix.t[in_4])) <= st.t1)
    assert st.selected == -1
    assert not st.goto_step(41) and st.message == "no step 41 (steps 4–6)"


def test_a_job_step_in_view_is_labelled_with_its_own_number(tmp_path: Path) -> None:
    """The bundled job's ranks are skewed, so the job's step N (earliest start to latest end over
    its ranks) overlaps step N+1; after ``g N`` the step band labels the window #N (it read #N-1:
    the tail of the step before drawn over the step's own start). Oracle: the step events."""
    import shutil

    from realdata import SAMPLES

    trace = tmp_path / "job"
    shutil.copytree(SAMPLES / "synthetic_gpu", trace, ignore=shutil.ignore_patterns(".profui"))
    steps = (
        pl.scan_parquet(str(trace / "**" / "events-*.parquet"))
        .filter(pl.col("kind") == "step")
        .with_columns(pl.col("name").cast(pl.String).str.extract(r"#(\d+)$").cast(pl.Int64).alias("n"))
        .group_by("n")
        .agg(pl.col("ts").min().alias("a"), (pl.col("ts") + pl.col("dur")).max().alias("b"))
        .sort("n")
        .collect()
    )
    numbers, a, b = steps["n"].to_list(), steps["a"].to_list(), steps["b"].to_list()
    assert len(numbers) >= 5 and all(
        b[i] > a[i + 1] for i in range(len(numbers) - 1)
    )  # each overlaps the next
    st = TimelineState(open_lod(trace))
    for n in numbers:
        assert st.goto_step(n)
        band = frame_text(st)[1]
        assert band.split("│", 1)[1].split()[0] == f"#{n}", (n, band)
