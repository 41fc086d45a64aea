"""profui's own cheap event recorder, for jobs that run without torch.

Annotations and steps are appended to an in-process list (a tuple per event, no I/O) and handed
to the profcap daemon as a small JSON spool file when the list grows large, every few seconds at a
step boundary, and at interpreter exit. The daemon writes them into the trace as ``annotation``
and ``step`` events. Pure standard library.
"""

from __future__ import annotations

import atexit
import json
import os
import threading
import time

from . import session as _session

FLUSH_EVENTS = 20_000
FLUSH_SECONDS = 5.0
#: Beyond this many events per process the recorder stops and says so once.
MAX_EVENTS = 5_000_000


class Recorder:
    """Buffers (ts_ns, dur_ns, kind, name, tid) tuples of one process."""

    def __init__(self, sess: _session.Session) -> None:
        self.session = sess
        self.pid = os.getpid()
        self.rank = _session.rank()
        self.events: list[tuple[int, int, str, str, int]] = []
        self.open: dict[tuple[int, str], list[int]] = {}
        self.enabled = True  # start_profiling()/stop_profiling() gate it once used
        self.manual = False
        self.total = 0
        self.seq = 0
        self.last_flush = time.monotonic()
        self.last_step_ns: int | None = None
        self.step_count = 0
        self.lock = threading.Lock()
        atexit.register(self.flush)

    def begin(self, name: str) -> None:
        """Open an annotation named ``name`` on this thread."""
        self.open.setdefault((threading.get_native_id(), name), []).append(time.time_ns())

    def end(self, name: str) -> None:
        """Close the innermost open annotation ``name`` of this thread."""
        tid = threading.get_native_id()
        stack = self.open.get((tid, name))
        if not stack:
            return
        start = stack.pop()
        if self.enabled:
            self._add(start, time.time_ns() - start, "annotation", name, tid)

    def step(self) -> None:
        """Mark the end of one training step (the first call only starts step counting)."""
        now = time.time_ns()
        if self.last_step_ns is not None and self.enabled:
            self._add(
                self.last_step_ns,
                now - self.last_step_ns,
                "step",
                f"ProfilerStep#{self.step_count}",
                threading.get_native_id(),
            )
        self.last_step_ns = now
        self.step_count += 1
        if time.monotonic() - self.last_flush > FLUSH_SECONDS:
            self.flush()

    def set_enabled(self, on: bool) -> None:
        """start_profiling()/stop_profiling(): record only between them from now on."""
        self.manual = True
        self.enabled = on
        if not on:
            self.flush()

    def _add(self, ts: int, dur: int, kind: str, name: str, tid: int) -> None:
        if self.total >= MAX_EVENTS:
            return
        self.events.append((ts, dur, kind, name, tid))
        self.total += 1
        if self.total == MAX_EVENTS:
            self.session.note(
                f"rank {self.rank} pid {self.pid}: annotation recorder stopped after {MAX_EVENTS} events"
            )
        if len(self.events) >= FLUSH_EVENTS:
            self.flush()

    def flush(self) -> None:
        """Hand buffered events to the daemon (best effort: never raises into the job)."""
        if os.getpid() != self.pid:  # a forked child holds a copy of the parent's buffer
            self.events = []
            return
        with self.lock:
            events, self.events = self.events, []
            self.last_flush = time.monotonic()
            if not events:
                return
            self.seq += 1
            final = self.session.spool_name(self.rank, self.pid, self.seq, _session.EVENTS_SUFFIX)
            tmp = final.with_name(final.name + ".tmp")
            try:
                with open(tmp, "w") as fh:
                    json.dump(
                        {"rank": self.rank, "pid": self.pid, "events": events}, fh, separators=(",", ":")
                    )
                os.replace(tmp, final)
            except OSError as exc:
                self.session.note(
                    f"rank {self.rank} pid {self.pid}: {len(events)} annotation events lost ({exc})"
                )


_recorder: Recorder | None = None
_checked = False


def get() -> Recorder | None:
    """This process's recorder, or None outside a tracing profcap session."""
    global _recorder, _checked
    if _recorder is not None and _recorder.pid != os.getpid():
        _recorder = None
        _checked = False
    if not _checked:
        _checked = True
        sess = _session.current()
        if sess is not None and sess.trace:
            _recorder = Recorder(sess)
    return _recorder
