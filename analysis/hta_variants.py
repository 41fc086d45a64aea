"""Holistic Trace Analysis' (HTA 0.5) own numbers: the thin HTA variants of the analyses.

This module and :mod:`profui.analysis.hta` are the one place HTA semantics live.
:func:`profui.analysis.hta.hta_events` prepares the events the way HTA sees them (µs rounding,
last ProfilerStep dropped, HTA's stream and GPU-event notion); where HTA differs from our exact
analyses only by that input, callers pass the HTA view to the exact function (``steps``,
``comm_per_step``, ``totals_of_breakdown`` ...). The functions here are for the analyses whose
*rule* differs too: each picks HTA's events and rule and calls the same core as the exact
function (``busy_table``, ``stats_of``, ``gaps_of`` ...), so the arithmetic is shared. Every
function takes :func:`~profui.analysis.hta.hta_events` output; times stay integer ns
(multiples of 1000).

HTA's quirks reproduced on purpose (each says so where it applies): the unstable sorts are
replaced by a fixed order, HTA's ``time_blocked_on_full_queue`` keeps one stream per rank, and
its ``aten_op_kernels_and_delay`` matches ATen ops across threads and accumulates ranks.
"""

from __future__ import annotations

from collections.abc import Sequence

import polars as pl

from . import activity as act
from . import busy as bz
from . import comm as cm
from . import idle as il
from . import kernels as kn
from . import launch as la
from . import memory as mem
from . import utilization as ut
from .annotations import annotation_breakdown
from .engine import ENGINE
from .hta import KERNEL_TYPES, hta_merged, hta_type_coverage, hta_union_length, kernel_type_expr
from .intervals import Frame, _lazy

RANK_BY = bz.RANK_BY

#: HTA's kernel-launch names for ``aten_op_kernels_and_delay`` (``KERNEL_LAUNCH_CATEGORY_PATTERN``,
#: matched at the start of the name): no memcpy/memset launch calls.
HTA_KERNEL_LAUNCH_RE = r"^(cuda.*LaunchKernel|cuLaunchKernel|runFunction)"


# -- device work, busy, utilization ----------------------------------------------------------


def hta_device_work(hta_events: Frame) -> pl.LazyFrame:
    """HTA's GPU events (anything with an HTA stream, sync and Triton CPU ops included), typed by
    name only, with ``start``, ``end``, ``kernel_type`` (:func:`profui.analysis.busy.device_work`)."""
    return bz.typed_work(_lazy(hta_events).filter(pl.col("hta_gpu")), pl.col("_ntype"))


def hta_gpu_busy(hta_events: Frame, by: Sequence[str] = RANK_BY) -> pl.LazyFrame:
    """:func:`profui.analysis.busy.gpu_busy` the HTA way: HTA's GPU events, HTA's merge, per rank."""
    return bz.busy_table(hta_events, hta_device_work(hta_events), by, hta_union_length)


def hta_temporal_breakdown(hta_events: Frame, by: Sequence[str] = RANK_BY) -> pl.LazyFrame:
    """HTA's ``get_temporal_breakdown`` (:func:`profui.analysis.busy.temporal_breakdown`'s columns)."""
    return bz.temporal_table(hta_device_work(hta_events), by, hta_union_length)


def hta_gpu_utilization(
    hta_events: Frame,
    bucket_ns: int | None = None,
    by: Sequence[str] = bz.GPU_BY,
    window: tuple[int, int] | None = None,
) -> pl.LazyFrame:
    """:func:`profui.analysis.utilization.gpu_utilization` over HTA's GPU events and merge."""
    return ut.utilization_table(hta_events, hta_device_work(hta_events), hta_merged, bucket_ns, by, window)


def hta_activity_shares(hta_events: Frame, by: Sequence[str] = RANK_BY) -> pl.LazyFrame:
    """:func:`profui.analysis.activity.activity_shares` over HTA's GPU events (a CPU op with a
    stream counts as kernel), per rank."""
    lf = (
        _lazy(hta_events)
        .filter(pl.col("hta_gpu"))
        .with_columns(
            pl.when(pl.col("kind").is_in(list(act.ACTIVITIES)))
            .then(pl.col("kind"))
            .otherwise(pl.lit("kernel"))
            .alias("kind")
        )
    )
    return act.shares_of(lf, by)


# -- kernels --------------------------------------------------------------------------------


