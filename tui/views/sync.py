"""Sync view: host time blocked per synchronize call, per rank, and the device's sync events —
the ``sync`` stage's tables."""

from __future__ import annotations

from .table_sections import Outputs, Section, SectionsView, output

STAGE = "sync"


def sync_sections(outputs: Outputs) -> list[Section]:
    """The Sync view's tables, from the ``sync`` stage's outputs."""
    return [
        Section(
            "Host blocked per synchronize call",
            STAGE,
            "host.parquet",
            output(outputs, STAGE, "host.parquet"),
            ["name", "total_ns", "calls", "share", "mean_ns", "max_ns", "category", "rank", "node"],
            sort_by="total_ns",
        ),
        Section(
            "Host blocked per rank",
            STAGE,
            "totals.parquet",
            output(outputs, STAGE, "totals.parquet"),
            ["rank", "blocked_ns", "share", "calls", "window_ns", "node"],
        ),
        Section(
            "Device-side sync events (recorded on the device; host sync calls are above)",
            STAGE,
            "device.parquet",
            output(outputs, STAGE, "device.parquet"),
            ["name", "total_ns", "count", "mean_ns", "max_ns", "rank", "device", "node"],
            sort_by="total_ns",
        ),
    ]


def sync_empty(outputs: Outputs) -> str:
    """The empty state: why there is nothing to show."""
    if (
        output(outputs, STAGE, "host.parquet").is_empty()
        and output(outputs, STAGE, "device.parquet").is_empty()
    ):
        return "No synchronization in this trace: no host synchronize calls, no device syncs."
    return ""


class SyncView(SectionsView):
    """Host time blocked in synchronize calls and device sync events (the ``sync`` stage)."""

    TITLE = "Sync"
    TAKEAWAY = "sync"

    def sections(self, outputs: Outputs) -> list[Section]:
        return sync_sections(outputs)

    def empty(self, outputs: Outputs) -> str:
        return sync_empty(outputs)
