"""Stage bodies: thin calls into the analysis modules, returning ``{output file: frame or dict}``.

Each body gets a :class:`~profui.analysis.pipeline.context.StageContext` and calls the analysis
modules, imported here directly (a broken analysis fails loudly at import, not as a stage that
quietly cannot run).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator, Mapping, Sequence
from typing import TYPE_CHECKING, Any, cast

import polars as pl

from profui.analysis import allocations as al
from profui.analysis import annotations as ann
from profui.analysis import busy as bz
from profui.analysis import collectives as coll
from profui.analysis import comm as cm
from profui.analysis import critical_path as cp
from profui.analysis import findings as fd
from profui.analysis import flops as fl
from profui.analysis import hta_variants as hv
from profui.analysis import idle as il
from profui.analysis import kernels as kn
from profui.analysis import launch as la
from profui.analysis import memory as mem
from profui.analysis import steps as stp
from profui.analysis import sync as sy
from profui.analysis import utilization as ut
from profui.analysis.activity import activity_shares, activity_total
from profui.analysis.devices import words_for
from profui.analysis.engine import ENGINE, SCAN_ENGINE
from profui.analysis.hta import hta_events
from profui.analysis.precision import kernel_precision, precision_shares
from profui.analysis.result_tables import OutputMissing, StageAccessors
from profui.analysis.schemas import TABLES
from profui.analysis.summary_document import SECTIONS, Summary, source_notes, trace_overview
from profui.analysis.takeaways import CHARTS, takeaway_for
from profui.capture.format import trace_fingerprint

from .conform import Derived
from .context import StageContext

if TYPE_CHECKING:
    from profui.analysis.trace import Trace


def _events(ctx: StageContext, hta_compat: bool = False) -> pl.LazyFrame:
    """The run's events (read once, shared by the stages); HTA's view of them when asked."""
    return stage_events(ctx.trace, ctx.params, hta_compat)


def stage_events(trace: Trace, params: Mapping[str, Any], hta_compat: bool = False) -> pl.LazyFrame:
    """``trace``'s events held in memory; with ``hta_compat``, HTA's view of them
    (:func:`profui.analysis.hta.hta_events`, with the last ProfilerStep when the parameter
    ``include_last_step`` says so)."""
    if hta_compat:
        return hta_events(
            trace.cached_events(), trace.hta_time_offsets(), include_last_step=params["include_last_step"]
        )
    return trace.cached_events()


def launch_limits(params: Mapping[str, Any]) -> tuple[int, int]:
    """The slow-launch and late-start outlier limits in ns from the run's parameters."""
    return int(round(params["slow_launch_us"] * 1000)), int(round(params["late_start_us"] * 1000))


def _bucket_ns(ctx: StageContext) -> int | None:
    return bucket_ns_of(ctx.params)


def bucket_ns_of(params: Mapping[str, Any]) -> int | None:
    """The utilization bucket in ns from ``bucket_ms`` (None: sized from the trace)."""
    ms = params["bucket_ms"]
    return int(round(ms * 1_000_000)) if ms and ms > 0 else None


# -- ingest / correlate ------- -------------------------------------------------------------


def ingest(ctx: StageContext) -> dict[str, Any]:
    """Validate the trace and take its inventory: events per node, rank and kind; the overview.

    ``trace.json`` carries the trace files' fingerprint: the later stages read the trace itself,
    so their cache keys must change whenever its files do, and they hash this output.
    """
    t = ctx.trace
    inventory = (
        t.cached_events()
        .group_by("node", "rank", "kind")
        .agg(
            pl.len().cast(pl.Int64).alias("events"),
            pl.col("ts").min().alias("first_ns"),
            (pl.col("ts") + pl.col("dur")).max().alias("end_ns"),
            pl.col("dur").sum().alias("dur_ns"),
        )
        .sort("node", "rank", pl.col("kind").cast(pl.String))  # by name, not by the Enum's order
        .collect(engine=SCAN_ENGINE)
    )
    info = {"overview": trace_overview(t, t.cached_events()), "fingerprint": trace_fingerprint(t.dir)}
    return {"inventory.parquet": inventory, "trace.json": info}


