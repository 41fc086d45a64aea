"""GPU busy and idle time per GPU, per rank and over the whole job.

Default semantics (exact integer ns, whole trace): a GPU is *busy* while at least one kernel,
memcpy or memset of it runs (the union of those intervals over all its streams); ``sync``
events are reported separately (``sync_ns``) and are not busy time. Busy and idle are given
over two windows:

- the **GPU span**: first to last device activity of the group (HTA's window);
- the **profiled window**: first to last event of any kind of the rank(s) in the group.

HTA's own numbers (``temporal_breakdown``, GPU events = anything with an HTA stream, merged
with HTA's arithmetic, per rank) are :func:`profui.analysis.hta_variants.hta_gpu_busy` and
:func:`~profui.analysis.hta_variants.hta_temporal_breakdown`, over the same cores.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import polars as pl

from .engine import SCAN_ENGINE
from .hta import kernel_type_expr
from .intervals import Frame, _lazy, union_length

#: ``length(intervals, by, name)``: the busy time of intervals (``union_length`` or HTA's sum).
Length = Callable[..., pl.LazyFrame]

#: Kinds whose intervals make a GPU busy (sync is accounted separately).
WORK_KINDS = ("kernel", "memcpy", "memset")
GPU_BY = ("node", "rank", "device")
RANK_BY = ("node", "rank")


def device_intervals(events: Frame, kinds: Sequence[str] = WORK_KINDS) -> pl.LazyFrame:
    """Device-work events (``kind`` in ``kinds`` on a device, ``device >= 0``) with ``start``
    and ``end``: what busy time and utilization need, without :func:`device_work`'s types."""
    lf = _lazy(events).filter(is_device_work(kinds))
    return lf.with_columns(pl.col("ts").alias("start"), (pl.col("ts") + pl.col("dur")).alias("end"))


def is_device_work(kinds: Sequence[str] = WORK_KINDS) -> pl.Expr:
    """An event that is device work: of ``kinds`` (kernels, copies, memsets) on a device lane. A
    device-side annotation alone (CUPTI's profiler ranges) is none: the one rule of what makes a
    device active, for the overview, the steps and the busy time."""
    return pl.col("kind").is_in(list(kinds)) & (pl.col("device") >= 0)


def device_work(events: Frame, kinds: Sequence[str] = WORK_KINDS) -> pl.LazyFrame:
    """:func:`device_intervals` with HTA's ``kernel_type`` of the name.

    Memcpy/memset are MEMORY whatever their name. (HTA's GPU events:
    :func:`profui.analysis.hta_variants.hta_device_work`.)
    """
    lf = _lazy(events).filter(is_device_work(kinds))
    # a real kernel never gets OTHER: names like "...Sync..." are still computation
    ktype = (
        pl.when(pl.col("kind").is_in(["memcpy", "memset"]))
        .then(pl.lit("MEMORY"))
        .otherwise(pl.col("_ntype").replace("OTHER", "COMPUTATION"))
    )
    return typed_work(lf, ktype)


def typed_work(lf: pl.LazyFrame, ktype: pl.Expr) -> pl.LazyFrame:
    """``lf`` with ``start``, ``end`` and ``kernel_type`` = ``ktype``, where ``_ntype`` is the
    name's HTA type (:func:`profui.analysis.hta.kernel_type_expr`)."""
    # the name regexes once per distinct name: kernel names are long and repeat a lot
    types = lf.select("name").unique().with_columns(kernel_type_expr().alias("_ntype"))
    # the events' order kept (time order): the unions over this work sort it by group and start,
    # which on rows in time order costs a fraction of the sort of a join's row order
    return (
        lf.join(types, on="name", how="left", maintain_order="left")
        .with_columns(
            pl.col("ts").alias("start"),
            (pl.col("ts") + pl.col("dur")).alias("end"),
            ktype.alias("kernel_type"),
        )
        .drop("_ntype")
    )


def _window(events: Frame, by: Sequence[str]) -> pl.LazyFrame:
    """First and last ns of any event of the rank(s) of each group (the profiled window)."""
    keys = [c for c in by if c in RANK_BY]
    lf = _lazy(events).filter(pl.col("kind") != "instant")
    agg = [
        pl.col("ts").min().alias("window_start_ns"),
        (pl.col("ts") + pl.col("dur")).max().alias("window_end_ns"),
    ]
    return (lf.group_by(keys).agg(agg) if keys else lf.select(agg)).collect(engine=SCAN_ENGINE).lazy()


def gpu_busy(events: Frame, by: Sequence[str] = GPU_BY) -> pl.LazyFrame:
    """Busy/idle per group (default per GPU: node, rank, device).

    Columns: ``by``…, ``n_events``, ``sum_dur_ns`` (plain sum), ``busy_ns`` (union),
    ``sync_ns`` (union of sync events, not in busy), ``first_ns``/``last_ns``/``span_ns`` (GPU
    span), ``idle_ns`` = span − busy, ``busy_share`` (of span, 0–1), ``window_start_ns``,
    ``window_end_ns``, ``window_ns`` (profiled window), ``idle_window_ns``, ``busy_share_window``.
    ``by=()`` gives one row for the union over everything (what a single-GPU trace needs);
    use :func:`total_busy` to add per-GPU rows up instead.
    """
    return busy_table(events, device_intervals(events), by, union_length)


