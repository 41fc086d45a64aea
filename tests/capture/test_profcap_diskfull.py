"""A real full disk (a small tmpfs, so root only): training carries on, and the manifest, written
into room profcap kept for it, records the lost trace window and metrics."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest
from test_profcap_support import PROFCAP, TRAIN, events_files, manifest, mount_tmpfs

FILL = r"""
    if i == 2:  # the job fills the disk in the middle of the traced window (steps 2-3)
        try:
            with open(os.environ["FILLER"], "wb") as fh:
                while True:
                    fh.write(b"x" * 65536)
                    fh.flush()
        except OSError as exc:
            print("disk full:", exc.errno, flush=True)
"""


@pytest.fixture
def small_disk(tmp_path):
    yield from mount_tmpfs(tmp_path / "small", "4m")


def test_full_disk_loses_trace_data_not_the_training(tmp_path, small_disk):
    job = tmp_path / "job.py"
    job.write_text(TRAIN.replace("    opt.step()\n", "    opt.step()\n" + FILL))
    trace = small_disk / "trace"
    env = dict(os.environ, STEPS="12", SLEEP="0.1", FILLER=str(small_disk / "filler"))
    proc = subprocess.run(
        [*PROFCAP, "-o", str(trace), "--steps", "2-3", "--hz", "20", "--", sys.executable, str(job)],
        env=env,
        capture_output=True,
        text=True,
        timeout=180,
    )
    assert proc.returncode == 0, proc.stderr
    assert "disk full: 28" in proc.stdout and "trained 12" in proc.stdout  # ENOSPC, and training went on
    m = manifest(trace)
    assert m["status"] == "completed" and m["exit_code"] == 0
    assert events_files(trace) == []
    notes = m["notes"]
    assert any("trace window" in n and "lost" in n for n in notes), notes
    assert any(n.startswith("metrics:") and "rows lost" in n for n in notes), notes
    assert not (trace / ".profcap-reserve").exists()