def correlate(ctx: StageContext) -> dict[str, Any]:
    """Join every launched device event, and every device sync event, to its host call by
    correlation id."""
    hta = ctx.params["hta_compat"]
    # sorted by node, rank, ts and correlation (join_launches' order)
    events = _events(ctx, hta)
    launches = (hv.hta_kernel_launches if hta else la.kernel_launches)(events)
    return {"launches.parquet": launches, "sync_links.parquet": la.sync_links(events)}


# -- steps ----------------------------------------------------------------------------------


def retag_steps(events: pl.LazyFrame, pattern: str) -> pl.LazyFrame:
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
    """Step windows mapped to the device per rank, their distribution, outliers, histogram and
    device-work breakdown; the job's step time (the slowest rank's) and its distribution."""
    ev = _events(ctx, ctx.params["hta_compat"])
    pattern = ctx.params["step_annotation"]
    if pattern:
        ev = retag_steps(ev, pattern)
    found = stp.step_windows(ev)
    windows = found.windows
    outliers = stp.step_outliers(windows.lazy(), k=ctx.params["outlier_threshold"])
    return {
        "windows.parquet": windows,
        "stats.parquet": stp.step_stats(windows.lazy()),
        "outliers.parquet": outliers.filter(pl.col("outlier")),
        "histogram.parquet": stp.step_histogram(windows),
        # HTA has no per-step breakdown: measured on the exact events under hta_compat too
        "breakdown.parquet": (
            stp.step_breakdown(ctx.trace.cached_events(), windows)
            if found.work is None or ctx.params["hta_compat"]
            else stp.breakdown_of(found.work, windows, ev)
        ),
        "job.parquet": Derived(lambda out: stp.job_steps(out["windows.parquet"])),
        "job_stats.parquet": Derived(lambda out: stp.step_stats(out["job.parquet"], by=())),
        "rank_ratios.parquet": Derived(lambda out: stp.rank_step_ratios(out["windows.parquet"])),
        "steps.json": {
            "has_markers": found.has_markers,
            "renumbered": found.renumbered,
            "note": found.note,
            "step_annotation": pattern,
        },
    }


# -- per-topic analyses ---------------------------------------------------------------------


def kernels(ctx: StageContext) -> dict[str, Any]:
    """Per-kernel statistics, top-N by time and by count, the by-type breakdown, the host ops
    and the runtime calls."""
    hta = ctx.params["hta_compat"]
    n = ctx.params["top_n"]
    ev = _events(ctx, hta)
    stats = (hv.hta_kernel_stats if hta else kn.kernel_stats)(ev)
    return {
        "stats.parquet": stats,
        "top_by_time.parquet": Derived(lambda out: kn.top_kernels(out["stats.parquet"], n, by="total_ns")),
        "top_by_count.parquet": Derived(lambda out: kn.top_kernels(out["stats.parquet"], n, by="count")),
        "types.parquet": (hv.hta_kernel_type_breakdown if hta else kn.kernel_type_breakdown)(ev),
        "ops.parquet": kn.cpu_op_stats(ev),
        "runtime.parquet": kn.runtime_call_stats(ev),
    }


def activity(ctx: StageContext) -> dict[str, Any]:
    """Kernel / memcpy / memset / sync / idle shares of device time."""
    hta = ctx.params["hta_compat"]
    shares = (hv.hta_activity_shares if hta else activity_shares)(_events(ctx, hta))
    return {
        "shares.parquet": shares,
        "total.parquet": Derived(lambda out: activity_total(out["shares.parquet"])),
    }


def memory(ctx: StageContext) -> dict[str, Any]:
    """Memory operations by direction: count, bytes, time, bandwidth; concurrent bandwidth over time
    (HTA's memory_bw_summary under ``hta_compat``)."""
    hta = ctx.params["hta_compat"]
    bandwidth = (hv.hta_memory_bw_summary if hta else mem.bandwidth_summary)(_events(ctx, hta))
    return {"ops.parquet": mem.memory_ops(_events(ctx)), "bandwidth.parquet": bandwidth}


