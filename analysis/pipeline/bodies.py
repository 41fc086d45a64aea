"""Stage bodies: thin calls into the analysis modules, returning ``{output file: frame or dict}``.

Each body gets a :class:`~profui.analysis.pipeline.context.StageContext`. Analysis modules are
imported inside the bodies so that planning (``--plan``, ``profui runs``) stays cheap and a
module that is not written yet only makes its own stage unavailable.
"""

from __future__ import annotations

from typing import Any

import polars as pl

from .artifacts import trace_fingerprint
from .context import StageContext


def _events(ctx: StageContext, hta_compat: bool = False) -> pl.LazyFrame:
    """The run's events (read once, shared by the stages), HTA-preprocessed when asked."""
    return ctx.trace.hta_events() if hta_compat else ctx.trace.cached_events()


def _frame(value: Any) -> pl.DataFrame:
    return value.collect() if isinstance(value, pl.LazyFrame) else value


def _bucket_ns(ctx: StageContext) -> int | None:
    ms = ctx.params["bucket_ms"]
    return int(round(ms * 1_000_000)) if ms and ms > 0 else None


# -- ingest / index / correlate -------------------------------------------------------------


def ingest(ctx: StageContext) -> dict[str, Any]:
    """Validate the trace and take its inventory: events per node, rank and kind, time span."""
    t = ctx.trace
    inventory = (
        t.events()
        .group_by("node", "rank", "kind")
        .agg(
            pl.len().cast(pl.Int64).alias("events"),
            pl.col("ts").min().alias("first_ts"),
            (pl.col("ts") + pl.col("dur")).max().alias("last_end"),
            pl.col("dur").sum().alias("total_dur"),
        )
        .sort("node", "rank", "kind")
        .collect()
    )
    m = t.manifest
    info = {
        "name": m.name,
        "status": m.status,
        "source": m.source,
        "hosts": m.hosts,
        "ranks": m.ranks,
        "num_events": int(inventory["events"].sum()) if inventory.height else 0,
        "first_ts": inventory["first_ts"].min() if inventory.height else None,
        "last_end": inventory["last_end"].max() if inventory.height else None,
        "fingerprint": trace_fingerprint(t.dir),
    }
    return {"inventory.parquet": inventory, "trace.json": info}


def index(ctx: StageContext) -> dict[str, Any]:
    """The timeline's lane index: every host thread and device stream with its event count and extent."""
    lanes = (
        ctx.trace.cached_events()
        .with_columns(
            pl.when(pl.col("device") >= 0).then(pl.lit("device")).otherwise(pl.lit("host")).alias("side")
        )
        .group_by("node", "rank", "side", "pid", "tid", "device", "stream")
        .agg(
            pl.len().cast(pl.Int64).alias("events"),
            pl.col("ts").min().alias("first_ts"),
            (pl.col("ts") + pl.col("dur")).max().alias("last_end"),
            pl.col("kind").unique().sort().str.join(",").alias("kinds"),
        )
        .sort("node", "rank", "side", "device", "stream", "pid", "tid")
        .collect()
    )
    return {"lanes.parquet": lanes}


def correlate(ctx: StageContext) -> dict[str, Any]:
    """Join every launched device event to its host launch call by correlation id."""
    from profui.analysis.launch import kernel_launches

    hta = ctx.params["hta_compat"]
    launches = kernel_launches(_events(ctx, hta), hta_compat=hta).sort("node", "rank", "ts").collect()
    return {"launches.parquet": launches}


# -- steps ----------------------------------------------------------------------------------


def steps(ctx: StageContext) -> dict[str, Any]:
    """Step windows (node, rank, step, start, end) and their statistics and outliers."""
    from profui.analysis import steps as steps_mod

    result = steps_mod.step_windows(
        _events(ctx, ctx.params["hta_compat"]),
        **_supported(steps_mod.step_windows, pattern=ctx.params["step_annotation"] or None),
    )
    windows = _frame(getattr(result, "windows", result))
    stats = getattr(steps_mod, "step_stats", None)
    outliers = getattr(steps_mod, "step_outliers", None)
    out: dict[str, Any] = {"windows.parquet": windows}
    out["stats.parquet"] = _frame(stats(windows.lazy())) if stats else pl.DataFrame()
    if outliers:
        out["outliers.parquet"] = _frame(
            outliers(windows.lazy(), **_supported(outliers, threshold=ctx.params["outlier_threshold"]))
        )
    else:
        out["outliers.parquet"] = pl.DataFrame()
    return out


def _supported(func: Any, **kwargs: Any) -> dict[str, Any]:
    """The keyword arguments ``func`` accepts (analysis signatures are still settling)."""
    import inspect

    names = inspect.signature(func).parameters
    return {k: v for k, v in kwargs.items() if k in names and v is not None}


# -- per-topic analyses ---------------------------------------------------------------------


def kernels(ctx: StageContext) -> dict[str, Any]:
    """Per-kernel statistics, top-N by time and by count, and the by-type breakdown."""
    from profui.analysis import kernels as k

    hta = ctx.params["hta_compat"]
    n = ctx.params["top_n"]
    ev = _events(ctx, hta)
    stats = k.kernel_stats(ev, hta_compat=hta).collect()
    return {
        "stats.parquet": stats,
        "top_by_time.parquet": k.top_kernels(stats, n, by="total_ns").collect(),
        "top_by_count.parquet": k.top_kernels(stats, n, by="count").collect(),
        "types.parquet": k.kernel_type_breakdown(ev, hta_compat=hta).collect(),
    }


