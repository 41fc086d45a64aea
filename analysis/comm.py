"""Communication (NCCL/RCCL) kernels: time by collective, overlap with compute, ranks, stragglers.

A communication kernel is a device kernel whose name matches HTA's ``^nccl.*Kernel`` (NCCL and
RCCL kernels, e.g. ``ncclKernel_AllReduce_RING_LL_Sum_float`` or ``ncclDevKernel_SendRecv``).
Its collective comes from the kernel name (``AllReduce``, ``Broadcast``, ``SendRecv`` ...), else
from the ``Collective name`` argument Kineto records for NCCL kernels, else ``other``.
Computation kernels are the other kernels. (HTA's rule — not communication, not
``Memcpy``/``Memset``, not ``...Sync``, over HTA's GPU events — is in
:func:`profui.analysis.hta_variants.hta_comm_comp_overlap`.)
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import polars as pl

from .intervals import union_length

#: HTA's rule for communication kernels (by name).
COMM_PATTERN = r"^nccl.*Kernel"

_COLLECTIVE_FROM_NAME = r"^nccl(?:Dev)?Kernel_([A-Za-z]+?)(?:_|\(|$)"

#: Bytes per element of the ``dtype`` argument of NCCL kernels.
DTYPE_BYTES: dict[str, int] = {
    "Float": 4,
    "Double": 8,
    "Half": 2,
    "BFloat16": 2,
    "Int": 4,
    "Long": 8,
    "Short": 2,
    "Byte": 1,
    "Char": 1,
    "Bool": 1,
    "Float8_e4m3fn": 1,
    "Float8_e5m2": 1,
}


def _device_kernels(events: pl.LazyFrame) -> pl.LazyFrame:
    return events.filter(pl.col("kind") == "kernel")


def comm_kernels(events: pl.LazyFrame) -> pl.LazyFrame:
    """Communication kernels with ``collective``, ``dtype``, ``nelems``, ``msg_bytes``,
    ``group_size`` (nulls where the trace did not record them) besides the event columns."""
    return with_collective(_device_kernels(events).filter(pl.col("name").str.contains(COMM_PATTERN)))


def with_collective(k: pl.LazyFrame) -> pl.LazyFrame:
    """Communication kernels ``k`` with :func:`comm_kernels`' extra columns."""
    from_name = pl.col("name").str.extract(_COLLECTIVE_FROM_NAME, 1)
    args = pl.col("args")
    from_args = args.str.json_path_match("$['Collective name']")
    dtype = args.str.json_path_match("$.dtype")
    nelems = args.str.json_path_match("$['In msg nelems']").cast(pl.Int64, strict=False)
    out_nelems = args.str.json_path_match("$['Out msg nelems']").cast(pl.Int64, strict=False)
    group = args.str.json_path_match("$['Group size']").cast(pl.Int64, strict=False)
    width = dtype.replace_strict(DTYPE_BYTES, default=None, return_dtype=pl.Int64)
    return k.with_columns(
        pl.coalesce(from_name, from_args, pl.lit("other")).alias("collective"),
        dtype.alias("dtype"),
        nelems.alias("nelems"),
        (pl.max_horizontal(nelems, out_nelems) * width).alias("msg_bytes"),
        group.alias("group_size"),
    )


def compute_kernels(events: pl.LazyFrame) -> pl.LazyFrame:
    """Computation kernels: every kernel that is not communication."""
    return _device_kernels(events).filter(~pl.col("name").str.contains(COMM_PATTERN))


def comm_by_collective(events: pl.LazyFrame, by: Sequence[str] = ()) -> pl.LazyFrame:
    """NCCL kernel time per collective (and ``by`` group).

    Columns: ``by..., collective, count, total_ns, mean_ns, min_ns, max_ns, share`` (of all comm
    kernel time in the group), ``bytes`` (sum of message sizes where recorded, else null) and
    ``algbw_gbps`` (bytes / kernel time). Sorted by ``total_ns`` descending.
    """
    keys = list(by)
    c = comm_kernels(events)
    agg = c.group_by([*keys, "collective"]).agg(
        pl.len().cast(pl.Int64).alias("count"),
        pl.col("dur").sum().alias("total_ns"),
        pl.col("dur").mean().alias("mean_ns"),
        pl.col("dur").min().alias("min_ns"),
        pl.col("dur").max().alias("max_ns"),
        pl.when(pl.col("msg_bytes").is_not_null().any()).then(pl.col("msg_bytes").sum()).alias("bytes"),
        pl.col("dur").filter(pl.col("msg_bytes").is_not_null()).sum().alias("_timed"),
    )
    total = pl.col("total_ns").sum().over(keys) if keys else pl.col("total_ns").sum()
    return (
        agg.with_columns(
            (pl.col("total_ns") / total).alias("share"),
            pl.when(pl.col("_timed") > 0).then(pl.col("bytes") / pl.col("_timed")).alias("algbw_gbps"),
        )
        .drop("_timed")
        .sort([*keys, "total_ns", "collective"], descending=[False] * len(keys) + [True, False])
    )


