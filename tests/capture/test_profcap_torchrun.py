"""profcap on a 2-rank torchrun job (gloo, DDP on CPU): both ranks traced, each exactly once,
the launcher never."""

from __future__ import annotations

import sys

from test_profcap_support import events_files, manifest, read_events, run_profcap, steps_of

from ddp_job import DDP_JOB


def test_torchrun_two_ranks_write_both_ranks(tmp_path):
    launcher = [
        sys.executable,
        "-m",
        "torch.distributed.run",
        "--standalone",
        "--nproc-per-node",
        "2",
        str(tmp_path / "job.py"),
    ]
    proc, trace = run_profcap(
        tmp_path, ["--steps", "3-4"], DDP_JOB, cmd=launcher, env={"OMP_NUM_THREADS": "1"}
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    m = manifest(trace)
    assert m["status"] == "completed" and m["ranks"] == [0, 1]
    assert m["name"] == "job"
    assert sorted(f.parent.name for f in events_files(trace)) == ["rank=0", "rank=1"]
    pids = set()
    for rank in (0, 1):
        rows = read_events(trace, rank)
        assert sorted(steps_of(rows)) == [3, 4]
        assert sum(1 for r in rows if r["name"] == "fwd_bwd") == 2
        # gradients are all-reduced through gloo inside each traced step
        assert any("allreduce" in r["name"].lower() for r in rows), rank
        pids |= {r["pid"] for r in rows if r["kind"] == "cpu_op"}
    assert len(pids) == 2
