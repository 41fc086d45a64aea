"""Memory operations: memcpy and memset by direction, bytes, time and achieved bandwidth.

Default semantics: every ``memcpy`` / ``memset`` event on a device, exact ns. Direction is the
copy kind the importer or capture recorded (``HtoD``, ``DtoH``, ``DtoD``, ``PtoP``, ``HtoH``…);
memsets are their own direction ``Memset``. Bandwidth of one operation is ``bytes / dur``
(bytes per ns = GB/s, decimal GB); operations without a byte count or with zero duration have
no bandwidth.

:func:`bandwidth_summary` is HTA's ``get_memory_bw_summary`` quantity, a different one: the
sum of the per-op bandwidths of the ops running at the same time, sampled at each op start and
end (HTA's own numbers, from Kineto's per-copy ``memory bandwidth (GB/s)``:
:func:`profui.analysis.hta_variants.hta_memory_bw_summary`).
"""

from __future__ import annotations

from collections.abc import Sequence

import polars as pl

from .engine import ENGINE
from .intervals import Frame, _lazy
from .stats import describe

MEMORY_KINDS = ("memcpy", "memset")


def memory_events(events: Frame) -> pl.LazyFrame:
    """Memcpy/memset events with ``direction`` and per-op ``gbps`` (null when unknown)."""
    direction = (
        pl.when(pl.col("kind") == "memset")
        .then(pl.lit("Memset"))
        .otherwise(pl.col("memcpy_kind").fill_null("unknown"))
    )
    gbps = pl.when((pl.col("dur") > 0) & pl.col("bytes").is_not_null()).then(
        pl.col("bytes").cast(pl.Float64) / pl.col("dur").cast(pl.Float64)
    )
    return (
        _lazy(events)
        .filter(pl.col("kind").is_in(list(MEMORY_KINDS)), pl.col("device") >= 0)
        .with_columns(direction.alias("direction"), gbps.alias("gbps"))
    )


def memory_ops(events: Frame, by: Sequence[str] = ()) -> pl.LazyFrame:
    """Per direction (and ``by``): count, bytes, time, achieved and per-op bandwidth statistics.

    ``achieved_gbps`` = total bytes / total time of the ops with a byte count; ``gbps_*`` are
    statistics over the per-op bandwidths; ``time_share`` is of all memory-op time in the group.
    """
    by = list(by)
    m = memory_events(events)
    with_bytes = pl.col("bytes").is_not_null()
    out = m.group_by([*by, "direction"]).agg(
        pl.len().alias("count"),
        pl.col("bytes").sum().alias("bytes"),
        pl.col("dur").sum().alias("time_ns"),
        pl.col("dur").filter(with_bytes).sum().alias("_timed_ns"),
        pl.col("gbps").mean().alias("gbps_mean"),
        pl.col("gbps").quantile(0.5, "linear").alias("gbps_p50"),
        pl.col("gbps").quantile(0.95, "linear").alias("gbps_p95"),
        pl.col("gbps").min().alias("gbps_min"),
        pl.col("gbps").max().alias("gbps_max"),
    )
    total = pl.col("time_ns").sum()
    return (
        out.with_columns(
            pl.when(pl.col("_timed_ns") > 0)
            .then(pl.col("bytes") / pl.col("_timed_ns"))
            .alias("achieved_gbps"),
            (pl.col("time_ns") / (total.over(by) if by else total)).alias("time_share"),
        )
        .drop("_timed_ns")
        .sort([*by, "time_ns"], descending=[*[False] * len(by), True])
    )


def bandwidth_histogram(events: Frame, bins_per_decade: int = 4, by: Sequence[str] = ()) -> pl.LazyFrame:
    """Distribution of per-op bandwidth per direction on log-spaced bins (GB/s).

    Columns: ``by``…, ``direction``, ``bin_lo_gbps``, ``bin_hi_gbps``, ``count``, ``bytes``.
    """
    by = list(by)
    k = (pl.col("gbps").log10() * bins_per_decade).floor().cast(pl.Int64)
    return (
        memory_events(events)
        .filter(pl.col("gbps") > 0)
        .with_columns(k.alias("_k"))
        .group_by([*by, "direction", "_k"])
        .agg(pl.len().alias("count"), pl.col("bytes").sum())
        .with_columns(
            (10.0 ** (pl.col("_k") / bins_per_decade)).alias("bin_lo_gbps"),
            (10.0 ** ((pl.col("_k") + 1) / bins_per_decade)).alias("bin_hi_gbps"),
        )
        .sort([*by, "direction", "_k"])
        .select(*by, "direction", "bin_lo_gbps", "bin_hi_gbps", "count", "bytes")
    )


