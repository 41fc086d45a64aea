"""profcap under the oldest Python profui claims (requires-python >= 3.10): the job starts in a
process group of its own, which profcap's forwarded signals reach as a whole (killpg).

Popen's process_group argument came in 3.11; on 3.10 it raised TypeError before any job started.
The 3.10 interpreter runs profcap from the working tree with the standard library alone: the job's
start needs nothing else (the sampling daemon, which needs psutil, fails beside it and is not
what is tested here). Skipped where that interpreter is not installed.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import psutil
import pytest

from package_root import package_root

PY310 = Path("/root/.pyenv/versions/3.10.13/bin/python")

#: The job: its pid and process group, then a child of its own that would outlive it by a minute
#: unless the signal reaches the job's whole group.
JOB = r"""
import os, subprocess, sys, time
child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
out = sys.argv[1]
with open(out + ".tmp", "w") as f:
    f.write(f"{os.getpid()} {os.getpgrp()} {child.pid}")
os.replace(out + ".tmp", out)
child.wait()
"""


def _alive(pid: int) -> bool:
    # a zombie has ended: its orphaned parent's reaper (init) may be slow to collect it
    try:
        return psutil.Process(pid).status() != psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return False


def _gone_within(pid: int, seconds: float) -> bool:
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        if not _alive(pid):
            return True
        time.sleep(0.05)
    return False


@pytest.mark.parametrize(
    "python",
    [
        pytest.param(
            PY310,
            id="3.10",
            marks=pytest.mark.skipif(not PY310.exists(), reason=f"no Python 3.10 at {PY310}"),
        ),
        pytest.param(Path(sys.executable), id=f"{sys.version_info[0]}.{sys.version_info[1]}"),
    ],
)
def test_job_gets_its_own_group_and_sigterm_reaches_its_child(tmp_path, python):
    root = package_root(tmp_path / "root")
    job = tmp_path / "job.py"
    job.write_text(JOB)
    ids = tmp_path / "ids"
    env = {**os.environ, "PYTHONPATH": str(root), "PROFUI_CACHE": str(tmp_path / "cache")}
    cmd = [str(python), "-m", "profui.capture.profcap", "--no-trace", "-o", str(tmp_path / "trace")]
    # stdin not a terminal: the non-interactive case, where the job gets its own group
    p = subprocess.Popen(
        [*cmd, "--", str(python), str(job), str(ids)],
        env=env,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        end = time.monotonic() + 60
        while not ids.exists() and p.poll() is None and time.monotonic() < end:
            time.sleep(0.05)
        assert ids.exists(), p.communicate(timeout=60)[1]
        pid, pgid, child = (int(x) for x in ids.read_text().split())
        assert pgid == pid  # setpgid(0, 0): the job leads a group of its own
        assert pgid != os.getpgrp()  # not profcap's (which is this test's)
        p.send_signal(signal.SIGTERM)
        _, err = p.communicate(timeout=60)
    finally:
        if p.poll() is None:
            p.kill()
            p.wait()
    assert p.returncode == 128 + signal.SIGTERM, err
    # the job's own child got the SIGTERM too: profcap signalled the group, not the job alone
    gone = _gone_within(child, 10)
    if not gone:
        os.kill(child, signal.SIGKILL)
    assert gone, f"the job's child {child} outlived the job"
