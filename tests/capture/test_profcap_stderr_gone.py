"""Nothing that happens to profcap's own output stops the job or changes its exit status: a
stderr whose reader is gone (``2>&1 | head``), Ctrl-C through ``| tee``, a disk too small for a
trace, an output folder that cannot be made. Real processes, pipes and a real small tmpfs."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest
from test_profcap_support import PROFCAP, mount_tmpfs, start_profcap, wait_for_file

#: A job that says when it runs, works a little and exits with $EXIT.
JOB = r"""
import os, sys, time
from profui.capture import step
open(os.environ["MARKER"], "w").write("ran")
for i in range(int(os.environ.get("STEPS", "8"))):
    time.sleep(float(os.environ.get("SLEEP", "0.05")))
    step()
open(os.environ["MARKER"], "w").write("finished")
sys.exit(int(os.environ.get("EXIT", "0")))
"""


def _job(tmp: Path, **env: str) -> tuple[list[str], dict[str, str], Path]:
    job = tmp / "job.py"
    job.write_text(JOB)
    marker = tmp / "marker"
    return [sys.executable, str(job)], dict(os.environ, MARKER=str(marker), **env), marker


def _final(trace: Path) -> dict:
    m = json.loads((trace / "manifest.json").read_text())
    assert not (trace / ".profcap-reserve").exists() and not (trace / ".spool").exists()
    return m


def test_stderr_without_a_reader_from_the_start(tmp_path: Path) -> None:
    cmd, env, marker = _job(tmp_path, EXIT="3")
    trace = tmp_path / "trace"
    proc = start_profcap(["-o", trace, "--", *cmd], env, stderr=subprocess.PIPE)
    proc.stderr.close()  # `profcap ... 2>&1 | head -0`: every write of profcap's meets EPIPE
    assert proc.wait(timeout=180) == 3  # the job's status, not profcap's failure
    assert marker.read_text() == "finished"
    m = _final(trace)
    assert m["status"] == "failed" and m["exit_code"] == 3


def test_stderr_reader_gone_in_the_middle_of_the_run(tmp_path: Path) -> None:
    cmd, env, marker = _job(tmp_path, STEPS="30", SLEEP="0.05")
    trace = tmp_path / "trace"
    proc = start_profcap(["-o", trace, "--", *cmd], env, stderr=subprocess.PIPE)
    wait_for_file(marker)
    proc.stderr.close()  # the log shipper dies while the job runs
    assert proc.wait(timeout=180) == 0
    assert marker.read_text() == "finished"
    assert _final(trace)["status"] == "completed"


def test_ctrl_c_through_tee_exits_130_and_stops_the_trace(tmp_path: Path) -> None:
    cmd, env, marker = _job(tmp_path, STEPS="400", SLEEP="0.05")
    trace = tmp_path / "trace"
    log = tmp_path / "log"
    # `profcap ... 2>&1 | tee log` in one process group, as a shell runs a pipeline
    tee = subprocess.Popen(
        ["tee", str(log)], stdin=subprocess.PIPE, stdout=subprocess.DEVNULL, process_group=0
    )
    proc = subprocess.Popen(
        [*PROFCAP, "-o", str(trace), "--", *cmd],
        env=env,
        stdin=subprocess.DEVNULL,
        stdout=tee.stdin,
        stderr=tee.stdin,
        process_group=tee.pid,
    )
    tee.stdin.close()
    wait_for_file(marker)
    os.killpg(tee.pid, signal.SIGINT)  # Ctrl-C: the terminal signals the whole pipeline
    assert proc.wait(timeout=120) == 128 + signal.SIGINT
    tee.wait(timeout=10)
    assert marker.read_text() == "ran"  # the job stopped, as Ctrl-C asked
    assert _final(trace)["status"] == "stopped"


def _refused_capture_runs_the_job(tmp_path: Path, out: Path, said: str) -> None:
    cmd, env, marker = _job(tmp_path, EXIT="5")
    proc = subprocess.run(
        [*PROFCAP, "-o", str(out), "--", *cmd],
        env=env,
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 5, proc.stderr  # the job's own status
    assert marker.read_text() == "finished"
    lines = proc.stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith(f"profcap: {out}: ") and said in lines[0], proc.stderr
    assert lines[0].endswith("running the job without capture")
    assert not out.exists()


def test_output_under_a_file_runs_the_job_uncaptured(tmp_path: Path) -> None:
    a_file = tmp_path / "a_file"
    a_file.write_text("keep")
    _refused_capture_runs_the_job(tmp_path, a_file / "trace", "cannot write the trace here")
    assert a_file.read_text() == "keep"


@pytest.fixture
def tiny_disk(tmp_path: Path):
    yield from mount_tmpfs(tmp_path / "tiny", "256k")


def test_a_disk_too_small_is_said_before_anything_is_created(tmp_path: Path, tiny_disk: Path) -> None:
    _refused_capture_runs_the_job(tmp_path, tiny_disk / "deep" / "trace", "KiB free on its disk")
    assert list(tiny_disk.iterdir()) == []


def test_an_output_name_that_is_not_utf8_runs_the_job_uncaptured(tmp_path: Path) -> None:
    out = Path(os.fsdecode(os.fsencode(str(tmp_path)) + b"/trace\xff"))
    cmd, env, marker = _job(tmp_path, EXIT="5")
    proc = subprocess.run(
        [*PROFCAP, "-o", out, "--", *cmd], env=env, stdin=subprocess.DEVNULL, capture_output=True, timeout=120
    )
    assert proc.returncode == 5 and marker.read_text() == "finished"
    assert b"path is not valid UTF-8" in proc.stderr and b"running the job without capture" in proc.stderr
    assert not out.exists()
