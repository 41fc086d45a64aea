"""Shared helpers of the profcap tests (no tests here): run profcap on a script, read the trace.

The training scripts are real: torch 2.13 CPU, a small MLP, a real optimizer; each run takes a
few seconds. Helpers read traces with pyarrow only.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections import Counter
from pathlib import Path

import pyarrow.parquet as pq

PROFCAP = [sys.executable, "-m", "profui.capture.profcap"]

#: A small CPU training loop. Env: STEPS, WORKERS (DataLoader workers), PIDFILE, SLEEP (s/step).
TRAIN = r"""
import os, sys, time
import torch
from profui.capture import annotate

torch.manual_seed(0)
torch.set_num_threads(1)
steps = int(os.environ.get("STEPS", "16"))
workers = int(os.environ.get("WORKERS", "0"))
sleep = float(os.environ.get("SLEEP", "0"))
if os.environ.get("PIDFILE"):
    open(os.environ["PIDFILE"], "w").write(str(os.getpid()))
model = torch.nn.Sequential(torch.nn.Linear(64, 128), torch.nn.ReLU(), torch.nn.Linear(128, 10))
opt = torch.optim.SGD(model.parameters(), lr=0.01)
data = torch.utils.data.TensorDataset(torch.randn(32 * steps, 64), torch.randint(0, 10, (32 * steps,)))
loader = torch.utils.data.DataLoader(data, batch_size=32, num_workers=workers)

@annotate("load_batch")
def move(batch):
    return batch

for i, batch in enumerate(loader):
    x, y = move(batch)
    with annotate("fwd_bwd"):
        loss = torch.nn.functional.cross_entropy(model(x), y)
        opt.zero_grad()
        loss.backward()
    opt.step()
    if sleep:
        time.sleep(sleep)
print("trained", steps)
"""


def run_profcap(
    tmp: Path,
    args: list[str],
    script: str,
    env: dict[str, str] | None = None,
    timeout: float = 180,
    cmd: list[str] | None = None,
) -> tuple[subprocess.CompletedProcess, Path]:
    """Write ``script`` to tmp/job.py and run ``profcap -o tmp/trace ARGS -- python job.py``."""
    job = tmp / "job.py"
    job.write_text(script)
    trace = tmp / "trace"
    full_env = dict(os.environ)
    full_env.update(env or {})
    command = cmd if cmd is not None else [sys.executable, str(job)]
    proc = subprocess.run(
        [*PROFCAP, "-o", str(trace), *args, "--", *command],
        cwd=tmp,
        env=full_env,
        capture_output=True,
        text=True,
        timeout=timeout,
    )
    return proc, trace


def manifest(trace: Path) -> dict:
    """The parsed manifest.json."""
    return json.loads((trace / "manifest.json").read_text())


def events_files(trace: Path) -> list[Path]:
    """Every events file of the trace, sorted."""
    return sorted(trace.glob("node=*/rank=*/events-*.parquet"))


def read_events(trace: Path, rank: int | None = None) -> list[dict]:
    """All events rows (of one rank when given), sorted by ts."""
    rows: list[dict] = []
    for f in events_files(trace):
        if rank is not None and f.parent.name != f"rank={rank}":
            continue
        rows.extend(pq.read_table(f).to_pylist())
    return sorted(rows, key=lambda r: r["ts"])


def read_metrics(trace: Path) -> list[dict]:
    """All metrics rows, sorted by ts."""
    rows: list[dict] = []
    for f in sorted(trace.glob("node=*/metrics-*.parquet")):
        rows.extend(pq.read_table(f).to_pylist())
    return sorted(rows, key=lambda r: r["ts"])


def steps_of(rows: list[dict]) -> dict[int, dict]:
    """ProfilerStep#N rows by N."""
    out = {}
    for r in rows:
        if r["kind"] == "step" and r["name"].startswith("ProfilerStep#"):
            out[int(r["name"].split("#")[1])] = r
    return out


def kinds(rows: list[dict]) -> Counter:
    """Row counts per kind."""
    return Counter(r["kind"] for r in rows)


def inside(row: dict, span: dict) -> bool:
    """Whether ``row`` lies within ``span`` in time."""
    return span["ts"] <= row["ts"] and row["ts"] + row["dur"] <= span["ts"] + span["dur"]


def sample_rate(rows: list[dict], source: str = "cpu") -> float:
    """Distinct sample timestamps of ``source`` per second over their span."""
    ts = sorted({r["ts"] for r in rows if r["source"] == source})
    if len(ts) < 2:
        return 0.0
    return (len(ts) - 1) / ((ts[-1] - ts[0]) / 1e9)


def mount_tmpfs(folder: Path, size: str):
    """Mount a real tmpfs of ``size`` at ``folder`` (a generator for a fixture: unmounts after);
    skips where mounting is not allowed (not root, no tmpfs)."""
    import pytest

    folder.mkdir()
    if os.geteuid() != 0:
        pytest.skip("mounting a tmpfs needs root")
    res = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", f"size={size}", "tmpfs", str(folder)], capture_output=True, text=True
    )
    if res.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here: {res.stderr.strip()}")
    yield folder
    subprocess.run(["umount", "-l", str(folder)], capture_output=True)


def start_profcap(args: list, env: dict[str, str], **popen) -> subprocess.Popen:
    """``profcap ARGS`` started with no terminal (stdin closed), its output discarded unless
    ``popen`` says otherwise."""
    popen.setdefault("stdout", subprocess.DEVNULL)
    popen.setdefault("stderr", subprocess.DEVNULL)
    return subprocess.Popen([*PROFCAP, *map(str, args)], env=env, stdin=subprocess.DEVNULL, **popen)


def wait_for_file(path: Path, timeout: float = 60.0) -> None:
    """Until ``path`` exists (the job wrote it); AssertionError after ``timeout`` s."""
    import time

    deadline = time.monotonic() + timeout
    while not path.exists() and time.monotonic() < deadline:
        time.sleep(0.02)
    assert path.exists(), f"{path} never appeared"
