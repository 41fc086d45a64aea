"""``hta_compat``: Holistic Trace Analysis' (HTA 0.5) view of a trace, exactly; with
:mod:`profui.analysis.hta_variants` the one place HTA semantics live.

HTA differs from profui's default semantics in four ways, all reproduced here:

1. **Rounding.** HTA reads Kineto's float microseconds as float64 and rounds every event to whole
   µs: ``ts = ceil(ts)``, ``end = floor(ts + dur)``, ``dur = end - ts`` (so sub-µs events get a
   duration of 0 or even −1 µs). Float64 is emulated on the value HTA saw: µs relative to
   ``baseTimeNanoseconds`` when the source had one, else absolute epoch µs (where float64 only
   holds 0.25 µs steps). Integer-µs traces are unchanged.
2. **What counts as GPU.** HTA's ``stream`` is ``int(args.stream)`` (−1 when absent or not a
   decimal, e.g. AMD's ``"0x0"``), on *any* event, so a Triton CPU op carrying ``args.stream``
   is a "GPU kernel"; ``gpu_user_annotation`` has no stream. Breakdowns take ``stream != -1``;
   the step filter's GPU notion is ``stream >= 0 and correlation >= 0`` or the names
   ``Event Sync`` / ``Context Sync``. Instant events are dropped.
3. **Last step dropped** (``include_last_profiler_step=False``): with two or more distinct
   ``ProfilerStep`` names in the trace, each rank keeps only its CPU events starting before its
   last ProfilerStep and the GPU events whose correlation equals a kept CPU event's
   correlation (an inner join, duplicates included, as HTA does).
4. **Merging keeps HTA's arithmetic**: :func:`hta_merged` sums ``end - ts`` over merged groups
   the way HTA does, negative durations included.

All functions are lazy Polars transformations; times stay integer ns (multiples of 1000).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import polars as pl

from .comm import HTA_COMM_PATTERN
from .intervals import Frame, _lazy, _over

#: HTA's kernel-type regexes (hta/utils/utils.py), applied with ``re.match`` (anchored at start);
#: communication is :data:`~profui.analysis.comm.HTA_COMM_PATTERN`.
MEMORY_RE = r"^(Memcpy|Memset|dma)"
NOT_COMPUTE_RE = rf"{HTA_COMM_PATTERN}|^(?:.*Memcpy|Memset|.*Sync)"

KERNEL_TYPES = ("COMPUTATION", "COMMUNICATION", "MEMORY")  # HTA's bit order in the by-type breakdown

_SYNC_NAMES = ("Event Sync", "Context Sync")
_ARGS_STREAM_RE = r'"stream":\s*"?(-?\d+)"?\s*[,}]'


def kernel_type_expr(name: pl.Expr | None = None) -> pl.Expr:
    """HTA's kernel type of an event name: COMMUNICATION, MEMORY, COMPUTATION or OTHER."""
    name = pl.col("name") if name is None else name
    return (
        pl.when(name.str.contains(HTA_COMM_PATTERN))
        .then(pl.lit("COMMUNICATION"))
        .when(name.str.contains(MEMORY_RE))
        .then(pl.lit("MEMORY"))
        .when(~name.str.contains(NOT_COMPUTE_RE))
        .then(pl.lit("COMPUTATION"))
        .otherwise(pl.lit("OTHER"))
    )


def _hta_stream() -> pl.Expr:
    from_args = pl.col("args").str.extract(_ARGS_STREAM_RE, 1).cast(pl.Int64, strict=False)
    device_side = pl.col("kind").is_in(["kernel", "memcpy", "memset", "sync"])
    # The importer leaves args.stream in args when it is no valid int32 (e.g. 4294967295 on a
    # Context Sync), and HTA counts such an event as on a stream.
    return (
        pl.when(from_args.is_not_null())
        .then(from_args)
        .when(device_side)
        .then(pl.col("stream").cast(pl.Int64))
        .otherwise(pl.lit(-1, pl.Int64))
    )


