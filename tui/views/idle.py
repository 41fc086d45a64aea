"""Idle view: stream idle time by cause (host wait, kernel wait, other), launch queue length and
the host's time blocked on a full queue — the ``idle`` stage's tables."""

from __future__ import annotations

from profui.analysis.devices import NONE, does_not_apply

from .dashboard_charts import device_words
from .table_sections import Outputs, Section, SectionsView, output

STAGE = "idle"


def idle_sections(outputs: Outputs) -> list[Section]:
    """The Idle view's tables, from the ``idle`` stage's outputs."""
    return [
        Section(
            "Idle by cause, all streams",
            STAGE,
            "totals.parquet",
            output(outputs, STAGE, "totals.parquet"),
            ["category", "idle_ns", "ratio", "count"],
            sort_by="idle_ns",
        ),
        Section(
            "Idle by cause per stream",
            STAGE,
            "breakdown.parquet",
            output(outputs, STAGE, "breakdown.parquet"),
            [
                "rank",
                "stream",
                "category",
                "idle_ns",
                "ratio",
                "count",
                "mean_ns",
                "p50_ns",
                "max_ns",
                "device",
                "node",
            ],
        ),
        Section(
            "Launch queue length per stream (launched, not yet started)",
            STAGE,
            "queue.parquet",
            output(outputs, STAGE, "queue.parquet"),
            ["rank", "stream", "time_mean", "mean", "p50", "max", "count", "device", "node"],
        ),
        Section(
            "Host blocked on a full launch queue",
            STAGE,
            "blocked_on_full_queue.parquet",
            output(outputs, STAGE, "blocked_on_full_queue.parquet"),
            ["rank", "stream", "blocked_ns", "share", "device", "node"],
        ),
    ]


def idle_empty(outputs: Outputs) -> str:
    """The empty state: why there is nothing to show."""
    if output(outputs, STAGE, "breakdown.parquet").is_empty():
        if device_words(outputs).kind == NONE:  # nothing ran on a device: the host's idle time instead
            return does_not_apply("the host's time outside any op per step is in the Steps view")
        return "No stream idle time in this trace: no device streams ran kernels."
    return ""


class IdleView(SectionsView):
    """Idle causes per stream, queue length, time blocked on a full queue (the ``idle`` stage)."""

    TITLE = "Idle"
    TAKEAWAY = "idle"

    def sections(self, outputs: Outputs) -> list[Section]:
        return idle_sections(outputs)

    def empty(self, outputs: Outputs) -> str:
        return idle_empty(outputs)
