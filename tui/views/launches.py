"""Launches view: launch→start delay distribution, per-rank statistics, kernels by launch
delay and how many of their launches ran shorter on the device than the launch call, outliers, and the kernels each ATen op launches — the ``launch``
stage's tables."""

from __future__ import annotations

import polars as pl

from .table_sections import Result, Section, SectionsView, top_n

STAGE = "launch"

_STATS = [
    "launches",
    "delay_p50_ns",
    "delay_p90_ns",
    "delay_p99_ns",
    "delay_max_ns",
    "launch_bound",
    "latency_p50_ns",
    "cpu_mean_ns",
    "gpu_mean_ns",
    "delay_outliers",
    "runtime_outliers",
]


def launch_sections(result: Result) -> list[Section]:
    """The Launches view's tables, from the ``launch`` stage's outputs."""
    # the summary's top-N rows of the per-kernel and outlier tables, as `profui summary` prints them
    n = top_n(result)
    by_kernel = result.launch.by_kernel.head(n)
    bound = by_kernel.filter(pl.col("launch_bound") > 0) if by_kernel.height else by_kernel
    top = f"top {n} by total delay"
    kernel_cols = [
        "name",
        "launches",
        "delay_mean_ns",
        "delay_p50_ns",
        "delay_max_ns",
        "launch_bound",
        "cpu_mean_ns",
        "gpu_mean_ns",
        "latency_mean_ns",
    ]
    return [
        Section(
            "Launch→start delay, all ranks (kernel, memcpy and memset launches)",
            STAGE,
            "overall.parquet",
            result.launch.overall,
            _STATS,
        ),
        Section(
            "Launch→start delay histogram",
            STAGE,
            "histogram.parquet",
            result.launch.histogram,
            ["lo_ns", "hi_ns", "count"],
        ),
        Section(
            "Per rank",
            STAGE,
            "stats.parquet",
            result.launch.stats,
            ["rank", *_STATS, "node"],
        ),
        Section(
            "Per kernel",
            STAGE,
            "by_kernel.parquet",
            by_kernel,
            kernel_cols,
            sort_by="delay_mean_ns",
            kernel="name",
            note=top,
        ),
        Section(
            "Kernels by launches shorter than their launch call",
            STAGE,
            "by_kernel.parquet",
            bound,
            kernel_cols,
            sort_by="launch_bound",
            kernel="name",
            note=f"of the {top}",  # the title says what launch_bound counts
        ),
        Section(
            "Outliers: slow launch calls and late starts",
            STAGE,
            "outliers.parquet",
            result.launch.outliers.head(n),
            ["name", "reason", "launch_delay", "launch_dur", "dur", "launch_name", "rank", "stream"],
            kernel="name",
            note=f"first {n}",
        ),
        Section(
            "ATen op → kernels",
            STAGE,
            "aten_op_kernels.parquet",
            result.launch.aten_op_kernels,
            ["aten_op", "count", "mean_aten_op_delay_ns", "mean_runtime_delay_ns", "kernel_sequence", "rank"],
            sort_by="count",
            op="aten_op",
        ),
    ]


def launch_empty(result: Result) -> str:
    """The empty state: why there is nothing to show."""
    overall = result.launch.overall
    if overall.is_empty() or not overall["launches"].sum():
        return "No launches in this trace: no launch call was matched to device work."
    return ""


class LaunchesView(SectionsView):
    """Launch latency, launches shorter on the device than their launch call, outliers, ATen op → kernels (the ``launch`` stage)."""

    TITLE = "Launches"
    STAGE = STAGE
    TAKEAWAY = "launch"

    def sections(self, result: Result) -> list[Section]:
        return launch_sections(result)

    def empty(self, result: Result) -> str:
        return launch_empty(result)
