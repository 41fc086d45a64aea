"""Why a stream sat idle, and how many launches were waiting on it.

**Idle-time breakdown** (per node, rank, device, stream): the gaps between consecutive device
events on a stream, each put in one category — HTA's definition:

- ``host_wait``: the launch call of the next event started after the previous work ended —
  the host was not enqueueing fast enough;
- ``kernel_wait``: otherwise, a gap shorter than ``kernel_wait_ns`` (30 µs, HTA's default) —
  the normal back-to-back launch overhead;
- ``other``: everything else (e.g. waiting on another stream, an event, a collective).

Default semantics are exact: ns, a gap starts where *all* earlier work on the stream has ended
(running maximum of end times), overlapping events make no negative "idle", and only real
device work (kernel, memcpy, memset) counts. HTA's rule (the gap starts at the end of the
*previous* event only, so overlaps give negative idle, on HTA's streams) is
:func:`profui.analysis.hta_variants.hta_idle_breakdown`, over the same cores.

**Queue length** (per stream): the number of launches that were issued but not yet done.
Default: +1 at the launch call's start, −1 when the device work *ends* ("launched but not
finished"). HTA's ``queue_length_summary`` (−1 when it *starts*, only launches through
:data:`HTA_QUEUE_LAUNCH_NAMES`): :func:`profui.analysis.hta_variants.hta_queue_length`.

**Blocked on a full queue** (per stream): the time the queue length was at or above the
launch queue's capacity (:data:`MAX_QUEUE_LENGTH`, CUDA's 1024 per stream), when the host
blocks in the launch call — HTA's ``time_blocked_on_full_queue``.
"""

from __future__ import annotations

from collections.abc import Sequence

import polars as pl

from .engine import ENGINE
from .intervals import Frame, _lazy, _over
from .keys import varying
from .launch import (
    LAUNCH_KINDS,
    LAUNCHED_KINDS,
    first_calls,
    group_by_varying,
    join_by_rank,
    launch_times,
    sort_total,
)
from .stats import describe

#: HTA's default threshold under which a gap counts as launch overhead (30 µs).
KERNEL_WAIT_NS = 30_000

IDLE_CATEGORIES: tuple[str, ...] = ("host_wait", "kernel_wait", "other")

#: Launch API names HTA's queue-length analysis counts (v0.5 ``get_runtime_launch_events_mask``).
HTA_QUEUE_LAUNCH_NAMES: tuple[str, ...] = (
    "cudaLaunchKernel",
    "cudaLaunchKernelExC",
    "cuLaunchKernel",
    "cuLaunchKernelEx",
    "cudaMemcpyAsync",
    "cudaMemsetAsync",
    "runFunction - job_prep_and_submit_for_execution",
    "hipLaunchKernel",
    "hipExtModuleLaunchKernel",
    "hipMemsetAsync",
    "hipMemcpyAsync",
    "hipMemcpyWithStream",
)

#: CUDA's launch queue capacity per stream (HTA's ``CUDA_MAX_LAUNCH_QUEUE_PER_STREAM``).
MAX_QUEUE_LENGTH = 1024


def queue_words(hta_compat: bool = False) -> str:
    """What a launch in the queue is, as the queue table's title says it: by default launched
    and not finished (it leaves when its work ends), with ``hta_compat`` HTA's launched and not
    yet started."""
    return "launched, not yet started" if hta_compat else "launched, not finished"


_STREAM_KEYS = ["node", "rank", "device", "stream"]

#: The order of device events in :func:`gaps_of`: by start, and at equal starts (µs-rounded
#: traces) by correlation id, duration and name, then the stream (nulls last).
DEVICE_ORDER: tuple[str, ...] = ("ts", "correlation", "dur", "name", *_STREAM_KEYS)


#: A device event's columns in :func:`gaps_of`, its launch call's start (``launch_ts``) after.
_GAP_COLUMNS: tuple[str, ...] = (*_STREAM_KEYS, "ts", "dur", "name", "correlation")


def _streams(rows: pl.DataFrame) -> list[str]:
    """The stream keys that tell ``rows``' streams apart (:func:`profui.analysis.keys.varying`;
    all of them when there are no rows): a window or a sort by the others, a string among them,
    splits nothing."""
    return varying([rows], _STREAM_KEYS) if not rows.is_empty() else list(_STREAM_KEYS)


def device_events(events: pl.LazyFrame) -> pl.LazyFrame:
    """The device work (kernel, memcpy, memset) whose gaps and queue are analysed."""
    return events.filter(pl.col("kind").is_in(LAUNCHED_KINDS))


def host_calls(events: pl.LazyFrame, names: Sequence[str] | None = None) -> pl.LazyFrame:
    calls = events.filter(pl.col("kind").is_in(LAUNCH_KINDS) & pl.col("correlation").is_not_null())
    if names is not None:
        calls = calls.filter(pl.col("name").is_in(list(names)))
    return first_calls(calls.select("node", "rank", "correlation", pl.col("ts").alias("launch_ts")))