def _iv(frame: pl.LazyFrame, by: Sequence[str]) -> pl.LazyFrame:
    return frame.select(*by, pl.col("ts").alias("start"), (pl.col("ts") + pl.col("dur")).alias("end"))


def _unions_and_overlap(comm: pl.LazyFrame, comp: pl.LazyFrame, keys: list[str]) -> pl.LazyFrame:
    """Per group of either side: ``comm_ns``, ``compute_ns`` (unions, 0 when absent) and
    ``overlap_ns = |comm ∩ compute| = comm + compute − |comm ∪ compute|`` — what
    :func:`~profui.analysis.intervals.overlap_length` computes, with each union built once."""
    comm = comm.select(*keys, "start", "end")
    comp = comp.select(*keys, "start", "end")
    both = union_length(pl.concat([comm, comp]), keys, "_ab")
    return (
        both.join(union_length(comm, keys, "comm_ns"), on=keys, how="left", nulls_equal=True)
        .join(union_length(comp, keys, "compute_ns"), on=keys, how="left", nulls_equal=True)
        .with_columns(pl.col("comm_ns", "compute_ns").fill_null(0))
        .with_columns((pl.col("comm_ns") + pl.col("compute_ns") - pl.col("_ab")).alias("overlap_ns"))
        .drop("_ab")
    )


def comm_comp_overlap(events: pl.LazyFrame, by: Sequence[str] = ("node", "rank")) -> pl.LazyFrame:
    """How much of the communication time ran while computation kernels were running.

    Per ``by`` group: ``comm_ns`` (union of comm kernels), ``compute_ns`` (union of compute
    kernels), ``overlap_ns`` (``|comm ∩ compute|``) and ``overlap_share`` = overlap/comm
    (null without communication) — HTA's ``comp_comm_overlap_pctg`` / 100.
    """
    return overlap_of(_device_kernels(events), comm_kernels, compute_kernels, by)


def overlap_of(
    device: pl.LazyFrame,
    comm_of: Callable[[pl.LazyFrame], pl.LazyFrame],
    compute_of: Callable[[pl.LazyFrame], pl.LazyFrame],
    by: Sequence[str] = ("node", "rank"),
) -> pl.LazyFrame:
    """:func:`comm_comp_overlap` over ``device`` events split by ``comm_of`` / ``compute_of``."""
    keys = list(by) or ["_all"]
    if not by:
        device = device.with_columns(pl.lit(0).alias("_all"))
    comm = _iv(comm_of(device), keys)
    comp = _iv(compute_of(device), keys)
    groups = _iv(device, keys).select(keys).unique()
    out = groups.join(_unions_and_overlap(comm, comp, keys), on=keys, how="left").with_columns(
        pl.col("comm_ns", "compute_ns", "overlap_ns").fill_null(0)
    )
    out = out.with_columns(
        pl.when(pl.col("comm_ns") > 0).then(pl.col("overlap_ns") / pl.col("comm_ns")).alias("overlap_share")
    ).sort(keys)
    return out if by else out.drop("_all")


