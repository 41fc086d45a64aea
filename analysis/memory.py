"""Memory operations: memcpy and memset by direction, bytes, time and achieved bandwidth.

Default semantics: every ``memcpy`` / ``memset`` event on a device, exact ns. Direction is the
copy kind the importer or capture recorded (``HtoD``, ``DtoH``, ``DtoD``, ``PtoP``, ``HtoH``…);
memsets are their own direction ``Memset``. Bandwidth of one operation is ``bytes / dur``
(bytes per ns = GB/s, decimal GB); operations without a byte count or with zero duration have
no bandwidth.

``hta_memory_bw_summary`` reproduces HTA's ``get_memory_bw_summary``, a different quantity: the
sum of Kineto's per-copy ``memory bandwidth (GB/s)`` over copies running at the same time,
sampled at each copy start and end.
"""

from __future__ import annotations

from collections.abc import Sequence

import polars as pl

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


def hta_memory_bw_summary(hta_events: Frame) -> pl.LazyFrame:
    """HTA's ``get_memory_bw_summary`` over :func:`profui.analysis.hta.hta_events` output.

    Per rank and HTA memory name (``Memcpy DtoD`` — the first 11 characters — or ``Memset``):
    start (+bw) and end (−bw) points of every MEMORY event (0 µs durations count as 1 µs),
    sorted by time, running sum per name, zero points dropped, then count / mean / std / min /
    quartiles / max of the running sum (GB/s).
    """
    from .hta import kernel_type_expr

    name = pl.col("name")
    mem_name = (
        pl.when(name.str.starts_with("Memset"))
        .then(pl.lit("Memset"))
        .when(~name.str.starts_with("Memcpy"))
        .then(pl.lit("Memcpy Unknown"))
        .otherwise(name.str.slice(0, 11))
    )
    bw = pl.col("args").str.json_path_match("$['memory bandwidth (GB/s)']").cast(pl.Float64, strict=False)
    m = (
        _lazy(hta_events)
        .filter(pl.col("hta_gpu"))
        .filter(kernel_type_expr() == "MEMORY")
        .with_columns(
            mem_name.alias("mem_name"),
            bw.fill_null(0.0).alias("bw"),
            pl.when(pl.col("dur") == 0).then(pl.lit(1000, pl.Int64)).otherwise(pl.col("dur")).alias("_dur"),
        )
    )
    keys = ["node", "rank", "mem_name"]
    points = pl.concat(
        [
            m.select(*keys, pl.col("ts").alias("t"), pl.col("bw")),
            m.select(*keys, (pl.col("ts") + pl.col("_dur")).alias("t"), (-pl.col("bw")).alias("bw")),
        ]
    )
    series = points.sort([*keys, "t"], maintain_order=True).with_columns(
        pl.col("bw").cum_sum().over(keys).alias("memory_bw_gbps")
    )
    v = pl.col("memory_bw_gbps")
    return (
        series.filter(v > 0)
        .group_by(keys)
        .agg(
            pl.len().alias("count"),
            *describe(v),
        )
        .rename({"mem_name": "name"})
        .sort("node", "rank", "name")
    )
