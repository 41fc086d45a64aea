"""The jobs screen: every trace under a folder, newest first; sortable, filterable, Enter opens.

Shows the catalogue of :mod:`profui.analysis.catalog` (read in a worker so a folder of many
traces never freezes the screen).
"""

from __future__ import annotations

from datetime import date
from pathlib import Path

from rich.text import Text
from textual import on, work
from textual.app import ComposeResult
from textual.binding import Binding
from textual.coordinate import Coordinate
from textual.screen import Screen
from textual.widgets import DataTable, Input, Static

from profui.analysis import catalog
from profui.analysis.catalog import JobRow
from profui.analysis.formatting import elide_all, fmt_bytes, fmt_epoch, fmt_ns
from profui.capture.format import TraceFormatError, read_manifest

from ..widgets.keyline import KeyLine
from .status import STATUS_STYLE

#: (column key, header, sort key)
COLUMNS: list[tuple[str, str]] = [
    ("name", "Name"),
    ("created", "Created"),
    ("status", "Status"),
    ("duration", "Duration"),
    ("nodes", "Nodes"),
    ("gpus", "GPUs"),
    ("size", "Size"),
]

_SORT_KEYS = {
    "name": lambda r: r.name.lower(),
    "created": lambda r: r.created_ns or 0,
    "status": lambda r: r.status,
    "duration": lambda r: r.duration_ns or 0,
    "nodes": lambda r: r.nodes,
    "gpus": lambda r: r.gpus,
    "size": lambda r: r.size_bytes,
}


def import_notes(rows: list[JobRow]) -> list[str]:
    """What the imports listed say of themselves (:meth:`Manifest.source_notes`: their sources'
    notes, then the files of the folder they skipped, with why), once each; the notes of traces
    ``profcap`` wrote are the dashboard's to show."""
    notes: list[str] = []
    for r in rows:
        try:
            manifest = read_manifest(r.path)
        except TraceFormatError:  # the row says what is wrong with it
            continue
        if manifest.status == "imported":
            notes += [n for n in manifest.source_notes() if n not in notes]
    return notes


