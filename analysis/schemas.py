"""The typed result: the declared schema of every table a stage writes.

One convention for the whole project, checked when a stage's output is written (to disk or to
the in-memory store) by :func:`conform`:

- durations and instants are integer nanoseconds; their columns end in ``_ns`` (statistics of
  durations, such as means and percentiles, are float ns and end in ``_ns`` too). Instants are
  ns since the Unix epoch.
- shares are fractions 0–1 (``share``, ``*_share``, ``util``, ``ratio``); percentages exist only
  at formatting time (:mod:`profui.analysis.formatting`).
- bytes are integers, bandwidths float GB/s (``*_gbps``).
- FLOPs are float64 counts (``flops``; exact to 2**53 per op), rates float TFLOP/s (``tflops``,
  ``*_tflops``), MFU a 0–1 fraction (``mfu``).

Consumers (takeaways, the text summary, the TUI, the notebook) name columns that are declared
here and nowhere else; ``tests/test_schema_references.py`` walks their references.
A column holds null only where it is declared :attr:`Column.nullable` (:func:`conform`).
"""

from __future__ import annotations

import os
import warnings
from dataclasses import dataclass

import polars as pl

#: Units a column may declare.
UNITS = (
    "ns",
    "epoch_ns",
    "fraction",
    "count",
    "bytes",
    "GB/s",
    "id",
    "text",
    "flag",
    "ns_float",
    "FLOP",
    "TFLOP/s",
    "FLOP/byte",
    "varies",  # the row's own ``unit`` column names it
)


@dataclass(frozen=True)
class Column:
    """One declared column: name, Polars dtype, unit (one of :data:`UNITS`) and meaning."""

    name: str
    dtype: pl.DataType
    unit: str
    doc: str = ""
    #: Present only in a variant of the table (e.g. per rank under ``hta_compat``).
    optional: bool = False
    #: May hold null (a float column also NaN or an infinity, which JSON prints as null): only
    #: where declared, so a client of the JSON can rely on every other value being there.
    nullable: bool = False
    #: An optional column's variant: present exactly where the run's ``hta_compat`` is this.
    hta_compat: bool | None = None

    def __post_init__(self) -> None:
        if self.unit not in UNITS:
            raise ValueError(f"column {self.name}: unit {self.unit!r} is not one of {UNITS}")
        if self.optional != (self.hta_compat is not None):
            raise ValueError(
                f"column {self.name}: an optional column names its hta_compat variant, no other does"
            )


@dataclass(frozen=True)
class Table:
    """The declared schema of one stage output table."""

    columns: tuple[Column, ...]
    doc: str = ""

    @property
    def names(self) -> tuple[str, ...]:
        """Column names in declaration order."""
        return tuple(c.name for c in self.columns)

    @property
    def nullable(self) -> tuple[str, ...]:
        """The columns that may hold null, in declaration order."""
        return tuple(c.name for c in self.columns if c.nullable)

    def empty(self, hta_compat: bool | None = None) -> pl.DataFrame:
        """The table without rows: its columns and their types; the optional ones left out, or
        with ``hta_compat`` those of that variant kept (:attr:`Column.hta_compat`)."""
        keep = [
            c
            for c in self.columns
            if not c.optional or (hta_compat is not None and c.hta_compat is hta_compat)
        ]
        return pl.DataFrame(schema={c.name: c.dtype for c in keep})


class SchemaError(ValueError):
    """A stage produced a table that does not match its declared schema."""


class SchemaWarning(UserWarning):
    """A stage wrote a null where its table's schema declares none, on a user's run: a profui bug
    that must not cost the user their analysis (under :data:`STRICT_ENV` it is a SchemaError)."""


#: Set (the test suite sets it) to refuse undeclared nulls instead of warning: the columns'
#: nullability was measured on every shared trace, and a trace unlike them must still be analysed.
STRICT_ENV = "PROFUI_STRICT_SCHEMAS"


I64, I32, U32, F64, STR, BOOL = pl.Int64(), pl.Int32(), pl.UInt32(), pl.Float64(), pl.String(), pl.Boolean()


def _c(
    name: str,
    dtype: pl.DataType,
    unit: str,
    doc: str = "",
    optional: bool = False,
    nullable: bool = False,
    hta_compat: bool | None = None,
) -> Column:
    return Column(name, dtype, unit, doc, optional, nullable, hta_compat)


def _n(
    name: str,
    dtype: pl.DataType,
    unit: str,
    doc: str = "",
    optional: bool = False,
    hta_compat: bool | None = None,
) -> Column:
    """A nullable column (:attr:`Column.nullable`); its doc says when it is null where that is
    not plain from the name."""
    return Column(name, dtype, unit, doc, optional, nullable=True, hta_compat=hta_compat)


NODE = _c("node", STR, "id", "host name of the trace's node")
RANK = _c("rank", I64, "id", "distributed rank")
DEVICE = _c("device", I32, "id", "GPU index on its node")
STREAM = _c("stream", I32, "id", "device stream")
#: Per GPU by default; HTA's numbers (``hta_compat``) are per rank.
DEVICE_EXACT = Column(
    "device", I32, "id", "GPU index (absent under hta_compat: per rank)", optional=True, hta_compat=False
)
WHERE_GPU = (NODE, RANK, DEVICE)
WHERE_STREAM = (NODE, RANK, DEVICE, STREAM)


def _describe(suffix: str, int_unit: str, float_unit: str, empty: str = "") -> tuple[Column, ...]:
    """The pandas-style columns of :func:`profui.analysis.stats.describe` (after a ``count``);
    with ``empty`` (when a row can describe no values, e.g. "null without gaps") the statistics
    are nullable and ``empty`` their doc."""
    col = _n if empty else _c
    return (
        _c("count", I64, "count"),
        col(f"mean{suffix}", F64, float_unit, empty),
        col(f"std{suffix}", F64, float_unit, empty),
        col(f"min{suffix}", I64, int_unit, empty),
        col(f"p25{suffix}", F64, float_unit, empty),
        col(f"p50{suffix}", F64, float_unit, empty),
        col(f"p75{suffix}", F64, float_unit, empty),
        col(f"max{suffix}", I64, int_unit, empty),
    )


def _kernel_stats(top: bool) -> Table:
    """Per-kernel-name statistics; ``top``: a top-N table, whose ``(other)`` row folds the rest of
    the kernels (of every rank) and so has no rank, spread or percentiles."""
    where = "under hta_compat only: HTA's per-rank table"
    folded = _n if top else _c
    other = "; null on the (other) row" if top else ""
    return Table(
        (
            folded("node", STR, "id", where + other, optional=True, hta_compat=True),
            folded("rank", I64, "id", where + other, optional=True, hta_compat=True),
            _c("name", STR, "text", "kernel name"),
            _c("kernel_type", STR, "text", "computation / communication / memory"),
            _c("count", U32, "count", "launches"),
            _c("total_ns", I64, "ns"),
            _c("mean_ns", F64, "ns_float"),
            _c("min_ns", I64, "ns"),
            _c("max_ns", I64, "ns"),
            folded("std_ns", F64, "ns_float", other.lstrip("; ")),
            folded("p50_ns", F64, "ns_float", other.lstrip("; ")),
            folded("p95_ns", F64, "ns_float", other.lstrip("; ")),
            _c("share", F64, "fraction", "of all kernel time"),
        ),
        "per-kernel-name statistics" + (", the first N and the (other) row" if top else ""),
    )


