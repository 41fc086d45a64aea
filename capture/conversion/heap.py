"""Where an import's memory comes from, and giving it back to the system between its steps.

Arrow's allocator and the C heap keep what is freed for reuse, but neither reuses the other's,
nor can Polars (its own allocator) reuse either: after a step that let go of hundreds of MB,
what comes next would otherwise add to the process's peak instead of filling the gap. So a
conversion's Arrow buffers come from the C heap too (:func:`c_heap_pool`), where the native
scan's columns are: one heap, its large blocks given back as they are freed.
"""

from __future__ import annotations

import contextlib
import ctypes
import gc
import os
import threading
from collections.abc import Iterator

import pyarrow as pa

_pool_lock = threading.Lock()
_pool_users = 0
_pool_before: pa.MemoryPool | None = None


@contextlib.contextmanager
def c_heap_pool() -> Iterator[None]:
    """Within, Arrow allocates from the C heap (its system pool) instead of its default
    (mimalloc), unless ``ARROW_DEFAULT_MEMORY_POOL`` names one. mimalloc keeps what is freed
    and touches more than it hands out: a 10 MB trace's conversion peaked 22 MB higher with it
    (130 -> 108 MB), 5 MB of it at the first allocation; the time is the same. Arrow's default
    pool is the process's, not the thread's: while any thread is within, every default-pool
    allocation of the process comes from the C heap, and the default is set back when the last
    of the threads within leaves."""
    global _pool_users, _pool_before
    if os.environ.get("ARROW_DEFAULT_MEMORY_POOL"):
        yield
        return
    with _pool_lock:
        if not _pool_users:
            _pool_before = pa.default_memory_pool()
            pa.set_memory_pool(pa.system_memory_pool())
        _pool_users += 1
    try:
        yield
    finally:
        with _pool_lock:
            _pool_users -= 1
            if not _pool_users and _pool_before is not None:
                pa.set_memory_pool(_pool_before)
                _pool_before = None


def give_back(collect: bool = False) -> None:
    """Return what Arrow's memory pool and the C heap hold unused to the system; ``collect``:
    after collecting the young generations' cyclic garbage (what the import itself left: a
    few dozen small objects of the stdlib's JSON encoder, no columns,
    which a conversion holds without cycles). Not a full collection: that walks every object
    of the process (10-40 ms after the modules' own) to find nothing more of the import's."""
    pa.default_memory_pool().release_unused()
    if collect:
        gc.collect(1)
    with contextlib.suppress(OSError, AttributeError):  # glibc only
        ctypes.CDLL("libc.so.6").malloc_trim(0)
