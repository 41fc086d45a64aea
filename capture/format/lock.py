"""One exclusive lock on a file, for the cache's entries and a trace's analysis runs.

An ``fcntl.flock`` on a lock file: the kernel drops it when its process ends, however it ends,
so a killed holder never leaves it stale. Lock files are never removed: a waiter would otherwise
lock a file already unlinked while a third process creates a new one and locks that, and both
would hold "the" lock. On a file system without locks (``ENOLCK``, as some NFS mounts answer) the
lock is taken as held but not in force (:attr:`FileLock.enforced` is False): the work goes on
unlocked, and the holder leaves alone what only a true holder may remove.

A lock may also be taken on a file that must exist already (``create=False``: a spool
hand-over, which is the lock of its own conversion), and waited for up to a deadline
(:meth:`FileLock.acquire_within`).
"""

from __future__ import annotations

import errno
import fcntl
import os
import time
from collections.abc import Callable
from pathlib import Path

from .layout import locks_dir

#: What ``flock`` answers on a file system that does not lock (some NFS mounts, some FUSE ones).
_NO_LOCKS = (errno.ENOLCK, errno.EOPNOTSUPP)


class FileLock:
    """Exclusive lock on the file ``path`` (made, with its folders, when missing; with
    ``create=False`` the file must exist, and taking the lock raises ``FileNotFoundError`` when
    it does not)."""

    def __init__(self, path: str | Path, *, create: bool = True) -> None:
        self.path = Path(path)
        self.create = create
        self._fd: int | None = None
        self.enforced = False

    @property
    def held(self) -> bool:
        """True while this object holds the lock (enforced or not)."""
        return self._fd is not None

    def try_acquire(self) -> bool:
        """Take the lock if no other process holds it; return whether it is now held."""
        return self._take(blocking=False)

    def acquire(self, on_busy: Callable[[], None] | None = None) -> None:
        """Take the lock, waiting for its holder; ``on_busy()`` is called once before waiting."""
        if self._take(blocking=False):
            return
        if on_busy is not None:
            on_busy()
        self._take(blocking=True)

    def acquire_within(self, seconds: float, poll: float = 0.05) -> bool:
        """Take the lock, waiting up to ``seconds`` for its holder; return whether it is held."""
        deadline = time.monotonic() + seconds
        while not self._take(blocking=False):
            if time.monotonic() > deadline:
                return False
            time.sleep(poll)
        return True

    def _take(self, blocking: bool) -> bool:
        if self._fd is not None:
            return True
        if self.create:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            # 0o666 less the umask: a shared cache's lock must be takeable by its other users
            fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o666)
        else:  # FileNotFoundError when it is gone
            fd = os.open(self.path, os.O_RDONLY)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX if blocking else fcntl.LOCK_EX | fcntl.LOCK_NB)
            self.enforced = True
        except BlockingIOError:
            os.close(fd)
            return False
        except OSError as exc:
            if exc.errno not in _NO_LOCKS:
                os.close(fd)
                raise
            self.enforced = False
        except BaseException:  # interrupted while waiting (Ctrl-C)
            os.close(fd)
            raise
        self._fd = fd
        return True

    def write(self, data: bytes) -> None:
        """Replace the lock file's content with ``data`` (who holds it, for those who wait)."""
        if self._fd is None:
            return
        os.ftruncate(self._fd, 0)
        os.pwrite(self._fd, data, 0)

    def release(self) -> None:
        """Drop the lock."""
        if self._fd is not None:
            if self.enforced:
                # not left to the close: a child forked meanwhile shares the file, and the lock
                fcntl.flock(self._fd, fcntl.LOCK_UN)
            os.close(self._fd)
            self._fd = None
            self.enforced = False

    def __enter__(self) -> FileLock:
        self.acquire()
        return self

    def __exit__(self, *exc: object) -> None:
        self.release()


def cache_lock(cache_root: str | Path, kind: str, key: str) -> FileLock:
    """The lock of the cache entry ``key`` of ``kind`` (``import``, ``combined``): its file lives
    in :func:`~.layout.locks_dir`, beside the entries' folders, which hold entries only."""
    return FileLock(locks_dir(cache_root) / f"{kind}-{key}")