_KERNEL_STATS = _kernel_stats(top=False)
_KERNEL_TOP = _kernel_stats(top=True)

_STEP_WINDOW_COLUMNS = (
    NODE,
    RANK,
    _c("step", I64, "count", "step number"),
    _c("name", STR, "text", "step marker name"),
    _c("cpu_start_ns", I64, "epoch_ns"),
    _c("cpu_end_ns", I64, "epoch_ns"),
    _c("cpu_dur_ns", I64, "ns", "host time of the step"),
    _c("start_ns", I64, "epoch_ns", "first device event of the step"),
    _c("end_ns", I64, "epoch_ns", "last device event end of the step"),
    _c("dur_ns", I64, "ns", "device time of the step"),
    _c("n_launches", I64, "count", "launch calls started in the step whose kernel, copy or memset is traced"),
    _c("n_device_events", I64, "count"),
    _c("mapped", BOOL, "flag", "the step's launches reached the device"),
)

_LAUNCH_LINKS = (
    *WHERE_STREAM,
    _c("correlation", I64, "id"),
    _c("kind", STR, "text"),
    _c("name", STR, "text", "device event name"),
    _c("ts", I64, "epoch_ns", "device event start"),
    _c("dur", I64, "ns", "device event duration"),
    _c("launch_name", STR, "text"),
    _c("launch_tid", I64, "id"),
    _c("launch_ts", I64, "epoch_ns"),
    _c("launch_dur", I64, "ns"),
    _n("launch_delay", I64, "ns", "launch call end -> device start (HTA's; null: a graph's later events)"),
    _n("launch_latency", I64, "ns", "launch call start -> device start (null: a graph's later events)"),
    _c("launch_bound", BOOL, "flag", "device work shorter than its launch call"),
)


def _launch_stats(*keys: Column) -> Table:
    """Per rank (``keys``) a row for each rank with launches; without keys the trace's one row,
    whose statistics are null when nothing was launched."""
    col = _c if keys else _n
    none = "" if keys else "null without launches"
    cols: list[Column] = [*keys, _c("launches", U32, "count")]
    for p in ("cpu", "gpu", "delay", "latency"):
        cols += [
            _c(f"{p}_sum_ns", I64, "ns"),
            col(f"{p}_mean_ns", F64, "ns_float", none),
            col(f"{p}_min_ns", I64, "ns", none),
            col(f"{p}_max_ns", I64, "ns", none),
            col(f"{p}_p50_ns", F64, "ns_float", none),
            col(f"{p}_p90_ns", F64, "ns_float", none),
            col(f"{p}_p99_ns", F64, "ns_float", none),
        ]
    cols += [
        _c("launch_bound", I64, "count"),
        _c("runtime_outliers", I64, "count"),
        _c("delay_outliers", I64, "count"),
    ]
    return Table(tuple(cols), "launch call (cpu), device (gpu), delay and latency statistics, ns")


_BUCKET = (
    _c("bucket", I64, "count", "bucket index"),
    _c("bucket_start_ns", I64, "epoch_ns"),
    _c("bucket_len_ns", I64, "ns"),
)

_OVER_TIME = (
    _c("buckets", I64, "count"),
    _c("bucket_len_ns", I64, "ns"),
    _c("mean", F64, "fraction"),
    _c("p10", F64, "fraction"),
    _c("p90", F64, "fraction"),
    _c("max", F64, "fraction"),
)

#: The device of a memory row: Kineto's Device Type (CPU, CUDA ...) and Device Id (-1: the CPU).
_MEM_DEVICE = (
    NODE,
    RANK,
    _c("device_type", STR, "text", "CPU / CUDA / ... (Kineto's Device Type)"),
    _c("device", I32, "id", "Device Id (-1 for the CPU)"),
)

