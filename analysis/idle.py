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
device work (kernel, memcpy, memset) counts. ``hta_compat=True`` reproduces HTA: the gap
starts at the end of the *previous* event only (so overlaps give negative idle), HTA's notion
of a GPU event (sync events included), on events from :func:`profui.analysis.hta.hta_events`.

**Queue length** (per stream): the number of launches that were issued but not yet done.
Default: +1 at the launch call's start, −1 when the device work *ends* ("launched but not
finished"). ``hta_compat=True``: −1 when it *starts* (HTA's ``queue_length_summary``), only
for launches through :data:`HTA_QUEUE_LAUNCH_NAMES`.
"""

from __future__ import annotations

from collections.abc import Sequence

import polars as pl

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

_STREAM_KEYS = ["node", "rank", "device", "stream"]
_WORK_KINDS = ("kernel", "memcpy", "memset")
_HOST_CALL_KINDS = ("runtime", "driver")


def _device_events(events: pl.LazyFrame, hta_compat: bool) -> pl.LazyFrame:
    work = events.filter(pl.col("kind").is_in(_WORK_KINDS))
    if hta_compat:  # HTA 0.5 counts kernels, memcpy and memset here (not sync), on HTA's stream
        return work.filter(pl.col("hta_gpu")).with_columns(pl.col("hta_stream").alias("stream"))
    return work


def _host_calls(events: pl.LazyFrame, names: Sequence[str] | None = None) -> pl.LazyFrame:
    calls = events.filter(pl.col("kind").is_in(_HOST_CALL_KINDS) & pl.col("correlation").is_not_null())
    if names is not None:
        calls = calls.filter(pl.col("name").is_in(list(names)))
    return (
        calls.select("node", "rank", "correlation", pl.col("ts").alias("launch_ts"))
        .sort("launch_ts")
        .unique(subset=["node", "rank", "correlation"], keep="first", maintain_order=True)
    )


def idle_intervals(
    events: pl.LazyFrame, hta_compat: bool = False, kernel_wait_ns: int = KERNEL_WAIT_NS
) -> pl.LazyFrame:
    """Every gap before a device event on its stream, with its category.

    Columns: ``node, rank, device, stream, start, end, idle_ns, category, name`` (``name`` of the
    event after the gap; ``start`` is where the earlier work ended). Default mode leaves out
    gaps of 0 or less; ``hta_compat`` keeps them (HTA sums negative gaps too).
    """
    dev = _device_events(events, hta_compat).select(*_STREAM_KEYS, "ts", "dur", "name", "correlation")
    dev = dev.join(_host_calls(events), on=["node", "rank", "correlation"], how="left")
    end = pl.col("ts") + pl.col("dur")
    prev_end = end.shift(1) if hta_compat else end.cum_max().shift(1)
    out = (
        dev.sort([*_STREAM_KEYS, "ts"])
        .with_columns(prev_end.over(_STREAM_KEYS, order_by="ts").alias("start"))
        .filter(pl.col("start").is_not_null())
        .with_columns((pl.col("ts") - pl.col("start")).alias("idle_ns"))
    )
    if not hta_compat:
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
    events: pl.LazyFrame, hta_compat: bool = False, kernel_wait_ns: int = KERNEL_WAIT_NS
) -> pl.LazyFrame:
    """Idle time per stream and category (every category present, 0 when none).

    Columns: ``node, rank, device, stream, category, idle_ns, ratio`` (share of the stream's
    idle time; null when the stream had none), ``count`` and the distribution of the gaps
    ``mean, std, min, p25, p50, p75, max`` (ns; null without gaps) — HTA's
    ``idle_time_breakdown`` with ``show_idle_interval_stats``.
    """
    iv = idle_intervals(events, hta_compat, kernel_wait_ns)
    streams = _device_events(events, hta_compat).select(_STREAM_KEYS).unique()
    cats = pl.LazyFrame({"category": list(IDLE_CATEGORIES)})
    g = pl.col("idle_ns")
    stats = iv.group_by([*_STREAM_KEYS, "category"]).agg(
        g.sum().alias("idle_ns"),
        pl.len().cast(pl.Int64).alias("count"),
        *describe(g, integer=True, suffix="_ns"),
    )
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


def idle_totals(events: pl.LazyFrame, by: Sequence[str] = (), hta_compat: bool = False) -> pl.LazyFrame:
    """Idle time per category summed over streams (per ``by`` group), with its share."""
    return totals_of_breakdown(idle_breakdown(events, hta_compat), by)


def totals_of_breakdown(breakdown: pl.LazyFrame | pl.DataFrame, by: Sequence[str] = ()) -> pl.LazyFrame:
    """:func:`idle_totals` from an already computed :func:`idle_breakdown` frame:
    ``by..., category, idle_ns, count, ratio``."""
    keys = list(by)
    grp = [*keys, "category"]
    return (
        breakdown.lazy()
        .group_by(grp)
        .agg(pl.col("idle_ns").sum(), pl.col("count").sum())
        .with_columns((pl.col("idle_ns") / pl.col("idle_ns").sum().over(keys or pl.lit(0))).alias("ratio"))
        .sort(grp)
    )


def queue_length(events: pl.LazyFrame, hta_compat: bool = False) -> pl.LazyFrame:
    """Queue length per stream as a step function: one row per change.

    Columns ``node, rank, device, stream, ts, queue_length`` (the value from ``ts`` until the
    next row). Only launches matched to device work on the same node and rank count. At equal
    times a launch (+1) is applied before a completion (−1); HTA leaves that order to an
    unstable sort, so on µs-rounded traces with many ties its mean/std can differ by ~1%.
    (HTA also drops the launch whose device event is the first row of the source file — an
    ``index_correlation > 0`` test; file order is not kept in the trace format, so we do not.)
    """
    dev = _device_events(events, hta_compat).filter(pl.col("correlation").is_not_null())
    calls = _host_calls(events, HTA_QUEUE_LAUNCH_NAMES if hta_compat else None)
    pairs = dev.select(*_STREAM_KEYS, "correlation", "ts", "dur").join(
        calls, on=["node", "rank", "correlation"], how="inner"
    )
    done_at = pl.col("ts") if hta_compat else pl.col("ts") + pl.col("dur")
    plus = pairs.select(
        *_STREAM_KEYS, pl.col("launch_ts").alias("ts"), pl.lit(1, dtype=pl.Int64).alias("delta")
    )
    minus = pairs.select(*_STREAM_KEYS, done_at.alias("ts"), pl.lit(-1, dtype=pl.Int64).alias("delta"))
    return (
        pl.concat([plus, minus])
        .sort([*_STREAM_KEYS, "ts", "delta"], descending=[False, False, False, False, False, True])
        .with_columns(pl.col("delta").cum_sum().over(_STREAM_KEYS).alias("queue_length"))
        .select(*_STREAM_KEYS, "ts", "queue_length")
    )


def queue_length_summary(events: pl.LazyFrame, hta_compat: bool = False) -> pl.LazyFrame:
    """Per stream: statistics of the queue length over its change points (HTA's
    ``queue_length_summary``: ``count, mean, std, min, p25, p50, p75, max``) plus
    ``time_mean``, the time-weighted mean between the first and the last change."""
    q = queue_length(events, hta_compat)
    v = pl.col("queue_length")
    span = pl.col("ts").max() - pl.col("ts").min()
    held = (pl.col("ts").shift(-1) - pl.col("ts")).fill_null(0)
    return (
        q.with_columns(held.over(_STREAM_KEYS).alias("_held"))
        .group_by(_STREAM_KEYS)
        .agg(
            pl.len().cast(pl.Int64).alias("count"),
            *describe(v, integer=True),
            pl.when(span > 0).then((v * pl.col("_held")).sum() / span).alias("time_mean"),
        )
        .sort(_STREAM_KEYS)
    )
