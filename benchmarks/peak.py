"""One measure of a command for the benchmarks: its wall time, its CPU seconds (user + system,
its children's included) and its own peak memory.

The peak is the command's ``ru_maxrss`` as reported by a small launcher that started it, not by
the benchmark. Linux carries a process's peak over ``fork``/``exec`` (at ``exec`` the old memory's
high-water mark is kept): a command started by the benchmark itself reports at least the
benchmark's own peak (186 MB read on a 10 MB trace). The launcher is a bare interpreter
(``python -S``, nothing imported but ``os``, ~10 MB), so that floor is ~10 MB, below any command
measured here; above it the figure is the largest of the command's own high-water mark (its
``VmHWM``) and its children's. The launcher times the command from its spawn to its exit, so its
own start-up is in none of the figures.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from dataclasses import dataclass

#: Run as ``python -S -c LAUNCHER FD CMD...``: spawns CMD, waits, writes its figures to FD.
LAUNCHER = """
import os, sys, time
fd = int(sys.argv[1])
os.set_inheritable(fd, False)
t = time.perf_counter()
pid = os.posix_spawnp(sys.argv[2], sys.argv[2:], os.environ)
_, status, use = os.wait4(pid, 0)
wall = time.perf_counter() - t
code = os.waitstatus_to_exitcode(status)
os.write(fd, ('{"wall": %r, "cpu": %r, "peak_kb": %d, "code": %d}'
              % (wall, use.ru_utime + use.ru_stime, use.ru_maxrss, code)).encode())
"""


@dataclass(frozen=True)
class Measure:
    """One run of a command: wall s, CPU s (user + system), peak MB, exit status, its output."""

    wall: float
    cpu: float
    peak_mb: float
    code: int
    stdout: str | bytes | None
    stderr: str | bytes | None


def run(
    cmd: list[str],
    *,
    env: dict[str, str] | None = None,
    cwd: str | None = None,
    stdout: int | None = subprocess.PIPE,
    stderr: int | None = subprocess.PIPE,
    text: bool = True,
) -> Measure:
    """Run ``cmd`` (found on ``PATH`` as ``subprocess`` would) and measure it (module docstring).
    ``stdout``/``stderr``: ``subprocess.PIPE`` (captured), ``DEVNULL`` or None (inherited)."""
    read, write = os.pipe()
    try:
        proc = subprocess.run(
            [sys.executable, "-S", "-c", LAUNCHER, str(write), *map(str, cmd)],
            env=env,
            cwd=cwd,
            stdin=subprocess.DEVNULL,
            stdout=stdout,
            stderr=stderr,
            text=text,
            pass_fds=(write,),
            check=False,
        )
        os.close(write)
        write = -1
        with os.fdopen(read, "rb") as f:
            read = -1
            report = f.read()
    finally:
        for fd in (read, write):
            if fd >= 0:
                os.close(fd)
    if not report:
        raise RuntimeError(f"could not run {cmd[0]}: {proc.stderr}")
    m = json.loads(report)
    return Measure(m["wall"], m["cpu"], m["peak_kb"] / 1024, m["code"], proc.stdout, proc.stderr)