def activity(ctx: StageContext) -> dict[str, Any]:
    """Kernel / memcpy / memset / sync / idle shares of device time."""
    return {"shares.parquet": ctx.trace.activity(hta_compat=ctx.params["hta_compat"])}


def memory(ctx: StageContext) -> dict[str, Any]:
    """Memory operations by direction: count, bytes, time, bandwidth."""
    return {"ops.parquet": ctx.trace.memory_ops()}


def precision(ctx: StageContext) -> dict[str, Any]:
    """Kernel time by numeric precision."""
    return {"shares.parquet": ctx.trace.precision()}


def utilization(ctx: StageContext) -> dict[str, Any]:
    """GPU busy/idle per device, and GPU and CPU utilization per time bucket."""
    hta = ctx.params["hta_compat"]
    t = ctx.trace
    bucket = _bucket_ns(ctx)
    return {
        "busy.parquet": t.gpu_busy(hta_compat=hta),
        "gpu.parquet": t.utilization(bucket_ns=bucket, hta_compat=hta),
        "cpu.parquet": t.cpu_utilization(bucket_ns=bucket),
    }


def comm(ctx: StageContext) -> dict[str, Any]:
    """NCCL time by collective, its overlap with compute, per rank and per step, stragglers."""
    from profui.analysis import comm as c

    hta = ctx.params["hta_compat"]
    ev = _events(ctx, hta)
    windows = ctx.input("steps", "windows.parquet").lazy()
    per_step = c.comm_per_step(ev, windows).collect()
    return {
        "by_collective.parquet": c.comm_by_collective(ev).collect(),
        "overlap.parquet": c.comm_comp_overlap(ev, hta_compat=hta).collect(),
        "per_rank.parquet": c.comm_per_rank(ev).collect(),
        "per_step.parquet": per_step,
        "stragglers.parquet": c.stragglers(per_step.lazy()).collect(),
    }


def annotations(ctx: StageContext) -> dict[str, Any]:
    """Custom annotations: HTA-style breakdown per name, and time per step per name."""
    from profui.analysis import annotations as a

    hta = ctx.params["hta_compat"]
    ev = _events(ctx, hta)
    windows = ctx.input("steps", "windows.parquet").lazy()
    return {
        "breakdown.parquet": a.annotation_breakdown(ev, hta_compat=hta).collect(),
        "per_step.parquet": a.annotation_per_step(ev, windows).collect(),
    }


def launch(ctx: StageContext) -> dict[str, Any]:
    """Launch latency distribution, per kernel, outliers and histogram (from correlate's links)."""
    from profui.analysis import launch as la

    launches = ctx.input("correlate", "launches.parquet").lazy()
    slow = int(round(ctx.params["slow_launch_us"] * 1000))
    late = int(round(ctx.params["late_start_us"] * 1000))
    return {
        "stats.parquet": la.launch_stats(launches, runtime_outlier_ns=slow, launch_delay_outlier_ns=late).collect(),
        "by_kernel.parquet": la.launch_stats_by_kernel(launches).collect(),
        "outliers.parquet": la.launch_outliers(launches, slow, late).collect(),
        "histogram.parquet": la.launch_histogram(launches).collect(),
    }


def idle(ctx: StageContext) -> dict[str, Any]:
    """Why streams sat idle (per category) and how many launches queued on them."""
    from profui.analysis import idle as i

    hta = ctx.params["hta_compat"]
    ev = _events(ctx, hta)
    return {
        "breakdown.parquet": i.idle_breakdown(ev, hta_compat=hta).collect(),
        "queue.parquet": i.queue_length_summary(ev, hta_compat=hta).collect(),
    }


def sync(ctx: StageContext) -> dict[str, Any]:
    """Host time blocked in synchronize calls, and device sync events."""
    from profui.analysis import sync as s

    ev = _events(ctx)
    return {
        "host.parquet": s.sync_summary(ev).collect(),
        "totals.parquet": s.sync_totals(ev).collect(),
        "device.parquet": s.gpu_sync_summary(ev).collect(),
    }


# -- summary --------------------------------------------------------------------------------

#: What the summary takes from each stage: (stage, file, at most this many rows).
SUMMARY_PARTS: tuple[tuple[str, str, int | None], ...] = (
    ("utilization", "busy.parquet", None),
    ("kernels", "top_by_time.parquet", None),
    ("kernels", "top_by_count.parquet", None),
    ("kernels", "types.parquet", None),
    ("activity", "shares.parquet", None),
    ("memory", "ops.parquet", None),
    ("precision", "shares.parquet", None),
    ("steps", "stats.parquet", None),
    ("steps", "outliers.parquet", 50),
    ("comm", "by_collective.parquet", None),
    ("comm", "overlap.parquet", None),
    ("annotations", "breakdown.parquet", 50),
    ("launch", "stats.parquet", None),
    ("idle", "breakdown.parquet", None),
    ("sync", "totals.parquet", None),
)


def summary(ctx: StageContext) -> dict[str, Any]:
    """One JSON document with the headline tables of every stage (small tables, rows as dicts)."""
    doc: dict[str, Any] = {"trace": ctx.input("ingest", "trace.json")}
    doc["trace"].pop("fingerprint", None)
    for stage, file, limit in SUMMARY_PARTS:
        if stage not in ctx.input_dirs:
            continue
        frame = ctx.input(stage, file)
        if limit is not None:
            frame = frame.head(limit)
        doc.setdefault(stage, {})[file.removesuffix(".parquet")] = frame.to_dicts()
    return {"summary.json": doc}