class JobsScreen(Screen):
    """The list of traces in a folder."""

    BINDINGS = [
        Binding("enter", "open_job", "Open"),
        Binding("slash", "filter", "Filter"),
        Binding("s", "sort_next", "Sort"),
        Binding("r", "sort_reverse", "Reverse"),
        Binding("f5", "rescan", "Rescan"),
        Binding("escape", "clear_filter", "Clear filter", show=False),
    ]

    DEFAULT_CSS = """
    JobsScreen #jobs-title { height: 1; padding: 0 1; background: $panel; text-style: bold; }
    JobsScreen #jobs-filter { dock: bottom; display: none; }
    JobsScreen #jobs-filter.visible { display: block; }
    JobsScreen DataTable { height: 1fr; }
    JobsScreen #jobs-status { height: auto; max-height: 3; padding: 0 1; }
    JobsScreen #jobs-notes { height: auto; max-height: 4; padding: 0 1; display: none; }
    """

    def __init__(self, root: Path, refresh_s: float = 5.0, label: str | None = None) -> None:
        super().__init__()
        self.root = root
        self.label = label  # what the traces are of, when root is the import cache
        self.refresh_s = refresh_s
        self.rows: list[JobRow] = []
        self.filter_text = ""
        self.sort_column = "created"
        self.sort_reverse = True
        self._elided: dict[str, str] = {}  # row key -> full name, where the table elides it

    def compose(self) -> ComposeResult:
        title = f"jobs in {self.label}" if self.label else f"traces in {self.root}"
        yield Static(f"profui · {title}", id="jobs-title")
        yield Static("", id="jobs-notes")
        table: DataTable = DataTable(id="jobs-table", cursor_type="row", zebra_stripes=True)
        for key, header in COLUMNS:
            table.add_column(header, key=key)
        yield table
        yield Static("scanning…", id="jobs-status")
        yield Input(placeholder="filter by name (Enter to keep, Esc to clear)", id="jobs-filter")
        yield KeyLine()

    def on_mount(self) -> None:
        self.query_one(DataTable).focus()
        self.action_rescan()

    def action_rescan(self) -> None:
        """Read the folder again (status of running jobs changes)."""
        self._scan()

    @work(thread=True, exclusive=True, group="jobs-scan")
    def _scan(self) -> None:
        rows = catalog.scan_jobs(self.root)
        self.app.call_from_thread(self._set_rows, rows, import_notes(rows))

    def _set_rows(self, rows: list[JobRow], notes: list[str] | None = None) -> None:
        self.rows = rows
        box = self.query_one("#jobs-notes", Static)
        box.update(Text("\n".join(f"note: {n}" for n in notes or []), no_wrap=True, overflow="ellipsis"))
        box.display = bool(notes)
        self._fill()
        if any(r.status == "running" for r in rows):  # keep running jobs' status and duration fresh
            self.set_timer(self.refresh_s, self.action_rescan, name="jobs-rescan")

    def visible_rows(self) -> list[JobRow]:
        """The rows the table shows now: filtered by name, in the chosen order."""
        needle = self.filter_text.lower()
        rows = [r for r in self.rows if needle in r.name.lower()]
        rows.sort(key=_SORT_KEYS[self.sort_column], reverse=self.sort_reverse)
        return rows

    def _fill(self) -> None:
        table = self.query_one(DataTable)
        keep = None
        if table.row_count:
            keep = table.coordinate_to_cell_key(Coordinate(table.cursor_row, 0)).row_key.value
        table.clear()
        rows = self.visible_rows()
        year = str(date.today().year)
        with_year = any(not fmt_epoch(r.created_ns).startswith(year) for r in rows)
        cells = [
            [
                fmt_epoch(r.created_ns) if with_year else fmt_epoch(r.created_ns)[5:],
                Text(r.status, STATUS_STYLE.get(r.status, "")),
                fmt_ns(r.duration_ns),
                str(r.nodes),
                str(r.gpus),
                fmt_bytes(r.size_bytes),
            ]
            for r in rows
        ]
        # the name gets what the other columns leave (each as wide as its widest cell, 2 cells
        # of padding): long names are cut around "…" (head and tail stay), distinct ones kept
        # distinct, so every column stays on screen; the highlighted one is whole below
        others = sum(
            2 + max([len(header), *(len(str(c[i])) for c in cells)])
            for i, (_, header) in enumerate(COLUMNS[1:])
        )
        scrollbar = 2 if len(rows) + 1 > table.size.height else 0
        width = max(16, (table.size.width or self.size.width or 80) - scrollbar - others - 2)
        names = elide_all([r.name for r in rows], width, bare=False)  # trace names, not kernels
        self._elided = {str(r.path): r.name for r, name in zip(rows, names, strict=True) if name != r.name}
        for r, name, row in zip(rows, names, cells, strict=True):
            table.add_row(name, *row, key=str(r.path))
        keys = [str(r.path) for r in self.visible_rows()]
        if keep in keys:
            table.move_cursor(row=keys.index(keep))
        self._status()

    def _status(self) -> None:
        table = self.query_one(DataTable)
        arrow = "↓" if self.sort_reverse else "↑"
        shown = table.row_count
        filt = f" · filter “{self.filter_text}”" if self.filter_text else ""
        line = f"{shown} of {len(self.rows)} traces · sorted by {self.sort_column} {arrow}{filt}"
        if shown:
            key = table.coordinate_to_cell_key(Coordinate(table.cursor_row, 0)).row_key.value
            if key in self._elided:  # on its own line: the whole name, however long
                line += f"\n{self._elided[key]}"
        self.query_one("#jobs-status", Static).update(Text(line))  # plain text: a typed "[" is no markup

    @on(DataTable.RowHighlighted)
    def _highlighted(self, _event: DataTable.RowHighlighted) -> None:
        self._status()

    def action_sort_next(self) -> None:
        """Sort by the next column."""
        keys = [k for k, _ in COLUMNS]
        self.sort_column = keys[(keys.index(self.sort_column) + 1) % len(keys)]
        self._fill()

    def action_sort_reverse(self) -> None:
        """Reverse the order."""
        self.sort_reverse = not self.sort_reverse
        self._fill()

    @on(DataTable.HeaderSelected)
    def _header(self, event: DataTable.HeaderSelected) -> None:
        key = str(event.column_key.value)
        if key == self.sort_column:
            self.sort_reverse = not self.sort_reverse
        else:
            self.sort_column = key
        self._fill()

    def action_filter(self) -> None:
        """Show the name filter."""
        box = self.query_one("#jobs-filter", Input)
        box.add_class("visible")
        box.value = self.filter_text
        box.focus()

    def action_clear_filter(self) -> None:
        """Drop the filter."""
        box = self.query_one("#jobs-filter", Input)
        box.value = ""
        box.remove_class("visible")
        self.filter_text = ""
        self._fill()
        self.query_one(DataTable).focus()

    @on(Input.Changed, "#jobs-filter")
    def _filter_changed(self, event: Input.Changed) -> None:
        self.filter_text = event.value
        self._fill()

    @on(Input.Submitted, "#jobs-filter")
    def _filter_done(self, event: Input.Submitted) -> None:
        box = self.query_one("#jobs-filter", Input)
        if not box.value:
            box.remove_class("visible")
        self.query_one(DataTable).focus()

    @on(DataTable.RowSelected)
    def _row_selected(self, event: DataTable.RowSelected) -> None:
        self._open(Path(str(event.row_key.value)))

    def action_open_job(self) -> None:
        """Open the trace under the cursor."""
        table = self.query_one(DataTable)
        if table.row_count == 0:
            return
        key = table.coordinate_to_cell_key(Coordinate(table.cursor_row, 0)).row_key
        self._open(Path(str(key.value)))

    def _open(self, path: Path) -> None:
        self.app.open_trace(path)  # type: ignore[attr-defined]
