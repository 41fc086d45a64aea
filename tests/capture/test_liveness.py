"""The one pid check (capture.format.liveness.pid_alive), which the capture's rank claims, the
spool's lost windows, the importer's leftovers and the run records all ask."""

from __future__ import annotations

import os
import subprocess
import sys

from profui.capture.format.liveness import capture_gone, pid_alive, this_host


def test_a_reaped_process_is_gone_and_a_running_one_alive() -> None:
    child = subprocess.Popen([sys.executable, "-c", "import sys; sys.stdin.read()"], stdin=subprocess.PIPE)
    try:
        assert pid_alive(child.pid)
    finally:
        child.communicate(b"")
    assert not pid_alive(child.pid)  # exited and reaped: no such process
    assert pid_alive(os.getpid())
    assert pid_alive(1)  # init: alive whoever owns it (a refused signal is not "gone")
    assert capture_gone({"pid": child.pid, "host": this_host()})
    assert not capture_gone({"pid": child.pid, "host": this_host() + "-elsewhere"})  # unknown
