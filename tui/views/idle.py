"""Idle view: stream idle time by cause (host wait, kernel wait, other), launch queue length and
the host's time blocked on a full queue — the ``idle`` stage's tables."""

from __future__ import annotations

from profui.analysis.devices import NONE, does_not_apply
from profui.analysis.idle import queue_words

from .dashboard_charts import device_words
from .table_sections import Result, Section, SectionsView

STAGE = "idle"


def idle_sections(result: Result) -> list[Section]:
    """The Idle view's tables, from the ``idle`` stage's outputs."""
    return [
        Section(
            "Idle by cause, all streams",
            STAGE,
            "totals.parquet",
            result.idle.totals,
            ["category", "idle_ns", "ratio", "count"],
            sort_by="idle_ns",
        ),
        Section(
            "Idle by cause per stream",
            STAGE,
            "breakdown.parquet",
            result.idle.breakdown,
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
            f"Launch queue length per stream ({queue_words()})",
            STAGE,
            "queue.parquet",
            result.idle.queue,
            ["rank", "stream", "time_mean", "mean", "p50", "max", "count", "device", "node"],
        ),
        Section(
            "Host blocked on a full launch queue",
            STAGE,
            "blocked_on_full_queue.parquet",
            result.idle.blocked_on_full_queue,
            ["rank", "stream", "blocked_ns", "share", "device", "node"],
        ),
    ]


def idle_empty(result: Result) -> str:
    """The empty state: why there is nothing to show."""
    if result.idle.breakdown.is_empty():
        if device_words(result).kind == NONE:  # nothing ran on a device: the host's idle time instead
            return does_not_apply("the host's time outside any op per step is in the Steps view")
        return "No stream idle time in this trace: no device streams ran kernels."
    return ""


class IdleView(SectionsView):
    """Idle causes per stream, queue length, time blocked on a full queue (the ``idle`` stage)."""

    TITLE = "Idle"
    STAGE = STAGE
    TAKEAWAY = "idle"

    def sections(self, result: Result) -> list[Section]:
        return idle_sections(result)

    def empty(self, result: Result) -> str:
        return idle_empty(result)
