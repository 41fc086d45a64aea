"""A real 2-rank gloo DDP run under ``profcap -- torchrun``: the comm analysis counts its host
collectives (``gloo:all_reduce`` on gloo's worker threads), checked against sums and interval
unions computed here in plain Python from the trace's events."""

from __future__ import annotations

import re
import sys

import pytest
from test_profcap_support import read_events, run_profcap, steps_of

from profui.analysis import open_trace
from profui.analysis.formatting import fmt_ns

from ddp_job import DDP_JOB

GLOO = "gloo:all_reduce"
COMM_NAME = re.compile(r"^(?:gloo|nccl|mpi|ucc):|^c10d::")


def union(intervals: list[tuple[int, int]]) -> int:
    """Length of the union of half-open intervals."""
    total, end = 0, None
    for lo, hi in sorted(intervals):
        if end is None or lo > end:
            total += hi - lo
            end = hi
        elif hi > end:
            total += hi - end
            end = hi
    return total


def clipped(rows: list[dict], lo: int, hi: int) -> list[tuple[int, int]]:
    """The rows' intervals cut to ``[lo, hi)``."""
    out = []
    for r in rows:
        a, b = max(r["ts"], lo), min(r["ts"] + r["dur"], hi)
        if a < b:
            out.append((a, b))
    return out


@pytest.fixture(scope="module")
def gloo_run(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("gloo")
    launcher = [
        sys.executable,
        "-m",
        "torch.distributed.run",
        "--standalone",
        "--nproc-per-node",
        "2",
        str(tmp / "job.py"),
    ]
    proc, trace = run_profcap(tmp, ["--steps", "3-5"], DDP_JOB, cmd=launcher, env={"OMP_NUM_THREADS": "1"})
    assert proc.returncode == 0, proc.stderr[-3000:]
    rows = {rank: read_events(trace, rank) for rank in (0, 1)}
    return trace, rows, open_trace(trace).result("summary")["summary.json"]


def test_gloo_all_reduce_time_is_the_sum_of_its_ranges(gloo_run):
    trace, rows, summary = gloo_run
    gloo = {rank: [r for r in rs if r["name"] == GLOO] for rank, rs in rows.items()}
    assert all(gloo.values()), "torch records gloo:all_reduce ranges"
    by = summary.table("comm", "by_collective")
    assert by.height == 1  # c10d::allreduce_ (the enqueue on the main thread) is not counted again
    row = by.row(0, named=True)
    assert (row["source"], row["collective"]) == ("host op", "AllReduce")
    assert row["count"] == sum(len(g) for g in gloo.values())
    assert row["total_ns"] == sum(r["dur"] for g in gloo.values() for r in g)
    per_rank = {r["rank"]: r for r in summary.table("comm", "per_rank").iter_rows(named=True)}
    for rank, g in gloo.items():
        assert per_rank[rank]["source"] == "host op"
        assert per_rank[rank]["total_ns"] == sum(r["dur"] for r in g)
        assert per_rank[rank]["busy_ns"] == union([(r["ts"], r["ts"] + r["dur"]) for r in g])
    total = row["total_ns"]
    assert summary.takeaways["comm"].startswith(f"Host collectives {fmt_ns(total)} (AllReduce 100%)")


def test_per_step_comm_and_stragglers_match_a_plain_recomputation(gloo_run):
    trace, rows, summary = gloo_run
    per_step = {(r["rank"], r["step"]): r for r in summary.table("comm", "per_step").iter_rows(named=True)}
    for rank, rs in rows.items():
        gloo = [r for r in rs if r["name"] == GLOO]
        ops = [r for r in rs if r["kind"] == "cpu_op" and not COMM_NAME.search(r["name"])]
        for n, step in steps_of(rs).items():
            lo, hi = step["ts"], step["ts"] + step["dur"]
            got = per_step[(rank, n)]
            comm, compute = union(clipped(gloo, lo, hi)), union(clipped(ops, lo, hi))
            assert (got["step_ns"], got["comm_ns"], got["compute_ns"]) == (step["dur"], comm, compute)
            both = union(clipped(gloo, lo, hi) + clipped(ops, lo, hi))
            assert got["exposed_comm_ns"] == both - compute  # comm not under compute
    # the gradient all-reduce takes a large part of each step on this tiny model
    assert max(r["comm_ns"] / r["step_ns"] for r in per_step.values()) > 0.3
    # the straggler is the rank that arrives later at the step's all-reduce; the other waits
    # from its own arrival to the straggler's (the rule's own tests: test_profcap_gloo_straggler)
    arrive: dict[int, dict[int, int]] = {}
    for rank, rs in rows.items():
        gloo = [r for r in rs if r["name"] == GLOO]
        for n, step in steps_of(rs).items():
            first = min(r["ts"] for r in gloo if step["ts"] <= r["ts"] < step["ts"] + step["dur"])
            arrive.setdefault(n, {})[rank] = first
    stragglers = summary.table("comm", "stragglers")
    assert stragglers["step"].to_list() == sorted(arrive)
    for s in stragglers.iter_rows(named=True):
        at = arrive[s["step"]]
        last = min(at, key=lambda r: (-at[r], r))
        assert (s["straggler_rank"], s["lateness_ns"]) == (last, at[last] - min(at.values()))
        assert s["wait_ns"] == at[last] - at[1 - last]
