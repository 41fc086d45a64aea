"""Kernels view: every kernel's statistics (from the ``kernels`` stage), sortable and filterable
by name; Enter shows the kernel in the timeline."""

from __future__ import annotations

import polars as pl
from rich.text import Text
from textual import on, work
from textual.app import ComposeResult
from textual.binding import Binding
from textual.widgets import DataTable, Input, Static

from profui.analysis.devices import GPU_WORDS, NONE, DeviceWords
from profui.analysis.formatting import fmt_count, fmt_ns

from ..widgets.frame_table import FrameTable
from . import dashboard_charts as dc
from .base import TraceView

# Most telling numbers first: at 80 columns the name, total, count and share stay on screen.
COLUMNS = [
    "name",
    "total_ns",
    "count",
    "share",
    "mean_ns",
    "p50_ns",
    "p95_ns",
    "max_ns",
    "min_ns",
    "kernel_type",
]


class KernelsView(TraceView):
    """A table of kernel statistics; ``s`` sorts, ``r`` reverses, ``/`` filters by name, Enter
    opens the timeline on the kernel."""

    BINDINGS = [
        Binding("slash", "filter", "Filter"),
        Binding("escape", "clear_filter", "Clear filter", show=False),
    ]

    DEFAULT_CSS = """
    KernelsView .view-status { height: 1; padding: 0 1; color: $text-muted; }
    KernelsView FrameTable { height: 1fr; }
    KernelsView #kernels-detail { height: auto; max-height: 4; padding: 0 1; background: $panel; }
    KernelsView #kernels-filter { dock: bottom; display: none; }
    KernelsView #kernels-filter.visible { display: block; }
    """

    def __init__(self, session, id: str | None = None) -> None:
        super().__init__(session, id=id)
        self.stats = pl.DataFrame()
        self.words: DeviceWords = GPU_WORDS
        self.filter_text = ""

    def compose(self) -> ComposeResult:
        yield Static("loading kernels…", id="kernels-status", classes="view-status")
        yield FrameTable(id="kernels-table", sort_by="total_ns")
        # the table elides long names; the highlighted kernel's full name is read here
        yield Static("", id="kernels-detail")
        yield Input(placeholder="kernel name contains… (Enter keeps, Esc clears)", id="kernels-filter")

    def focus_main(self) -> None:
        self.query_one(FrameTable).focus()

    def load(self) -> None:
        self._load()

    @work(thread=True, exclusive=True, group="kernels")
    def _load(self) -> None:
        try:
            result = self.stage_result(dc.STAGES)
        except Exception as exc:
            if self.ended_on_bad_input(exc):
                return
            self.app.call_from_thread(self._status, f"analysis failed: {type(exc).__name__}: {exc}")
            return
        words = dc.device_words(result, self)
        stats = result.kernels.stats if result.ran("kernels") else pl.DataFrame()  # failed: nothing to list
        self.app.call_from_thread(self._show, stats, words)

    def _status(self, line: str) -> None:
        # plain text: the line holds a typed filter and error text, which may hold "[" (markup)
        self.query_one("#kernels-status", Static).update(Text(line))
        if line.startswith("analysis failed"):
            self.ready = True

    def _show(self, stats: pl.DataFrame, words: DeviceWords = GPU_WORDS) -> None:
        self.stats = stats
        self.words = words
        box = self.query_one("#kernels-filter", Input)
        box.placeholder = f"{words.work} name contains… (Enter keeps, Esc clears)"
        self._fill()
        self.ready = True

    def _fill(self) -> None:
        stats = self.stats
        shown = stats
        if self.filter_text and stats.height:
            shown = stats.filter(
                pl.col("name").str.to_lowercase().str.contains(self.filter_text.lower(), literal=True)
            )
        work = self.words.work  # "kernel", or "XLA op" on a JAX run on CPU
        if stats.height == 0:
            why = "no device work was traced" if self.words.kind == NONE else f"no {work}s in this trace"
            self._status(f"No {work} statistics: {why}")
        else:
            filt = f" matching “{self.filter_text}”" if self.filter_text else ""
            self._status(
                f"{fmt_count(shown.height)} of {fmt_count(stats.height)} {work}s{filt} · s sort · "
                "r reverse · / filter · Enter: timeline"
            )
        self.query_one(FrameTable).set_frame(shown, COLUMNS)
        self._show_detail()

    def action_filter(self) -> None:
        """Filter the kernels by name."""
        box = self.query_one("#kernels-filter", Input)
        box.add_class("visible")
        box.value = self.filter_text
        box.focus()

    def action_clear_filter(self) -> None:
        """Show every kernel again."""
        box = self.query_one("#kernels-filter", Input)
        box.value = ""
        box.remove_class("visible")
        self.filter_text = ""
        self._fill()
        self.focus_main()

    @on(Input.Changed, "#kernels-filter")
    def _filter_changed(self, event: Input.Changed) -> None:
        self.filter_text = event.value
        self._fill()

    @on(Input.Submitted, "#kernels-filter")
    def _filter_done(self, event: Input.Submitted) -> None:
        if not event.value:
            self.query_one("#kernels-filter", Input).remove_class("visible")
        self.focus_main()

    @on(DataTable.RowHighlighted, "#kernels-table")
    def _highlighted(self, _event: DataTable.RowHighlighted) -> None:
        self._show_detail()

    def _show_detail(self) -> None:
        row = self.query_one(FrameTable).row_at_cursor()
        detail = self.query_one("#kernels-detail", Static)
        if row is None:
            detail.update("")
            return
        # the distribution columns sit right of the table at 80 columns: repeated here
        stats = " · ".join(
            f"{label} {fmt_ns(row[col])}"
            for col, label in (("mean_ns", "mean"), ("p50_ns", "p50"), ("p95_ns", "p95"), ("max_ns", "max"))
            if row.get(col) is not None
        )
        text = Text(stats + "\n", style="bold") if stats else Text()
        text.append(row["name"])
        detail.update(text)

    @on(FrameTable.Chosen, "#kernels-table")
    def _chosen(self, event: FrameTable.Chosen) -> None:
        if not self.app.goto_timeline(kernel=event.row["name"]):  # type: ignore[attr-defined]
            self.app.notify("the timeline view is not available", severity="warning")
