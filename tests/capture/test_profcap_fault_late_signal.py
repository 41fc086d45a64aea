"""SIGINT reaching profcap right after the job ended (exit 0) did not stop the job: the manifest
says "completed" with exit code 0, as the job ended, not "stopped". Deterministic: profcap is
SIGSTOPped while the job ends, receives SIGINT while the job is a zombie it has not reaped yet,
and is then let go on (SIGCONT). A real job process; real signals."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import psutil
from test_profcap_support import PROFCAP, manifest, wait_for_file

#: Writes its pid, waits for the release file, says goodbye and exits 0.
JOB = r"""
import os, sys, time
open(sys.argv[1], "w").write(str(os.getpid()))
while not os.path.exists(sys.argv[2]):
    time.sleep(0.01)
print("job done", flush=True)
"""


def test_sigint_after_the_job_ended_is_not_a_stop(tmp_path: Path) -> None:
    job, pidfile, release = tmp_path / "job.py", tmp_path / "pid", tmp_path / "release"
    job.write_text(JOB)
    trace = tmp_path / "trace"
    p = subprocess.Popen(
        [
            *PROFCAP,
            "-o",
            str(trace),
            "--no-trace",
            "--",
            sys.executable,
            str(job),
            str(pidfile),
            str(release),
        ],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    wait_for_file(pidfile)
    # the file is made before its text is written: read until the pid is there (bounded)
    deadline = time.monotonic() + 30
    while not pidfile.read_text().strip() and time.monotonic() < deadline:
        time.sleep(0.01)
    jobproc = psutil.Process(int(pidfile.read_text()))
    os.kill(p.pid, signal.SIGSTOP)
    try:
        release.touch()
        deadline = time.monotonic() + 30
        while jobproc.status() != psutil.STATUS_ZOMBIE and time.monotonic() < deadline:
            time.sleep(0.01)
        assert jobproc.status() == psutil.STATUS_ZOMBIE  # ended, not yet reaped by profcap
        os.kill(p.pid, signal.SIGINT)
    finally:
        os.kill(p.pid, signal.SIGCONT)
    out, err = p.communicate(timeout=60)
    assert "job done" in out
    assert p.returncode == 0, err
    assert "Traceback" not in err
    m = manifest(trace)
    assert (m["status"], m["exit_code"]) == ("completed", 0), m["notes"]
