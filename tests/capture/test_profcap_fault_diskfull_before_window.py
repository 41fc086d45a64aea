"""Another writer fills the disk (a real small tmpfs, so root only) before the traced window
starts: training runs to its end with its own exit code and output, the manifest (written into
the room profcap kept for it) tells the lost window with its steps and its true reason, and
profcap leaves nothing of its own behind (no spool, no reserve)."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest
from test_profcap_support import PROFCAP, TRAIN, events_files, manifest, mount_tmpfs

#: At step 0, long before the window (steps 3-4), another process fills the disk and keeps it so.
FILL = r"""
    if i == 0:
        subprocess.run(["dd", "if=/dev/zero", "of=" + os.environ["FILLER"], "bs=64k"], capture_output=True)
        print("disk filled", flush=True)
"""


@pytest.fixture
def small_disk(tmp_path):
    yield from mount_tmpfs(tmp_path / "small", "4m")


def test_disk_filled_before_the_window_is_told_in_the_manifest(tmp_path, small_disk):
    job = tmp_path / "job.py"
    job.write_text("import subprocess\n" + TRAIN.replace("    opt.step()\n", "    opt.step()\n" + FILL))
    trace = small_disk / "trace"
    env = dict(os.environ, STEPS="8", SLEEP="0.05", FILLER=str(small_disk / "filler"))
    proc = subprocess.run(
        [*PROFCAP, "-o", str(trace), "--steps", "3-4", "--", sys.executable, str(job)],
        env=env,
        capture_output=True,
        text=True,
        timeout=180,
    )
    assert proc.returncode == 0, proc.stderr
    assert "disk filled" in proc.stdout and "trained 8" in proc.stdout
    assert "Traceback" not in proc.stderr
    m = manifest(trace)
    assert m["status"] == "completed" and m["exit_code"] == 0
    assert events_files(trace) == [] and m["capture"]["windows"] == []
    lost = [n for n in m["notes"] if "trace window (steps 3-4)" in n]
    assert len(lost) == 1, m["notes"]
    assert os.strerror(28) in lost[0] and "it is lost" in lost[0]  # ENOSPC, the true reason
    assert sorted(p.name for p in trace.iterdir()) == ["manifest.json", f"node={m['hosts'][0]}"]
