"""What the analysis views (Communication, Launches, Idle, Sync) share: a few tables from one
stage's outputs, shown one at a time under the stage's takeaway.

A view declares its stage, its takeaway id, what it says when the trace has nothing to show,
and :func:`sections`-style builders from stage outputs to :class:`Section` (a declared table,
the columns to show, and the column naming a kernel, if any). Numbers are never computed here:
each section shows a stage output frame as the schema declares it, and each cell reads by the
column's declared unit (:mod:`profui.analysis.schemas`).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import polars as pl
from textual import on, work
from textual.app import ComposeResult
from textual.binding import Binding
from textual.widgets import Static

from profui.analysis import schemas
from profui.analysis.formatting import plural
from profui.analysis.pipeline.result import Result
from profui.analysis.top_n import TOP_N

from ..widgets.frame_table import FrameTable
from . import dashboard_charts as dc
from .base import TraceView


@dataclass(frozen=True)
class Section:
    """One table of a view: its title, the stage output it shows (``stage``, ``file``), the
    rows (that output, or a selection of its rows), the columns shown and the column whose
    value names a kernel (Enter opens the timeline at it)."""

    title: str
    stage: str
    file: str
    frame: pl.DataFrame
    columns: list[str]
    sort_by: str | None = None
    kernel: str | None = None
    note: str = ""
    #: The column whose value names a host op (Enter: the timeline at its calls).
    op: str | None = None

    @property
    def units(self) -> dict[str, str]:
        """The declared unit of each column (how its numbers read)."""
        return {c.name: c.unit for c in schemas.table(self.stage, self.file).columns}

    @property
    def shown(self) -> list[str]:
        """The columns shown that the frame has (a variant may lack an optional one)."""
        return [c for c in self.columns if c in self.frame.columns]


def top_n(result: Result) -> int:
    """The rows the summary keeps of its top-N tables (its ``top_n`` parameter)."""
    return (result.summary.summary.top_n if result.ran("summary") else 0) or TOP_N


class SectionsView(TraceView):
    """A view of one stage's tables: ``]``/``[`` switch tables, ``s``/``r`` sort, Enter on a
    kernel opens the timeline. Subclasses set :attr:`TITLE`, :attr:`TAKEAWAY`, and implement
    :meth:`sections` and :meth:`empty`."""

    TITLE = ""
    #: The stage whose tables the view shows.
    STAGE = ""
    #: The summary stage's takeaway id (``profui.analysis.takeaways.CHARTS``).
    TAKEAWAY = ""

    BINDINGS = [
        Binding("right_square_bracket", "next_section", "Next table"),
        Binding("left_square_bracket", "previous_section", "Prev table"),
    ]

    DEFAULT_CSS = """
    SectionsView .view-status { height: auto; max-height: 3; padding: 0 1; color: $text-muted; }
    SectionsView .view-takeaway { height: auto; max-height: 4; padding: 0 1; text-style: bold; }
    SectionsView .section-title { height: auto; max-height: 2; padding: 0 1; color: $accent; }
    SectionsView FrameTable { height: 1fr; }
    """

    def __init__(self, session, id: str | None = None) -> None:
        super().__init__(session, id=id)
        self.result = Result({}, "")
        self.all_sections: list[Section] = []
        self.index = 0
        self._pending_moves = 0

    def sections(self, result: Result) -> list[Section]:
        """The view's tables from the stage's outputs."""
        return []

    def empty(self, result: Result) -> str:
        """The line shown when the trace has nothing for this view ("" when it has)."""
        return ""

    def compose(self) -> ComposeResult:
        yield Static(f"loading {self.TITLE.lower()}…", classes="view-status")
        yield Static("", classes="view-takeaway")
        yield Static("", classes="section-title")
        yield FrameTable()

    def focus_main(self) -> None:
        self.query_one(FrameTable).focus()

    def load(self) -> None:
        self._load()

    @work(thread=True, exclusive=True)
    def _load(self) -> None:
        try:
            result = self.stage_result(dc.STAGES)
        except Exception as exc:
            if self.ended_on_bad_input(exc):
                return
            self.app.call_from_thread(self._failed, f"analysis failed: {type(exc).__name__}: {exc}")
            return
        if not result.ran(self.STAGE):  # its stage failed in the recorded run (which said why)
            self.app.call_from_thread(self._failed, f"the {self.STAGE} stage has no outputs: see profui runs")
            return
        self.app.call_from_thread(self._show, result)

    def _failed(self, line: str) -> None:
        self.query_one(".view-status", Static).update(line)
        self.ready = True

    def _show(self, result: Result) -> None:
        self.result = result
        self.all_sections = self.sections(result)
        self.index = min(self.index, max(len(self.all_sections) - 1, 0))
        if self.all_sections:
            self.index = (self.index + self._pending_moves) % len(self.all_sections)
        self._pending_moves = 0
        self.query_one(".view-takeaway", Static).update(dc.takeaway(self.TAKEAWAY, result))
        self._fill()
        self.ready = True

    @property
    def section(self) -> Section | None:
        """The table on screen."""
        return self.all_sections[self.index] if self.all_sections else None

    def _fill(self) -> None:
        status = self.query_one(".view-status", Static)
        title = self.query_one(".section-title", Static)
        table = self.query_one(FrameTable)
        empty = self.empty(self.result)
        sec = self.section
        if empty or sec is None:
            status.update(empty or f"No {self.TITLE.lower()} data in this trace.")
            # the empty line says it; the takeaway would repeat it
            self.query_one(".view-takeaway", Static).update("")
            title.update("")
            table.set_frame(pl.DataFrame())
            return
        keys = "] [ tables · s sort · r reverse" + (" · Enter: timeline" if sec.kernel or sec.op else "")
        status.update(f"{self.TITLE} · table {self.index + 1} of {len(self.all_sections)} · {keys}")
        rows = plural(sec.frame.height, "row")
        title.update(f"{sec.title} · {rows}" + (f" · {sec.note}" if sec.note else ""))
        table.sort_by = sec.sort_by
        table.descending = True
        table.set_frame(sec.frame, sec.shown, sec.units)

    def action_next_section(self) -> None:
        """Show the next table."""
        self._move(1)

    def action_previous_section(self) -> None:
        """Show the previous table."""
        self._move(-1)

    def _move(self, step: int) -> None:
        if not self.all_sections:
            # typed while the tables load (first entering the view): kept, applied once shown
            if not self.ready:
                self._pending_moves += step
            return
        self.index = (self.index + step) % len(self.all_sections)
        self._fill()

    @on(FrameTable.Chosen)
    def _chosen(self, event: FrameTable.Chosen) -> None:
        sec = self.section
        if sec is None:
            return
        kernel: Any = event.row.get(sec.kernel) if sec.kernel else None
        op: Any = event.row.get(sec.op) if sec.op else None
        if not (kernel or op):
            return
        where = {"kernel": kernel} if kernel else {"op": op}
        if not self.app.goto_timeline(**where):  # type: ignore[attr-defined]
            self.app.notify("the timeline view is not available", severity="warning")
