"""The trace folder turns read-only mid-run (a real read-only bind mount, made by the training job
itself; root only). Training runs to its end with its own exit code and output, and every loss is
told where it can still be told:

- read-only through the traced window and writable again before the job ends: the manifest
  notes the lost window with its true reason, and profcap leaves nothing of its own behind;
- read-only to the end: nothing can be written there, the manifest included; profcap's stderr
  names the lost window and the manifest it could not close, and the job is untouched.
"""

from __future__ import annotations

import os
import subprocess
import sys
from collections import Counter
from pathlib import Path

import pyarrow.parquet as pq
import pytest
from test_profcap_support import PROFCAP, events_files, manifest

JOB = r"""
import glob, os, subprocess, time
import torch
torch.manual_seed(0)
model = torch.nn.Sequential(torch.nn.Linear(64, 128), torch.nn.ReLU(), torch.nn.Linear(128, 10))
opt = torch.optim.SGD(model.parameters(), lr=0.01)
target, since, until = os.environ["RO_TARGET"], int(os.environ["RO_SINCE"]), int(os.environ["RO_UNTIL"])
for i in range(10):
    x, y = torch.randn(32, 64), torch.randint(0, 10, (32,))
    loss = torch.nn.functional.cross_entropy(model(x), y)
    opt.zero_grad()
    loss.backward()
    opt.step()
    if i == since:
        if since == 4:  # the window (steps 3-4) was handed over at this step: it is in the spool
            while not glob.glob(os.path.join(target, ".spool", "*.kineto.json")):
                time.sleep(0.005)
        subprocess.run(["mount", "--bind", target, target], check=True)
        for _ in range(100):  # busy while the daemon has a file of it open for writing
            if subprocess.run(["mount", "-o", "remount,bind,ro", target, target]).returncode == 0:
                break
            time.sleep(0.02)
        else:
            raise SystemExit("the folder stayed writable")
        print("read-only", flush=True)
    if i == until:
        subprocess.run(["umount", target], check=True)
        print("writable", flush=True)
    time.sleep(float(os.environ["SLEEP"]))
print("trained 10")
"""


@pytest.fixture
def unmount(tmp_path: Path):
    if os.geteuid() != 0:
        pytest.skip("a read-only bind mount needs root")
    yield
    subprocess.run(["umount", "-l", str(tmp_path / "trace")], capture_output=True)


def _capture(tmp_path: Path, since: int, until: int, sleep: float = 0.05) -> subprocess.CompletedProcess:
    job = tmp_path / "job.py"
    job.write_text(JOB)
    trace = tmp_path / "trace"
    trace.mkdir()
    proc = subprocess.run(
        [*PROFCAP, "-o", str(trace), "--steps", "3-4", "--", sys.executable, str(job)],
        env=dict(
            os.environ, RO_TARGET=str(trace), RO_SINCE=str(since), RO_UNTIL=str(until), SLEEP=str(sleep)
        ),
        capture_output=True,
        text=True,
        timeout=180,
    )
    assert proc.returncode == 0, proc.stderr
    assert "read-only" in proc.stdout and "trained 10" in proc.stdout  # the job ran to its end
    assert "Traceback" not in proc.stderr
    return proc


def test_window_lost_while_read_only_is_told_once_writable_again(tmp_path: Path, unmount) -> None:
    proc = _capture(tmp_path, since=0, until=7)
    assert "writable" in proc.stdout
    trace = tmp_path / "trace"
    m = manifest(trace)
    assert m["status"] == "completed" and m["exit_code"] == 0
    assert events_files(trace) == [] and m["capture"]["windows"] == []
    lost = [n for n in m["notes"] if "trace window" in n and "lost" in n]
    assert len(lost) == 1, m["notes"]
    assert "steps 3-4" in lost[0] and os.strerror(30) in lost[0]  # EROFS, the true reason
    assert sorted(p.name for p in trace.iterdir()) == ["manifest.json", f"node={m['hosts'][0]}"]


def test_read_only_to_the_end_is_told_on_stderr(tmp_path: Path, unmount) -> None:
    proc = _capture(tmp_path, since=0, until=-1)
    err = proc.stderr
    assert "trace window" in err and "steps 3-4" in err and os.strerror(30) in err and "it is lost" in err
    assert "could not update" in err and "manifest.json" in err
    # the daemon's notes, which the manifest would have kept, are said there too
    assert any(line.startswith("profcap: metrics:") and "rows lost" in line for line in err.splitlines()), err
    assert events_files(tmp_path / "trace") == []


def test_window_handed_over_then_read_only_is_stored_once_writable_again(tmp_path: Path, unmount) -> None:
    # read-only from the hand-over for about 1.5 s: the daemon's conversion fails meanwhile
    proc = _capture(tmp_path, since=4, until=8, sleep=0.3)
    assert "writable" in proc.stdout
    trace = tmp_path / "trace"
    m = manifest(trace)
    assert m["status"] == "completed" and m["exit_code"] == 0
    [events] = events_files(trace)  # converted at the end, once
    steps = Counter(
        r["name"] for r in pq.read_table(events, columns=["kind", "name"]).to_pylist() if r["kind"] == "step"
    )
    assert steps == {"ProfilerStep#3": 1, "ProfilerStep#4": 1}
    assert [(w["first"], w["last"]) for w in m["capture"]["windows"]] == [(3, 4)]
    assert not [n for n in m["notes"] if "trace window" in n], m["notes"]  # nothing was lost
    assert sorted(p.name for p in trace.iterdir()) == ["manifest.json", f"node={m['hosts'][0]}"]