def comm_per_rank(events: pl.LazyFrame) -> pl.LazyFrame:
    """Per ``node, rank``: communication kernel ``count``, ``total_ns`` (sum), ``busy_ns``
    (union), and the share of the rank's device span (first to last kernel) spent communicating."""
    keys = ["node", "rank"]
    c = comm_kernels(events)
    per = c.group_by(keys).agg(pl.len().cast(pl.Int64).alias("count"), pl.col("dur").sum().alias("total_ns"))
    busy = union_length(_iv(c, keys), keys, "busy_ns")
    span = (
        events.filter(pl.col("kind").is_in(["kernel", "memcpy", "memset"]))
        .group_by(keys)
        .agg(((pl.col("ts") + pl.col("dur")).max() - pl.col("ts").min()).alias("span_ns"))
    )
    return (
        span.join(per, on=keys, how="left")
        .join(busy, on=keys, how="left")
        .with_columns(pl.col("count", "total_ns", "busy_ns").fill_null(0))
        .with_columns(
            pl.when(pl.col("span_ns") > 0).then(pl.col("busy_ns") / pl.col("span_ns")).alias("share")
        )
        .select(*keys, "count", "total_ns", "busy_ns", "span_ns", "share")
        .sort(keys)
    )


def _clip_to_windows(iv: pl.LazyFrame, windows: pl.LazyFrame, keys: list[str]) -> pl.LazyFrame:
    """Intervals cut to each step window they meet (``step`` column added)."""
    j = iv.join(windows, on=keys, how="inner").filter(
        (pl.col("start") < pl.col("w_end")) & (pl.col("end") > pl.col("w_start"))
    )
    return j.select(
        *keys,
        "step",
        pl.max_horizontal("start", "w_start").alias("start"),
        pl.min_horizontal("end", "w_end").alias("end"),
    )


def comm_per_step(events: pl.LazyFrame, windows: pl.LazyFrame) -> pl.LazyFrame:
    """Per step and rank: communication and computation kernel time inside the step window.

    ``windows`` is :func:`profui.analysis.steps.step_windows`' frame (its device windows
    ``start_ns, end_ns`` are used) or any frame with ``node, rank, step, start, end`` (ns).
    Columns: ``node, rank, step, step_ns, comm_ns, compute_ns, overlap_ns, exposed_comm_ns``
    (comm time not hidden under compute); unions, clipped to the window.
    """
    keys = ["node", "rank"]
    lo, hi = ("start_ns", "end_ns") if "start_ns" in windows.collect_schema().names() else ("start", "end")
    w = windows.select(*keys, "step", pl.col(lo).alias("w_start"), pl.col(hi).alias("w_end"))
    comm = _clip_to_windows(_iv(comm_kernels(events), keys), w, keys)
    comp = _clip_to_windows(_iv(compute_kernels(events), keys), w, keys)
    k2 = [*keys, "step"]
    return (
        w.select(*k2, (pl.col("w_end") - pl.col("w_start")).alias("step_ns"))
        .join(_unions_and_overlap(comm, comp, k2), on=k2, how="left")
        .with_columns(pl.col("comm_ns", "compute_ns", "overlap_ns").fill_null(0))
        .with_columns((pl.col("comm_ns") - pl.col("overlap_ns")).alias("exposed_comm_ns"))
        .sort("step", "node", "rank")
    )


def stragglers(per_step: pl.LazyFrame) -> pl.LazyFrame:
    """The slowest rank of each step, from :func:`comm_per_step` over two or more ranks.

    In synchronous data parallelism every rank waits inside the collectives for the last one
    to arrive, so the straggler is the rank with the most *computation* in the step — the
    others show that difference as extra communication (waiting) time. Columns: ``step,
    ranks, straggler_node, straggler_rank, straggler_compute_ns, median_compute_ns``,
    ``lag_ns`` (straggler compute − median), ``comm_min_ns``, ``comm_max_ns``,
    ``step_min_ns``, ``step_max_ns``. Steps seen on a single rank are left out.
    """
    ranked = per_step.sort(["step", "compute_ns", "node", "rank"], descending=[False, True, False, False])
    return (
        ranked.group_by("step", maintain_order=True)
        .agg(
            pl.len().cast(pl.Int64).alias("ranks"),
            pl.col("node").first().alias("straggler_node"),
            pl.col("rank").first().alias("straggler_rank"),
            pl.col("compute_ns").first().alias("straggler_compute_ns"),
            pl.col("compute_ns").median().alias("median_compute_ns"),
            pl.col("comm_ns").min().alias("comm_min_ns"),
            pl.col("comm_ns").max().alias("comm_max_ns"),
            pl.col("step_ns").min().alias("step_min_ns"),
            pl.col("step_ns").max().alias("step_max_ns"),
        )
        .filter(pl.col("ranks") >= 2)
        .with_columns((pl.col("straggler_compute_ns") - pl.col("median_compute_ns")).alias("lag_ns"))
        .sort("step")
    )
