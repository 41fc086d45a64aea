"""A capture killed outright with all its processes leaves ``running`` in its manifest; readers
show it as ``interrupted``, never as live. An import killed outright leaves its temporary folder;
the next import into the same place removes it. Real profcap and import processes, SIGKILLed."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import psutil
from test_bad_input_import import SMALL, profui
from test_profcap_support import start_profcap, wait_for_file

from profui.capture.format import open_trace_dir

from realdata import shared_trace

JOB = r"""
import os, time
from profui.capture import step
open(os.environ["MARKER"], "w").write("ran")
for i in range(10_000):
    time.sleep(0.05)
    step()
"""


def _start(tmp_path: Path):
    """profcap (metrics only) on a job that runs until killed; (process, trace, marker)."""
    job = tmp_path / "job.py"
    job.write_text(JOB)
    marker, trace = tmp_path / "marker", tmp_path / "trace"
    env = dict(os.environ, MARKER=str(marker))
    return start_profcap(["-o", trace, "--no-trace", "--", sys.executable, job], env), trace, marker


def test_a_capture_killed_with_all_its_processes_reads_as_interrupted(tmp_path: Path) -> None:
    proc, trace, marker = _start(tmp_path)
    wait_for_file(marker)
    family = psutil.Process(proc.pid).children(recursive=True)
    proc.kill()  # profcap, then every process it started (the daemon, the job): nothing closes it
    for p in family:
        p.kill()
    proc.wait(timeout=30)
    psutil.wait_procs(family, timeout=30)
    stored = json.loads((trace / "manifest.json").read_text())
    assert stored["status"] == "running" and stored["capture"]["pid"] == proc.pid

    m = open_trace_dir(trace, require_data=False).manifest
    assert m.status == "interrupted"
    assert any(n.startswith("interrupted: the capture's process") for n in m.notes)
    info = profui("info", trace)
    assert info.returncode == 0 and "interrupted" in info.stdout and "running" not in info.stdout


def test_a_live_capture_is_still_running(tmp_path: Path) -> None:
    proc, trace, marker = _start(tmp_path)
    try:
        wait_for_file(marker)
        assert open_trace_dir(trace, require_data=False).manifest.status == "running"
    finally:
        proc.send_signal(signal.SIGTERM)
        proc.wait(timeout=60)
    assert open_trace_dir(trace, require_data=False).manifest.status == "stopped"


def test_the_next_import_removes_a_killed_imports_leftovers(tmp_path: Path) -> None:
    gone = subprocess.Popen([sys.executable, "-c", "pass"])
    gone.wait()  # a pid that was a process and is no more
    out = tmp_path / "out"
    leftover = tmp_path / f".out.importing-{gone.pid}"
    (leftover / "node=x").mkdir(parents=True)
    (leftover / "node=x" / "half.parquet").write_bytes(b"half")
    mine = tmp_path / f".out.importing-{os.getpid()}"  # a live process's: not touched
    mine.mkdir()
    proc = profui("import", shared_trace(SMALL), "-o", out)
    assert proc.returncode == 0, proc.stderr
    assert not leftover.exists() and mine.exists()
    assert open_trace_dir(out).manifest.status == "imported"