def precision(ctx: StageContext) -> dict[str, Any]:
    """Kernel time by numeric precision, and every kernel's precision (for the flops stage)."""
    ev = _events(ctx)
    kernels = kernel_precision(ev).collect(engine=ENGINE)
    return {
        "shares.parquet": precision_shares(ev, kernels=kernels),
        "kernels.parquet": kernels.select(
            "node", "rank", "device", "stream", "name", "ts", "dur", "correlation", "precision"
        ),
    }


def utilization(ctx: StageContext) -> dict[str, Any]:
    """GPU busy/idle per device and in total; GPU, node and CPU utilization per time bucket (CPU
    over the whole sampled job where capture sampled it); the traced windows."""
    hta = ctx.params["hta_compat"]
    ev = _events(ctx, hta)
    bucket = _bucket_ns(ctx)
    if hta:
        busy, gpu = hv.hta_gpu_busy(ev), hv.hta_gpu_utilization(ev, bucket_ns=bucket)
    else:
        busy, gpu = ut.gpu_busy_and_utilization(ev, bucket_ns=bucket)
    # the host threads' busy union, read by the CPU utilization and CPU active tables: merged once
    threads = ut.host_thread_busy(ctx.trace.cached_events()).collect(engine=ENGINE)
    cpu = ut.cpu_utilization(ctx.trace.cached_events(), ctx.trace.metrics(), bucket_ns=bucket, busy=threads)
    return {
        "busy.parquet": busy,
        "total.parquet": Derived(lambda out: bz.total_busy(out["busy.parquet"])),
        "gpu.parquet": gpu,
        "node.parquet": Derived(lambda out: ut.node_utilization(out["gpu.parquet"])),
        "cpu.parquet": cpu,
        "gpu_over_time.parquet": Derived(
            lambda out: ut.util_over_time(out["gpu.parquet"], ("node", "rank", "device"))
        ),
        "cpu_over_time.parquet": Derived(lambda out: ut.util_over_time(out["cpu.parquet"], ("node",))),
        "cpu_active.parquet": ut.cpu_active(ctx.trace.cached_events(), ctx.trace.metrics(), busy=threads),
        "gpu_sampled.parquet": ut.sampled_gpu_utilization(
            ctx.trace.cached_events(), ctx.trace.metrics(), bucket_ns=bucket
        ),
        "traced.parquet": ut.traced_windows(
            ctx.trace.cached_events(), (ctx.trace.manifest.capture or {}).get("windows")
        ),
    }


def comm(ctx: StageContext) -> dict[str, Any]:
    """Communication by collective, its overlap with compute, per rank and per step, stragglers:
    device kernels, or a rank's host collectives where it has none (HTA's kernels only under
    ``hta_compat``)."""
    hta = ctx.params["hta_compat"]
    host = not hta
    ev = _events(ctx, hta)
    windows = ctx.input("steps", "windows.parquet").lazy()
    # the communication rows (few) found once, not once per table: finding them scans every op
    comm = cm.comm_ops(ev, host, keep=("tid", "device", "stream")).collect(engine=ENGINE)
    # and each rank's computation union once, for the overlap and the per-step tables
    computation = cm.rank_computation(ev, comm).collect(engine=ENGINE)
    per_step = cm.comm_per_step(ev, windows, host=host, comm=comm, computation=computation)
    return {
        "by_collective.parquet": cm.comm_by_collective(ev, host=host, comm=comm),
        "overlap.parquet": (
            hv.hta_comm_comp_overlap(ev)
            if hta
            else cm.comm_comp_overlap(ev, comm=comm, computation=computation)
        ),
        "per_rank.parquet": cm.comm_per_rank(ev, host=host, comm=comm),
        "per_step.parquet": per_step,
        "arrivals.parquet": coll.arrivals(ev, windows, comm),
        "stragglers.parquet": Derived(lambda out: cm.stragglers(out["arrivals.parquet"])),
    }