def busy_table(events: Frame, work: pl.LazyFrame, by: Sequence[str], length: Length) -> pl.LazyFrame:
    """:func:`gpu_busy`'s table from device ``work`` (:func:`device_work` or HTA's) and ``length``."""
    by = list(by)
    ev = _lazy(events)
    busy = length(work, by, "busy_ns")
    agg = [
        pl.len().alias("n_events"),
        pl.col("dur").sum().alias("sum_dur_ns"),
        pl.col("start").min().alias("first_ns"),
        pl.col("end").max().alias("last_ns"),
    ]
    stats = work.group_by(by).agg(agg) if by else work.select(agg)
    sync_ev = ev.filter(pl.col("kind") == "sync", pl.col("device") >= 0).select(
        *by, pl.col("ts").alias("start"), (pl.col("ts") + pl.col("dur")).alias("end")
    )
    sync = union_length(sync_ev, by, "sync_ns")
    win = _window(ev, by)
    keys = [c for c in by if c in RANK_BY]
    if by:
        out = stats.join(busy, on=by, how="left").join(sync, on=by, how="left")
        out = out.join(win, on=keys, how="left") if keys else out.join(win, how="cross")
    else:
        out = pl.concat([stats, busy, sync, win], how="horizontal")
    span = (pl.col("last_ns") - pl.col("first_ns")).alias("span_ns")
    out = (
        out.with_columns(pl.col("busy_ns").fill_null(0), pl.col("sync_ns").fill_null(0), span)
        .with_columns(
            (pl.col("span_ns") - pl.col("busy_ns")).alias("idle_ns"),
            (pl.col("window_end_ns") - pl.col("window_start_ns")).alias("window_ns"),
        )
        .with_columns(
            (pl.col("window_ns") - pl.col("busy_ns")).alias("idle_window_ns"),
            _share("busy_ns", "span_ns").alias("busy_share"),
            _share("busy_ns", "window_ns").alias("busy_share_window"),
        )
    )
    return out.sort(by) if by else out


def _share(num: str, den: str) -> pl.Expr:
    return pl.when(pl.col(den) > 0).then(pl.col(num) / pl.col(den)).otherwise(None)


def total_busy(per_gpu: Frame) -> pl.LazyFrame:
    """Across all GPUs of a :func:`gpu_busy` result: summed busy, span, window and idle ns.

    ``busy_share`` is total busy over total span (GPU-time weighted), ``n_gpus`` the row count.
    """
    s = [
        pl.col(c).sum()
        for c in (
            "n_events",
            "sum_dur_ns",
            "busy_ns",
            "sync_ns",
            "span_ns",
            "idle_ns",
            "window_ns",
            "idle_window_ns",
        )
    ]
    return (
        _lazy(per_gpu)
        .select(pl.len().alias("n_gpus"), *s)
        .with_columns(
            _share("busy_ns", "span_ns").alias("busy_share"),
            _share("busy_ns", "window_ns").alias("busy_share_window"),
        )
    )


def temporal_breakdown(events: Frame, by: Sequence[str] = GPU_BY) -> pl.LazyFrame:
    """HTA's temporal breakdown: ``kernel_time_ns`` (GPU span), ``idle_ns``, ``compute_ns``, ``non_compute_ns``.

    ``compute_ns`` is the union of COMPUTATION work, ``non_compute_ns = span − compute − idle``
    (communication and memory not hidden under compute), per GPU (node, rank, device) by
    default. Shares (0–1) are of the span. HTA's own numbers (sync counted, per rank):
    :func:`profui.analysis.hta_variants.hta_temporal_breakdown`.
    """
    return temporal_table(device_work(events), by, union_length)


def temporal_table(work: pl.LazyFrame, by: Sequence[str], length: Length) -> pl.LazyFrame:
    """:func:`temporal_breakdown` from device ``work`` and ``length`` (exact or HTA's)."""
    by = list(by)
    busy = length(work, by, "busy_ns")
    comp = length(work.filter(pl.col("kernel_type") == "COMPUTATION"), by, "compute_ns")
    agg = [pl.col("start").min().alias("_first"), pl.col("end").max().alias("_last")]
    span = work.group_by(by).agg(agg) if by else work.select(agg)
    if by:
        out = span.join(busy, on=by, how="left").join(comp, on=by, how="left")
    else:
        out = pl.concat([span, busy, comp], how="horizontal")
    out = out.with_columns(
        (pl.col("_last") - pl.col("_first")).alias("kernel_time_ns"),
        pl.col("busy_ns").fill_null(0),
        pl.col("compute_ns").fill_null(0),
    ).with_columns((pl.col("kernel_time_ns") - pl.col("busy_ns")).alias("idle_ns"))
    out = out.with_columns(
        (pl.col("kernel_time_ns") - pl.col("compute_ns") - pl.col("idle_ns")).alias("non_compute_ns")
    )
    shares = [
        _share(c, "kernel_time_ns").alias(f"{c[:-3]}_share")
        for c in ("idle_ns", "compute_ns", "non_compute_ns")
    ]
    out = out.with_columns(shares).select(
        *by,
        "kernel_time_ns",
        "idle_ns",
        "compute_ns",
        "non_compute_ns",
        "idle_share",
        "compute_share",
        "non_compute_share",
    )
    return out.sort(by) if by else out
