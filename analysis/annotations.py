"""Custom annotations (``record_function``, ``profui.capture.annotate``, NVTX-like ranges).

Host annotations are events of kind ``annotation``; their device projection (Kineto's
``gpu_user_annotation``: first to last device activity launched inside the range) is kind
``gpu_annotation``. For any annotation name we report its time per step and its share of the
step, ready to plot; and HTA's per-name breakdown (``cpu_user_annotation_breakdown`` /
``gpu_user_annotation_breakdown``: plain statistics of the ranges' durations).
"""

from __future__ import annotations

from collections.abc import Sequence

import polars as pl

from .intervals import clip_to_windows, union_length
from .stats import int_std, stable_mean

#: ``side`` of an annotation by event kind.
SIDES: dict[str, str] = {"annotation": "cpu", "gpu_annotation": "gpu", "step": "cpu"}


def annotation_events(events: pl.LazyFrame, include_steps: bool = False) -> pl.LazyFrame:
    """Annotation events with a ``side`` column (``cpu`` / ``gpu``); step markers only when
    ``include_steps`` (HTA counts ``ProfilerStep#N`` among the CPU annotations)."""
    kinds = ["annotation", "gpu_annotation"] + (["step"] if include_steps else [])
    return events.filter(pl.col("kind").is_in(kinds)).with_columns(
        pl.col("kind").replace_strict(SIDES, return_dtype=pl.String).alias("side")
    )


#: Ranges PyTorch itself records, not the user's own ``record_function``: the optimizer's and
#: DataLoader's wrappers, DDP's forward, the profiler's steps, c10d's collectives
#: (``nccl:all_reduce``, ``gloo:barrier``, ``c10d::allreduce_`` ...), and NCCL's own NVTX ranges
#: of its API calls (``ncclSend``, ``ncclGroupEnd`` in Nsight traces).
FRAMEWORK_RE = (
    r"^(?:ProfilerStep#\d+|Optimizer\.(?:step|zero_grad)#|enumerate\(DataLoader\)#"
    r"|DistributedDataParallel\.|(?:nccl|gloo|hccl|mpi|ucc|xccl):|c10d::|record_param_comms$"
    r"|nccl[A-Z]\w*$)"
)


def annotation_names(events: pl.LazyFrame) -> pl.LazyFrame:
    """Every annotation name with its ``side``, ``count``, ``total_ns`` and ``origin``
    (``user``: the program's own ranges; ``framework``: PyTorch's, :data:`FRAMEWORK_RE`): the
    user's first, each longest total first — the order a user picks an annotation to chart in."""
    origin = (
        pl.when(pl.col("name").str.contains(FRAMEWORK_RE)).then(pl.lit("framework")).otherwise(pl.lit("user"))
    )
    return (
        annotation_events(events)
        .group_by("side", "name")
        .agg(pl.len().cast(pl.Int64).alias("count"), pl.col("dur").sum().alias("total_ns"))
        .with_columns(origin.alias("origin"))
        .sort(["origin", "total_ns", "side", "name"], descending=[True, True, False, False])
    )


def annotation_breakdown(
    events: pl.LazyFrame, by: Sequence[str] = ("rank",), include_steps: bool = False
) -> pl.LazyFrame:
    """Per ``by`` group, side and name: ``count, sum_ns, max_ns, min_ns, std_ns, mean_ns``.

    ``include_steps``: the CPU side also holds the ``ProfilerStep#N`` ranges, as in HTA's
    ``cpu_user_annotation_breakdown`` (:func:`profui.analysis.hta_variants.hta_annotation_breakdown`);
    ``std`` is the sample standard deviation (0 for a single range, like HTA's filled NaN).
    """
    keys = [*by, "side", "name"]
    return (
        annotation_events(events, include_steps=include_steps)
        .group_by(keys)
        .agg(
            pl.len().cast(pl.Int64).alias("count"),
            pl.col("dur").sum().alias("sum_ns"),
            pl.col("dur").max().alias("max_ns"),
            pl.col("dur").min().alias("min_ns"),
            int_std(pl.col("dur")).fill_null(0.0).alias("std_ns"),
            pl.col("dur").mean().alias("mean_ns"),
        )
        .sort(keys)
    )


