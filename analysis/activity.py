"""GPU activity distribution: kernel / memcpy / memset / sync / idle shares of each GPU's span.

Each instant of the GPU span (first to last device activity, sync included) is counted once:
when several kinds run at once the instant goes to the first of kernel > memcpy > memset >
sync; instants with nothing running are ``idle``. So the shares of a GPU sum to exactly 1
and ``kernel`` equals the union of its kernels. ``overlap_ns`` says how much of each kind's
own union was hidden under a higher-priority kind.
"""

from __future__ import annotations

from collections.abc import Sequence

import polars as pl

from .busy import GPU_BY
from .engine import ENGINE
from .intervals import Frame, _lazy, label_coverage

ACTIVITIES = ("kernel", "memcpy", "memset", "sync")


def activity_shares(events: Frame, by: Sequence[str] = GPU_BY) -> pl.LazyFrame:
    """Per GPU (``by``) and activity (kernel, memcpy, memset, sync, idle): ``time_ns``, ``share``, ``overlap_ns``.

    Over HTA's GPU events (a CPU op with a stream counts as kernel, per rank):
    :func:`profui.analysis.hta_variants.hta_activity_shares`.
    """
    lf = _lazy(events).filter(pl.col("kind").is_in(list(ACTIVITIES)), pl.col("device") >= 0)
    return shares_of(lf, by)


def shares_of(lf: pl.LazyFrame, by: Sequence[str] = GPU_BY) -> pl.LazyFrame:
    """:func:`activity_shares` of already selected device events ``lf`` (``kind`` in ACTIVITIES)."""
    by = list(by)
    iv = lf.select(*by, "kind", pl.col("ts").alias("start"), (pl.col("ts") + pl.col("dur")).alias("end"))
    # The coverage (a few rows per GPU) feeds five sub-queries: computed once, not once each.
    cov = label_coverage(iv, "kind", list(ACTIVITIES), by).collect(engine=ENGINE).lazy()
    # lowest set bit = highest-priority activity running
    first = pl.col("mask") & (-pl.col("mask"))
    owner = first.replace_strict(
        [1 << i for i in range(len(ACTIVITIES))], list(ACTIVITIES), return_dtype=pl.String
    )
    owned = cov.with_columns(owner.alias("activity")).group_by([*by, "activity"]).agg(pl.col("time_ns").sum())
    # time each kind ran while a higher-priority kind also ran
    hidden = []
    for i, a in enumerate(ACTIVITIES):
        bit = 1 << i
        hidden.append(
            cov.filter((pl.col("mask") & bit) > 0, (pl.col("mask") & (bit - 1)) > 0)
            .group_by(by if by else pl.lit(0).alias("_g"))
            .agg(pl.col("time_ns").sum().alias("overlap_ns"))
            .with_columns(pl.lit(a).alias("activity"))
        )
    hidden_lf = pl.concat(hidden, how="diagonal_relaxed")
    agg = [pl.col("start").min().alias("_a"), pl.col("end").max().alias("_b")]
    span = iv.group_by(by).agg(agg) if by else iv.select(agg)
    span = span.with_columns((pl.col("_b") - pl.col("_a")).alias("span_ns")).drop("_a", "_b")
    acts = pl.LazyFrame({"activity": [*ACTIVITIES, "idle"]})
    grid = span.join(acts, how="cross")
    busy = (
        owned.group_by(by).agg(pl.col("time_ns").sum().alias("_busy"))
        if by
        else owned.select(pl.col("time_ns").sum().alias("_busy"))
    )
    joined = grid.join(owned, on=[*by, "activity"], how="left")
    joined = joined.join(busy, on=by, how="left") if by else joined.join(busy, how="cross")
    joined = joined.join(hidden_lf.drop("_g", strict=False), on=[*by, "activity"], how="left")
    order = pl.col("activity").replace_strict(
        [*ACTIVITIES, "idle"], list(range(len(ACTIVITIES) + 1)), return_dtype=pl.Int64
    )
    return (
        joined.with_columns(
            pl.when(pl.col("activity") == "idle")
            .then(pl.col("span_ns") - pl.col("_busy").fill_null(0))
            .otherwise(pl.col("time_ns").fill_null(0))
            .alias("time_ns"),
            pl.col("overlap_ns").fill_null(0),
        )
        .with_columns(
            pl.when(pl.col("span_ns") > 0)
            .then(pl.col("time_ns") / pl.col("span_ns"))
            .otherwise(0.0)
            .alias("share")
        )
        .select(*by, "activity", "time_ns", "share", "overlap_ns", "span_ns")
        .sort([*by, order])
    )


def activity_total(shares: Frame) -> pl.LazyFrame:
    """All GPUs together, from :func:`activity_shares`' per-GPU rows: per activity the summed
    ``time_ns`` and ``overlap_ns`` over the summed GPU spans (``span_ns``), so ``share`` weighs
    each GPU by its span and the shares still sum to 1. ``n_gpus``: GPUs summed.

    Columns: activity, n_gpus, time_ns, share, overlap_ns, span_ns (activities in the usual order).
    """
    order = pl.col("activity").replace_strict(
        [*ACTIVITIES, "idle"], list(range(len(ACTIVITIES) + 1)), return_dtype=pl.Int64
    )
    return (
        _lazy(shares)
        .group_by("activity")
        .agg(
            pl.len().alias("n_gpus"),
            pl.col("time_ns").sum(),
            pl.col("overlap_ns").sum(),
            pl.col("span_ns").sum(),
        )
        .with_columns(
            pl.when(pl.col("span_ns") > 0)
            .then(pl.col("time_ns") / pl.col("span_ns"))
            .otherwise(0.0)
            .alias("share")
        )
        .select("activity", pl.col("n_gpus").cast(pl.Int64), "time_ns", "share", "overlap_ns", "span_ns")
        .sort(order)
    )
