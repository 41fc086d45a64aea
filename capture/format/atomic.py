"""Whole-file writes: write to a temporary name in the same folder, then rename."""

from __future__ import annotations

import contextlib
import os
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
    # Not tempfile.mkstemp: it creates 0600 files, and a trace must keep the user's umask so
    # colleagues can open it. O_EXCL keeps the name our own. os.urandom, not secrets (the same
    # bytes): secrets loads hmac, base64 and random into every importing process.
    while True:
        tmp_path = final.parent / f".{final.name}.{os.getpid()}.{os.urandom(4).hex()}.tmp"
        try:
            os.close(os.open(tmp_path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666))
            break
        except FileExistsError:
            continue
    try:
        yield tmp_path
        os.replace(tmp_path, final)
    except BaseException:
        with contextlib.suppress(OSError):
            tmp_path.unlink()
        raise


def temporaries(folder: Path, pattern: str) -> list[Path]:
    """The temporary files :func:`atomic_path` made for the files ``pattern`` names under
    ``folder`` (a glob, ``node=*/rank=*/events-*.parquet``) and never renamed: what a writer
    killed mid-write leaves behind. Those of this process are not listed."""
    head, _, name = pattern.rpartition("/")
    found = folder.glob(f"{head}/.{name}.*.tmp" if head else f".{name}.*.tmp")
    return sorted(t for t in found if t.name.rsplit(".", 3)[1] != str(os.getpid()))


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