def bandwidth_label(direction: pl.Expr) -> pl.Expr:
    """HTA's memory-op label of a direction: ``Memset`` or ``Memcpy <direction>`` (``Memcpy DtoH``)."""
    return pl.when(direction == "Memset").then(pl.lit("Memset")).otherwise(pl.lit("Memcpy ") + direction)


def bandwidth_summary(events: Frame) -> pl.LazyFrame:
    """Concurrent memory bandwidth per rank and memory-op label, over time: HTA's
    ``memory_bw_summary`` quantity in exact ns (HTA's own numbers:
    :func:`profui.analysis.hta_variants.hta_memory_bw_summary`).

    Per ``node, rank, name`` (``Memcpy HtoD``, ``Memcpy DtoH``, ``Memcpy DtoD``, ``Memset`` ...):
    the running total of the per-op bandwidth (``bytes / dur``) of the ops running at once,
    sampled at every op start and end. Ops without a byte count or of zero duration have no
    bandwidth and are left out. Columns: see :func:`bandwidth_stats`.
    """
    m = memory_events(events).filter(pl.col("gbps").is_not_null())
    ops = m.select(
        "node",
        "rank",
        bandwidth_label(pl.col("direction")).alias("name"),
        pl.col("ts").alias("start"),
        (pl.col("ts") + pl.col("dur")).alias("end"),
        "gbps",
    )
    return bandwidth_stats(concurrent_bandwidth(ops))


_BW_KEYS = ["node", "rank", "name"]


def concurrent_bandwidth(ops: pl.LazyFrame, keys: Sequence[str] = _BW_KEYS) -> pl.LazyFrame:
    """Running total of ``gbps`` per ``keys`` group over time: ``+gbps`` at each op's ``start``,
    ``−gbps`` at its ``end`` (half-open: an op ending when another starts does not overlap it).

    Columns ``keys..., ts, gbps``: one row per distinct change time, the total from ``ts`` on
    (float residues below :data:`BW_RESIDUE_GBPS` are 0), rows of a group in time order.
    """
    keys = list(keys)
    frame = ops.select(*keys, "start", "end", "gbps").collect(engine=ENGINE)
    parts = []
    # a few groups of many points: eager Series sorts and sums beat a multi-key lazy sort here
    for key, g in frame.partition_by(keys, as_dict=True, maintain_order=True).items():
        pts = pl.DataFrame(
            {"ts": pl.concat([g["start"], g["end"]]), "bw": pl.concat([g["gbps"], -g["gbps"]])}
        )
        pts = pts.sort("ts", maintain_order=True)
        ts, total = pts["ts"], pts["bw"].cum_sum()
        last = (ts != ts.shift(-1)).fill_null(True)  # the total after every change at that time
        total = total.zip_with(total.abs() >= BW_RESIDUE_GBPS, pl.Series([0.0] * len(total)))
        ts, total = ts.filter(last), total.filter(last)
        cols = {
            k: pl.repeat(v, len(ts), eager=True, dtype=frame.schema[k])
            for k, v in zip(keys, key, strict=True)
        }
        parts.append(pl.DataFrame({**cols, "ts": ts, "gbps": total}))
    schema: dict[str, pl.DataType] = {
        **{k: frame.schema[k] for k in keys},
        "ts": pl.Int64(),
        "gbps": pl.Float64(),
    }
    return (pl.concat(parts) if parts else pl.DataFrame(schema=schema)).lazy()


#: A running total of per-op bandwidths below this (1 byte/s) is float residue of ops ending.
BW_RESIDUE_GBPS = 1e-9


def bandwidth_stats(series: pl.LazyFrame, keys: Sequence[str] = _BW_KEYS) -> pl.LazyFrame:
    """Per ``keys`` group of a :func:`concurrent_bandwidth` series, over its points above 0 (as
    HTA): ``count, mean_gbps, std_gbps, min_gbps, p25_gbps, p50_gbps, p75_gbps, max_gbps``
    (pandas ``describe``, GB/s), plus ``time_mean_gbps`` (the total weighted by how long it
    held, over ``active_ns``) and ``active_ns`` (time with some op of the group running)."""
    keys = list(keys)
    v = pl.col("gbps")
    held = (pl.col("ts").shift(-1) - pl.col("ts")).over(keys).fill_null(0)
    stats = [e.name.suffix("_gbps") for e in describe(v)]
    return (
        series.with_columns(held.alias("_held"))
        .filter(v > 0)
        .group_by(keys)
        .agg(
            pl.len().cast(pl.Int64).alias("count"),
            *stats,
            pl.when(pl.col("_held").sum() > 0)
            .then((v * pl.col("_held")).sum() / pl.col("_held").sum())
            .alias("time_mean_gbps"),
            pl.col("_held").sum().cast(pl.Int64).alias("active_ns"),
        )
        .sort(keys)
    )
