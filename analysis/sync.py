"""Synchronization: host time blocked in synchronize calls, and the device's own sync events.

A host thread inside ``cudaDeviceSynchronize`` / ``cudaStreamSynchronize`` /
``cudaEventSynchronize`` (or their driver-API and HIP twins) does nothing but wait for the GPU;
a synchronous copy (``cudaMemcpy`` without ``Async``) blocks the same way and is reported as its
own category. ``cudaStreamWaitEvent`` does not block the host (it orders two streams), so it is
not host blocking time; on the device it appears as a ``Stream Wait Event`` sync event.

Device sync events (kind ``sync``: ``Event Sync``, ``Stream Sync``, ``Stream Wait Event``,
``Context Sync``) are reported separately by :func:`gpu_sync_summary`.
"""

from __future__ import annotations

from collections.abc import Sequence

import polars as pl

from .engine import SCAN_ENGINE

#: Host synchronize calls by category: the name decides, for the runtime, driver and HIP APIs.
SYNC_CALLS: dict[str, str] = {
    "cudaDeviceSynchronize": "device",
    "cuCtxSynchronize": "device",
    "hipDeviceSynchronize": "device",
    "cudaStreamSynchronize": "stream",
    "cuStreamSynchronize": "stream",
    "hipStreamSynchronize": "stream",
    "cudaEventSynchronize": "event",
    "cuEventSynchronize": "event",
    "hipEventSynchronize": "event",
    "cudaMemcpy": "blocking_copy",
    "cudaMemset": "blocking_copy",
    "cuMemcpyDtoH_v2": "blocking_copy",
    "cuMemcpyHtoD_v2": "blocking_copy",
    "hipMemcpy": "blocking_copy",
    "hipMemset": "blocking_copy",
}

_HOST_KINDS = ("runtime", "driver")


def sync_calls(events: pl.LazyFrame) -> pl.LazyFrame:
    """The host synchronize calls (:data:`SYNC_CALLS`), one row each with a ``category`` column.

    Columns: ``node, rank, pid, tid, name, category, ts, dur, correlation``.
    """
    names = list(SYNC_CALLS)
    return (
        events.filter(pl.col("kind").is_in(_HOST_KINDS) & pl.col("name").is_in(names))
        .select("node", "rank", "pid", "tid", "name", "ts", "dur", "correlation")
        .with_columns(pl.col("name").replace_strict(SYNC_CALLS, return_dtype=pl.String).alias("category"))
        .sort("node", "rank", "ts")
    )


def host_window(events: pl.LazyFrame, by: Sequence[str] = ("node", "rank")) -> pl.LazyFrame:
    """First start to last end of host events per ``by`` group (``window_ns``; one row of the
    whole trace's when ``by`` is empty).

    An aggregation over every host event, computed here on the streaming engine
    (:data:`~profui.analysis.engine.SCAN_ENGINE`): on df_index x20 (3M events) 9 against 99 ms
    CPU in memory, whose hash table over all the rows grew faster than the rows from 1x to 20x.
    """
    host = events.filter(pl.col("device") < 0)
    span = ((pl.col("ts") + pl.col("dur")).max() - pl.col("ts").min()).alias("window_ns")
    window = host.group_by(list(by)).agg(span) if by else host.select(span)
    return window.collect(engine=SCAN_ENGINE).lazy()


def sync_summary(events: pl.LazyFrame, by: Sequence[str] = ("node", "rank")) -> pl.LazyFrame:
    """Host time blocked in synchronize calls per ``by`` group, call name and category.

    Columns: ``by..., name, category, calls, total_ns, mean_ns, max_ns, window_ns, share``
    where ``share`` is ``total_ns`` over the group's host window (first to last host event).
    Sorted by ``total_ns`` descending. Calls of different threads are summed, so with several
    threads blocked at once the total can exceed the wall time.
    """
    keys = list(by)
    per = (
        sync_calls(events)
        .group_by([*keys, "name", "category"])
        .agg(
            pl.len().cast(pl.Int64).alias("calls"),
            pl.col("dur").sum().alias("total_ns"),
            pl.col("dur").mean().alias("mean_ns"),
            pl.col("dur").max().alias("max_ns"),
        )
    )
    window = host_window(events, keys)
    per = per.join(window, on=keys, how="left") if keys else per.join(window, how="cross")
    return per.with_columns(
        pl.when(pl.col("window_ns") > 0).then(pl.col("total_ns") / pl.col("window_ns")).alias("share")
    ).sort(  # ties by group and category: the same run to run (a group_by's order is not)
        ["total_ns", "name", *keys, "category"], descending=[True, False, *[False] * len(keys), False]
    )


def sync_totals(events: pl.LazyFrame, by: Sequence[str] = ("node", "rank")) -> pl.LazyFrame:
    """Per ``by`` group: ``calls``, ``blocked_ns`` (all categories), ``window_ns`` and ``share``."""
    keys = list(by)
    s = sync_summary(events, keys)
    return (
        s.group_by(keys or [pl.lit(0).alias("_all")])
        .agg(
            pl.col("calls").sum().alias("calls"),
            pl.col("total_ns").sum().alias("blocked_ns"),
            pl.col("window_ns").first().alias("window_ns"),
        )
        .with_columns(
            pl.when(pl.col("window_ns") > 0).then(pl.col("blocked_ns") / pl.col("window_ns")).alias("share")
        )
        .select(*keys, "calls", "blocked_ns", "window_ns", "share")
        .sort(keys or "blocked_ns")
    )


def gpu_sync_summary(events: pl.LazyFrame, by: Sequence[str] = ("node", "rank", "device")) -> pl.LazyFrame:
    """Device sync events (kind ``sync``) per ``by`` group and name: ``count``, ``total_ns``,
    ``mean_ns``, ``max_ns``; sorted by ``total_ns`` descending."""
    keys = [*by, "name"]
    return (
        events.filter(pl.col("kind") == "sync")
        .group_by(keys)
        .agg(
            pl.len().cast(pl.Int64).alias("count"),
            pl.col("dur").sum().alias("total_ns"),
            pl.col("dur").mean().alias("mean_ns"),
            pl.col("dur").max().alias("max_ns"),
        )
        .sort(["total_ns", "name"], descending=[True, False])
    )