def side_windows(windows: pl.LazyFrame) -> pl.LazyFrame:
    """Step windows per side: ``node, rank, step, side, w_start, w_end``."""
    cols = windows.collect_schema().names()
    per_side = {"cpu": ("cpu_start_ns", "cpu_end_ns"), "gpu": ("start_ns", "end_ns")}
    parts = []
    for side, (lo, hi) in per_side.items():
        if lo not in cols:
            lo, hi = "start", "end"
        parts.append(
            windows.select(
                "node",
                "rank",
                "step",
                pl.lit(side).alias("side"),
                pl.col(lo).alias("w_start"),
                pl.col(hi).alias("w_end"),
            )
        )
    return pl.concat(parts)


def annotation_per_step(
    events: pl.LazyFrame,
    windows: pl.LazyFrame,
    names: Sequence[str] | None = None,
    side: str | None = None,
) -> pl.LazyFrame:
    """Time each annotation name takes inside each step, and its share of the step.

    ``windows`` is :func:`profui.analysis.steps.step_windows`' frame — host annotations are
    measured in the step's CPU window (``cpu_start_ns, cpu_end_ns``), device annotations in its
    device window (``start_ns, end_ns``) — or any frame with ``node, rank, step, start, end``
    (ns), used for both. An annotation's time in a step is the union of its ranges on that
    rank, clipped to the step window (nested or repeated ranges of the same name are not double
    counted). Every (step, name) pair of a rank is present, 0 when the annotation did not run
    in that step, so the frame plots as is.

    Columns: ``node, rank, step, side, name, time_ns, count`` (ranges meeting the step),
    ``step_ns, share`` (``time_ns / step_ns``). ``names`` / ``side`` restrict the annotations.
    """
    ann = annotation_events(events)
    if names is not None:
        ann = ann.filter(pl.col("name").is_in(list(names)))
    if side is not None:
        ann = ann.filter(pl.col("side") == side)
    w = side_windows(windows)
    keys = ["node", "rank", "step", "side", "name"]
    ranges = ann.select(
        "node",
        "rank",
        "side",
        "name",
        pl.col("ts").alias("start"),
        (pl.col("ts") + pl.col("dur")).alias("end"),
    )
    clipped = clip_to_windows(ranges, w, ["node", "rank", "side"]).select(*keys, "start", "end")
    times = union_length(clipped, keys, "time_ns")
    counts = clipped.group_by(keys).agg(pl.len().cast(pl.Int64).alias("count"))
    grid = w.select(
        "node", "rank", "side", "step", (pl.col("w_end") - pl.col("w_start")).alias("step_ns")
    ).join(ann.select("node", "rank", "side", "name").unique(), on=["node", "rank", "side"], how="inner")
    return (
        grid.join(times, on=keys, how="left")
        .join(counts, on=keys, how="left")
        .with_columns(pl.col("time_ns", "count").fill_null(0))
        .with_columns(
            pl.when(pl.col("step_ns") > 0).then(pl.col("time_ns") / pl.col("step_ns")).alias("share")
        )
        .select(*keys, "time_ns", "count", "step_ns", "share")
        .sort(["node", "rank", "step", "side", "name"])
    )


def annotation_step_means(per_step: pl.LazyFrame | pl.DataFrame) -> pl.LazyFrame:
    """Per annotation (side, name): its mean time and mean share of a step, over the steps and
    ranks it appears in (from :func:`annotation_per_step`), largest share first."""
    return (
        per_step.lazy()
        .group_by("side", "name")
        .agg(
            pl.col("time_ns").mean(),  # integers: summed exactly
            stable_mean(pl.col("share")),
            pl.len().cast(pl.Int64).alias("steps"),
        )
        .sort(["share", "name", "side"], descending=[True, False, False], nulls_last=True)
    )