def annotation_tables(ctx: StageContext) -> dict[str, Any]:
    """Custom annotations: names, HTA-style breakdown, and time per step per name.

    Time per step is measured on the exact events; under ``hta_compat`` the step windows are
    therefore taken from the exact events too (HTA has no per-step annotation analysis).
    """
    hta = ctx.params["hta_compat"]
    ev = ctx.trace.cached_events()
    if hta:
        windows = stp.step_windows(ev).windows.lazy()
    else:
        windows = ctx.input("steps", "windows.parquet").lazy()
    per_step = ann.annotation_per_step(ev, windows)
    return {
        "names.parquet": ann.annotation_names(ev),
        "breakdown.parquet": (hv.hta_annotation_breakdown if hta else ann.annotation_breakdown)(
            _events(ctx, hta)
        ),
        "per_step.parquet": per_step,
        "step_means.parquet": Derived(lambda out: ann.annotation_step_means(out["per_step.parquet"])),
    }


def launch(ctx: StageContext) -> dict[str, Any]:
    """Launch latency distribution (per rank and overall), per kernel, outliers and histogram,
    from correlate's launch links; the kernels each ATen op launches and their delays."""
    hta = ctx.params["hta_compat"]
    launches = ctx.input("correlate", "launches.parquet").lazy()
    aten = hv.hta_aten_op_kernels(_events(ctx, hta)) if hta else la.aten_op_kernels(_events(ctx), launches)
    slow, late = launch_limits(ctx.params)
    return {
        "stats.parquet": la.launch_stats(launches, runtime_outlier_ns=slow, launch_delay_outlier_ns=late),
        "overall.parquet": la.launch_stats(
            launches, by=(), runtime_outlier_ns=slow, launch_delay_outlier_ns=late
        ),
        "by_kernel.parquet": la.launch_stats_by_kernel(launches),
        "outliers.parquet": la.launch_outliers(launches, slow, late),
        "histogram.parquet": la.launch_histogram(launches),
        "aten_op_kernels.parquet": aten,
    }


def idle(ctx: StageContext) -> dict[str, Any]:
    """Why streams sat idle (per category, and summed), how many launches queued on them, and how
    long the host was blocked on a full launch queue."""
    hta = ctx.params["hta_compat"]
    ev = _events(ctx, hta)
    limit = ctx.params["max_queue_length"]
    if hta:
        queue, breakdown = hv.hta_queue_length(ev), hv.hta_idle_breakdown(ev)
    else:
        # the device work's launch calls as the correlate stage found them, not found again
        launches = ctx.input("correlate", "launches.parquet")
        queue, breakdown = il.queue_length(ev, launches), il.idle_breakdown(ev, launches=launches)
    # the queue series feeds two tables: computed once, here
    queue = queue.collect(engine=ENGINE).lazy()
    if hta:
        blocked = hv.hta_blocked_on_full_queue(ev, limit, queue=queue)
    else:
        blocked = il.blocked_on_full_queue(
            ev, limit, queue=queue, inventory=ctx.input("ingest", "inventory.parquet")
        )
    return {
        "breakdown.parquet": breakdown,
        "totals.parquet": Derived(lambda out: il.totals_of_breakdown(out["breakdown.parquet"])),
        "queue.parquet": il.queue_stats(queue),
        "blocked_on_full_queue.parquet": blocked,
    }


def sync(ctx: StageContext) -> dict[str, Any]:
    """Host time blocked in synchronize calls, and device sync events."""
    ev = _events(ctx)
    return {
        "host.parquet": sy.sync_summary(ev),
        "totals.parquet": sy.sync_totals(ev),
        "device.parquet": sy.gpu_sync_summary(ev),
    }


def flops(ctx: StageContext) -> dict[str, Any]:
    """FLOPs per op from recorded shapes, joined to the kernels they launched; achieved TFLOP/s
    and MFU per step (the peak from ``peak_tflops`` or the datasheet table)."""
    r = fl.analyse(
        ctx.trace.cached_events(),
        ctx.input("steps", "windows.parquet"),
        ctx.trace.manifest.gpus,
        kernels=ctx.input("precision", "kernels.parquet"),
        peak_tflops=ctx.params["peak_tflops"],
        model_flops=ctx.params["model_flops"],
    )
    return {
        "ops.parquet": r.ops,
        "op_types.parquet": r.op_types,
        "kernels.parquet": r.kernels,
        "steps.parquet": r.steps,
        "totals.parquet": r.totals,
    }


