"""Giving freed memory back to the system between the large steps of an import.

Arrow's allocator and the C heap keep what is freed for reuse, but neither reuses the other's,
nor can Polars (its own allocator) reuse either: after a step that let go of hundreds of MB,
what comes next would otherwise add to the process's peak instead of filling the gap.
"""

from __future__ import annotations

import contextlib
import ctypes
import gc

import pyarrow as pa


def give_back(collect: bool = False) -> None:
    """Return what Arrow's memory pool and the C heap hold unused to the system; ``collect``:
    after a full garbage collection (costly in a process holding many objects: not between
    the steps of one conversion, which makes no cycles)."""
    pa.default_memory_pool().release_unused()
    if collect:
        gc.collect()
    with contextlib.suppress(OSError, AttributeError):  # glibc only
        ctypes.CDLL("libc.so.6").malloc_trim(0)
