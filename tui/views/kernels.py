"""Kernels view: every kernel's statistics (from the ``kernels`` stage), sortable; Enter shows it
in the timeline."""

from __future__ import annotations

from textual import on, work
from textual.app import ComposeResult
from textual.widgets import Static

from ..widgets.fmt import fmt_count
from ..widgets.frame_table import FrameTable
from . import dashboard_charts as dc
from .base import TraceView

COLUMNS = ["name", "kernel_type", "count", "total_ns", "share", "mean_ns", "p50_ns", "p95_ns", "max_ns", "min_ns"]


class KernelsView(TraceView):
    """A table of kernel statistics; ``s`` sorts, ``r`` reverses, Enter opens the timeline there."""

    DEFAULT_CSS = """
    KernelsView .view-status { height: 1; padding: 0 1; color: $text-muted; }
    KernelsView FrameTable { height: 1fr; }
    """

    def compose(self) -> ComposeResult:
        yield Static("loading kernels…", id="kernels-status", classes="view-status")
        yield FrameTable(id="kernels-table", sort_by="total_ns")

    def focus_main(self) -> None:
        self.query_one(FrameTable).focus()

    def load(self) -> None:
        self._load()

    @work(thread=True, exclusive=True, group="kernels")
    def _load(self) -> None:
        try:
            outputs = self.session.stage_outputs(dc.STAGES)
        except Exception as exc:
            self.app.call_from_thread(self._status, f"analysis failed: {type(exc).__name__}: {exc}")
            return
        self.app.call_from_thread(self._show, dc.frame(outputs, "kernels", "stats.parquet"))

    def _status(self, line: str) -> None:
        self.query_one("#kernels-status", Static).update(line)
        if line.startswith("analysis failed"):
            self.ready = True

    def _show(self, stats) -> None:
        if stats.height == 0:
            why = self.session.unavailable.get("kernels", "no kernels in this trace")
            self._status(f"No kernel statistics: {why}")
        else:
            self._status(f"{fmt_count(stats.height)} kernels · s sort · r reverse · Enter: timeline")
        self.query_one(FrameTable).set_frame(stats, COLUMNS)
        self.ready = True

    @on(FrameTable.Chosen, "#kernels-table")
    def _chosen(self, event: FrameTable.Chosen) -> None:
        if not self.app.goto_timeline(kernel=event.row["name"]):  # type: ignore[attr-defined]
            self.app.notify("the timeline view is not available", severity="warning")
