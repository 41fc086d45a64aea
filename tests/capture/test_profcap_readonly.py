"""A trace folder made read-only in the middle of a real capture (a read-only bind mount, made by
the training job itself at step 1, before the traced steps 3-4; root only): training runs to its
end with its own exit status, and the loss is told where it can be, with its true reason.

- the rank folders' parent (``node=HOST``) read-only: the window cannot be converted and the
  metrics cannot be written; the manifest, still writable, notes both;
- the spool read-only: the tracer cannot hand the window over; the manifest says the spool took
  no file (before, it said the window "was being recorded when the process ended");
- the whole trace folder read-only: nothing can be written, the manifest included; profcap says
  on stderr which window was lost and that the manifest could not be updated.
"""

from __future__ import annotations

import os
import socket
import subprocess
import sys
from pathlib import Path

import pytest
from test_profcap_support import PROFCAP, events_files, manifest

JOB = r"""
import os, subprocess, time
import torch
torch.manual_seed(0)
model = torch.nn.Sequential(torch.nn.Linear(64, 128), torch.nn.ReLU(), torch.nn.Linear(128, 10))
opt = torch.optim.SGD(model.parameters(), lr=0.01)
target = os.environ["RO_TARGET"]
for i in range(12):
    x, y = torch.randn(32, 64), torch.randint(0, 10, (32,))
    loss = torch.nn.functional.cross_entropy(model(x), y)
    opt.zero_grad()
    loss.backward()
    opt.step()
    if i == 1:  # before the traced steps (3-4): the folder goes read-only under profcap
        os.makedirs(target, exist_ok=True)
        subprocess.run(["mount", "--bind", target, target], check=True)
        subprocess.run(["mount", "-o", "remount,bind,ro", target, target], check=True)
        print("read-only:", target, flush=True)
    time.sleep(0.1)
print("trained 12")
"""


@pytest.fixture
def unmount(tmp_path: Path):
    if os.geteuid() != 0:
        pytest.skip("a read-only bind mount needs root")
    made: list[Path] = []
    yield made.append
    for folder in made:
        subprocess.run(["umount", "-l", str(folder)], capture_output=True)


def _capture(tmp_path: Path, ro: Path) -> subprocess.CompletedProcess:
    job = tmp_path / "job.py"
    job.write_text(JOB)
    proc = subprocess.run(
        [
            *PROFCAP,
            "-o",
            str(tmp_path / "trace"),
            "--steps",
            "3-4",
            "--hz",
            "20",
            "--",
            sys.executable,
            str(job),
        ],
        env=dict(os.environ, RO_TARGET=str(ro)),
        capture_output=True,
        text=True,
        timeout=180,
    )
    assert proc.returncode == 0, proc.stderr
    assert f"read-only: {ro}" in proc.stdout and "trained 12" in proc.stdout  # the job ran to its end
    return proc


def test_rank_folders_made_read_only(tmp_path: Path, unmount) -> None:
    trace = tmp_path / "trace"
    ro = trace / f"node={socket.gethostname()}"
    unmount(ro)
    _capture(tmp_path, ro)
    m = manifest(trace)
    assert m["status"] == "completed" and m["exit_code"] == 0
    assert events_files(trace) == []
    notes = m["notes"]
    assert any("trace window could not be converted" in n and "Read-only file system" in n for n in notes), (
        notes
    )
    assert any(n.startswith("metrics:") and "rows lost" in n and "Read-only" in n for n in notes), notes


def test_spool_made_read_only(tmp_path: Path, unmount) -> None:
    trace = tmp_path / "trace"
    ro = trace / ".spool"
    unmount(ro)
    _capture(tmp_path, ro)
    m = manifest(trace)
    assert m["status"] == "completed" and m["exit_code"] == 0
    assert events_files(trace) == [] and m["capture"]["windows"] == []
    lost = [n for n in m["notes"] if "trace window (steps 3-4)" in n]
    assert len(lost) == 1, m["notes"]
    assert (
        "could not be written" in lost[0] and "Read-only file system" in lost[0] and "it is lost" in lost[0]
    )


def test_whole_trace_folder_made_read_only(tmp_path: Path, unmount) -> None:
    trace = tmp_path / "trace"
    unmount(trace)
    proc = _capture(tmp_path, trace)
    err = proc.stderr
    assert "trace window 1 not written" in err and "Read-only file system" in err and "it is lost" in err
    assert "could not update" in err and "manifest.json" in err
    assert events_files(trace) == []
