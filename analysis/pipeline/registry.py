"""THE declaration of the analysis pipeline: every parameter and every stage, in one place.

    TRACE ── ingest ─┬─ correlate ── launch, idle ─────────────────┐
                     ├─ steps ─┬─ comm, annotations, allocations ──┤
                     │         └───────────────────────────────────┤
                     ├─ kernels, activity, memory, precision,      ├─ summary
                     │  utilization, sync, flops (+ steps) ────────┤
                     ├─ critical_path (steps, correlate, comm) ────┤
                     │    └─ findings (+ comm, allocations,        │
                     │       precision, flops, memory) ────────────┤
                     └─────────────────────────────────────────────┘

(summary reads every stage but correlate; ``profui analyze TRACE --plan`` prints it.) The
timeline index (steps, correlate) is a stage too, run on demand: when the timeline is drawn or
named (``--stages timeline``), not by every run.
Inputs are real data dependencies: a stage is recomputed when its code, its parameters or one
of its inputs' outputs change, and only then. Most stages also read the trace itself through
the run's shared :class:`~profui.analysis.trace.Trace`; ingest's output carries the trace files'
fingerprint, so their keys follow the trace. Stage bodies live in :mod:`.bodies`.
"""

from __future__ import annotations

from profui.analysis.summary_document import SECTIONS
from profui.analysis.top_n import TOP_N

from . import bodies as b
from .dag import TRACE, Registry, Stage
from .params import Param

A = "profui.analysis."

PARAMS: tuple[Param, ...] = (
    Param(
        "top_n",
        "int",
        TOP_N,
        "kernels in the top-N tables (by time and by count)",
        minimum=1,
        maximum=1_000_000,
    ),
    Param(
        "bucket_ms",
        "float",
        0.0,
        "utilization time bucket in ms (0: automatic, ~200 buckets)",
        minimum=0,
        maximum=1e9,  # 11.6 days; its ns must fit an int64
    ),
    Param(
        "hta_compat",
        "bool",
        False,
        "reproduce Holistic Trace Analysis' numbers (µs rounding, last step dropped)",
    ),
    Param(
        "include_last_step",
        "bool",
        False,
        "with hta_compat: keep the last ProfilerStep (HTA's include_last_profiler_step=True); "
        "no effect without hta_compat",
    ),
    Param(
        "max_queue_length",
        "int",
        1024,
        "launch queue capacity per stream for the time blocked on a full queue (CUDA, HTA: 1024)",
        minimum=1,
    ),
    Param(
        "step_annotation",
        "str",
        "",
        "regex of the annotation names that mark steps (empty: ProfilerStep#N / step markers)",
    ),
    Param(
        "outlier_threshold",
        "float",
        1.5,
        "step-time outliers: IQR multiplier beyond the quartiles",
        minimum=0,
    ),
    Param(
        "slow_launch_us",
        "float",
        50.0,
        "launch calls longer than this are outliers (HTA: 50 µs)",
        minimum=0,
        maximum=1e9,  # 1,000 s; its ns must fit an int64
    ),
    Param(
        "late_start_us",
        "float",
        100.0,
        "launches starting later than this after the call are outliers (HTA: 100 µs)",
        minimum=0,
        maximum=1e9,
    ),
    Param(
        "peak_tflops",
        "float",
        0.0,
        "peak TFLOP/s of one device for MFU (0: the datasheet table by GPU name and precision; "
        "else 0.001, a slow CPU core, to 100,000, past any device built)",
        minimum=0,
        least_nonzero=1e-3,
        maximum=1e5,
    ),
    Param(
        "model_flops",
        "float",
        0.0,
        "the model's FLOPs per step on each rank: MFU from these instead of the counted FLOPs (0: not given)",
        minimum=0,
        least_nonzero=1,
        maximum=1e24,
    ),
)

