"""A trace folder on a file system without locks (``flock`` answers ENOLCK, as on an NFS mount
without a lock manager): each window is converted unlocked and stored once, not moved to
``failed/`` and reported lost. A real torch CPU training run under profcap, every ``flock`` of
profcap, its daemon and their converters refused by strace's fault injection (seccomp-bpf, so
only flock stops); the oracle is the events file read with pyarrow."""

from __future__ import annotations

import errno
import os
import shutil
import subprocess
import sys
from collections import Counter
from pathlib import Path

import pyarrow.parquet as pq
import pytest
from test_profcap_support import PROFCAP, TRAIN, events_files, manifest


def _without_locks(log: Path) -> list[str]:
    strace = shutil.which("strace")
    if strace is None:
        pytest.skip("strace is not installed")
    prefix = [strace, "-f", "-qq", "--seccomp-bpf", "-o", str(log)]
    prefix += ["-e", "trace=flock", "-e", "inject=flock:error=ENOLCK"]
    probe = "import fcntl, sys\ntry:\n    fcntl.flock(0, fcntl.LOCK_EX)\nexcept OSError as e:\n    sys.exit(e.errno)"
    if subprocess.run([*prefix, sys.executable, "-c", probe], timeout=60).returncode != errno.ENOLCK:
        pytest.skip("strace cannot inject faults here (ptrace refused)")
    return prefix


def test_a_trace_folder_without_locks_stores_each_window_once(tmp_path: Path) -> None:
    log = tmp_path / "strace.log"
    job = tmp_path / "job.py"
    job.write_text(TRAIN)
    trace = tmp_path / "trace"
    proc = subprocess.run(
        [*_without_locks(log), *PROFCAP, "-o", str(trace), "--steps", "2-3", "--", sys.executable, str(job)],
        env=dict(os.environ, STEPS="6"),
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert "INJECTED" in log.read_text()  # its locks were refused indeed
    assert proc.returncode == 0, proc.stderr
    assert "trained 6" in proc.stdout
    assert "Traceback" not in proc.stderr
    m = manifest(trace)
    assert not [n for n in m["notes"] if "could not be converted" in n], m["notes"]  # was ENOLCK
    files = events_files(trace)
    assert len(files) == 1, files  # the window once: stored, not lost, not twice
    rows = pq.read_table(files[0], columns=["kind", "name"]).to_pylist()
    assert Counter(r["name"] for r in rows if r["kind"] == "step") == {
        "ProfilerStep#2": 1,
        "ProfilerStep#3": 1,
    }
    [window] = m["capture"]["windows"]
    assert (window["rank"], window["first"], window["last"]) == (0, 2, 3)
    assert window["events"] == len(rows)
    assert not (trace / ".spool").exists()


#: Holds an exclusive flock on argv[1], says so on stdout, and keeps it until stdin closes.
HOLDER = r"""
import fcntl, os, sys
fd = os.open(sys.argv[1], os.O_RDONLY)
fcntl.flock(fd, fcntl.LOCK_EX)
print("held", flush=True)
sys.stdin.read()
"""


def test_where_locks_work_a_converter_waits_for_the_holder(tmp_path: Path, monkeypatch) -> None:
    """The one lock primitive still excludes: a hand-over another process holds is waited for
    (StillConverting past the deadline), and one removed by its holder meanwhile is gone."""
    from profui.capture.daemon import once

    handed = tmp_path / "r0-p1-0001.kineto.json"
    handed.write_text("{}")
    monkeypatch.setattr(once, "CLAIM_WAIT_S", 0.5)
    holder = subprocess.Popen(
        [sys.executable, "-c", HOLDER, str(handed)], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True
    )
    try:
        assert holder.stdout.readline().strip() == "held"
        with pytest.raises(once.StillConverting), once.claimed(handed):
            pass
        handed.unlink()  # finished by the holder
    finally:
        holder.stdin.close()
        holder.wait(timeout=30)
    with once.claimed(handed) as here:
        assert here is False
    handed.write_text("{}")
    with once.claimed(handed) as here:
        assert here is True