def _calls(events: pl.LazyFrame, launches: Frame | None) -> pl.LazyFrame:
    """The launch calls of the device work: from ``launches`` (:func:`profui.analysis.launch.
    kernel_launches`' frame, where the caller has it: the same calls), else found in ``events``."""
    return host_calls(events) if launches is None else launch_times(launches)


def idle_intervals(
    events: pl.LazyFrame, kernel_wait_ns: int = KERNEL_WAIT_NS, launches: Frame | None = None
) -> pl.LazyFrame:
    """Every gap before a device event on its stream, with its category.

    Columns: ``node, rank, device, stream, start, end, idle_ns, category, name`` (``name`` of the
    event after the gap; ``start`` is where all earlier work on the stream ended; rows in
    :data:`DEVICE_ORDER`, the streams interleaved: of events starting at one ns on a stream,
    the one with the lowest correlation id, then duration, then name, comes first). Gaps of 0
    or less are left out. ``launches``: :func:`profui.analysis.launch.kernel_launches`' frame,
    where the caller has it.
    """
    return _intervals(
        device_events(events).select(_GAP_COLUMNS).collect(engine=ENGINE), events, kernel_wait_ns, launches
    )


def _intervals(
    dev: pl.DataFrame, events: pl.LazyFrame, kernel_wait_ns: int, launches: Frame | None
) -> pl.LazyFrame:
    """:func:`idle_intervals` of ``events``' device events ``dev``."""
    if launches is not None:
        linked = _lazy(launches).collect(engine=ENGINE)
        # kernel_launches has one row per device event with a launch call, none without: as
        # many rows as device events, and they are the device events, their calls joined
        # already (df_index x20: the join took 0.09 of the idle stage's 0.28 CPU-s)
        if linked.height == dev.height:
            return _gaps(linked.lazy().select(*_GAP_COLUMNS, "launch_ts"), kernel_wait_ns, True)
    return gaps_of(dev.lazy(), _calls(events, launches), kernel_wait_ns, after_all_earlier=True)


def gaps_of(
    dev: pl.LazyFrame,
    calls: pl.LazyFrame,
    kernel_wait_ns: int = KERNEL_WAIT_NS,
    after_all_earlier: bool = True,
) -> pl.LazyFrame:
    """:func:`idle_intervals` of device events ``dev`` with their launch ``calls``.

    ``after_all_earlier``: a gap starts where all earlier work ended and only positive gaps
    count; otherwise (HTA) it starts at the previous event's end, and every gap counts.
    A stream's events are taken in :data:`DEVICE_ORDER` (ties at one start broken by
    correlation id, then duration, then name; nulls last), so which event follows a gap — its
    name, its launch and, HTA's way, the previous end — is a function of the events, not of
    their row order; rows come in that order too, the streams interleaved.
    """
    return _gaps(join_by_rank(dev.select(_GAP_COLUMNS), calls, how="left"), kernel_wait_ns, after_all_earlier)


def _gaps(dev: pl.LazyFrame, kernel_wait_ns: int, after_all_earlier: bool) -> pl.LazyFrame:
    """:func:`gaps_of` of device events joined to their calls (``launch_ts``)."""
    end = pl.col("ts") + pl.col("dur")
    prev_end = end.cum_max().shift(1) if after_all_earlier else end.shift(1)
    # in time order, each stream's window over its own rows (a sort by the streams' keys first,
    # a string among them, cost 3x the sort by time)
    rows = sort_total(dev, (), DEVICE_ORDER[:1], DEVICE_ORDER[1:], nulls_last=True).collect(engine=ENGINE)
    out = (
        rows.lazy()
        .with_columns(_over(prev_end, _streams(rows)).alias("start"))
        .filter(pl.col("start").is_not_null())
        .with_columns((pl.col("ts") - pl.col("start")).alias("idle_ns"))
    )
    if after_all_earlier:
        out = out.filter(pl.col("idle_ns") > 0)
    host_wait = pl.col("launch_ts").is_not_null() & (pl.col("launch_ts") > pl.col("start"))
    category = (
        pl.when(host_wait)
        .then(pl.lit("host_wait"))
        .when(pl.col("idle_ns") < kernel_wait_ns)
        .then(pl.lit("kernel_wait"))
        .otherwise(pl.lit("other"))
    )
    return out.select(
        *_STREAM_KEYS, "start", pl.col("ts").alias("end"), "idle_ns", category.alias("category"), "name"
    )