def allocations(ctx: StageContext) -> dict[str, Any]:
    """Memory over time from the allocator's ``[memory]`` events: the whole series per device,
    its peak and where it happened, per step, the allocations live at the peak, the series in
    time buckets, the out-of-memory events; ``allocations.json`` says how many events were read
    (and plainly when there are none)."""
    ev = ctx.trace.cached_events()
    windows = ctx.input("steps", "windows.parquet")
    if not ctx.input("steps", "steps.json")["has_markers"]:  # one window per rank, not steps
        windows = windows.head(0)
    rows = al.memory_rows(ev).collect(engine=ENGINE).lazy()
    counts = al.memory_counts(ev, rows, ctx.trace.manifest.source)
    if not counts["events"]:  # recorded without profile_memory: every table is empty
        empty = {file: decl.empty() for (stage, file), decl in TABLES.items() if stage == "allocations"}
        return {**empty, "allocations.json": counts}
    mem = al.memory_events(ev, rows).collect(engine=ENGINE)
    peaks = al.device_peaks(mem, ev, windows)
    return {
        "series.parquet": mem,
        "devices.parquet": peaks,
        "per_step.parquet": al.memory_per_step(mem, windows),
        "live_at_peak.parquet": al.live_at_peak(mem, peaks, ev),
        "over_time.parquet": al.memory_over_time(mem),
        "oom.parquet": al.oom_events(mem, ev),
        "allocations.json": counts,
    }


# -- summary --------------------------------------------------------------------------------

# -- critical path / findings ---------------------------------------------------------------


def critical_path(ctx: StageContext) -> dict[str, Any]:
    """Each step's critical path and its what-if replays (:mod:`profui.analysis.critical_path`)."""
    hta = ctx.params["hta_compat"]
    return cp.stage(
        _events(ctx, hta),
        ctx.input("steps", "windows.parquet"),
        ctx.input("correlate", "launches.parquet"),
        hta,
        ctx.input("comm", "arrivals.parquet"),
        ctx.input("comm", "stragglers.parquet"),
    )


def findings(ctx: StageContext) -> dict[str, Any]:
    """What to change, ranked by recoverable time per step (:mod:`profui.analysis.findings`)."""
    inputs = {stage: {f: ctx.input(stage, f) for f in ctx.input_files[stage]} for stage in ctx.input_files}
    return fd.stage(inputs, ctx.input("ingest", "trace.json")["overview"], ctx.trace.manifest.gpus)


#: Tables the summary keeps only the first ``top_n`` rows of (as ``profui summary`` does).
#: The tables the summary cuts to its ``top_n`` rows (the stage outputs keep them whole).
TOP_N_TABLES = {("launch", "by_kernel"), ("launch", "outliers"), ("kernels", "ops"), ("flops", "kernels")}
#: Tables with a row per event (a later stage's input, or detail ``t.result(stage)`` has):
#: in the stage's outputs, not in the summary.
DETAIL_TABLES = {
    ("precision", "kernels"),
    ("allocations", "series"),
    ("critical_path", "events"),
    ("critical_path", "what_if"),
}


class _Files(Mapping[str, Any]):
    """One stage's outputs ``get(stage, file)`` of the files ``names``, each read once when
    first asked for."""

    def __init__(self, stage: str, names: Sequence[str], get: Callable[[str, str], Any]) -> None:
        self._stage, self._names, self._get = stage, tuple(names), get
        self._got: dict[str, Any] = {}

    def __getitem__(self, file: str) -> Any:
        if file not in self._names:
            raise KeyError(file)
        if file not in self._got:
            self._got[file] = self._get(self._stage, file)
        return self._got[file]

    def __iter__(self) -> Iterator[str]:
        return iter(self._names)

    def __len__(self) -> int:
        return len(self._names)


class _Given(StageAccessors):
    """The outputs ``get(stage, file)`` of the stages and files ``files`` holds, read by the
    typed accessors (each file read once, when first asked for)."""

    def __init__(self, files: Mapping[str, Sequence[str]], get: Callable[[str, str], Any]) -> None:
        self.outputs = {stage: _Files(stage, names, get) for stage, names in files.items()}