def hta_kernel_events(hta_events: Frame) -> pl.LazyFrame:
    """HTA's kernels of ``get_gpu_kernel_breakdown(include_memory_kernels=True)``: GPU events
    whose type is COMPUTATION, COMMUNICATION or MEMORY."""
    return hta_device_work(hta_events).filter(pl.col("kernel_type").is_in(list(KERNEL_TYPES)))


def hta_kernel_stats(hta_events: Frame, by: Sequence[str] = ()) -> pl.LazyFrame:
    """HTA's all-kernels table (:func:`profui.analysis.kernels.kernel_stats`' columns); the
    grouping always includes ``node, rank``."""
    return kn.stats_of(hta_kernel_events(hta_events), list(dict.fromkeys([*by, *RANK_BY])))


def hta_kernel_type_breakdown(hta_events: Frame, by: Sequence[str] = ()) -> pl.LazyFrame:
    """HTA's by-type breakdown (per rank with HTA's merge, then summed over ranks)."""
    per = hta_type_coverage(hta_kernel_events(hta_events), list(dict.fromkeys([*RANK_BY, *by])))
    return kn.type_rows(per, by)


# -- communication, annotations ------------------------------------------------------------


def _hta_comm(device: pl.LazyFrame) -> pl.LazyFrame:
    return device.filter(pl.col("name").str.contains(cm.HTA_COMM_PATTERN))


def _hta_compute(device: pl.LazyFrame) -> pl.LazyFrame:
    return device.filter(kernel_type_expr() == "COMPUTATION")


def hta_comm_comp_overlap(hta_events: Frame, by: Sequence[str] = RANK_BY) -> pl.LazyFrame:
    """HTA's ``get_comm_comp_overlap``: HTA's GPU events, computation by HTA's name rule."""
    device = _lazy(hta_events).filter(pl.col("hta_gpu"))
    return cm.overlap_of(device, _hta_comm, _hta_compute, by)


def hta_annotation_breakdown(hta_events: Frame, by: Sequence[str] = ("rank",)) -> pl.LazyFrame:
    """HTA's ``cpu/gpu_user_annotation_breakdown``: ``ProfilerStep#N`` counts among the CPU ones."""
    return annotation_breakdown(_lazy(hta_events), by, include_steps=True)


# -- launches, idle, queue ------------------------------------------------------------------


def _hta_streams(hta_events: Frame) -> pl.LazyFrame:
    """HTA's GPU events with HTA's stream in ``stream``."""
    return _lazy(hta_events).filter(pl.col("hta_gpu")).with_columns(pl.col("hta_stream").alias("stream"))


def hta_kernel_launches(hta_events: Frame) -> pl.LazyFrame:
    """HTA's ``cuda_kernel_launch_stats`` links: only launches through
    :data:`~profui.analysis.launch.HTA_LAUNCH_NAMES`, any event with an HTA stream (sync
    included) on the device side, a device start before the call returned shown as 0 delay."""
    ev = _lazy(hta_events)
    return la.join_launches(la.launch_calls(ev, la.HTA_LAUNCH_NAMES), _hta_streams(ev), clamp_delay=True)


def _hta_work(hta_events: Frame) -> pl.LazyFrame:
    # HTA 0.5 counts kernels, memcpy and memset in its idle and queue analyses (not sync)
    return il.device_events(_hta_streams(hta_events))


def hta_idle_intervals(hta_events: Frame, kernel_wait_ns: int = il.KERNEL_WAIT_NS) -> pl.LazyFrame:
    """HTA's idle gaps: from the *previous* event's end (overlaps give negative idle, kept)."""
    ev = _lazy(hta_events)
    return il.gaps_of(_hta_work(ev), il.host_calls(ev), kernel_wait_ns, after_all_earlier=False)


def hta_idle_breakdown(hta_events: Frame, kernel_wait_ns: int = il.KERNEL_WAIT_NS) -> pl.LazyFrame:
    """HTA's ``get_idle_time_breakdown`` (:func:`profui.analysis.idle.idle_breakdown`'s columns)."""
    return il.breakdown_of(hta_idle_intervals(hta_events, kernel_wait_ns), _hta_work(hta_events))


