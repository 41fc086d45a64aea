"""One analysis at a time per trace: an exclusive lock on ``TRACE/.profui/lock``.

The lock is capture.format's :class:`~profui.capture.format.lock.FileLock`: it dies with its
process, so a killed ``profui analyze`` never leaves a stale lock behind. Who holds it is
written into the lock file for the waiting message.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

import msgspec

from profui.capture.format.lock import FileLock

from .errors import PipelineError

LOCK = "lock"


class _Holder(msgspec.Struct):
    """What :meth:`TraceLock.set_holder` writes; typed, so a damaged lock file reads as unknown."""

    pid: int | None = None
    run: str | None = None


_decode_holder = msgspec.json.Decoder(_Holder).decode


class TraceLock:
    """Exclusive lock on a trace's analysis folder."""

    def __init__(self, private_dir: Path) -> None:
        self.path = private_dir / LOCK
        self._lock = FileLock(self.path)

    @property
    def held(self) -> bool:
        """True while this object holds the lock."""
        return self._lock.held

    def try_acquire(self) -> bool:
        """Take the lock if free; return whether it is now held."""
        return self._lock.try_acquire()

    def acquire(self, wait: bool, on_wait: Callable[[dict[str, Any]], None] | None = None) -> None:
        """Take the lock; if busy, refuse (``wait=False``) or call ``on_wait(holder)`` and block."""
        if self.try_acquire():
            return
        holder = self.holder()
        if not wait:
            raise PipelineError(
                f"{self.path.parent.parent}: another profui analyze {describe_holder(holder)} is analysing this trace; try again when it ends"
            )
        self._lock.acquire(on_busy=None if on_wait is None else lambda: on_wait(holder))

    def set_holder(self, **info: Any) -> None:
        """Record who holds the lock (pid, run id) for processes that wait on it."""
        self._lock.write(json.dumps({"pid": os.getpid(), **info}).encode())

    def holder(self) -> dict[str, Any]:
        """Who holds the lock, as written by :meth:`set_holder` (empty if unknown or damaged)."""
        try:
            return msgspec.structs.asdict(_decode_holder(self.path.read_bytes() or b"{}"))
        except (OSError, msgspec.MsgspecError, RecursionError):
            return {}

    def release(self) -> None:
        """Drop the lock."""
        self._lock.release()

    def __enter__(self) -> TraceLock:
        return self

    def __exit__(self, *exc: object) -> None:
        self.release()


def describe_holder(holder: dict[str, Any]) -> str:
    """``(run run-0003, pid 1234)`` from :meth:`TraceLock.holder`'s dict, or empty if unknown."""
    parts = []
    if holder.get("run"):
        parts.append(f"run {holder['run']}")
    if holder.get("pid"):
        parts.append(f"pid {holder['pid']}")
    return f"({', '.join(parts)})" if parts else ""
