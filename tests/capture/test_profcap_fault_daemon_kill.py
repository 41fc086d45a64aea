"""The sampling daemon SIGKILLed at each point of a trace window's life: the window is stored
exactly once (never two events files of it), listed once in the manifest, and the training runs
to its end with its own exit code and output. A real torch CPU training run under profcap; the
daemon killed for real at the moment named, found by polling the spool, the trace and the
daemon's children (the job waits for the test before it ends, so the daemon, not profcap's
final pass, is the one handling the window when it dies)."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path

import psutil
import pyarrow.parquet as pq
import pytest
from test_profcap_support import PROFCAP, TRAIN, events_files, manifest

#: After its last step the job waits (at most a minute) for the test to say it may end.
JOB = TRAIN.replace(
    'print("trained", steps)',
    (
        "deadline = time.monotonic() + 60\n"
        "while not os.path.exists(os.environ['RELEASE']) and time.monotonic() < deadline:\n"
        "    time.sleep(0.02)\n"
        'print("trained", steps)'
    ),
)


def _converter(daemon: psutil.Process) -> bool:
    try:
        return any("daemon.convert" in " ".join(c.cmdline()) for c in daemon.children())
    except psutil.Error:
        return False


#: When to kill the daemon: a test of the window's state, true once that moment has come.
MOMENTS = {
    "before conversion": lambda spool, trace, daemon: any(spool.glob("*.kineto.json")),
    "during conversion": lambda spool, trace, daemon: _converter(daemon),
    "as the events file appears": lambda spool, trace, daemon: bool(events_files(trace)),
    "after the spool entry is removed": lambda spool, trace, daemon: (
        bool(events_files(trace)) and not any(spool.glob("*.kineto.json"))
    ),
}


@pytest.mark.parametrize("moment", list(MOMENTS))
def test_daemon_killed_stores_the_window_exactly_once(tmp_path: Path, moment: str) -> None:
    job = tmp_path / "job.py"
    job.write_text(JOB)
    trace, release = tmp_path / "trace", tmp_path / "release"
    env = dict(os.environ, STEPS="6", RELEASE=str(release))
    p = subprocess.Popen(
        [*PROFCAP, "-o", str(trace), "--steps", "2-3", "--", sys.executable, str(job)],
        env=env,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        deadline = time.monotonic() + 120
        daemon = None
        while daemon is None and time.monotonic() < deadline:
            found = [c for c in psutil.Process(p.pid).children() if "capture.daemon" in " ".join(c.cmdline())]
            daemon = found[0] if found else None
            time.sleep(0.01)
        assert daemon is not None, "the daemon never started"
        came = MOMENTS[moment]
        while not came(trace / ".spool", trace, daemon) and time.monotonic() < deadline:
            time.sleep(0.002)
        assert came(trace / ".spool", trace, daemon), f"never reached: {moment}"
        daemon.kill()
    finally:
        release.touch()
    out, err = p.communicate(timeout=180)
    assert p.returncode == 0, err
    assert "trained 6" in out  # the job's own output, intact
    assert "Traceback" not in err
    files = events_files(trace)
    assert len(files) == 1, files  # the window once, not twice
    rows = pq.read_table(files[0], columns=["kind", "name"]).to_pylist()
    steps = Counter(r["name"] for r in rows if r["kind"] == "step")
    assert steps == {"ProfilerStep#2": 1, "ProfilerStep#3": 1}
    m = manifest(trace)
    assert m["status"] == "completed" and m["exit_code"] == 0
    assert any(n.startswith("sampling daemon died") for n in m["notes"]), m["notes"]
    [window] = m["capture"]["windows"]
    assert (window["rank"], window["first"], window["last"]) == (0, 2, 3)
    assert window["events"] == len(rows)
    assert window["counts"] == Counter(r["kind"] for r in rows)
    assert not (trace / ".spool").exists() and not (trace / ".profcap-reserve").exists()