#: ``{(stage, file): Table}`` for every Parquet output of every stage.
TABLES: dict[tuple[str, str], Table] = {
    ("ingest", "inventory.parquet"): Table(
        (
            NODE,
            RANK,
            _c("kind", STR, "text"),
            _c("events", I64, "count"),
            _c("first_ns", I64, "epoch_ns"),
            _c("end_ns", I64, "epoch_ns"),
            _c("dur_ns", I64, "ns", "sum of event durations"),
        ),
        "events per node, rank and kind",
    ),
    ("correlate", "launches.parquet"): Table(_LAUNCH_LINKS, "launch call -> device event links"),
    ("correlate", "sync_links.parquet"): Table(
        (
            *WHERE_STREAM,
            _c("correlation", I64, "id"),
            _c("name", STR, "text", "device sync event name"),
            _c("ts", I64, "epoch_ns", "device sync event start"),
            _c("dur", I64, "ns", "device sync event duration"),
            _c("launch_name", STR, "text", "the host call that issued it"),
            _c("launch_tid", I64, "id"),
            _c("launch_ts", I64, "epoch_ns"),
            _c("launch_dur", I64, "ns"),
        ),
        "host call -> device sync event links (cudaStreamWaitEvent, ... on a stream)",
    ),
    ("steps", "windows.parquet"): Table(_STEP_WINDOW_COLUMNS, "one row per step per rank"),
    ("steps", "stats.parquet"): Table(
        (
            NODE,
            RANK,
            _c("count", U32, "count", "steps"),
            _c("mean_ns", F64, "ns_float"),
            _n("std_ns", F64, "ns_float", "null for a single step"),
            _c("min_ns", I64, "ns"),
            _c("p50_ns", F64, "ns_float"),
            _c("p95_ns", F64, "ns_float"),
            _c("max_ns", I64, "ns"),
        ),
        "device step-time distribution per rank",
    ),
    ("steps", "breakdown.parquet"): Table(
        (
            NODE,
            RANK,
            _c("step", I64, "count", "step number"),
            _c("dur_ns", I64, "ns", "device time of the step"),
            _c("busy_ns", I64, "ns", "union of the device work the step launched"),
            _c("computation_ns", I64, "ns", "union of its computation kernels"),
            _c("communication_ns", I64, "ns", "union of its communication kernels"),
            _c("memory_ns", I64, "ns", "union of its memcpy / memset"),
            _c("idle_ns", I64, "ns", "dur_ns - busy_ns (host rows: the host stalls)"),
            _n(
                "data_loading_ns",
                I64,
                "ns",
                "union of its DataLoader fetches (host rows; null on device rows)",
            ),
            _c("work_on", STR, "text", "device, or host for a rank without device work (its CPU ops)"),
        ),
        "per step and rank: the device work the step launched, by kernel type; a rank without "
        "device work: its host's compute, communication, data loading and stalls",
    ),
    ("steps", "job.parquet"): Table(
        (
            _c("step", I64, "count", "step number"),
            _c("dur_ns", I64, "ns", "the job's step time: the slowest rank's device time"),
            NODE,
            _c("rank", I64, "id", "the slowest rank"),
            _c("fastest_ns", I64, "ns", "the fastest rank's device time"),
            _c("ranks", I64, "count", "ranks that ran the step"),
        ),
        "per step, the job's time (slowest rank)",
    ),
    ("steps", "job_stats.parquet"): Table(
        (
            _c("count", U32, "count", "steps"),
            _c("mean_ns", F64, "ns_float"),
            _n("std_ns", F64, "ns_float", "null for a single step"),
            _c("min_ns", I64, "ns"),
            _c("p50_ns", F64, "ns_float", "the job's median step time"),
            _c("p95_ns", F64, "ns_float"),
            _c("max_ns", I64, "ns"),
        ),
        "the job's step-time distribution (slowest rank per step)",
    ),
    ("steps", "rank_ratios.parquet"): Table(
        (
            NODE,
            RANK,
            _c("step", I64, "count", "step number"),
            _c("dur_ns", I64, "ns", "the rank's device time of the step"),
            _n(
                "vs_step_median",
                F64,
                "fraction",
                "dur_ns / the step's median over the ranks (null: a zero median)",
            ),
        ),
        "each rank's step time against the step's median over ranks (the heatmap's cells)",
    ),
    ("steps", "outliers.parquet"): Table(
        (
            *_STEP_WINDOW_COLUMNS,
            _c("outlier", BOOL, "flag"),
            _c("vs_rank_median", F64, "fraction", "step time / the rank's median step time"),
        ),
        "steps beyond the IQR fences",
    ),
    ("steps", "histogram.parquet"): Table(
        (
            NODE,
            RANK,
            _c("bucket", I64, "count"),
            _c("start_ns", I64, "ns", "bucket's lower bound (step time)"),
            _c("end_ns", I64, "ns", "bucket's upper bound (step time)"),
            _c("count", I64, "count", "steps"),
        ),
        "step-time histogram per rank",
    ),
    ("kernels", "stats.parquet"): _KERNEL_STATS,
    ("kernels", "top_by_time.parquet"): _KERNEL_TOP,
    ("kernels", "top_by_count.parquet"): _KERNEL_TOP,
    ("kernels", "types.parquet"): Table(
        (
            _c("kernel_type", STR, "text"),
            _c("time_ns", I64, "ns", "exclusive time (HTA's breakdown)"),
            _c("share", F64, "fraction"),
        ),
        "kernel time by type",
    ),
    ("kernels", "ops.parquet"): Table(
        (
            _c("name", STR, "text", "host op name"),
            _c("count", I64, "count", "calls"),
            _c("total_ns", I64, "ns", "inclusive: with the ops it calls"),
            _c("mean_ns", F64, "ns_float"),
        ),
        "host (cpu_op) statistics per name",
    ),
    ("kernels", "runtime.parquet"): Table(
        (
            _c("name", STR, "text", "runtime or driver call (cudaLaunchKernel, cudaGraphLaunch...)"),
            _c("count", I64, "count", "calls"),
            _c("total_ns", I64, "ns"),
            _c("mean_ns", F64, "ns_float"),
            _c("device_events", I64, "count", "kernels, copies and sets with a call's correlation id"),
        ),
        "runtime and driver call statistics per name, with the device events they started",
    ),
    ("activity", "shares.parquet"): Table(
        (
            NODE,
            RANK,
            DEVICE_EXACT,
            _c("activity", STR, "text", "kernel / memcpy / memset / sync / idle"),
            _c("time_ns", I64, "ns"),
            _c("share", F64, "fraction", "of the GPU's active span"),
            _c("overlap_ns", I64, "ns"),
            _c("span_ns", I64, "ns"),
        ),
        "device time per activity per GPU",
    ),
    ("activity", "total.parquet"): Table(
        (
            _c("activity", STR, "text"),
            _c("n_gpus", I64, "count"),
            _c("time_ns", I64, "ns"),
            _c("share", F64, "fraction"),
            _c("overlap_ns", I64, "ns"),
            _c("span_ns", I64, "ns"),
        ),
        "device time per activity over all GPUs",
    ),
    ("memory", "ops.parquet"): Table(
        (
            _c("direction", STR, "text", "HtoD / DtoH / DtoD / memset ..."),
            _c("count", U32, "count"),
            _c("bytes", I64, "bytes"),
            _c("time_ns", I64, "ns"),
            _c("gbps_mean", F64, "GB/s"),
            _c("gbps_p50", F64, "GB/s"),
            _c("gbps_p95", F64, "GB/s"),
            _c("gbps_min", F64, "GB/s"),
            _c("gbps_max", F64, "GB/s"),
            _c("achieved_gbps", F64, "GB/s", "bytes / time"),
            _c("time_share", F64, "fraction", "of all memory-operation time"),
        ),
        "memory operations by direction",
    ),
    ("memory", "bandwidth.parquet"): Table(
        (
            NODE,
            RANK,
            _c("name", STR, "text", "Memcpy HtoD / DtoH / DtoD … or Memset"),
            _c("count", I64, "count", "points of the concurrent-bandwidth series"),
            _c("mean_gbps", F64, "GB/s"),
            _n("std_gbps", F64, "GB/s", "null for a single point"),
            _c("min_gbps", F64, "GB/s"),
            _c("p25_gbps", F64, "GB/s"),
            _c("p50_gbps", F64, "GB/s"),
            _c("p75_gbps", F64, "GB/s"),
            _c("max_gbps", F64, "GB/s"),
            _c("time_mean_gbps", F64, "GB/s", "time-weighted mean"),
            _c("active_ns", I64, "ns", "time with at least one operation running"),
        ),
        "bandwidth of concurrent memory operations over time (HTA's memory_bw_summary under hta_compat)",
    ),
    ("flops", "ops.parquet"): Table(
        (
            _c("name", STR, "text", "op name (the outermost op that counts)"),
            _c(
                "op_type",
                STR,
                "text",
                "matmul / conv / conv_backward / attention / attention_backward / kernel_flop",
            ),
            _n(
                "precision",
                STR,
                "text",
                "of its FLOPs: the carrying kernel's, else its input dtypes' (null: no FLOPs)",
            ),
            _c("count", I64, "count", "ops"),
            _n("flops", F64, "FLOP", "null when none of them had readable shapes"),
            _c("without_flops", I64, "count", "ops whose shapes could not be read: no FLOPs"),
            _c("time_ns", I64, "ns", "compute time of the ops with FLOPs: their kernels', else their own"),
            _n("tflops", F64, "TFLOP/s", "achieved: flops / time_ns (null: no FLOPs)"),
            _n("share", F64, "fraction", "of all counted FLOPs (null: no FLOPs)"),
        ),
        "FLOPs per op from recorded shapes (record_shapes=True) or kernel_flop, most first",
    ),
    ("flops", "op_types.parquet"): Table(
        (
            _c(
                "op_type",
                STR,
                "text",
                "matmul / conv / conv_backward / attention / attention_backward / kernel_flop",
            ),
            _c("flops", F64, "FLOP", "the counted FLOPs of the type's ops"),
            _c("time_ns", I64, "ns", "compute time of those ops: their kernels', else their own"),
            _n("tflops", F64, "TFLOP/s", "achieved: flops / time_ns (null: no time)"),
            _c("share", F64, "fraction", "of all counted FLOPs"),
        ),
        "FLOPs per op type (the ops with counted FLOPs), most first: share, achieved TFLOP/s",
    ),
    ("flops", "kernels.parquet"): Table(
        (
            _c("name", STR, "text", "kernel name"),
            _c("count", I64, "count", "launches"),
            _c("flops_count", I64, "count", "launches carrying an op's FLOPs"),
            _n("flops", F64, "FLOP", "null: no FLOPs known for this kernel"),
            _c("time_ns", I64, "ns", "all its launches"),
            _c("flops_time_ns", I64, "ns", "the launches carrying FLOPs"),
            _n("bytes", I64, "bytes", "kernel_num_gb where every carrying launch has it, else null"),
            _n("tflops", F64, "TFLOP/s", "achieved: flops / flops_time_ns (null: no FLOPs)"),
            _n(
                "intensity",
                F64,
                "FLOP/byte",
                "arithmetic intensity, where FLOPs and bytes are known, else null",
            ),
            _c("share", F64, "fraction", "of all kernel time"),
        ),
        "per kernel name, most time first: FLOPs, achieved TFLOP/s, arithmetic intensity",
    ),
    ("flops", "steps.parquet"): Table(
        (
            NODE,
            RANK,
            _c("step", I64, "count", "step number"),
            _c("ops", I64, "count", "counted ops starting in the step's host window"),
            _c("flops", F64, "FLOP"),
            _c("step_ns", I64, "ns", "the step's time (device window where mapped)"),
            _n(
                "tflops",
                F64,
                "TFLOP/s",
                "achieved: flops / step_ns (null: a zero step_ns, or no op of the trace counted)",
            ),
            _n(
                "mfu",
                F64,
                "fraction",
                "of the peak, by totals' definition; null without a peak, above 1, or with no op counted and no model FLOPs",
            ),
        ),
        "FLOPs, achieved TFLOP/s and MFU per step and rank",
    ),
    ("flops", "totals.parquet"): Table(
        (
            _c("flops", F64, "FLOP", "all counted FLOPs"),
            _c("counted_ops", I64, "count"),
            _c("ops_without_flops", I64, "count", "FLOP-bearing ops whose shapes could not be read"),
            _c("ops_without_shapes", I64, "count", "of those, the ops that recorded no shapes at all"),
            _c("kernels", I64, "count"),
            _c("kernels_with_flops", I64, "count"),
            _c("kernel_ns", I64, "ns"),
            _c("kernel_ns_without_flops", I64, "ns", "kernel time no FLOPs are known for"),
            _c("steps", I64, "count", "step × rank windows"),
            _c("step_flops", F64, "FLOP", "FLOPs inside the steps"),
            _c("step_ns", I64, "ns", "summed step time"),
            _n(
                "tflops",
                F64,
                "TFLOP/s",
                "achieved per step: step_flops / step_ns (null: no step time, or no op counted)",
            ),
            _n(
                "precision", STR, "text", "dominant precision of the FLOPs (selects the peak; null: no FLOPs)"
            ),
            _c("definition", STR, "text", "MFU from counted FLOPs, or from the user's model FLOPs"),
            _n(
                "model_flops",
                F64,
                "FLOP",
                "--model-flops: the user's FLOPs per step on each rank; null: not given",
            ),
            _n("peak_tflops", F64, "TFLOP/s", "the peak MFU divides by; null: none known"),
            _n("peak_gpu", STR, "text", "the GPU row of the peak table (null: no peak)"),
            _n("peak_source", STR, "text", "the datasheet, or --peak-tflops (null: no peak)"),
            _n(
                "mfu",
                F64,
                "fraction",
                "achieved (or model) TFLOP/s / peak; null without a peak, above 1, or with no op counted and no model FLOPs",
            ),
            _n("mfu_impossible", F64, "fraction", "an MFU above 1 (impossible), else null"),
            _c(
                "mfu_problem", STR, "text", "why such an MFU is impossible and its likely cause; '' when none"
            ),
            _c("note", STR, "text", "what is missing: no shapes, ops without FLOPs, no peak"),
        ),
        "FLOPs, achieved throughput and MFU of the trace, and what they rest on",
    ),
    ("precision", "shares.parquet"): Table(
        (
            _c("precision", STR, "text", "FP32 … unknown, then the byte movers: communication, memory"),
            _c("count", I64, "count", "kernels"),
            _c("time_ns", I64, "ns"),
            _c("time_by_dtypes_ns", I64, "ns", "classified from the launching op's dtypes"),
            _c("time_by_name_ns", I64, "ns", "classified from the kernel name"),
            _n("share", F64, "fraction", "of the kernel time in shares; null where in_shares is false"),
            _c("in_shares", BOOL, "flag", "false for communication and memory kernels: in no share"),
        ),
        "kernel time by numeric precision (communication and memory kernels listed, not shared)",
    ),
    ("precision", "kernels.parquet"): Table(
        (
            *WHERE_STREAM,
            _c("name", STR, "text", "kernel name"),
            _c("ts", I64, "ns", "start, ns since the epoch"),
            _c("dur", I64, "ns"),
            _n("correlation", I64, "id", "launch correlation id (null: the trace gave none)"),
            _c("precision", STR, "text", "as in shares.parquet"),
        ),
        "every kernel with its precision (what the shares and the flops stage read)",
    ),
    ("utilization", "busy.parquet"): Table(
        (
            NODE,
            RANK,
            DEVICE_EXACT,
            _c("n_events", U32, "count"),
            _c("sum_dur_ns", I64, "ns"),
            _c("first_ns", I64, "epoch_ns"),
            _c("last_ns", I64, "epoch_ns"),
            _c("busy_ns", I64, "ns"),
            _c("sync_ns", I64, "ns"),
            _c("window_start_ns", I64, "epoch_ns"),
            _c("window_end_ns", I64, "epoch_ns"),
            _c("span_ns", I64, "ns", "first to last device event"),
            _c("idle_ns", I64, "ns"),
            _c("window_ns", I64, "ns", "profiled window"),
            _c("idle_window_ns", I64, "ns"),
            _n("busy_share", F64, "fraction", "busy / active span (null: a zero span)"),
            _n("busy_share_window", F64, "fraction", "busy / profiled window (null: a zero window)"),
        ),
        "GPU busy and idle per GPU",
    ),
    ("utilization", "total.parquet"): Table(
        (
            _c("n_gpus", U32, "count"),
            _c("n_events", U32, "count"),
            _c("sum_dur_ns", I64, "ns"),
            _c("busy_ns", I64, "ns"),
            _c("sync_ns", I64, "ns"),
            _c("span_ns", I64, "ns"),
            _c("idle_ns", I64, "ns"),
            _c("window_ns", I64, "ns"),
            _c("idle_window_ns", I64, "ns"),
            _n("busy_share", F64, "fraction", "null without device work"),
            _n("busy_share_window", F64, "fraction", "null without device work"),
        ),
        "GPU busy and idle over all GPUs",
    ),
    ("utilization", "gpu.parquet"): Table(
        (*WHERE_GPU, *_BUCKET, _c("busy_ns", I64, "ns"), _c("util", F64, "fraction")),
        "GPU busy fraction per time bucket",
    ),
    ("utilization", "node.parquet"): Table(
        (NODE, *_BUCKET, _c("n_gpus", U32, "count"), _c("busy_ns", I64, "ns"), _c("util", F64, "fraction")),
        "mean GPU busy fraction of a node per time bucket",
    ),
    ("utilization", "cpu.parquet"): Table(
        (
            NODE,
            *_BUCKET,
            _c("util", F64, "fraction"),
            _n("busy_threads", F64, "count", "mean threads busy (null: source metrics, a sampled share)"),
            _c("source", STR, "text", "metrics (sampled) or events (host-thread activity)"),
        ),
        "CPU utilization per time bucket",
    ),
    ("utilization", "gpu_sampled.parquet"): Table(
        (
            NODE,
            _c("bucket", I64, "count"),
            _c("bucket_start_ns", I64, "epoch_ns"),
            _c("bucket_len_ns", I64, "ns"),
            _c("n_gpus", U32, "count", "GPUs sampled in the bucket"),
            _c("util", F64, "fraction", "mean NVML utilization (share of time a kernel ran)"),
        ),
        "GPU utilization over the whole job from NVML samples, per node (empty without samples)",
    ),
    ("utilization", "traced.parquet"): Table(
        (
            NODE,
            RANK,
            _n("first_step", I64, "count", "first step of the window (profcap windows; null: imported)"),
            _n("last_step", I64, "count", "last step of the window (null: imported)"),
            _c("start_ns", I64, "epoch_ns", "window start"),
            _c("end_ns", I64, "epoch_ns", "window end"),
        ),
        "the windows the trace holds events for (profcap: its profiler windows)",
    ),
    ("utilization", "cpu_active.parquet"): Table(
        (
            NODE,
            _n("rank", I64, "id", "distributed rank (null: source metrics, sampled per node)"),
            _c("source", STR, "text"),
            _c("active_ns", I64, "ns"),
            _n("thread_ns", I64, "ns", "null: source metrics (no threads)"),
            _c("window_ns", I64, "ns"),
            _n("active_share", F64, "fraction", "null: an empty window"),
        ),
        "host-thread activity per rank",
    ),
    ("utilization", "gpu_over_time.parquet"): Table(
        (*WHERE_GPU, *_OVER_TIME), "each GPU's utilization over the buckets: mean, p10, p90, max"
    ),
    ("utilization", "cpu_over_time.parquet"): Table(
        (NODE, *_OVER_TIME, _c("source", STR, "text")), "each node's CPU utilization over the buckets"
    ),
    ("comm", "by_collective.parquet"): Table(
        (
            _c("source", STR, "text", "device kernel / host op (analysis.comm)"),
            _c("collective", STR, "text"),
            _c("count", I64, "count"),
            _c("total_ns", I64, "ns"),
            _c("mean_ns", F64, "ns_float"),
            _c("min_ns", I64, "ns"),
            _c("max_ns", I64, "ns"),
            _n("bytes", I64, "bytes", "null: the trace gave no message sizes"),
            _c("share", F64, "fraction", "of communication time"),
            _n("algbw_gbps", F64, "GB/s", "bytes / time (null: no bytes)"),
        ),
        "communication by source and collective",
    ),
    ("comm", "overlap.parquet"): Table(
        (
            NODE,
            RANK,
            _c("comm_ns", I64, "ns"),
            _c("compute_ns", I64, "ns"),
            _c("overlap_ns", I64, "ns"),
            _n(
                "overlap_share", F64, "fraction", "of communication time overlapped with compute (null: none)"
            ),
            _c("exposed_comm_ns", I64, "ns", "communication not hidden under computation"),
            _c(
                "source",
                STR,
                "text",
                "device kernel / host op (absent under hta_compat)",
                optional=True,
                hta_compat=False,
            ),
        ),
        "communication overlapped with compute per rank",
    ),
    ("comm", "per_rank.parquet"): Table(
        (
            NODE,
            RANK,
            _c("source", STR, "text", "device kernel / host op (analysis.comm)"),
            _c("count", I64, "count"),
            _c("total_ns", I64, "ns"),
            _c("busy_ns", I64, "ns"),
            _c("span_ns", I64, "ns"),
            _n(
                "share",
                F64,
                "fraction",
                "of the rank's device span, or host span for a host-op rank (null: a zero span)",
            ),
        ),
        "communication time per rank",
    ),
    ("comm", "per_step.parquet"): Table(
        (
            NODE,
            RANK,
            _c("step", I64, "count"),
            _c("step_ns", I64, "ns"),
            _c("comm_ns", I64, "ns"),
            _c("compute_ns", I64, "ns"),
            _c("overlap_ns", I64, "ns"),
            _c("exposed_comm_ns", I64, "ns"),
        ),
        "communication and compute per step per rank",
    ),
    ("comm", "arrivals.parquet"): Table(
        (
            NODE,
            RANK,
            _c("step", I64, "count", "the step whose window holds the arrival"),
            _c("source", STR, "text", "device kernel or host op"),
            _c("collective", STR, "text"),
            _c("seq", I64, "count", "n-th of its source and kind on the rank: one instance"),
            _c("arrive_ns", I64, "epoch_ns", "the rank's arrival: the collective's start on it"),
            _c("end_ns", I64, "epoch_ns", "the collective's end on the rank"),
            _c("from_ns", I64, "epoch_ns", "stretch start: previous collective's end or step start"),
            _c("input_ns", I64, "ns", "of the stretch: DataLoader fetches"),
            _c("host_ns", I64, "ns", "of the stretch: nothing traced running (a host stall)"),
            _c("compute_ns", I64, "ns", "of the stretch: CPU ops (host-op rank) or compute kernels"),
            _c("transfer_ns", I64, "ns", "of the stretch: memcpy/memset"),
        ),
        "each rank's arrival at every collective in a step, and what it did just before",
    ),
    ("comm", "stragglers.parquet"): Table(
        (
            _c("step", I64, "count"),
            _c("ranks", I64, "count", "ranks that reached the step's collectives"),
            _c("straggler_node", STR, "id", "node of the rank that arrives last"),
            _c("straggler_rank", I64, "id", "the rank that arrives last at the step's collectives"),
            _c("lateness_ns", I64, "ns", "arrival minus the latest other rank's, summed over the step"),
            _c("wait_ns", F64, "ns_float", "the other ranks' mean wait for it, summed over the step"),
            _n("cause", STR, "text", "input, host, compute or transfer (null: none exceeds)"),
            _n(
                "cause_ns",
                F64,
                "ns_float",
                "its time in that class beyond the other ranks' mean (null: as cause)",
            ),
            _c("recurs", BOOL, "flag", "the same rank straggles in at least half the steps"),
        ),
        "the rank that arrives last at each step's collectives, its cost and cause",
    ),
    ("annotations", "names.parquet"): Table(
        (
            _c("side", STR, "text", "cpu or gpu"),
            _c("name", STR, "text"),
            _c("count", I64, "count"),
            _c("total_ns", I64, "ns"),
            _c("origin", STR, "text", "user (the program's own ranges) or framework (PyTorch's)"),
        ),
        "every annotation name, the user's first",
    ),
    ("annotations", "breakdown.parquet"): Table(
        (
            RANK,
            _c("side", STR, "text"),
            _c("name", STR, "text"),
            _c("count", I64, "count"),
            _c("sum_ns", I64, "ns"),
            _c("max_ns", I64, "ns"),
            _c("min_ns", I64, "ns"),
            _c("std_ns", F64, "ns_float"),
            _c("mean_ns", F64, "ns_float"),
        ),
        "annotation time per rank (HTA's breakdown)",
    ),
    ("annotations", "per_step.parquet"): Table(
        (
            NODE,
            RANK,
            _c("step", I64, "count"),
            _c("side", STR, "text"),
            _c("name", STR, "text"),
            _c("time_ns", I64, "ns"),
            _c("count", I64, "count"),
            _c("step_ns", I64, "ns"),
            _n("share", F64, "fraction", "of the step (null: a step of zero length)"),
        ),
        "annotation time per step",
    ),
    ("annotations", "step_means.parquet"): Table(
        (
            _c("side", STR, "text"),
            _c("name", STR, "text"),
            _c("time_ns", F64, "ns_float", "mean time per step"),
            _c("share", F64, "fraction", "mean share of a step"),
            _c("steps", I64, "count", "step × rank windows it appears in"),
        ),
        "each annotation's mean over the steps, largest share first",
    ),
    ("launch", "stats.parquet"): _launch_stats(NODE, RANK),
    ("launch", "overall.parquet"): _launch_stats(),
    ("launch", "by_kernel.parquet"): Table(
        (
            _c("name", STR, "text"),
            _c("launches", U32, "count"),
            _c("cpu_mean_ns", F64, "ns_float"),
            _c("gpu_mean_ns", F64, "ns_float"),
            _c("delay_sum_ns", I64, "ns"),
            _n("delay_mean_ns", F64, "ns_float", "null: only a graph's later events"),
            _n("delay_p50_ns", F64, "ns_float", "null: only a graph's later events"),
            _n("delay_max_ns", I64, "ns", "null: only a graph's later events"),
            _n("latency_mean_ns", F64, "ns_float", "null: only a graph's later events"),
            _c("launch_bound", I64, "count"),
        ),
        "launch statistics per kernel name",
    ),
    ("launch", "aten_op_kernels.parquet"): Table(
        (
            NODE,
            RANK,
            _c("aten_op", STR, "text"),
            _c("kernel_sequence", STR, "text", "the kernels the op launches, in order"),
            _c("count", I64, "count", "calls of the op with that sequence"),
            _c("mean_aten_op_delay_ns", I64, "ns", "op start -> its first kernel's start"),
            _c("mean_runtime_delay_ns", I64, "ns", "launch call -> kernel start, averaged"),
        ),
        "the kernels each ATen op launches and their delays (HTA's aten_op_kernels_and_delay)",
    ),
    ("launch", "outliers.parquet"): Table(
        (*_LAUNCH_LINKS, _c("reason", STR, "text")), "slow launch calls and late starts"
    ),
    ("launch", "histogram.parquet"): Table(
        (
            _n("lo_ns", I64, "ns", "inclusive (null: the first bucket, open below)"),
            _n("hi_ns", I64, "ns", "exclusive (null: the last bucket, open above)"),
            _c("count", I64, "count"),
        ),
        "launch delay histogram",
    ),
    ("idle", "breakdown.parquet"): Table(
        (
            *WHERE_STREAM,
            _c("category", STR, "text", "host_wait / kernel_wait / other"),
            _c("idle_ns", I64, "ns"),
            _n("ratio", F64, "fraction", "of the stream's idle time (null: the stream had none)"),
            *_describe("_ns", "ns", "ns_float", "null without gaps (std: with one)"),
        ),
        "stream idle time by cause; count..max describe the idle gaps (ns)",
    ),
    ("idle", "blocked_on_full_queue.parquet"): Table(
        (
            *WHERE_STREAM,
            _c("blocked_ns", I64, "ns", "host time with the stream's launch queue full"),
            _c("share", F64, "fraction", "of the rank's window"),
        ),
        "time the host was blocked on a full launch queue (HTA's time_blocked_on_full_queue)",
    ),
    ("idle", "totals.parquet"): Table(
        (
            _c("category", STR, "text"),
            _c("idle_ns", I64, "ns"),
            _c("count", I64, "count"),
            _n("ratio", F64, "fraction", "of all idle time (null: the streams had none)"),
        ),
        "idle time by cause over all streams",
    ),
    ("idle", "queue.parquet"): Table(
        (
            *WHERE_STREAM,
            *_describe("", "count", "count"),
            _n("time_mean", F64, "count", "time-weighted mean (null: one point, no time)"),
        ),
        "launch queue length per stream (launched, not finished; with hta_compat, HTA's launched, not yet started)",
    ),
    ("sync", "host.parquet"): Table(
        (
            NODE,
            RANK,
            _c("name", STR, "text"),
            _c("category", STR, "text"),
            _c("calls", I64, "count"),
            _c("total_ns", I64, "ns"),
            _c("mean_ns", F64, "ns_float"),
            _c("max_ns", I64, "ns"),
            _c("window_ns", I64, "ns"),
            _n("share", F64, "fraction", "of the rank's host window (null when that window has no length)"),
        ),
        "host time blocked per synchronize call name",
    ),
    ("sync", "totals.parquet"): Table(
        (
            NODE,
            RANK,
            _c("calls", I64, "count"),
            _c("blocked_ns", I64, "ns"),
            _c("window_ns", I64, "ns"),
            _n("share", F64, "fraction", "of the rank's host window (null when that window has no length)"),
        ),
        "host time blocked in synchronize calls per rank",
    ),
    ("sync", "device.parquet"): Table(
        (
            *WHERE_GPU,
            _c("name", STR, "text"),
            _c("count", I64, "count"),
            _c("total_ns", I64, "ns"),
            _c("mean_ns", F64, "ns_float"),
            _c("max_ns", I64, "ns"),
        ),
        "device synchronization events",
    ),
    ("allocations", "series.parquet"): Table(
        (
            *_MEM_DEVICE,
            _c("seq", I64, "count", "event order on the device (time, then Kineto's Ev Idx)"),
            _c("ts", I64, "epoch_ns", "the event's instant"),
            _c("pid", I64, "id"),
            _c("tid", I64, "id", "the allocating thread"),
            _c("event", STR, "text", "alloc / free / oom"),
            _c("bytes", I64, "bytes", "Bytes: negative on a free"),
            _c("allocated_bytes", I64, "bytes", "Total Allocated after the event"),
            _c("reserved_bytes", I64, "bytes", "Total Reserved after the event"),
            _c("addr", I64, "id", "Addr"),
        ),
        "every readable [memory] / [OutOfMemory] event (per-event detail: not in the summary)",
    ),
    ("allocations", "devices.parquet"): Table(
        (
            *_MEM_DEVICE,
            _c("events", I64, "count"),
            _c("allocs", I64, "count"),
            _c("frees", I64, "count"),
            _c("oom_events", I64, "count", "[OutOfMemory] events"),
            _c("first_ns", I64, "epoch_ns", "first memory event"),
            _c("last_ns", I64, "epoch_ns", "last memory event"),
            _c("start_allocated_bytes", I64, "bytes", "allocated before the first event"),
            _c("end_allocated_bytes", I64, "bytes", "allocated after the last event"),
            _c("min_allocated_bytes", I64, "bytes"),
            _c("peak_allocated_bytes", I64, "bytes", "the highest Total Allocated"),
            _c("peak_ns", I64, "epoch_ns", "the first event at the peak"),
            _c("peak_seq", I64, "count", "its seq"),
            _c("peak_tid", I64, "id", "the thread allocating at the peak"),
            _c("peak_reserved_bytes", I64, "bytes", "the highest Total Reserved"),
            _c("peak_reserved_ns", I64, "epoch_ns"),
            _n("peak_op", STR, "text", "innermost cpu_op holding the peak on its thread (null: none)"),
            _n("peak_annotation", STR, "text", "innermost user annotation holding it (null: none)"),
            _n("peak_step", I64, "count", "the step whose host window holds the peak (null: none)"),
        ),
        "per device: the allocated peak and where it happened, the reserved peak, OOM count",
    ),
    ("allocations", "per_step.parquet"): Table(
        (
            *_MEM_DEVICE,
            _c("step", I64, "count"),
            _c("start_ns", I64, "epoch_ns", "the step's host window"),
            _c("end_ns", I64, "epoch_ns"),
            _c("events", I64, "count", "memory events inside the step"),
            _c("start_allocated_bytes", I64, "bytes", "allocated entering the step"),
            _c("min_allocated_bytes", I64, "bytes", "the step's floor"),
            _c("peak_allocated_bytes", I64, "bytes"),
            _c("end_allocated_bytes", I64, "bytes", "allocated at the step's end"),
            _c("growth_bytes", I64, "bytes", "end - entering"),
        ),
        "allocated memory per device and step: entering, floor, peak, end, growth",
    ),
    ("allocations", "live_at_peak.parquet"): Table(
        (
            *_MEM_DEVICE,
            _c("order", I64, "count", "1 = largest"),
            _c("addr", I64, "id"),
            _c("bytes", I64, "bytes"),
            _c("alloc_ns", I64, "epoch_ns", "when it was allocated"),
            _c("tid", I64, "id"),
            _n("op", STR, "text", "innermost cpu_op allocating it (null: none)"),
            _c("peak_share", F64, "fraction", "of the peak allocated level"),
        ),
        "the largest allocations made in the trace and still live at the device's peak",
    ),
    ("allocations", "over_time.parquet"): Table(
        (
            *_MEM_DEVICE,
            *_BUCKET,
            _c("max_allocated_bytes", I64, "bytes"),
            _c("max_reserved_bytes", I64, "bytes"),
            _c("end_allocated_bytes", I64, "bytes", "allocated after the bucket's last event"),
        ),
        "allocated and reserved memory per device over time (non-empty buckets only)",
    ),
    ("allocations", "oom.parquet"): Table(
        (
            *_MEM_DEVICE,
            _c("ts_ns", I64, "epoch_ns"),
            _c("tid", I64, "id"),
            _c("bytes", I64, "bytes", "Bytes of the failed request"),
            _c("allocated_bytes", I64, "bytes"),
            _c("reserved_bytes", I64, "bytes"),
            _n("op", STR, "text", "innermost cpu_op of the request (null: none)"),
            _n("annotation", STR, "text", "innermost user annotation (null: none)"),
        ),
        "every [OutOfMemory] event",
    ),
    ("critical_path", "steps.parquet"): Table(
        (
            NODE,
            RANK,
            _c("step", I64, "count", "step number (the job's: the same on every rank)"),
            _c("start_ns", I64, "epoch_ns", "the step's start on this rank (its host marker's start)"),
            _c("end_ns", I64, "epoch_ns", "the end of the step's last work on this rank (host or device)"),
            _c(
                "length_ns",
                I64,
                "ns",
                "the critical path's length: end_ns - start_ns (under hta_compat HTA's longest path, "
                "which skips host gaps between top-level ops)",
            ),
        ),
        "one row per analysed step per rank: the length of its critical path",
    ),
    ("critical_path", "by_kind.parquet"): Table(
        (
            NODE,
            RANK,
            _c("step", I64, "count"),
            _c("kind", STR, "text", "critical_path.KINDS (HTA's kinds under hta_compat)"),
            _c("ns", I64, "ns", "time of this kind on the path; a step's rows sum to its length_ns"),
        ),
        "the critical path's time by kind, per step and rank",
    ),
    ("critical_path", "events.parquet"): Table(
        (
            NODE,
            RANK,
            _c("step", I64, "count"),
            _c("seq", I64, "count", "position along the path, 0 at the step's start"),
            _c("kind", STR, "text", "critical_path.KINDS"),
            _c("lane", STR, "text", "host or device"),
            _n("tid", I64, "id", "host thread (null on a device lane)"),
            _n("device", I32, "id", "GPU index on its node (null on a host lane)"),
            _n("stream", I32, "id", "device stream (null on a host lane)"),
            _c("name", STR, "text", "the event the path runs through (empty: a gap between events)"),
            _c("start_ns", I64, "epoch_ns", "start of this stretch of the path"),
            _c("end_ns", I64, "epoch_ns", "end of this stretch; the next row starts here"),
        ),
        "the critical path of each analysed step, stretch by stretch in time order",
    ),
    ("critical_path", "what_if.parquet"): Table(
        (
            NODE,
            RANK,
            _c("step", I64, "count"),
            _c("change", STR, "text", "findings.CATEGORIES: what was shrunk on the step's graph"),
            _c("length_ns", I64, "ns", "the critical path's length with that change"),
            _c("saved_ns", I64, "ns", "the step's length_ns - length_ns with the change (>= 0)"),
        ),
        "each change replayed on each analysed step's graph: the path's length with it",
    ),
    ("findings", "findings.parquet"): Table(
        (
            _c("position", I64, "count", "1 = the finding that would save the most"),
            _c("category", STR, "text", "findings.CATEGORIES"),
            _c("severity", STR, "text", "high, medium, low or info"),
            _c("title", STR, "text", "one line, true of the numbers"),
            _c("recoverable_ns_per_step", I64, "ns", "mean per analysed step, from the what-if replay"),
            _c("recoverable_share", F64, "fraction", "saving over critical path, analysed steps' totals"),
            _c("ranks", pl.List(I64), "id", "the ranks where it occurs"),
            _c("steps", pl.List(I64), "count", "the steps where it occurs"),
            _c("look_at", pl.List(STR), "text", "op, kernel or annotation names to look at"),
            _c("next_step", STR, "text", "what to change"),
            _n("at_rank", I64, "id", "its worst instance: the rank (null: a finding of no one instance)"),
            _n("at_step", I64, "count", "its worst instance: the step (null: as at_rank)"),
            _n("at_ns", I64, "epoch_ns", "its worst instance: where on the timeline (null: as at_rank)"),
        ),
        "what to change, ranked by the time it would save per step",
    ),
    ("findings", "evidence.parquet"): Table(
        (
            _c("position", I64, "count", "the finding's position"),
            _c("label", STR, "text", "what the number is"),
            _c("value", F64, "varies", "the number, in the row's unit"),
            _c("unit", STR, "text", "one of schemas.UNITS"),
            _c("source", STR, "text", "stage/table the number comes from"),
        ),
        "the numbers behind each finding",
    ),
}