def hta_queue_length(hta_events: Frame) -> pl.LazyFrame:
    """HTA's queue-length series: launches through ``HTA_QUEUE_LAUNCH_NAMES``, −1 when the work starts."""
    ev = _lazy(hta_events)
    return il.queue_of(_hta_work(ev), il.host_calls(ev, il.HTA_QUEUE_LAUNCH_NAMES), done_at_end=False)


def hta_queue_length_summary(hta_events: Frame) -> pl.LazyFrame:
    """HTA's ``get_queue_length_summary`` (:func:`profui.analysis.idle.queue_length_summary`'s columns)."""
    return il.queue_stats(hta_queue_length(hta_events))


def hta_blocked_on_full_queue(
    hta_events: Frame, max_queue_length: int = il.MAX_QUEUE_LENGTH, queue: Frame | None = None
) -> pl.LazyFrame:
    """HTA's ``get_time_spent_blocked_on_full_queue`` over :func:`hta_queue_length`.

    Columns of :func:`profui.analysis.idle.blocked_on_full_queue`; the share is of HTA's trace
    duration (first to last event *start* of the rank). HTA keeps one row per rank — the
    highest stream that reached the limit (each stream overwrites the rank's entry) — and so
    do we. ``queue``: an already computed :func:`hta_queue_length` series.
    """
    ev = _lazy(hta_events)
    span = ev.group_by("node", "rank").agg((pl.col("ts").max() - pl.col("ts").min()).alias("_span"))
    q = _lazy(queue) if queue is not None else hta_queue_length(ev)
    rows = il.blocked_of(q, span, max_queue_length)
    last = rows.sort("node", "rank", "stream").group_by("node", "rank", maintain_order=True).last()
    return last.with_columns(pl.col("stream").cast(pl.Int32))


# -- memory ---------------------------------------------------------------------------------


def hta_memory_bw_summary(hta_events: Frame) -> pl.LazyFrame:
    """HTA's ``get_memory_bw_summary`` (:func:`profui.analysis.memory.bandwidth_summary`'s columns).

    Per rank and HTA memory name (``Memcpy DtoD`` — the first 11 characters — ``Memset`` or
    ``Memcpy Unknown``), over HTA's GPU events of type MEMORY: Kineto's own per-op
    ``memory bandwidth (GB/s)`` (0 when absent) added at the op's start and taken off at its
    end (0 µs ops count as 1 µs), summed over time across devices and streams, one point per
    start and end, points at 0 dropped. HTA orders the points with pandas' unstable
    ``sort_values(by="ts")`` over the rank's starts then ends in trace order; at a copy ending
    as another begins that order decides whether a point (and a float residue such as 1e-16
    GB/s) is counted, so we sort the same array the same way (numpy's quicksort). numpy's
    quicksort picks a SIMD kernel by CPU, so HTA's own counts and means move by a few points
    between machines (0.03 % on the ns_resolution trace); ours move with them.
    """
    name = pl.col("name")
    mem_name = (
        pl.when(name.str.starts_with("Memset"))
        .then(pl.lit("Memset"))
        .when(~name.str.starts_with("Memcpy"))
        .then(pl.lit("Memcpy Unknown"))
        .otherwise(name.str.slice(0, 11))
    )
    bw = pl.col("args").str.json_path_match("$['memory bandwidth (GB/s)']").cast(pl.Float64, strict=False)
    dur = pl.when(pl.col("dur") == 0).then(pl.lit(1000, pl.Int64)).otherwise(pl.col("dur"))
    ops = (
        _lazy(hta_events)
        .filter(pl.col("hta_gpu"))
        .filter(kernel_type_expr() == "MEMORY")
        .sort("hta_order")
        .select(
            "node",
            "rank",
            mem_name.alias("name"),
            pl.col("ts").alias("start"),
            (pl.col("ts") + dur).alias("end"),
            bw.fill_null(0.0).alias("gbps"),
        )
        .collect(engine=ENGINE)
    )
    parts = [_hta_bw_series(g) for g in ops.partition_by("node", "rank", maintain_order=True)]
    schema = {"node": pl.String, "rank": pl.Int64, "name": pl.String, "ts": pl.Int64, "gbps": pl.Float64}
    series = pl.concat(parts) if parts else pl.DataFrame(schema=schema)
    return mem.bandwidth_stats(series.lazy())


