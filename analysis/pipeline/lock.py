"""One analysis at a time per trace: an exclusive ``fcntl.flock`` on ``TRACE/.profui/lock``.

The lock dies with its process (the kernel drops it), so a killed ``profui analyze`` never
leaves a stale lock behind. Who holds it is written into the lock file for the waiting message.
"""

from __future__ import annotations

import fcntl
import json
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

import msgspec

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
        self._fd: int | None = None

    @property
    def held(self) -> bool:
        """True while this object holds the lock."""
        return self._fd is not None

    def try_acquire(self) -> bool:
        """Take the lock if free; return whether it is now held."""
        if self._fd is not None:
            return True
        self.path.parent.mkdir(parents=True, exist_ok=True)
        fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o644)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            os.close(fd)
            return False
        self._fd = fd
        return True

    def acquire(self, wait: bool, on_wait: Callable[[dict[str, Any]], None] | None = None) -> None:
        """Take the lock; if busy, refuse (``wait=False``) or call ``on_wait(holder)`` and block."""
        if self.try_acquire():
            return
        holder = self.holder()
        who = describe_holder(holder)
        if not wait:
            raise PipelineError(
                f"{self.path.parent.parent}: another profui analyze {who} is analysing this trace; try again when it ends"
            )
        if on_wait is not None:
            on_wait(holder)
        fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o644)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX)
        except BaseException:
            os.close(fd)
            raise
        self._fd = fd

    def set_holder(self, **info: Any) -> None:
        """Record who holds the lock (pid, run id) for processes that wait on it."""
        if self._fd is None:
            return
        data = json.dumps({"pid": os.getpid(), **info}).encode()
        os.ftruncate(self._fd, 0)
        os.pwrite(self._fd, data, 0)

    def holder(self) -> dict[str, Any]:
        """Who holds the lock, as written by :meth:`set_holder` (empty if unknown or damaged)."""
        try:
            return msgspec.structs.asdict(_decode_holder(self.path.read_bytes() or b"{}"))
        except (OSError, msgspec.MsgspecError, RecursionError):
            return {}

    def release(self) -> None:
        """Drop the lock."""
        if self._fd is not None:
            fcntl.flock(self._fd, fcntl.LOCK_UN)
            os.close(self._fd)
            self._fd = None

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