def idle_breakdown(
    events: pl.LazyFrame, kernel_wait_ns: int = KERNEL_WAIT_NS, launches: Frame | None = None
) -> pl.LazyFrame:
    """Idle time per stream and category (every category present, 0 when none).

    Columns: ``node, rank, device, stream, category, idle_ns, ratio`` (share of the stream's
    idle time; null when the stream had none), ``count`` and the distribution of the gaps
    ``mean, std, min, p25, p50, p75, max`` (ns; null without gaps) — HTA's
    ``idle_time_breakdown`` with ``show_idle_interval_stats``.
    """
    dev = device_events(events).select(_GAP_COLUMNS).collect(engine=ENGINE)
    return breakdown_of(_intervals(dev, events, kernel_wait_ns, launches), dev.lazy())


def breakdown_of(iv: pl.LazyFrame, dev: pl.LazyFrame) -> pl.LazyFrame:
    """:func:`idle_breakdown` from gaps ``iv`` over the streams of device events ``dev``."""
    streams = dev.select(_STREAM_KEYS).unique()
    cats = pl.LazyFrame({"category": list(IDLE_CATEGORIES)})
    g = pl.col("idle_ns")
    aggs = [
        g.sum().alias("idle_ns"),
        pl.len().cast(pl.Int64).alias("count"),
        *describe(g, integer=True, suffix="_ns"),
    ]
    stats = group_by_varying(iv, _STREAM_KEYS, aggs, keys=["category"])
    full = (
        streams.join(cats, how="cross")
        .join(stats, on=[*_STREAM_KEYS, "category"], how="left")
        .with_columns(pl.col("idle_ns").fill_null(0), pl.col("count").fill_null(0))
    )
    total = pl.col("idle_ns").sum().over(_STREAM_KEYS)
    return (
        full.with_columns(pl.when(total != 0).then(pl.col("idle_ns") / total).alias("ratio"))
        .select(
            *_STREAM_KEYS,
            "category",
            "idle_ns",
            "ratio",
            "count",
            "mean_ns",
            "std_ns",
            "min_ns",
            "p25_ns",
            "p50_ns",
            "p75_ns",
            "max_ns",
        )
        .sort([*_STREAM_KEYS, "category"])
    )


def idle_totals(events: pl.LazyFrame, by: Sequence[str] = ()) -> pl.LazyFrame:
    """Idle time per category summed over streams (per ``by`` group), with its share."""
    return totals_of_breakdown(idle_breakdown(events), by)


def totals_of_breakdown(breakdown: pl.LazyFrame | pl.DataFrame, by: Sequence[str] = ()) -> pl.LazyFrame:
    """:func:`idle_totals` from an already computed :func:`idle_breakdown` frame:
    ``by..., category, idle_ns, count, ratio``."""
    keys = list(by)
    grp = [*keys, "category"]
    return (
        breakdown.lazy()
        .group_by(grp)
        .agg(pl.col("idle_ns").sum(), pl.col("count").sum())
        .with_columns(
            pl.when(pl.col("idle_ns").sum().over(keys or pl.lit(0)) != 0)
            .then(pl.col("idle_ns") / pl.col("idle_ns").sum().over(keys or pl.lit(0)))
            .alias("ratio")
        )
        .sort(grp)
    )


def queue_length(events: pl.LazyFrame, launches: Frame | None = None) -> pl.LazyFrame:
    """Queue length per stream as a step function: one row per change.

    Columns ``node, rank, device, stream, ts, queue_length`` (the value from ``ts`` until the
    stream's next row; rows in time order, the streams interleaved). Only launches matched to device work on the same node and rank count. At equal
    times a launch (+1) is applied before a completion (−1); HTA leaves that order to an
    unstable sort, so on µs-rounded traces with many ties its mean/std can differ by ~1%.
    (HTA also drops the launch whose device event is the first row of the source file — an
    ``index_correlation > 0`` test; file order is not kept in the trace format, so we do not.)
    ``launches``: :func:`profui.analysis.launch.kernel_launches`' frame, where the caller has it
    (its rows are the launched device events already joined to their calls).
    """
    if launches is not None:
        return _queue_of_pairs(_lazy(launches).select(*_STREAM_KEYS, "ts", "dur", "launch_ts"), True)
    return queue_of(device_events(events), host_calls(events), done_at_end=True)


def queue_of(dev: pl.LazyFrame, calls: pl.LazyFrame, done_at_end: bool = True) -> pl.LazyFrame:
    """:func:`queue_length` of device events ``dev`` launched by ``calls``; a launch leaves the
    queue when its work ends (``done_at_end``) or, HTA's way, when it starts."""
    dev = dev.filter(pl.col("correlation").is_not_null())
    pairs = dev.select(*_STREAM_KEYS, "correlation", "ts", "dur").join(
        calls, on=["node", "rank", "correlation"], how="inner"
    )
    return _queue_of_pairs(pairs, done_at_end)