#: ``cost``: each body's work relative to the others' (about its milliseconds on the largest
#: shared CUDA trace, df_index, over ten), for the in-memory store's order of ready stages.
STAGES: tuple[Stage, ...] = (
    Stage(
        "ingest",
        (TRACE,),
        (),
        ("inventory.parquet", "trace.json"),
        b.ingest,
        "validate the trace; events per node, rank and kind; overview",
        modules=(A + "trace", A + "summary"),
        cost=3,
    ),
    Stage(
        "correlate",
        ("ingest",),
        ("hta_compat", "include_last_step"),
        ("launches.parquet", "sync_links.parquet"),
        b.correlate,
        "launch call -> device event links by correlation id (and host call -> device sync)",
        modules=(A + "launch", A + "hta_variants"),
        cost=1.5,
    ),
    Stage(
        "steps",
        ("ingest",),
        ("step_annotation", "hta_compat", "include_last_step", "outlier_threshold"),
        (
            "windows.parquet",
            "stats.parquet",
            "outliers.parquet",
            "histogram.parquet",
            "breakdown.parquet",
            "job.parquet",
            "job_stats.parquet",
            "rank_ratios.parquet",
            "steps.json",
        ),
        b.steps,
        "step windows on the device per rank, distribution, outliers, breakdown; the job's steps",
        modules=(A + "steps", A + "hta"),
        cost=3,
    ),
    Stage(
        "kernels",
        ("ingest",),
        ("top_n", "hta_compat", "include_last_step"),
        (
            "stats.parquet",
            "top_by_time.parquet",
            "top_by_count.parquet",
            "types.parquet",
            "ops.parquet",
            "runtime.parquet",
        ),
        b.kernels,
        "per-kernel statistics, top-N by time and count, by-type breakdown, host op and runtime call statistics",
        modules=(A + "kernels", A + "hta_variants"),
        cost=1.5,
    ),
    Stage(
        "activity",
        ("ingest",),
        ("hta_compat", "include_last_step"),
        ("shares.parquet", "total.parquet"),
        b.activity,
        "kernel / memcpy / memset / sync / idle shares",
        modules=(A + "activity", A + "hta_variants"),
        cost=1.5,
    ),
    Stage(
        "memory",
        ("ingest",),
        ("hta_compat", "include_last_step"),
        ("ops.parquet", "bandwidth.parquet"),
        b.memory,
        "memcpy / memset by direction: bytes, time, bandwidth; concurrent bandwidth over time",
        modules=(A + "memory", A + "hta_variants"),
        cost=1,
    ),
    Stage(
        "precision",
        ("ingest",),
        (),
        ("shares.parquet", "kernels.parquet"),
        b.precision,
        "kernel time by numeric precision",
        modules=(A + "precision",),
        cost=1.5,
    ),
    Stage(
        "utilization",
        ("ingest",),
        ("bucket_ms", "hta_compat", "include_last_step"),
        (
            "busy.parquet",
            "total.parquet",
            "gpu.parquet",
            "node.parquet",
            "cpu.parquet",
            "cpu_active.parquet",
            "gpu_over_time.parquet",
            "cpu_over_time.parquet",
            "traced.parquet",
            "gpu_sampled.parquet",
        ),
        b.utilization,
        "GPU busy/idle; GPU and CPU utilization over time",
        modules=(A + "busy", A + "utilization", A + "hta_variants"),
        cost=5,
    ),
    Stage(
        "comm",
        ("ingest", "steps"),
        ("hta_compat", "include_last_step"),
        (
            "by_collective.parquet",
            "overlap.parquet",
            "per_rank.parquet",
            "per_step.parquet",
            "arrivals.parquet",
            "stragglers.parquet",
        ),
        b.comm,
        "communication (NCCL kernels, else host collectives) by collective, overlap with compute, per rank and step, stragglers",
        modules=(A + "comm", A + "collectives", A + "hta_variants"),
        cost=6,
    ),
    Stage(
        "annotations",
        ("ingest", "steps"),
        ("hta_compat", "include_last_step"),
        ("names.parquet", "breakdown.parquet", "per_step.parquet", "step_means.parquet"),
        b.annotation_tables,
        "custom annotations: breakdown and time per step",
        modules=(A + "annotations", A + "hta_variants"),
        cost=1,
    ),
    Stage(
        "launch",
        ("correlate",),
        ("slow_launch_us", "late_start_us", "hta_compat", "include_last_step"),
        (
            "stats.parquet",
            "overall.parquet",
            "by_kernel.parquet",
            "outliers.parquet",
            "histogram.parquet",
            "aten_op_kernels.parquet",
        ),
        b.launch,
        "launch latency distribution, per kernel, outliers; kernels per ATen op",
        modules=(A + "launch", A + "hta_variants"),
        cost=3.5,
    ),
    Stage(
        "idle",
        ("ingest", "correlate"),
        ("hta_compat", "include_last_step", "max_queue_length"),
        ("breakdown.parquet", "totals.parquet", "queue.parquet", "blocked_on_full_queue.parquet"),
        b.idle,
        "idle time by cause per stream; launch queue length; time blocked on a full queue",
        modules=(A + "idle", A + "launch", A + "hta_variants"),
        cost=2,
    ),
    Stage(
        "sync",
        ("ingest",),
        (),
        ("host.parquet", "totals.parquet", "device.parquet"),
        b.sync,
        "host time blocked in synchronize calls; device sync events",
        modules=(A + "sync",),
        cost=1,
    ),
    Stage(
        "flops",
        ("ingest", "steps", "precision"),
        ("peak_tflops", "model_flops"),
        ("ops.parquet", "op_types.parquet", "kernels.parquet", "steps.parquet", "totals.parquet"),
        b.flops,
        "FLOPs per op from shapes, joined to kernels; achieved TFLOP/s and MFU per step",
        modules=(A + "flops", A + "peaks", A + "precision"),
        cost=3,
    ),
    Stage(
        "allocations",
        ("ingest", "steps"),
        (),
        (
            "series.parquet",
            "devices.parquet",
            "per_step.parquet",
            "live_at_peak.parquet",
            "over_time.parquet",
            "oom.parquet",
            "allocations.json",
        ),
        b.allocations,
        "allocated / reserved memory over time per device ([memory] events): peak and where, per step, live at the peak, OOM",
        modules=(A + "allocations",),
        cost=6.5,
    ),
    Stage(
        "critical_path",
        # comm: the straggler change removes the lateness its arrivals table measures
        ("ingest", "steps", "correlate", "comm"),
        ("hta_compat", "include_last_step"),
        ("steps.parquet", "by_kind.parquet", "events.parquet", "what_if.parquet"),
        b.critical_path,
        "each step's critical path across threads, streams and ranks: length, time by kind, what-if replays",
        modules=(A + "critical_path",),
        cost=3,
    ),
    Stage(
        "findings",
        # what the rules read: the path and its what-if replays, the late rank, memory per step,
        # precision shares and the GPU the flops stage found a peak for, the copies' bandwidth,
        # whether the trace has step markers (the findings' times are per step or per trace)
        ("ingest", "steps", "critical_path", "comm", "allocations", "precision", "flops", "memory"),
        ("hta_compat", "include_last_step"),
        ("findings.parquet", "evidence.parquet"),
        b.findings,
        "what to change, ranked by the time it would save per step",
        modules=(A + "findings", A + "findings_path", A + "findings_risks"),
        cost=0.5,
    ),
    Stage(
        "timeline",
        ("ingest", "steps", "correlate"),
        # not read by the body: they change the steps and links it draws (its inputs'), so a
        # reader asking for a timeline with given parameters is served one drawn with them
        ("hta_compat", "include_last_step", "step_annotation"),
        (
            "index.json",
            "tiles.parquet",
            "memory.parquet",
            "row_start.npy",
            "t.bin",
            "end.bin",
            "end_max.bin",
            "kind.bin",
            "name.bin",
            "link.bin",
            "src.bin",
        ),
        b.timeline,
        "the timeline's level-of-detail index: lanes, rows, steps, launch links, density tiles (on demand)",
        modules=(A + "lod",),
        cost=4,
        files=True,
        on_demand=True,
    ),
    Stage(
        "summary",
        ("ingest", *SECTIONS),
        ("top_n", "bucket_ms", "hta_compat", "include_last_step"),
        ("summary.json", "takeaways.json"),
        b.summary,
        "the Summary (profui summary --json) assembled from the stages' outputs",
        modules=(A + "summary", A + "takeaways", A + "formatting"),
        cost=0.5,
    ),
)

#: The pipeline ``profui analyze`` runs.
REGISTRY = Registry(STAGES, PARAMS)
