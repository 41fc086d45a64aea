"""profcap at a terminal (a real pseudo-terminal): the job can read it, and Ctrl-C typed at it
stops the job with status 'stopped'."""

from __future__ import annotations

import fcntl
import os
import select
import subprocess
import sys
import termios
import time

from test_profcap_support import PROFCAP, manifest


def _read_until(fd: int, text: bytes, timeout: float = 60.0) -> bytes:
    seen = b""
    end = time.monotonic() + timeout
    while text not in seen:
        left = end - time.monotonic()
        assert left > 0, f"never saw {text!r}; got {seen[-500:]!r}"
        ready, _, _ = select.select([fd], [], [], left)
        if ready:
            try:
                chunk = os.read(fd, 4096)
            except OSError:
                break
            if not chunk:
                break
            seen += chunk
    return seen


def test_job_reads_the_terminal_and_ctrl_c_stops_it(tmp_path):
    job = tmp_path / "job.py"
    job.write_text("import time\nx = input('name? ')\nprint('got', x, flush=True)\ntime.sleep(60)\n")
    trace = tmp_path / "trace"
    master, slave = os.openpty()

    def controlling_terminal() -> None:
        os.setsid()
        fcntl.ioctl(0, termios.TIOCSCTTY, 0)

    p = subprocess.Popen(
        [*PROFCAP, "-o", str(trace), "--no-trace", "--", sys.executable, str(job)],
        stdin=slave,
        stdout=slave,
        stderr=slave,
        preexec_fn=controlling_terminal,
        close_fds=True,
    )
    os.close(slave)
    try:
        _read_until(master, b"name? ")
        os.write(master, b"hello\n")
        _read_until(master, b"got hello")
        os.write(master, b"\x03")  # Ctrl-C: the terminal signals its foreground process group
        assert p.wait(timeout=60) == 130
    finally:
        if p.poll() is None:
            p.kill()
        os.close(master)
    m = manifest(trace)
    assert m["status"] == "stopped" and m["exit_code"] == 130