def timeline(ctx: StageContext) -> dict[str, Any]:
    """The timeline's index (:func:`profui.analysis.lod.write_index`), written in the run's
    scratch folder, from the steps stage's windows and the correlate stage's links."""
    # here, not at the top: the index's writer loads pyarrow's compute and Parquet modules,
    # which no other stage, and so no `profui summary`, needs
    from profui.analysis import lod

    given = lod.TimelineInputs(
        windows=ctx.input("steps", "windows.parquet"),
        has_markers=bool(ctx.input("steps", "steps.json")["has_markers"]),
        # each rank's links are read when that rank is indexed (scans of a recorded run's files)
        launches=ctx.input_scan("correlate", "launches.parquet").select(lod.LINK_COLUMNS),
        syncs=ctx.input_scan("correlate", "sync_links.parquet").select(lod.SYNC_LINK_COLUMNS),
    )
    return lod.write_index(ctx.trace.dir, given, ctx.scratch, ctx.progress)


def summary_doc(
    files: Mapping[str, Sequence[str]],
    get: Callable[[str, str], Any],
    overview: dict[str, Any],
    manifest: Any,
    params: Mapping[str, Any],
) -> Summary:
    """The :class:`profui.analysis.summary.Summary` of the outputs ``get(stage, file)`` of the
    stages and files ``files`` holds: the one assembly of a summary, whether the outputs are a
    whole-trace run's or a job's reduced from its ranks (:mod:`profui.analysis.distributed`).

    Sections in :data:`SECTIONS` order, each stage's tables in its declared order (detail tables
    out, the top-N tables cut to ``top_n``); the takeaways whose tables are all there; the notes
    of the source, the memory events and the step markers.
    """
    n = params["top_n"]
    hta = params["hta_compat"]
    sections: dict[str, dict[str, pl.DataFrame]] = {}
    for stage in SECTIONS:
        if stage not in files:
            continue
        tables = {}
        for file in files[stage]:
            if not file.endswith(".parquet"):
                continue
            name = file.removesuffix(".parquet")
            if (stage, name) in DETAIL_TABLES:
                continue
            frame = get(stage, file)
            tables[name] = frame.head(n) if (stage, name) in TOP_N_TABLES and n > 0 else frame
        sections[stage] = tables
    given = _Given(files, get)
    words = words_for(overview)
    takeaways = {}
    for chart in CHARTS:
        try:
            text = takeaway_for(chart, given, words)
        except OutputMissing:  # a table it reads is not among the outputs: no takeaway
            continue
        if text:
            takeaways[chart] = text
    notes = source_notes(manifest)
    try:
        mem_note = given.allocations.allocations["note"]
    except OutputMissing:
        mem_note = None
    if mem_note:
        notes.append(mem_note)
    try:
        steps_info = given.steps.steps
    except OutputMissing:
        pass
    else:
        if not steps_info["has_markers"] or steps_info["renumbered"]:
            notes.append(steps_info["note"])
    if hta:
        last = "kept" if params["include_last_step"] else "dropped"
        notes.append(f"hta_compat: HTA's semantics (µs rounding, last ProfilerStep {last}, HTA's GPU events)")
    return Summary(
        trace=overview,
        params={"top_n": n, "bucket_ns": bucket_ns_of(params), "hta_compat": hta},
        sections=sections,
        takeaways=takeaways,
        notes=notes,
    )


def summary(ctx: StageContext) -> dict[str, Any]:
    """The :class:`profui.analysis.summary.Summary` of the trace, assembled from the stages' outputs
    (:func:`summary_doc`), and the takeaways (also alone in ``takeaways.json``, for the dashboard).

    Nothing is recomputed: every section is the corresponding stage's tables and each takeaway is
    computed here, once, from the tables it reads, so ``summary.json`` is what ``profui summary
    --json`` prints for the same parameters and ``takeaways.json`` what the dashboard shows.
    """
    files = {stage: ctx.input_files[stage] for stage in ctx.input_files if ctx.has_input(stage)}
    overview = cast("dict[str, Any]", _Given(files, ctx.input).ingest.trace["overview"])
    doc = summary_doc(files, ctx.input, overview, ctx.trace.manifest, ctx.params)
    return {"summary.json": doc, "takeaways.json": doc.takeaways}
