"""Kernel breakdown: per-name statistics, top-N, kernel types and HTA's by-type breakdown.

Default semantics: real device kernels only (``kind == "kernel"`` on a device), exact ns, whole
trace. ``kinds`` widens this (e.g. add memcpy/memset to rank all device work by name). Kernel
types use HTA's name rules: COMMUNICATION ``^nccl.*Kernel``; MEMORY memcpy/memset (and names
``^Memcpy|^Memset|^dma``); everything else COMPUTATION.

HTA's ``get_gpu_kernel_breakdown`` (``include_memory_kernels=True``: every event with an HTA
stream whose type is COMPUTATION, COMMUNICATION or MEMORY, HTA-rounded, per rank) is
:func:`profui.analysis.hta_variants.hta_kernel_stats` / ``hta_kernel_type_breakdown``.
"""

from __future__ import annotations

from collections.abc import Sequence

import polars as pl

from .busy import WORK_KINDS, device_work
from .hta import KERNEL_TYPES
from .intervals import Frame, _lazy, label_coverage, union_length
from .stats import int_std
from .top_n import OTHER, TOP_N


def kernel_events(events: Frame, kinds: Sequence[str] = ("kernel",)) -> pl.LazyFrame:
    """Kernel events with ``start``, ``end``, ``kernel_type`` (see the module docstring)."""
    return device_work(events, kinds=kinds)


def kernel_stats(events: Frame, by: Sequence[str] = (), kinds: Sequence[str] = ("kernel",)) -> pl.LazyFrame:
    """Per kernel name (and ``by`` group): count, total, mean, min, max, std, p50, p95, share.

    ``share`` is the name's total over the group's total kernel time (sum of durations, not
    merged); ``kernel_type`` as in the module docstring. Sorted by total descending. ``std`` is
    the sample standard deviation HTA prints (0 for a single kernel).
    """
    return stats_of(kernel_events(events, kinds), by)


def cpu_op_stats(events: Frame) -> pl.LazyFrame:
    """Host op statistics per name (``cpu_op`` events: PyTorch's aten ops, Nsight's NVTX op
    ranges, XLA's host scopes): ``name, count, total_ns, mean_ns``. Times are inclusive (an op's
    time includes the ops it calls). Sorted by total descending, then name."""
    d = pl.col("dur")
    return (
        _lazy(events)
        .filter(pl.col("kind") == "cpu_op")
        .group_by("name")
        .agg(pl.len().cast(pl.Int64).alias("count"), d.sum().alias("total_ns"), d.mean().alias("mean_ns"))
        .sort(["total_ns", "name"], descending=[True, False])
    )


def runtime_call_stats(events: Frame) -> pl.LazyFrame:
    """Runtime and driver calls per name (``cudaLaunchKernel``, ``cudaGraphLaunch``,
    ``cudaMemcpyAsync``, ``cuLaunchKernel``...): ``name, count, total_ns, mean_ns,
    device_events`` — the kernels, copies and sets that carry a call's correlation id on its
    rank (one per launch, one per node of a CUDA graph; none for a query or a synchronize).
    Sorted by total descending, then name."""
    ev = _lazy(events)
    keys = ["node", "rank", "correlation"]
    d = pl.col("dur")
    calls = ev.filter(pl.col("kind").is_in(["runtime", "driver"])).select("name", "dur", *keys)
    # each device event counted once per call of its correlation id: the device events joined to
    # the calls and counted per name (a count per correlation id first, then joined, took a
    # third more: both hash every launch, that also every id)
    device = (
        ev.filter(pl.col("kind").is_in(list(WORK_KINDS)), pl.col("device") >= 0)
        .select(keys)
        .join(calls.select(*keys, "name"), on=keys, how="inner")
        .group_by("name")
        .agg(pl.len().cast(pl.Int64).alias("device_events"))
    )
    return (
        calls.group_by("name")
        .agg(pl.len().cast(pl.Int64).alias("count"), d.sum().alias("total_ns"), d.mean().alias("mean_ns"))
        .join(device, on="name", how="left", nulls_equal=True)
        .with_columns(pl.col("device_events").fill_null(0))
        .sort(["total_ns", "name"], descending=[True, False])
    )


