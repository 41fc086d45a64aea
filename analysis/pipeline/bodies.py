"""Stage bodies: thin calls into the analysis modules, returning ``{output file: frame or dict}``.

Each body gets a :class:`~profui.analysis.pipeline.context.StageContext`. Analysis modules are
imported inside the bodies so that planning (``--plan``, ``profui runs``) stays cheap and a
module that is not written yet only makes its own stage unavailable.
"""

from __future__ import annotations

import re
from typing import Any

import polars as pl

from .artifacts import trace_fingerprint
from .context import StageContext


def _events(ctx: StageContext, hta_compat: bool = False) -> pl.LazyFrame:
    """The run's events (read once, shared by the stages); HTA's view of them when asked
    (with the last ProfilerStep when ``include_last_step``)."""
    if hta_compat:
        return ctx.trace.hta_events(include_last_step=ctx.params["include_last_step"])
    return ctx.trace.cached_events()


def _bucket_ns(ctx: StageContext) -> int | None:
    ms = ctx.params["bucket_ms"]
    return int(round(ms * 1_000_000)) if ms and ms > 0 else None


# -- ingest / index / correlate -------------------------------------------------------------


def ingest(ctx: StageContext) -> dict[str, Any]:
    """Validate the trace and take its inventory: events per node, rank and kind; the overview.

    ``trace.json`` carries the trace files' fingerprint: the later stages read the trace itself,
    so their cache keys must change whenever its files do, and they hash this output.
    """
    from profui.analysis.summary import trace_overview

    t = ctx.trace
    inventory = (
        t.cached_events()
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
    info = {"overview": trace_overview(t, t.cached_events()), "fingerprint": trace_fingerprint(t.dir)}
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
    from profui.analysis.hta_variants import hta_kernel_launches
    from profui.analysis.launch import kernel_launches

    hta = ctx.params["hta_compat"]
    launches = (
        (hta_kernel_launches if hta else kernel_launches)(_events(ctx, hta))
        .sort("node", "rank", "ts")
        .collect()
    )
    return {"launches.parquet": launches}


# -- steps ----------------------------------------------------------------------------------


def _retag_steps(events: pl.LazyFrame, pattern: str) -> pl.LazyFrame:
    """Host annotations whose name matches ``pattern`` become the step markers (kind ``step``);
    the trace's own step markers become plain annotations."""
    try:
        re.compile(pattern)
    except re.error as exc:
        raise ValueError(f"step_annotation {pattern!r} is not a valid regular expression ({exc})") from None
    kind = pl.col("kind")
    return events.with_columns(
        pl.when((kind == "annotation") & pl.col("name").str.contains(pattern))
        .then(pl.lit("step"))
        .when(kind == "step")
        .then(pl.lit("annotation"))
        .otherwise(kind)
        .alias("kind")
    )


def steps(ctx: StageContext) -> dict[str, Any]:
    """Step windows mapped to the device, step-time distribution and the outlier steps."""
    from profui.analysis import steps as st

    ev = _events(ctx, ctx.params["hta_compat"])
    pattern = ctx.params["step_annotation"]
    if pattern:
        ev = _retag_steps(ev, pattern)
    found = st.step_windows(ev)
    windows = found.windows
    outliers = st.step_outliers(windows.lazy(), k=ctx.params["outlier_threshold"])
    return {
        "windows.parquet": windows,
        "stats.parquet": st.step_stats(windows.lazy()).collect(),
        "outliers.parquet": outliers.filter(pl.col("outlier")).collect(),
        "histogram.parquet": st.step_histogram(windows),
        "steps.json": {"has_markers": found.has_markers, "note": found.note, "step_annotation": pattern},
    }


# -- per-topic analyses ---------------------------------------------------------------------


def kernels(ctx: StageContext) -> dict[str, Any]:
    """Per-kernel statistics, top-N by time and by count, and the by-type breakdown."""
    from profui.analysis import hta_variants as hv
    from profui.analysis import kernels as k

    hta = ctx.params["hta_compat"]
    n = ctx.params["top_n"]
    ev = _events(ctx, hta)
    stats = (hv.hta_kernel_stats if hta else k.kernel_stats)(ev).collect()
    return {
        "stats.parquet": stats,
        "top_by_time.parquet": k.top_kernels(stats, n, by="total_ns").collect(),
        "top_by_count.parquet": k.top_kernels(stats, n, by="count").collect(),
        "types.parquet": (hv.hta_kernel_type_breakdown if hta else k.kernel_type_breakdown)(ev).collect(),
    }


def activity(ctx: StageContext) -> dict[str, Any]:
    """Kernel / memcpy / memset / sync / idle shares of device time."""
    from profui.analysis.activity import activity_shares, activity_total
    from profui.analysis.hta_variants import hta_activity_shares

    hta = ctx.params["hta_compat"]
    shares = (hta_activity_shares if hta else activity_shares)(_events(ctx, hta)).collect()
    return {"shares.parquet": shares, "total.parquet": activity_total(shares).collect()}


def memory(ctx: StageContext) -> dict[str, Any]:
    """Memory operations by direction: count, bytes, time, bandwidth; concurrent bandwidth over time
    (HTA's memory_bw_summary under ``hta_compat``)."""
    from profui.analysis.hta_variants import hta_memory_bw_summary
    from profui.analysis.memory import bandwidth_summary

    hta = ctx.params["hta_compat"]
    bandwidth = (hta_memory_bw_summary if hta else bandwidth_summary)(_events(ctx, hta)).collect()
    return {"ops.parquet": ctx.trace.memory_ops(), "bandwidth.parquet": bandwidth}


def precision(ctx: StageContext) -> dict[str, Any]:
    """Kernel time by numeric precision."""
    return {"shares.parquet": ctx.trace.precision()}


def utilization(ctx: StageContext) -> dict[str, Any]:
    """GPU busy/idle per device and in total; GPU, node and CPU utilization per time bucket."""
    from profui.analysis import busy as bz
    from profui.analysis import hta_variants as hv
    from profui.analysis import utilization as ut

    hta = ctx.params["hta_compat"]
    ev = _events(ctx, hta)
    bucket = _bucket_ns(ctx)
    busy = (hv.hta_gpu_busy if hta else bz.gpu_busy)(ev).collect()
    gpu = (hv.hta_gpu_utilization if hta else ut.gpu_utilization)(ev, bucket_ns=bucket).collect()
    return {
        "busy.parquet": busy,
        "total.parquet": bz.total_busy(busy).collect(),
        "gpu.parquet": gpu,
        "node.parquet": ut.node_utilization(gpu).collect(),
        "cpu.parquet": ut.cpu_utilization(
            ctx.trace.cached_events(), ctx.trace.metrics(), bucket_ns=bucket
        ).collect(),
        "cpu_active.parquet": ut.cpu_active(ctx.trace.cached_events(), ctx.trace.metrics()).collect(),
    }


def comm(ctx: StageContext) -> dict[str, Any]:
    """NCCL time by collective, its overlap with compute, per rank and per step, stragglers."""
    from profui.analysis import comm as c
    from profui.analysis.hta_variants import hta_comm_comp_overlap

    hta = ctx.params["hta_compat"]
    ev = _events(ctx, hta)
    windows = ctx.input("steps", "windows.parquet").lazy()
    per_step = c.comm_per_step(ev, windows).collect()
    return {
        "by_collective.parquet": c.comm_by_collective(ev).collect(),
        "overlap.parquet": (hta_comm_comp_overlap if hta else c.comm_comp_overlap)(ev).collect(),
        "per_rank.parquet": c.comm_per_rank(ev).collect(),
        "per_step.parquet": per_step,
        "stragglers.parquet": c.stragglers(per_step.lazy()).collect(),
    }


def annotations(ctx: StageContext) -> dict[str, Any]:
    """Custom annotations: names, HTA-style breakdown, and time per step per name.

    Time per step is measured on the exact events; under ``hta_compat`` the step windows are
    therefore taken from the exact events too (HTA has no per-step annotation analysis).
    """
    from profui.analysis import annotations as a
    from profui.analysis.hta_variants import hta_annotation_breakdown

    hta = ctx.params["hta_compat"]
    ev = ctx.trace.cached_events()
    if hta:
        from profui.analysis.steps import step_windows

        windows = step_windows(ev).windows.lazy()
    else:
        windows = ctx.input("steps", "windows.parquet").lazy()
    return {
        "names.parquet": a.annotation_names(ev).collect(),
        "breakdown.parquet": (hta_annotation_breakdown if hta else a.annotation_breakdown)(
            _events(ctx, hta)
        ).collect(),
        "per_step.parquet": a.annotation_per_step(ev, windows).collect(),
    }


def launch(ctx: StageContext) -> dict[str, Any]:
    """Launch latency distribution (per rank and overall), per kernel, outliers and histogram,
    from correlate's launch links; the kernels each ATen op launches and their delays."""
    from profui.analysis import launch as la
    from profui.analysis.hta_variants import hta_aten_op_kernels

    hta = ctx.params["hta_compat"]
    aten = (hta_aten_op_kernels if hta else la.aten_op_kernels)(_events(ctx, hta)).collect()

    launches = ctx.input("correlate", "launches.parquet").lazy()
    slow = int(round(ctx.params["slow_launch_us"] * 1000))
    late = int(round(ctx.params["late_start_us"] * 1000))
    return {
        "stats.parquet": la.launch_stats(
            launches, runtime_outlier_ns=slow, launch_delay_outlier_ns=late
        ).collect(),
        "overall.parquet": la.launch_stats(
            launches, by=(), runtime_outlier_ns=slow, launch_delay_outlier_ns=late
        ).collect(),
        "by_kernel.parquet": la.launch_stats_by_kernel(launches).collect(),
        "outliers.parquet": la.launch_outliers(launches, slow, late).collect(),
        "histogram.parquet": la.launch_histogram(launches).collect(),
        "aten_op_kernels.parquet": aten,
    }


def idle(ctx: StageContext) -> dict[str, Any]:
    """Why streams sat idle (per category, and summed), and how many launches queued on them."""
    from profui.analysis import hta_variants as hv
    from profui.analysis import idle as i

    hta = ctx.params["hta_compat"]
    ev = _events(ctx, hta)
    limit = ctx.params["max_queue_length"]
    breakdown = (hv.hta_idle_breakdown if hta else i.idle_breakdown)(ev).collect()
    queue = (hv.hta_queue_length if hta else i.queue_length)(ev).collect().lazy()
    blocked = (hv.hta_blocked_on_full_queue if hta else i.blocked_on_full_queue)(ev, limit, queue=queue)
    return {
        "breakdown.parquet": breakdown,
        "totals.parquet": i.totals_of_breakdown(breakdown).collect(),
        "queue.parquet": i.queue_stats(queue).collect(),
        "blocked_on_full_queue.parquet": blocked.collect(),
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

#: Tables the summary keeps only the first ``top_n`` rows of (as ``profui summary`` does).
_TOP_N_TABLES = {("launch", "by_kernel"), ("launch", "outliers")}


def summary(ctx: StageContext) -> dict[str, Any]:
    """The :class:`profui.analysis.summary.Summary` of the trace, assembled from the stages' outputs.

    Nothing is recomputed: every section is the corresponding stage's tables, so this stage is
    cheap and ``summary.json`` is what ``profui summary --json`` prints for the same parameters.
    """
    from profui.analysis.summary import SECTIONS, Summary
    from profui.analysis.takeaways import all_takeaways

    n = ctx.params["top_n"]
    hta = ctx.params["hta_compat"]
    sections: dict[str, dict[str, pl.DataFrame]] = {}
    for stage in SECTIONS:
        if stage not in ctx.input_dirs:
            continue
        tables = {}
        for file in ctx.input_files[stage]:
            if not file.endswith(".parquet"):
                continue
            name = file.removesuffix(".parquet")
            frame = ctx.input(stage, file)
            tables[name] = frame.head(n) if (stage, name) in _TOP_N_TABLES and n > 0 else frame
        sections[stage] = tables
    notes = []
    if "steps" in ctx.input_dirs:
        steps_info = ctx.input("steps", "steps.json")
        if not steps_info["has_markers"]:
            notes.append(steps_info["note"])
    if hta:
        last = "kept" if ctx.params["include_last_step"] else "dropped"
        notes.append(f"hta_compat: HTA's semantics (µs rounding, last ProfilerStep {last}, HTA's GPU events)")
    doc = Summary(
        trace=ctx.input("ingest", "trace.json")["overview"],
        params={"top_n": n, "bucket_ns": _bucket_ns(ctx), "hta_compat": hta},
        sections=sections,
        takeaways=all_takeaways(sections),
        notes=notes,
    )
    return {"summary.json": doc.to_json_dict()}
