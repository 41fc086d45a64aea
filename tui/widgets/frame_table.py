"""A sortable DataTable over a Polars frame, formatting each column by what its name says.

``*_ns`` columns read as durations, ``*share*``/``*frac*`` as percentages of 1, ``*pct*`` as
percentages, ``*bytes*`` as sizes — unless the caller gives the columns' declared units
(:mod:`profui.analysis.schemas`), which win (``launch_delay`` is ns though its name does not say);
a column declared ``varies`` reads each cell by its row's own ``unit`` column (a finding's
evidence: a time, a share and a count in one column). Sorting re-orders the frame the table shows (``s`` picks the
next column, ``r`` reverses, or click a header); Enter posts :class:`FrameTable.Chosen` with the
row as a dict.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from typing import Any

import polars as pl
from rich.text import Text
from textual.binding import Binding
from textual.message import Message
from textual.widgets import DataTable

from profui.analysis.formatting import (
    elide,
    elide_all,
    fmt_bytes,
    fmt_count,
    fmt_flops,
    fmt_gbps,
    fmt_level,
    fmt_ns,
    fmt_pct,
    fmt_tflops,
)

MAX_TEXT = 70
MIN_TEXT = 20
#: How many columns after a leading text column must stay visible beside it.
KEEP_VISIBLE = 3


def cell_len(cell: Any) -> int:
    """Width of a formatted cell in terminal cells."""
    return cell.cell_len if isinstance(cell, Text) else len(str(cell))


def header_of(col: str, shown: Sequence[str] = ()) -> str:
    """A column header from a column name (``total_ns`` → ``total``, ``algbw_gbps`` → ``algbw``,
    ``launch_count`` → ``launch count``, ``saved_ns_per_step`` → ``saved per step``): the unit
    goes, the cells carry it; a time column beside the column its header would repeat
    (``cause_ns`` beside ``cause``, among ``shown``) is that column's ``time``."""
    name = col.replace("_ns_", "_")
    for suffix in ("_ns", "_gbps"):
        if name.endswith(suffix):
            name = name[: -len(suffix)]
            break
    if name != col and name in shown and col.endswith("_ns"):
        return f"{name.replace('_', ' ')} time"
    return name.replace("_", " ")


#: Declared units (:data:`profui.analysis.schemas.UNITS`) and how a number in that unit reads.
UNIT_FORMAT: dict[str, Callable[[float], str]] = {
    "ns": fmt_ns,
    "ns_float": fmt_ns,
    "fraction": fmt_pct,
    "bytes": fmt_bytes,
    "GB/s": fmt_gbps,
    "count": fmt_count,
    "FLOP": fmt_flops,
    "TFLOP/s": fmt_tflops,
    "FLOP/byte": lambda v: f"{v:.3g}",
    "times": lambda v: f"{v:.2f}×",  # a ratio to a reference (a step's time ÷ its rank's median)
}

#: The declared unit of a column whose rows name their own unit, and the column naming it.
VARIES = "varies"
ROW_UNIT = "unit"


def format_cell(col: str, value: Any, unit: str | None = None) -> Any:
    """One cell as shown, by the column's declared ``unit`` when given, else by its name and the
    value's type."""
    if value is None:
        return Text("-", style="dim")
    if isinstance(value, bool):
        return Text("●" if value else "", style="bold yellow")
    name = col.lower()
    if isinstance(value, (int, float)):
        if isinstance(value, float) and math.isnan(value):
            return Text("-", style="dim")
        if unit in UNIT_FORMAT and not (unit == "count" and isinstance(value, float)):
            text = UNIT_FORMAT[unit](value)
        elif name.endswith("_ns") or name in ("dur", "duration"):
            text = fmt_ns(value)
        elif "share" in name or "frac" in name or name.endswith("ratio"):
            text = fmt_pct(value)
        elif "pct" in name or "percent" in name:
            text = f"{value:.1f}%"
        elif "bytes" in name:
            text = fmt_bytes(value)
        elif isinstance(value, int):
            text = fmt_count(value)
        elif unit == "count":  # a mean or median of a count (queue length): 2.21, not 2.209
            text = fmt_level(value)
        else:
            text = f"{value:.4g}"
        return Text(text, justify="right")
    if isinstance(value, (list, tuple, dict)):
        value = ", ".join(map(str, value)) if not isinstance(value, dict) else str(value)
    s = str(value)
    return s if len(s) <= MAX_TEXT else elide(s, MAX_TEXT)