def stats_of(k: pl.LazyFrame, by: Sequence[str] = ()) -> pl.LazyFrame:
    """:func:`kernel_stats` of already selected kernel events ``k`` (exact or HTA's)."""
    by = list(by)
    d = pl.col("dur")
    stats = k.group_by([*by, "name"]).agg(
        pl.first("kernel_type"),
        pl.len().alias("count"),
        d.sum().alias("total_ns"),
        d.mean().alias("mean_ns"),
        d.min().alias("min_ns"),
        d.max().alias("max_ns"),
        int_std(d).fill_null(0.0).alias("std_ns"),
        d.quantile(0.5, "linear").alias("p50_ns"),
        d.quantile(0.95, "linear").alias("p95_ns"),
    )
    total = pl.col("total_ns").sum()
    share = (pl.col("total_ns") / (total.over(by) if by else total)).alias("share")
    return stats.with_columns(share).sort(
        [*by, "total_ns", "name"], descending=[*[False] * len(by), True, False]
    )


def top_kernels(
    stats: Frame, n: int = TOP_N, by: str = "total_ns", group: Sequence[str] = ()
) -> pl.LazyFrame:
    """The ``n`` first rows of a :func:`kernel_stats` frame by ``by`` (``total_ns`` or ``count``).

    The remaining kernels are folded into one row named ``"(other)"``
    (:data:`profui.analysis.top_n.OTHER`) so the rows still sum to the whole; ``group`` keeps
    one top-N per group (e.g. per rank).
    """
    group = list(group)
    lf = _lazy(stats).sort([*group, by, "name"], descending=[*[False] * len(group), True, False])
    idx = pl.int_range(pl.len()).over(group) if group else pl.int_range(pl.len())
    lf = lf.with_columns(idx.alias("_i"))
    top = lf.filter(pl.col("_i") < n).drop("_i")
    rest = (
        lf.filter(pl.col("_i") >= n)
        .group_by(group if group else pl.lit(0).alias("_g"))
        .agg(
            pl.lit(OTHER).alias("name"),
            pl.lit("MIXED").alias("kernel_type"),
            pl.col("count").sum(),
            pl.col("total_ns").sum(),
            pl.col("min_ns").min(),
            pl.col("max_ns").max(),
            pl.col("share").sum(),
        )
        .with_columns((pl.col("total_ns") / pl.col("count")).alias("mean_ns"))
        .filter(pl.col("count") > 0)  # a literal group key yields one all-zero row on an empty frame
    )
    if not group:
        rest = rest.drop("_g")
    return pl.concat([top, rest], how="diagonal_relaxed")


def kernel_type_totals(
    events: Frame, by: Sequence[str] = (), kinds: Sequence[str] = WORK_KINDS
) -> pl.LazyFrame:
    """Per kernel type: ``count``, ``sum_dur_ns`` (plain sum) and ``busy_ns`` (union within the type)."""
    by = list(by)
    w = device_work(events, kinds=kinds)
    sums = w.group_by([*by, "kernel_type"]).agg(
        pl.len().alias("count"), pl.col("dur").sum().alias("sum_dur_ns")
    )
    busy = union_length(w.select(*by, "kernel_type", "start", "end"), [*by, "kernel_type"], "busy_ns")
    return sums.join(busy, on=[*by, "kernel_type"], how="left").sort([*by, "kernel_type"])


def kernel_type_breakdown(
    events: Frame, by: Sequence[str] = (), kinds: Sequence[str] = WORK_KINDS
) -> pl.LazyFrame:
    """HTA's by-type breakdown: EXCLUSIVE wall time per combination of types running at once.

    Rows like ``COMPUTATION``, ``COMMUNICATION``, ``COMPUTATION overlapping COMMUNICATION``:
    each instant where some device work runs is counted once, under the set of types running
    then. ``time_ns`` sums to the busy time; ``pct`` is of the sum of rows. Default: exact over
    kernels, memcpy and memset of each (node, rank, device), summed over GPUs unless ``by``
    keeps them apart. HTA's numbers (per rank, then summed over ranks):
    :func:`profui.analysis.hta_variants.hta_kernel_type_breakdown`.
    """
    w = device_work(events, kinds=kinds)
    cov = label_coverage(
        w, "kernel_type", list(KERNEL_TYPES), list(dict.fromkeys(["node", "rank", "device", *by]))
    )
    per = cov.with_columns(pl.col("labels").list.join(" overlapping ").alias("kernel_type"))
    return type_rows(per, by)


def type_rows(per: pl.LazyFrame, by: Sequence[str] = ()) -> pl.LazyFrame:
    """Per-group ``kernel_type, time_ns`` coverage rows summed over ``by`` with their ``pct``."""
    by = list(by)
    out = per.group_by([*by, "kernel_type"]).agg(pl.col("time_ns").sum())
    total = pl.col("time_ns").sum()
    return out.with_columns((pl.col("time_ns") / (total.over(by) if by else total)).alias("share")).sort(
        [*by, "time_ns"], descending=[*[False] * len(by), True]
    )
