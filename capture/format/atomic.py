"""Whole-file writes: write to a temporary name in the same folder, then rename."""

from __future__ import annotations

import contextlib
import os
import tempfile
from collections.abc import Callable, Iterator
from pathlib import Path


@contextlib.contextmanager
def atomic_path(final: str | Path) -> Iterator[Path]:
    """Yield a temporary path beside ``final``; on success rename it onto ``final``.

    Readers see either the old file or the complete new one, never a partial file. On error
    the temporary file is removed and ``final`` is untouched.
    """
    final = Path(final)
    final.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{final.name}.", suffix=".tmp", dir=final.parent)
    os.close(fd)
    tmp_path = Path(tmp)
    try:
        yield tmp_path
        os.replace(tmp_path, final)
    except BaseException:
        with contextlib.suppress(OSError):
            tmp_path.unlink()
        raise


def write_bytes_atomic(final: str | Path, data: bytes, fsync: bool = True) -> None:
    """Write ``data`` to ``final`` atomically."""
    with atomic_path(final) as tmp:
        with open(tmp, "wb") as fh:
            fh.write(data)
            if fsync:
                fh.flush()
                os.fsync(fh.fileno())


def write_with(final: str | Path, writer: Callable[[Path], None]) -> None:
    """Call ``writer(tmp_path)`` and atomically move the result onto ``final``."""
    with atomic_path(final) as tmp:
        writer(tmp)