class FrameTable(DataTable):
    """A DataTable showing a Polars frame; sortable by keys."""

    BINDINGS = [
        Binding("s", "sort_next", "Sort"),
        Binding("r", "sort_reverse", "Reverse"),
    ]

    class Chosen(Message):
        """Enter on a row: ``row`` holds the frame's values of that row."""

        def __init__(self, table: FrameTable, row: dict[str, Any]) -> None:
            super().__init__()
            self.table = table
            self.row = row

        @property
        def control(self) -> FrameTable:
            """The table the row was chosen in (lets ``@on(..., "#id")`` match)."""
            return self.table

    def __init__(self, id: str | None = None, sort_by: str | None = None, descending: bool = True) -> None:
        super().__init__(id=id, cursor_type="row", zebra_stripes=True)
        self.frame = pl.DataFrame()
        self.columns_shown: list[str] = []
        self.sort_by = sort_by
        self.descending = descending
        self.units: dict[str, str] = {}

    def set_frame(
        self, frame: pl.DataFrame, columns: list[str] | None = None, units: dict[str, str] | None = None
    ) -> None:
        """Show ``frame`` (only ``columns`` when given, in that order; ``units``: declared units
        by column, which decide how a number reads)."""
        self.columns_shown = [c for c in (columns or frame.columns) if c in frame.columns]
        self.frame = frame
        self.units = dict(units or {})
        if self.sort_by not in self.columns_shown:
            self.sort_by = None
        self._fill()

    def shown_frame(self) -> pl.DataFrame:
        """The frame in the order the table shows it."""
        if self.sort_by is None or self.frame.is_empty():
            return self.frame
        return self.frame.sort(self.sort_by, descending=self.descending, nulls_last=True, maintain_order=True)

    def _text_budget(self, widths: list[int]) -> int:
        """Width for a leading text column (kernel names run to hundreds of characters) that
        leaves the next few columns on screen in the terminal at hand."""
        available = self.size.width or (self.app.size.width if self.is_attached else 80)
        pad = 2 * self.cell_padding
        rest = sum(w + pad for w in widths[1 : 1 + KEEP_VISIBLE])
        return max(MIN_TEXT, min(MAX_TEXT, available - rest - pad - 2))

    def _whole_columns(
        self, widths: list[int], elided: bool, n_rows: int, text: list[bool], least: list[int]
    ) -> None:
        """Let no column straddle the right edge of the screen: a cell cut there reads as
        another number ("27" of "27.3 µs"), or a name as another name. A text column there is
        narrowed to what shows (its cells elided in the middle, down to ``least``); else a
        leading text column already ``elided`` gives the room when it can, else the column
        before widens so the next one starts past the edge (scrolling right shows it whole)."""
        if not self.size.width:
            return  # not laid out yet: on_resize fills again at the real width
        pad = 2 * self.cell_padding
        scrollbar = self.styles.scrollbar_size_vertical if n_rows + 1 > self.size.height else 0
        available = self.size.width - scrollbar
        x = 0
        for k, w in enumerate(widths):
            # whole when its cells are: the padding after the last one may fall off the edge
            end = x + self.cell_padding + w
            if end <= available:
                x += w + pad
                continue
            shown, hidden = available - x, end - available
            if k == 0 or shown <= 0:
                return
            if text[k] and w - hidden >= least[k]:
                widths[k] -= hidden
            elif elided and widths[0] - hidden >= MIN_TEXT:
                widths[0] -= hidden
            else:
                widths[k - 1] += shown
            return

    def _row_units(self) -> list[list[str | None]]:
        """Each shown row's unit per shown column: the declared one, or for a ``varies`` column
        the row's ``unit`` value."""
        declared = [self.units.get(c) for c in self.columns_shown]
        if VARIES not in declared or ROW_UNIT not in self._shown.columns:
            return [declared] * self._shown.height
        return [
            [unit if d == VARIES else d for d in declared]
            for unit in self._shown.get_column(ROW_UNIT).to_list()
        ]

    def _fill(self) -> None:
        cursor = self.cursor_row
        self.clear(columns=True)
        self._shown = self.shown_frame()
        rows = [
            [format_cell(c, v, u) for c, v, u in zip(self.columns_shown, row, units, strict=True)]
            for row, units in zip(
                self._shown.select(self.columns_shown).iter_rows(), self._row_units(), strict=True
            )
        ]
        headers = []
        widths = []
        for i, col in enumerate(self.columns_shown):
            mark = ""
            if col == self.sort_by:
                mark = " ▼" if self.descending else " ▲"
            headers.append(header_of(col, self.columns_shown) + mark)
            # explicit widths: the table reads the same however often and whenever it is refilled
            widths.append(min(MAX_TEXT, max([len(headers[-1]), *(cell_len(r[i]) for r in rows)])))
        natural = list(widths)
        text = [bool(rows) and isinstance(rows[0][i], str) for i in range(len(widths))]
        # a view with nothing to show sets an empty frame: no columns, no first column to fit
        lead = bool(text) and text[0]
        if lead and len(widths) > 1:
            widths[0] = min(widths[0], self._text_budget(widths))
        least = [max(MIN_TEXT // 2, len(h)) for h in headers]
        self._whole_columns(widths, lead and widths[0] < natural[0], len(rows), text, least)
        for i, col in enumerate(self.columns_shown):
            if text[i] and widths[i] < natural[i]:
                names = [str(v) for v in self._shown.get_column(col)]
                # kernel names are made bare first; other text (ATen ops, nodes) keeps its words
                bare = col == "name" or "kernel" in col
                for r, cut in zip(rows, elide_all(names, widths[i], bare=bare), strict=True):
                    r[i] = cut
        self._fill_width = self.size.width
        for col, header, width in zip(self.columns_shown, headers, widths, strict=True):
            self.add_column(header, key=col, width=width)
        for i, cells in enumerate(rows):
            self.add_row(*cells, key=str(i))
        if self.row_count:
            self.move_cursor(row=min(cursor, self.row_count - 1))

    def on_resize(self) -> None:
        if self.columns_shown and self.size.width != getattr(self, "_fill_width", None):
            self._fill()

    def action_sort_next(self) -> None:
        """Sort by the next column (descending first)."""
        if not self.columns_shown:
            return
        i = self.columns_shown.index(self.sort_by) + 1 if self.sort_by in self.columns_shown else 0
        self.sort_by = self.columns_shown[i % len(self.columns_shown)]
        self.descending = True
        self._fill()

    def action_sort_reverse(self) -> None:
        """Reverse the order."""
        if self.sort_by is None and self.columns_shown:
            self.sort_by = self.columns_shown[0]
        self.descending = not self.descending
        self._fill()

    def on_data_table_header_selected(self, event: DataTable.HeaderSelected) -> None:
        col = str(event.column_key.value)
        if col == self.sort_by:
            self.descending = not self.descending
        else:
            self.sort_by, self.descending = col, True
        self._fill()
        event.stop()

    def row_at_cursor(self) -> dict[str, Any] | None:
        """The frame row under the cursor (all columns, shown or not)."""
        if not self.row_count:
            return None
        return self._shown.row(self.cursor_row, named=True)

    def on_data_table_row_selected(self, event: DataTable.RowSelected) -> None:
        event.stop()
        row = self.row_at_cursor()
        if row is not None:
            self.post_message(self.Chosen(self, row))
