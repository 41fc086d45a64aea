"""Sync view: host time blocked per synchronize call, per rank, and the device's sync events —
the ``sync`` stage's tables."""

from __future__ import annotations

from .table_sections import Result, Section, SectionsView

STAGE = "sync"


def sync_sections(result: Result) -> list[Section]:
    """The Sync view's tables, from the ``sync`` stage's outputs."""
    return [
        Section(
            "Host blocked per synchronize call",
            STAGE,
            "host.parquet",
            result.sync.host,
            ["name", "total_ns", "calls", "share", "mean_ns", "max_ns", "category", "rank", "node"],
            sort_by="total_ns",
        ),
        Section(
            "Host blocked per rank",
            STAGE,
            "totals.parquet",
            result.sync.totals,
            ["rank", "blocked_ns", "share", "calls", "window_ns", "node"],
        ),
        Section(
            "Device-side sync events (recorded on the device; host sync calls are above)",
            STAGE,
            "device.parquet",
            result.sync.device,
            ["name", "total_ns", "count", "mean_ns", "max_ns", "rank", "device", "node"],
            sort_by="total_ns",
        ),
    ]


def sync_empty(result: Result) -> str:
    """The empty state: why there is nothing to show."""
    if result.sync.host.is_empty() and result.sync.device.is_empty():
        return "No synchronization in this trace: no host synchronize calls, no device syncs."
    return ""


class SyncView(SectionsView):
    """Host time blocked in synchronize calls and device sync events (the ``sync`` stage)."""

    TITLE = "Sync"
    STAGE = STAGE
    TAKEAWAY = "sync"

    def sections(self, result: Result) -> list[Section]:
        return sync_sections(result)

    def empty(self, result: Result) -> str:
        return sync_empty(result)