def table(stage: str, file: str) -> Table:
    """The declared schema of ``stage``'s output ``file`` (``.parquet`` suffix optional)."""
    key = (stage, file if file.endswith(".parquet") else f"{file}.parquet")
    try:
        return TABLES[key]
    except KeyError:
        raise KeyError(f"no schema declared for {stage}/{key[1]}") from None


def conform(stage: str, file: str, frame: pl.DataFrame) -> pl.DataFrame:
    """``frame`` checked against its declared schema: the declared columns (optional ones may be
    absent) and nothing else, cast to the declared dtypes, in declaration order, with no null
    where a column is not :attr:`Column.nullable` (nor NaN or an infinity in such a float
    column, nor a null inside such a list column).

    Raises :class:`SchemaError` naming the stage, the file and the difference (an undeclared
    null only warns, unless :data:`STRICT_ENV` is set).
    """
    decl = table(stage, file)
    got = set(frame.columns)
    extra = sorted(got - set(decl.names))
    missing = sorted(c.name for c in decl.columns if not c.optional and c.name not in got)
    if extra or missing:
        raise SchemaError(
            f"{stage}/{file}: columns differ from the schema (extra {extra}, missing {missing})"
        )
    wanted = [c for c in decl.columns if c.name in got]
    schema = frame.schema
    if [c.name for c in wanted] != frame.columns or any(schema[c.name] != c.dtype for c in wanted):
        try:
            frame = frame.select(
                pl.col(c.name) if schema[c.name] == c.dtype else pl.col(c.name).cast(c.dtype, strict=True)
                for c in wanted
            )
        except (pl.exceptions.InvalidOperationError, pl.exceptions.ComputeError) as exc:
            raise SchemaError(f"{stage}/{file}: {str(exc).splitlines()[0]}") from None
    _refuse_nulls(stage, file, frame, [c for c in wanted if not c.nullable])
    return frame


