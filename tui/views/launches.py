"""Launches view: launch→start delay distribution, per-rank statistics, kernels by launch
delay and how many of their launches ran shorter on the device than the launch call, outliers, and the kernels each ATen op launches — the ``launch``
stage's tables."""

from __future__ import annotations

import polars as pl

from .table_sections import Outputs, Section, SectionsView, output, top_n

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


def launch_sections(outputs: Outputs) -> list[Section]:
    """The Launches view's tables, from the ``launch`` stage's outputs."""
    # the summary's top-N rows of the per-kernel and outlier tables, as `profui summary` prints them
    n = top_n(outputs)
    by_kernel = output(outputs, STAGE, "by_kernel.parquet").head(n)
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
            output(outputs, STAGE, "overall.parquet"),
            _STATS,
        ),
        Section(
            "Launch→start delay histogram",
            STAGE,
            "histogram.parquet",
            output(outputs, STAGE, "histogram.parquet"),
            ["lo_ns", "hi_ns", "count"],
        ),
        Section(
            "Per rank",
            STAGE,
            "stats.parquet",
            output(outputs, STAGE, "stats.parquet"),
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
            note=f"launch_bound = launches whose device work ran shorter than the launch call · of the {top}",
        ),
        Section(
            "Outliers: slow launch calls and late starts",
            STAGE,
            "outliers.parquet",
            output(outputs, STAGE, "outliers.parquet").head(n),
            ["name", "reason", "launch_delay", "launch_dur", "dur", "launch_name", "rank", "stream"],
            kernel="name",
            note=f"first {n}",
        ),
        Section(
            "ATen op → kernels",
            STAGE,
            "aten_op_kernels.parquet",
            output(outputs, STAGE, "aten_op_kernels.parquet"),
            ["aten_op", "count", "mean_aten_op_delay_ns", "mean_runtime_delay_ns", "kernel_sequence", "rank"],
            sort_by="count",
            op="aten_op",
        ),
    ]


def launch_empty(outputs: Outputs) -> str:
    """The empty state: why there is nothing to show."""
    overall = output(outputs, STAGE, "overall.parquet")
    if overall.is_empty() or not overall["launches"].sum():
        return "No launches in this trace: no launch call was matched to device work."
    return ""


class LaunchesView(SectionsView):
    """Launch latency, launches shorter on the device than their launch call, outliers, ATen op → kernels (the ``launch`` stage)."""

    TITLE = "Launches"
    TAKEAWAY = "launch"

    def sections(self, outputs: Outputs) -> list[Section]:
        return launch_sections(outputs)

    def empty(self, outputs: Outputs) -> str:
        return launch_empty(outputs)