def _round_like_hta(offset: pl.Expr) -> list[pl.Expr]:
    rel = pl.col("ts") - offset
    ts_f = (rel // 1000).cast(pl.Float64) + (rel % 1000).cast(pl.Float64) / 1000.0
    end_f = ts_f + pl.col("dur").cast(pl.Float64) / 1000.0
    ts_us = ts_f.ceil().cast(pl.Int64)
    end_us = end_f.floor().cast(pl.Int64)
    return [
        (ts_us * 1000 + offset).alias("ts"),
        ((end_us - ts_us) * 1000).alias("dur"),
    ]


def hta_events(
    events: Frame,
    time_offsets: Mapping[tuple[str, int], int] | None = None,
    include_last_step: bool = False,
) -> pl.LazyFrame:
    """Events as HTA sees them (see the module docstring), with extra columns.

    ``hta_stream`` / ``hta_correlation`` (HTA's stream and correlation, −1 when absent),
    ``hta_gpu`` (``hta_stream != -1``, HTA's notion in its breakdowns) and ``hta_order`` (the
    events' order in ``events`` — trace order, the row order HTA's unstable sorts start from). ``time_offsets`` maps
    ``(node, rank)`` to the ns that HTA's float µs were relative to (the source's
    ``baseTimeNanoseconds``; see :meth:`profui.analysis.Trace.hta_time_offsets`); absent means 0.
    """
    lf = _lazy(events).with_row_index("hta_order").filter(pl.col("kind") != "instant")
    if time_offsets:
        offs = pl.LazyFrame(
            {
                "node": [k[0] for k in time_offsets],
                "rank": [int(k[1]) for k in time_offsets],
                "_off": [int(v) for v in time_offsets.values()],
            },
            schema={"node": pl.String, "rank": pl.Int64, "_off": pl.Int64},
        )
        lf = lf.join(offs, on=["node", "rank"], how="left").with_columns(pl.col("_off").fill_null(0))
    else:
        lf = lf.with_columns(pl.lit(0, pl.Int64).alias("_off"))
    lf = lf.with_columns(_round_like_hta(pl.col("_off"))).drop("_off")
    lf = lf.with_columns(
        _hta_stream().alias("hta_stream"),
        pl.col("correlation").fill_null(-1).alias("hta_correlation"),
    ).with_columns((pl.col("hta_stream") != -1).alias("hta_gpu"))
    return drop_last_step(lf, include_last_step=include_last_step)


def _filter_gpu() -> pl.Expr:
    return ((pl.col("hta_stream") >= 0) & (pl.col("hta_correlation") >= 0)) | pl.col("name").is_in(
        _SYNC_NAMES
    )


def drop_last_step(lf: pl.LazyFrame, include_last_step: bool = False) -> pl.LazyFrame:
    """HTA's ``_filter_irrelevant_gpu_kernels`` over ``hta_events`` output (see module docstring)."""
    is_gpu = _filter_gpu()
    is_step = pl.col("name").str.contains("ProfilerStep", literal=True)
    n_step_names = lf.filter(is_step).select(pl.col("name").n_unique().alias("_n_step_names"))
    end = pl.col("ts") + pl.col("dur")
    bounds = (
        lf.filter(~is_gpu & is_step)
        .group_by("node", "rank")
        .agg(pl.col("ts").max().alias("_last_start"), end.max().alias("_last_end"))
    )
    cpu = lf.filter(~is_gpu).join(bounds, on=["node", "rank"], how="left")
    keep_cpu = (
        (pl.col("ts") <= pl.col("_last_end")) if include_last_step else (pl.col("ts") < pl.col("_last_start"))
    )
    cpu_kept = cpu.filter(keep_cpu.fill_null(False)).drop("_last_start", "_last_end")
    corr = cpu_kept.select("node", "rank", pl.col("hta_correlation").alias("_c"))
    gpu_kept = lf.filter(is_gpu).join(
        corr, left_on=["node", "rank", "hta_correlation"], right_on=["node", "rank", "_c"], how="inner"
    )
    filtered = pl.concat([gpu_kept.select(lf.collect_schema().names()), cpu_kept], how="vertical")
    # HTA filters only when the whole trace has at least two ProfilerStep names.
    flag = n_step_names.select((pl.col("_n_step_names") >= 2).alias("_filter"))
    return pl.concat(
        [
            filtered.join(flag, how="cross").filter(pl.col("_filter")).drop("_filter"),
            lf.join(flag, how="cross").filter(~pl.col("_filter")).drop("_filter"),
        ],
        how="vertical",
    )


def hta_merged(intervals: Frame, by: Sequence[str] = ()) -> pl.LazyFrame:
    """HTA's ``merge_kernel_intervals``: groups start where ``ts > cummax(previous ends)``.

    Unlike :func:`profui.analysis.intervals.merge_intervals` it keeps zero and negative
    intervals (HTA's rounding makes some), so sums of ``end - start`` match HTA's.
    """
    by = list(by)
    prev = _over(pl.col("end").cum_max().shift(1), by)
    return (
        _lazy(intervals)
        .select(*by, "start", "end")
        .sort([*by, "start"])
        .with_columns(_g=_over((pl.col("start") > prev).fill_null(False).cum_sum(), by))
        .group_by([*by, "_g"])
        .agg(pl.col("start").min(), pl.col("end").max())
        .drop("_g")
        .sort([*by, "start"])
    )


def hta_union_length(intervals: Frame, by: Sequence[str] = (), name: str = "busy_ns") -> pl.LazyFrame:
    """Sum of ``end - start`` over :func:`hta_merged` groups (HTA's merged run time)."""
    by = list(by)
    agg = (pl.col("end") - pl.col("start")).sum().alias(name)
    m = hta_merged(intervals, by)
    return m.group_by(by).agg(agg).sort(by) if by else m.select(agg.fill_null(0))


def hta_type_coverage(intervals: Frame, by: Sequence[str] = ()) -> pl.LazyFrame:
    """HTA's ``_get_gpu_kernel_type_time``: exclusive time per kernel-type combination.

    ``intervals`` has ``kernel_type``; each of COMPUTATION, COMMUNICATION, MEMORY is merged
    with HTA's merge, then a running bitmask sweep assigns each segment to the combination
    (``"COMPUTATION overlapping COMMUNICATION"`` ...). Returns ``by``, ``kernel_type``, ``time_ns``.
    """
    by = list(by)
    parts = []
    for i, t in enumerate(KERNEL_TYPES):
        m = hta_merged(_lazy(intervals).filter(pl.col("kernel_type") == t), by)
        v = 1 << i
        parts.append(m.select(*by, pl.col("start").alias("t"), pl.lit(v, pl.Int64).alias("_d")))
        parts.append(m.select(*by, pl.col("end").alias("t"), pl.lit(-v, pl.Int64).alias("_d")))
    # at one instant, starts before ends (HTA's order on its µs ties: a segment of 0 ns is kept
    # under the combination both were in, as in HTA's numbers); without it the rows would
    # depend on an unstable sort
    sweep = (
        pl.concat(parts)
        .sort([*by, "t", "_d"], descending=[False] * len(by) + [False, True])
        .with_columns(_run=_over(pl.col("_d").cum_sum(), by))
        .with_columns(_len=_over(pl.col("t").shift(-1), by) - pl.col("t"))
        .filter(pl.col("_run") > 0, pl.col("_len").is_not_null())
    )
    label = (
        pl.concat_list(
            [
                pl.when((pl.col("_run") & (1 << i)) > 0).then(pl.lit(t)).otherwise(None)
                for i, t in enumerate(KERNEL_TYPES)
            ]
        )
        .list.drop_nulls()
        .list.join(" overlapping ")
    )
    return (
        sweep.with_columns(label.alias("kernel_type"))
        .group_by([*by, "kernel_type"])
        .agg(pl.col("_len").sum().alias("time_ns"))
        .sort([*by, "kernel_type"])
    )
