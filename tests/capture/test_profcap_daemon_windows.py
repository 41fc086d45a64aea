"""The manifest lists every trace window in the trace, whoever converted it: a window the daemon
converted before it was SIGKILLed is not forgotten when profcap converts the rest at the end.
A real torch CPU training run under profcap; the daemon killed for real."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import psutil
from test_profcap_support import PROFCAP, TRAIN, events_files, manifest, read_events, steps_of


def test_windows_converted_before_the_daemon_died_stay_in_the_manifest(tmp_path: Path) -> None:
    job = tmp_path / "job.py"
    job.write_text(TRAIN)
    trace = tmp_path / "trace"
    env = dict(os.environ, STEPS="60", SLEEP="0.05")
    p = subprocess.Popen(
        [*PROFCAP, "-o", str(trace), "--steps", "3-4,40-41", "--", sys.executable, str(job)],
        env=env,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    deadline = time.monotonic() + 120
    while not events_files(trace) and time.monotonic() < deadline:  # the daemon converted window 1
        time.sleep(0.05)
    assert events_files(trace), "the first window never reached the trace"
    [daemon] = [
        c for c in psutil.Process(p.pid).children() if "profui.capture.daemon" in " ".join(c.cmdline())
    ]
    daemon.kill()
    out, err = p.communicate(timeout=180)
    assert p.returncode == 0, err
    m = manifest(trace)
    assert any(n.startswith("sampling daemon died") for n in m["notes"])
    steps = sorted(set(steps_of(read_events(trace))))
    assert steps == [3, 4, 40, 41]  # both windows are in the trace ...
    firsts = sorted(w["first"] for w in m["capture"]["windows"])
    assert firsts == [3, 40]  # ... and in the manifest
