"""Real gloo DDP runs under ``profcap -- torchrun``: collective instances matched across ranks,
checked against the trace's ``gloo:*`` rows read here in plain Python."""

from __future__ import annotations

import sys
from pathlib import Path

import polars as pl
import pytest
from test_profcap_support import read_events, run_profcap
from test_profcap_torchrun import DDP

from profui.analysis import open_trace
from profui.analysis.collectives import INSTANCE_COLUMNS, collective_instances


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
        tmp, ["--steps", "3-5"], DDP, cmd=torchrun(tmp, 2), env={"OMP_NUM_THREADS": "1"}
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
