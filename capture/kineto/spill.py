"""A large gzip trace decompressed into an unnamed file beside the import, then mapped.

Decompressed into memory, a gzip file's text is held whole while it is scanned, next to the
scan's columns (2.5x the text at the peak). Written instead to a file the kernel may page out
and mapped read-only, it is let go as the scan passes, as a plain file's is
(:func:`profui.capture.kineto.reader.read_bytes`). The file has no name (it goes when the
import does, whatever ends it). Not done on a memory file system (tmpfs, ramfs: the pages
would stay in memory all the same), nor where it would leave the disk less free than the text
again; a write that fails (a full disk) falls back to memory.
"""

from __future__ import annotations

import mmap
import os
import re
import shutil
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

#: Text (a gzip file's stated size) from which it is spilled; below, memory is cheaper.
SPILL_BYTES = 256 << 20
_MEMORY_FS = frozenset({"tmpfs", "ramfs"})


def worth_spilling(folder: Path, text_bytes: int) -> bool:
    """Whether ``text_bytes`` of text should go to a file in ``folder`` instead of memory."""
    if text_bytes < SPILL_BYTES:
        return False
    try:
        if shutil.disk_usage(folder).free < 2 * text_bytes:
            return False
    except OSError:
        return False
    return file_system(folder) not in _MEMORY_FS


def file_system(folder: Path) -> str | None:
    """The type of the file system holding ``folder`` (Linux: from ``/proc/self/mountinfo``),
    None where it cannot be told."""
    try:
        where = os.path.realpath(folder)
        with open("/proc/self/mountinfo") as fh:
            lines = fh.read().splitlines()
    except OSError:
        return None
    best, kind = "", None
    for line in lines:
        fields = line.split()
        if "-" not in fields:
            continue
        point = re.sub(r"\\([0-7]{3})", lambda m: chr(int(m[1], 8)), fields[4])  # \040 is a space
        inside = where == point or where.startswith(point.rstrip("/") + "/")
        if inside and len(point) >= len(best):
            best, kind = point, fields[fields.index("-") + 1]
    return kind


def spill(
    inflate: Callable[[Callable[[bytes], Any]], None], folder: Path, text_bytes: int
) -> memoryview | None:
    """The text ``inflate(write)`` produces, written to an unnamed file in ``folder`` and mapped
    read-only; None when the file cannot be written or mapped (the caller keeps it in memory),
    or when the text outgrows what the disk can spare (``text_bytes``, a gzip file's stated
    size, is only modulo 4 GiB and of its last member: the disk is left at least that free).
    Errors of ``inflate`` itself (a corrupt file) pass through."""
    try:
        room = shutil.disk_usage(folder).free - max(text_bytes, SPILL_BYTES)
        with tempfile.TemporaryFile(dir=folder, prefix=".profui-text-") as fh:

            def write(piece: bytes) -> None:
                if fh.tell() + len(piece) > room:
                    raise OSError("the text outgrows the free disk")
                fh.write(piece)

            inflate(write)
            fh.flush()
            if not fh.tell():
                return None
            return memoryview(mmap.mmap(fh.fileno(), 0, access=mmap.ACCESS_READ))
    except (OSError, ValueError):
        return None