def _refuse_nulls(stage: str, file: str, frame: pl.DataFrame, cols: list[Column]) -> None:
    """SchemaError (a :class:`SchemaWarning` unless :data:`STRICT_ENV` is set) when a column of
    ``cols`` holds a null (a float one NaN or an infinity, which JSON prints as null; a list one a
    null item)."""
    for c in cols:
        s = frame.get_column(c.name)
        bad = s.null_count()
        if not bad and c.dtype.is_float():
            bad = s.len() - int(s.is_finite().sum())
        if not bad and isinstance(c.dtype, pl.List):
            bad = int((s.list.len() - s.list.drop_nulls().list.len()).sum() or 0)
        if bad:
            message = (
                f"{stage}/{file}: column {c.name} holds {bad} null, NaN or infinite value(s) "
                "but is not declared nullable"
            )
            if os.environ.get(STRICT_ENV):
                raise SchemaError(message)
            warnings.warn(f"{message} (a profui bug: please report it)", SchemaWarning, stacklevel=3)


#: The overview of a trace (``ingest/trace.json``'s ``overview``, the Summary's ``trace``).
OVERVIEW_KEYS = (
    "path",
    "name",
    "status",
    "source",
    "nodes",
    "ranks",
    "gpus",
    "gpus_listed",
    "devices",
    "device_type",
    "events",
    "start_ns",
    "end_ns",
    "duration_ns",
)

#: ``{(stage, file): keys}`` of every JSON output (their values are small documents, not tables).
JSON_KEYS: dict[tuple[str, str], tuple[str, ...]] = {
    ("ingest", "trace.json"): ("overview", "fingerprint", *OVERVIEW_KEYS),
    ("steps", "steps.json"): ("has_markers", "renumbered", "note", "step_annotation"),
    ("allocations", "allocations.json"): ("events", "unreadable", "devices", "note"),
    ("summary", "summary.json"): (
        "trace",
        "params",
        "sections",
        "takeaways",
        "notes",
        "top_n",
        "bucket_ns",
        "hta_compat",
    ),
    ("summary", "takeaways.json"): (),  # {answer id: sentence}; ids are profui.analysis.takeaways.CHARTS
}
