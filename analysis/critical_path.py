"""The critical path of each step: its dependency graph across host threads, device streams
and ranks, the path's length and time by kind, and the graph replayed with one cause shrunk.

(Being built; see issue 36. ``stage`` returns the declared tables.)
"""

from __future__ import annotations

from typing import Any

import polars as pl

from .schemas import TABLES

#: The kinds of time on a critical path (``by_kind.parquet``'s ``kind``), in display order.
KINDS: tuple[str, ...] = (
    "host_compute",  # inside a host op (a CPU-only run's compute)
    "host_overhead",  # on a host thread outside any op
    "input",  # inside a DataLoader fetch
    "launch_delay",  # launch call -> device start, not queued behind other work
    "device_compute",  # kernels (XLA ops on CPU devices)
    "device_overhead",  # gap between two device ops of a stream on the path
    "transfer",  # memcpy / memset
    "sync_wait",  # host blocked in a synchronize call after the work it waited for ended
    "communication",  # collectives once the last rank arrived
    "rank_wait",  # in a collective waiting for another rank to arrive
)


def empty_outputs() -> dict[str, Any]:
    """The stage's tables without rows."""
    return {
        f: TABLES[("critical_path", f)].empty()
        for f in ("steps.parquet", "by_kind.parquet", "events.parquet", "what_if.parquet")
    }


def stage(
    events: pl.LazyFrame, windows: pl.DataFrame, launches: pl.DataFrame, hta_compat: bool
) -> dict[str, Any]:
    """The ``critical_path`` stage's outputs (see :data:`profui.analysis.schemas.TABLES`)."""
    return empty_outputs()