def _hta_bw_series(ops: pl.DataFrame) -> pl.DataFrame:
    """One rank's running totals in HTA's point order (see :func:`hta_memory_bw_summary`)."""
    import numpy as np  # here, not at import: it costs start-up time

    ts = np.concatenate([ops["start"].to_numpy(), ops["end"].to_numpy()])
    bw = np.concatenate([ops["gbps"].to_numpy(), -ops["gbps"].to_numpy()])
    names = pl.concat([ops["name"], ops["name"]])
    order = np.argsort(ts, kind="quicksort")  # pandas sort_values' default, unstable like HTA's
    points = pl.DataFrame(
        {"name": names.gather(order), "ts": ts[order], "gbps": bw[order]},
        schema={"name": pl.String, "ts": pl.Int64, "gbps": pl.Float64},
    )
    # groupby("name") keeps the sorted order within each name; cumsum sums in that order
    out = points.with_columns(pl.col("gbps").cum_sum().over("name")).sort("name", maintain_order=True)
    return out.select(
        pl.lit(ops["node"][0]).alias("node"),
        pl.lit(ops["rank"][0], pl.Int64).alias("rank"),
        "name",
        "ts",
        "gbps",
    )


# -- ATen ops and their kernels -------------------------------------------------------------


def hta_aten_inputs(hta_events: Frame) -> tuple[pl.LazyFrame, pl.LazyFrame]:
    """:func:`hta_aten_op_kernels`' inputs: HTA's kernel-launch/GPU-event pairs and ``aten::`` ops."""
    ev = _lazy(hta_events)
    pairs = la.launch_device_pairs(ev, ev.filter(pl.col("hta_gpu")), HTA_KERNEL_LAUNCH_RE)
    ops = ev.filter(pl.col("name").str.starts_with("aten::"), ~pl.col("hta_gpu"))
    return pairs, ops.sort("hta_order").select("node", "rank", "tid", "name", "ts", "dur")


def hta_aten_op_kernels(
    hta_events: Frame, inputs: tuple[pl.LazyFrame, pl.LazyFrame] | None = None
) -> pl.LazyFrame:
    """HTA's ``get_aten_op_kernels_and_delay`` (:func:`profui.analysis.launch.aten_op_kernels`' columns).

    Each kernel launch call (``cuda*LaunchKernel*``, ``cuLaunchKernel``, ``runFunction``; no
    memcpy/memset calls) goes to the latest-starting ``aten::`` op of its rank that wraps it
    *on any thread* (HTA does not compare threads; of ops starting in the same µs the first);
    its kernel is the event with an HTA stream correlated to it. Per op instance the kernels
    form the sequence in trace order (HTA iterates the launch calls in file order, not time
    order), and the first of them gives the delays; rows are per ``(aten_op,
    kernel_sequence)``. HTA never resets its list between ranks, so the rows of rank *r* count
    the instances of every rank up to *r* too; we reproduce that. ``inputs``: collected
    :func:`hta_aten_inputs`.
    """
    calls, ops = inputs if inputs is not None else hta_aten_inputs(hta_events)
    inst = la.op_instances(la.deepest_ops(calls, ops, same_thread=False), launch_order=("call_ord",))
    ranks = inst.select("node", "rank").unique().sort("node", "rank").collect(engine=ENGINE)
    parts = []
    for node, rank in ranks.iter_rows():
        # HTA's ranks are one sequence; earlier ranks' instances stay in its list
        upto = inst.filter((pl.col("node") < node) | ((pl.col("node") == node) & (pl.col("rank") <= rank)))
        parts.append(
            la.op_rows(
                upto.with_columns(
                    pl.lit(node, dtype=pl.String).alias("node"), pl.lit(rank, dtype=pl.Int64).alias("rank")
                )
            )
        )
    if not parts:
        return la.op_rows(inst)
    return pl.concat(parts)


__all__ = [
    "hta_activity_shares",
    "hta_annotation_breakdown",
    "hta_aten_op_kernels",
    "hta_blocked_on_full_queue",
    "hta_comm_comp_overlap",
    "hta_device_work",
    "hta_gpu_busy",
    "hta_gpu_utilization",
    "hta_idle_breakdown",
    "hta_idle_intervals",
    "hta_kernel_events",
    "hta_kernel_launches",
    "hta_kernel_stats",
    "hta_kernel_type_breakdown",
    "hta_memory_bw_summary",
    "hta_queue_length",
    "hta_queue_length_summary",
    "hta_temporal_breakdown",
]
