"""A gloo DDP training job on CPU (a linear layer, 8 steps, each step's forward and
backward in a ``fwd_bwd`` annotation), and its recording under ``profcap -- torchrun``."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

DDP_JOB = r"""
import os
import torch
import torch.distributed as dist
from profui.capture import annotate

dist.init_process_group("gloo")
torch.manual_seed(dist.get_rank())
torch.set_num_threads(1)
model = torch.nn.parallel.DistributedDataParallel(torch.nn.Linear(32, 8))
opt = torch.optim.SGD(model.parameters(), lr=0.01)
for i in range(8):
    x, y = torch.randn(16, 32), torch.randn(16, 8)
    with annotate("fwd_bwd"):
        loss = ((model(x) - y) ** 2).mean()
        opt.zero_grad()
        loss.backward()
    opt.step()
dist.destroy_process_group()
# torch 2.13 CPU + gloo aborts now and then in its exit-time destructors ("terminate called
# without an active exception"), with or without any profiler; skip them: the trace is written.
os._exit(0)
"""


def record_ddp(folder: Path, ranks: int, steps: str = "3-5") -> Path:
    """:data:`DDP_JOB` run by ``profcap -- torchrun`` with ``ranks`` ranks, steps ``steps``
    recorded, under ``folder``; the trace folder."""
    (folder / "job.py").write_text(DDP_JOB)
    trace = folder / "trace"
    run = [sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc-per-node", str(ranks)]
    cmd = [sys.executable, "-m", "profui.capture.profcap", "-o", str(trace), "--steps", steps, "--no-perf"]
    proc = subprocess.run(
        [*cmd, "--", *run, str(folder / "job.py")],
        capture_output=True,
        text=True,
        timeout=300,
        env={**os.environ, "OMP_NUM_THREADS": "1"},
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    return trace
