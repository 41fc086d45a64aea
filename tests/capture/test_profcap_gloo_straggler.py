"""Real gloo DDP runs under ``profcap -- torchrun``: collective instances matched across ranks,
and the straggler rule on a 4-rank job with one late rank — every surface names it — checked
against the trace's ``gloo:*`` rows read here in plain Python."""

from __future__ import annotations

import asyncio
import subprocess
import sys
from pathlib import Path

import polars as pl
import pytest
from test_profcap_support import read_events, run_profcap
from textual.widgets import Static

from profui.analysis import open_trace
from profui.analysis.collectives import INSTANCE_COLUMNS, collective_instances
from profui.tui.app import OpenTarget, ProfuiApp
from profui.tui.views.steps import StepsView
from profui.tui.views.table_sections import SectionsView
from profui.tui.widgets.frame_table import FrameTable

from ddp_job import DDP_JOB


def torchrun(tmp: Path, ranks: int) -> list[str]:
    """The launcher of a ``ranks``-process standalone job running tmp/job.py."""
    return [
        sys.executable,
        "-m",
        "torch.distributed.run",
        "--standalone",
        "--nproc-per-node",
        str(ranks),
        str(tmp / "job.py"),
    ]


@pytest.fixture(scope="module")
def two_ranks(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("gloo2")
    proc, trace = run_profcap(
        tmp, ["--steps", "3-5"], DDP_JOB, cmd=torchrun(tmp, 2), env={"OMP_NUM_THREADS": "1"}
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    return trace, {rank: read_events(trace, rank) for rank in (0, 1)}


def test_collective_instances_number_each_ranks_gloo_rows_in_start_order(two_ranks):
    trace, rows = two_ranks
    got = collective_instances(open_trace(trace).events())
    assert got.columns == INSTANCE_COLUMNS
    for rank, rs in rows.items():
        # a gloo rank's communication is its backend ranges (gloo:*), c10d::* enqueues aside
        gloo = sorted((r for r in rs if r["name"].startswith("gloo:")), key=lambda r: (r["ts"], r["dur"]))
        assert gloo, "torch records gloo ranges"
        mine = got.filter(rank=rank).sort("arrive_ns", "end_ns")
        assert mine.height == len(gloo)
        seqs: dict[str, int] = {}
        expected = []
        for r in gloo:
            seq = seqs.get(r["name"], 0)
            seqs[r["name"]] = seq + 1
            expected.append((r["name"], seq, r["ts"], r["ts"] + r["dur"], r["tid"]))
        assert list(mine.select("name", "seq", "arrive_ns", "end_ns", "tid").iter_rows()) == expected
        assert set(mine["source"]) == {"host op"} and set(mine["collective"]) == {"AllReduce"}
    # both ranks ran the same all-reduces: each instance is found on both
    per = got.group_by("source", "collective", "seq").agg(pl.col("rank").n_unique().alias("ranks"))
    assert set(per["ranks"]) == {2}


#: A 4-rank gloo DDP job where rank 1 sleeps 50 ms before its backward in every step, outside any
#: op: the others wait for it inside the gradient all-reduce.
LATE = r"""
import os, time
import torch
import torch.distributed as dist

dist.init_process_group("gloo")
rank = dist.get_rank()
torch.manual_seed(rank)
torch.set_num_threads(1)
model = torch.nn.parallel.DistributedDataParallel(torch.nn.Linear(32, 8))
opt = torch.optim.SGD(model.parameters(), lr=0.01)
for i in range(9):
    x, y = torch.randn(16, 32), torch.randn(16, 8)
    loss = ((model(x) - y) ** 2).mean()
    opt.zero_grad()
    if rank == 1:
        time.sleep(0.05)
    loss.backward()
    opt.step()
dist.destroy_process_group()
os._exit(0)  # torch 2.13 CPU + gloo aborts now and then in its exit-time destructors
"""
SLEEP_NS = 50_000_000
GLOO = "gloo:all_reduce"


@pytest.fixture(scope="module")
def late_rank(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("gloo4")
    proc, trace = run_profcap(
        tmp, ["--steps", "2-7"], LATE, cmd=torchrun(tmp, 4), env={"OMP_NUM_THREADS": "1"}
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    rows = {rank: read_events(trace, rank) for rank in range(4)}
    return trace, rows, open_trace(trace).result("summary")["summary.json"]


def plain_stragglers(rows: dict[int, list[dict]]) -> dict[int, tuple[int, int, float]]:
    """step -> (straggler, lateness, others' mean wait) from the gloo:all_reduce rows: the k-th
    all-reduce of every rank is one collective; it belongs to the step whose marker holds it."""
    arrive: dict[int, dict[int, dict[int, int]]] = {}  # step -> rank -> seq -> arrival
    for rank, rs in rows.items():
        marks = sorted((r for r in rs if r["kind"] == "step"), key=lambda r: r["ts"])
        gloo = sorted((r for r in rs if r["name"] == GLOO), key=lambda r: (r["ts"], r["dur"]))
        for seq, r in enumerate(gloo):
            inside = [int(m["name"].split("#")[1]) for m in marks if m["ts"] <= r["ts"] < m["ts"] + m["dur"]]
            if inside:
                arrive.setdefault(inside[-1], {}).setdefault(rank, {})[seq] = r["ts"]
    out = {}
    for step, by_rank in arrive.items():
        seqs = set.intersection(*(set(a) for a in by_rank.values()))
        # lateness: the arrival minus the latest of the other ranks' (0 unless last)
        late = {
            rank: sum(max(a[k] - max(b[k] for o, b in by_rank.items() if o != rank), 0) for k in seqs)
            for rank, a in by_rank.items()
        }
        last = min(late, key=lambda r: (-late[r], r))
        waits = [sum(max(by_rank[last][k] - a[k], 0) for k in seqs) for r, a in by_rank.items() if r != last]
        out[step] = (last, late[last], sum(waits) / len(waits))
    return out


def test_the_late_rank_is_the_straggler_with_its_cost_and_cause(late_rank):
    trace, rows, summary = late_rank
    want = plain_stragglers(rows)
    st = summary.table("comm", "stragglers")
    assert st["step"].to_list() == sorted(want) and st.height >= 5
    for s in st.iter_rows(named=True):
        assert (s["straggler_rank"], s["lateness_ns"], s["wait_ns"]) == want[s["step"]]
        assert s["ranks"] == 4 and s["cause"] == "host" and s["recurs"]
        # its own stretch holds the sleep: its host time beyond the others' mean
        assert abs(s["cause_ns"] - SLEEP_NS) <= 0.25 * SLEEP_NS
        assert s["lateness_ns"] >= 0.75 * SLEEP_NS
    # lateness counts from the next-to-last rank, and 4 ranks on 2 cores leave the all-reduce up
    # to ~15 ms apart: a step can be off the sleep; the median step is the sleep
    assert abs(st["lateness_ns"].median() - SLEEP_NS) <= 0.25 * SLEEP_NS
    n = st.height
    assert f"rank 1 arrives last at the collectives in {n} of {n} steps" in summary.takeaways["comm"]


def straggler_table(text: str, title: str) -> list[str]:
    """The lines of the table titled ``title`` in a text summary, to its bottom border."""
    lines = text[text.index(title) :].splitlines()
    return lines[: next(i for i, line in enumerate(lines) if line.startswith("└")) + 1]


def test_summary_text_names_the_straggler(late_rank):
    trace, _, _ = late_rank
    profui = Path(sys.executable).with_name("profui")
    proc = subprocess.run([str(profui), "summary", str(trace)], capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    assert "rank 1 arrives last at the collectives" in proc.stdout
    title = "Straggler per step (the rank that arrives last at the collectives)"
    assert title in proc.stdout
    # by ranks (each rank a Dask task): the same table, reduced from the ranks' arrivals
    by_ranks = subprocess.run(
        [str(profui), "summary", str(trace), "--workers", "2"], capture_output=True, text=True, timeout=300
    )
    assert by_ranks.returncode == 0, by_ranks.stderr
    assert straggler_table(by_ranks.stdout, title) == straggler_table(proc.stdout, title)
    assert "no NCCL kernels" not in by_ranks.stdout


async def wait_for(pilot, cond) -> bool:
    """Let the app run until ``cond()`` holds (views load in workers; tests/tui/pilotwait.py's
    loop, which this folder cannot import)."""
    for _ in range(1500):
        await pilot.pause()
        if cond():
            return True
        await asyncio.sleep(0.02)
    return False


def test_steps_and_communication_views_name_the_same_straggler(late_rank):
    trace, _, summary = late_rank
    n = summary.table("comm", "stragglers").height

    async def go() -> None:
        app = ProfuiApp(OpenTarget("trace", trace), poll_s=600)
        async with app.run_test(size=(120, 40)) as pilot:
            await pilot.press("3")
            steps = app.screen.query_one(StepsView)
            assert await wait_for(pilot, lambda: steps.ready)
            await pilot.pause()
            heat = steps.query_one("#steps-heatmap", Static).render().plain.splitlines()
            assert f"arrives last at the collectives: rank 1 in {n} of {n} steps" in heat
            await pilot.press("6")
            assert await wait_for(pilot, lambda: bool(app.screen.query("#comm")))
            comm = app.screen.query_one("#comm", SectionsView)
            assert await wait_for(pilot, lambda: comm.ready)
            assert "rank 1 arrives last at the collectives" in str(comm.query_one(".view-takeaway").render())
            while comm.section.title != "Straggler per step: last at the collectives":
                await pilot.press("right_square_bracket")
            table = comm.query_one(FrameTable)
            column = table.columns_shown.index("straggler_rank")
            shown = [str(table.get_row_at(i)[column]).strip() for i in range(table.row_count)]
            assert shown == ["1"] * n

    asyncio.run(go())
