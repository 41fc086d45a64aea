"""CPU performance counters per CPU from ``perf stat -a -A -x, -I <ms>``, where the kernel allows.

Checked once at start; what does not work is said once (no perf, not permitted, counters not
supported on this machine) and capture carries on without it.
"""

from __future__ import annotations

import shutil
import subprocess
import threading
import time
from collections.abc import Callable

Emit = Callable[[int, str, int, str, float], None]
DEFAULT_EVENTS = ("cycles", "instructions")


def _metric_name(event: str) -> str:
    return event.replace(":", "_").replace("/", "_").replace("-", "_")


def parse_line(line: str) -> tuple[float | None, int, str, float] | None:
    """Parse one CSV line of ``perf stat -A -x,`` (with or without ``-I``'s leading time).

    Returns (interval_end_s or None, cpu, event, count), or None for lines that hold no count
    (comments, ``<not supported>``, ``<not counted>``).
    """
    fields = [f.strip() for f in line.strip().split(",")]
    if len(fields) < 4 or fields[0].startswith("#"):
        return None
    t: float | None = None
    if not fields[0].startswith("CPU"):
        try:
            t = float(fields[0])
        except ValueError:
            return None
        fields = fields[1:]
    if len(fields) < 4 or not fields[0].startswith("CPU"):
        return None
    try:
        cpu = int(fields[0][3:])
        count = float(fields[1])
    except ValueError:
        return None
    return t, cpu, fields[3], count


def probe(events: list[str]) -> tuple[list[str], str | None]:
    """Run perf once; return (events that count here, a note for those that do not)."""
    exe = shutil.which("perf")
    if exe is None:
        return [], "no CPU counters: perf is not installed"
    try:
        res = subprocess.run(
            [exe, "stat", "-a", "-A", "-x,", "-e", ",".join(events), "--", "sleep", "0.05"],
            capture_output=True,
            text=True,
            timeout=10,
        )
    except (OSError, subprocess.TimeoutExpired) as exc:
        return [], f"no CPU counters: perf stat failed ({exc})"
    ok = []
    for line in res.stderr.splitlines():
        parsed = parse_line(line)
        if parsed is not None and parsed[2] not in ok:
            ok.append(parsed[2])
    # perf may print event names with modifiers (cycles:u); keep the order the user asked for.
    working = [e for e in events if any(o == e or o.startswith(e + ":") for o in ok)]
    missing = [e for e in events if e not in working]
    if res.returncode != 0 and not working:
        last = (res.stderr.strip().splitlines() or ["unknown error"])[-1].strip()
        return [], f"no CPU counters: perf stat not permitted or failed ({last})"
    note = None
    if missing:
        note = f"CPU counters not supported here (perf): {', '.join(missing)}"
    return working, note


class PerfSampler:
    """A running ``perf stat -I`` whose per-interval, per-CPU counts become metrics rows."""

    def __init__(self, events: list[str], interval_ms: int, emit: Emit) -> None:
        self.emit = emit
        self.start_ns = time.time_ns()
        self.proc = subprocess.Popen(
            [
                shutil.which("perf") or "perf",
                "stat",
                "-a",
                "-A",
                "-x,",
                "-I",
                str(interval_ms),
                "-e",
                ",".join(events),
            ],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            stdin=subprocess.DEVNULL,
            text=True,
        )
        self.thread = threading.Thread(target=self._read, name="perf-reader", daemon=True)
        self.thread.start()

    def _read(self) -> None:
        assert self.proc.stderr is not None
        for line in self.proc.stderr:
            parsed = parse_line(line)
            if parsed is None:
                continue
            t, cpu, event, count = parsed
            if t is None:
                continue
            ts = self.start_ns + int(t * 1_000_000_000)
            self.emit(ts, "perf", cpu, _metric_name(event.split(":")[0]), count)

    def stop(self) -> None:
        """Stop perf and wait for its last lines."""
        if self.proc.poll() is None:
            self.proc.terminate()
        try:
            self.proc.wait(timeout=5)
        except subprocess.TimeoutExpired:
            self.proc.kill()
        self.thread.join(timeout=5)