def _queue_of_pairs(pairs: pl.LazyFrame, done_at_end: bool) -> pl.LazyFrame:
    """:func:`queue_of` from device events joined to their calls (``launch_ts``)."""
    rows = pairs.collect(engine=ENGINE)
    keys = _streams(rows)
    # only the keys that vary are sorted with the changes; the others are one value, put back
    # after
    same = {c: pl.lit(rows[c][0], dtype=rows.schema[c]) for c in _STREAM_KEYS if c not in keys}
    done_at = pl.col("ts") + pl.col("dur") if done_at_end else pl.col("ts")
    plus = rows.lazy().select(
        *keys, pl.col("launch_ts").alias("ts"), pl.lit(1, dtype=pl.Int64).alias("delta")
    )
    minus = rows.lazy().select(*keys, done_at.alias("ts"), pl.lit(-1, dtype=pl.Int64).alias("delta"))
    return (
        # launches before completions at equal times: the concat's order, kept by a stable sort
        # (a sort by ts and delta took 4x the time)
        pl.concat([plus, minus])
        .sort("ts", maintain_order=True)
        .with_columns(_over(pl.col("delta").cum_sum(), keys).alias("queue_length"))
        .select(*(same.get(c, pl.col(c)).alias(c) for c in _STREAM_KEYS), "ts", "queue_length")
    )


def queue_length_summary(events: pl.LazyFrame) -> pl.LazyFrame:
    """Per stream: statistics of the queue length over its change points (HTA's
    ``queue_length_summary``: ``count, mean, std, min, p25, p50, p75, max``) plus
    ``time_mean``, the time-weighted mean between the first and the last change."""
    return queue_stats(queue_length(events))


def queue_stats(q: pl.LazyFrame) -> pl.LazyFrame:
    """:func:`queue_length_summary` of a queue-length series (:func:`queue_length`'s frame)."""
    v = pl.col("queue_length")
    span = pl.col("ts").max() - pl.col("ts").min()
    # within a group: the time to the stream's next change
    held = (pl.col("ts").shift(-1) - pl.col("ts")).fill_null(0)
    aggs = [
        pl.len().cast(pl.Int64).alias("count"),
        *describe(v, integer=True),
        pl.when(span > 0).then((v * held).sum() / span).alias("time_mean"),
    ]
    return group_by_varying(q, _STREAM_KEYS, aggs).sort(_STREAM_KEYS)


def blocked_on_full_queue(
    events: pl.LazyFrame,
    max_queue_length: int = MAX_QUEUE_LENGTH,
    queue: pl.LazyFrame | None = None,
    inventory: Frame | None = None,
) -> pl.LazyFrame:
    """Per stream whose launch queue reached ``max_queue_length``: ``blocked_ns``, the time it
    stayed at or above it (until the queue's next change), and ``share``, that over the rank's
    profiled window (first event start to last event end; a 0–1 fraction).

    Columns ``node, rank, device, stream, blocked_ns, share``; streams that never reached the
    limit have no row (HTA's ``time_blocked_on_full_queue``; HTA's own numbers:
    :func:`profui.analysis.hta_variants.hta_blocked_on_full_queue`). ``queue``: an already
    computed :func:`queue_length` series; ``inventory``: the ingest stage's inventory (per node,
    rank and kind: ``first_ns``, ``end_ns``), whose few rows give the windows that otherwise take
    a pass over every event.
    """
    if inventory is not None:
        spans, first, end = _lazy(inventory), pl.col("first_ns").min(), pl.col("end_ns").max()
    else:
        spans, first, end = events, pl.col("ts").min(), (pl.col("ts") + pl.col("dur")).max()
    span = (
        spans.filter(pl.col("kind") != "instant").group_by("node", "rank").agg((end - first).alias("_span"))
    )
    return blocked_of(queue if queue is not None else queue_length(events), span, max_queue_length)


def blocked_of(q: pl.LazyFrame, span: pl.LazyFrame, max_queue_length: int) -> pl.LazyFrame:
    """:func:`blocked_on_full_queue` of a queue-length series ``q``; ``span`` has ``node, rank, _span``."""
    rows = _lazy(q).collect(engine=ENGINE)
    held = _over(pl.col("ts").shift(-1) - pl.col("ts"), _streams(rows)).fill_null(0)
    full = pl.col("queue_length") >= max_queue_length
    blocked = pl.col("_held").sum().cast(pl.Int64).alias("blocked_ns")
    return (
        group_by_varying(rows.lazy().with_columns(held.alias("_held")).filter(full), _STREAM_KEYS, [blocked])
        .join(span, on=["node", "rank"], how="left")
        .with_columns(
            pl.when(pl.col("_span") > 0).then(pl.col("blocked_ns") / pl.col("_span")).alias("share")
        )
        .select(*_STREAM_KEYS, "blocked_ns", "share")
        .sort(_STREAM_KEYS)
    )
