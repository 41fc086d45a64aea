"""``profui open --diff BASE NEW``: the diff of two runs, and both timelines at a kernel.

The app shows :func:`profui.analysis.diff.diff`'s result (the one ``profui diff --json``
prints): the changed headline numbers with their takeaways, regressions first, then kernels and
host ops by change. Enter on a kernel opens both traces' timelines at that kernel, one above the
other.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from textual.app import App, ComposeResult
from textual.binding import Binding
from textual.containers import Vertical
from textual.screen import Screen
from textual.widgets import DataTable, Static

from profui.analysis.diff import (
    change_text,
    finding_sentence,
    head_lines,
    per_step_text,
    sentence,
    status_tag,
    value_text,
)
from profui.analysis.formatting import elide, fmt_ns, fmt_signed_ns

from ..widgets.keyline import KeyLine


def headline_rows(result: dict[str, Any]) -> list[tuple[str, str, str, str, str]]:
    """``(metric, base, new, change, takeaway)``: what the runs ran on where it differs (GPU,
    precision, world size, CUDA graphs), then each finding that changed beyond step-to-step noise
    (its recoverable time per step), then each changed headline number, in order."""
    out = [
        (
            c["label"],
            c["base"],
            c["new"],
            "changed",
            f"{c['label'][:1].upper()}{c['label'][1:]} changed from {c['base']} to {c['new']}:"
            " the numbers below compare different setups.",
        )
        for c in result.get("setup", [])
    ]
    out += [
        (
            f"finding: {f['label']}",
            per_step_text(f["base_ns_per_step"]),
            per_step_text(f["new_ns_per_step"]),
            fmt_signed_ns(f["delta_ns_per_step"]),
            finding_sentence(f),
        )
        for f in result.get("findings", [])
        if f["material"]
    ]
    for name in result["headline"]:
        m = result["metrics"][name]
        out.append(
            (
                m["label"],
                value_text(m["base"], m["unit"]),
                value_text(m["new"], m["unit"]),
                change_text(m),
                sentence(m),
            )
        )
    return out


class TimelinesScreen(Screen[None]):
    """Both traces' timelines at one kernel, the base above the new."""

    # priority: the timeline's own Escape clears its selection, and would keep the user here
    BINDINGS = [
        Binding("escape", "app.pop_screen", "Back to the diff", priority=True),
        Binding("tab", "focus_next", "Other timeline"),
    ]
    DEFAULT_CSS = """
    TimelinesScreen .diff-tl-title { height: 1; padding: 0 1; background: $panel; }
    TimelinesScreen TimelineView { height: 1fr; }
    """

    def __init__(self, sides: list[tuple[str, Path | None, str | None]]) -> None:
        super().__init__()
        self.sides = sides  # (label, trace folder or None when gone, kernel name as that trace spells it)

    def compose(self) -> ComposeResult:
        from ..timeline.view import TimelineView
        from ..views.session import TraceSession

        for i, (label, path, kernel) in enumerate(self.sides):
            if path is None:
                yield Static(
                    f"{label}: its trace folder is gone (a saved baseline): no timeline",
                    classes="diff-tl-title",
                )
                continue
            yield Static(
                f"{label}: {elide(kernel, 60) if kernel else 'kernel not in this trace'}",
                classes="diff-tl-title",
            )
            yield TimelineView(TraceSession(path), id=f"diff-tl-{i}")
        yield KeyLine()

    def on_mount(self) -> None:
        from ..timeline.view import TimelineView

        shown = [side for side in self.sides if side[1] is not None]
        views = list(self.query(TimelineView))
        for view, (_label, _path, kernel) in zip(views, shown, strict=True):
            view.load()
            if kernel:
                view.goto(kernel=kernel)
        if views:
            views[0].focus_main()


class DiffApp(App[str | None]):
    """The diff of two traces (folders), keyboard first."""

    ENABLE_COMMAND_PALETTE = False
    TITLE = "profui diff"
    BINDINGS = [
        Binding("q", "quit", "Quit"),
        Binding("tab", "focus_next", "Next table"),
        Binding("enter", "noop", "Both timelines (kernel rows)", show=True, priority=False),
        Binding("question_mark", "help", "Keys"),
    ]

    def action_noop(self) -> None:
        """Enter is the tables' own key (a selected row); listed so the key line names it."""

    def action_help(self) -> None:
        """``?``: every key of the screen, as in ``profui open``."""
        from .help import toggle_help

        toggle_help(self)

    CSS = """
    #diff-head { height: auto; padding: 0 1; }
    .diff-title { height: 1; padding: 0 1; background: $panel; }
    #diff-headline { height: auto; max-height: 35%; }
    #diff-takeaway { height: 2; padding: 0 1; }
    #diff-kernels { height: 1fr; }
    """

    def __init__(self, base: Path | None, new: Path, result: dict[str, Any]) -> None:
        super().__init__()
        self.base, self.new, self.result = base, new, result
        self._kernel_rows: list[dict[str, Any]] = []
        self._takeaways: list[str] = []

    def compose(self) -> ComposeResult:
        head = head_lines(self.result, setup=False)  # the setup leads the table below
        with Vertical():
            yield Static("\n".join(head), id="diff-head")
            yield Static("What changed (setup, findings, then regressions first)", classes="diff-title")
            yield DataTable(id="diff-headline", cursor_type="row", zebra_stripes=False)
            yield Static("", id="diff-takeaway")
            yield Static(
                "Kernels, host ops and runtime calls by change · Enter: both timelines at the kernel",
                classes="diff-title",
            )
            yield DataTable(id="diff-kernels", cursor_type="row")
        yield KeyLine()

    def on_mount(self) -> None:
        headline = self.query_one("#diff-headline", DataTable)
        headline.add_columns("metric", "base", "new", "change")
        rows = headline_rows(self.result)
        for row in rows or [("no significant change", "", "", "", "")]:
            headline.add_row(*row[:4])
        self._takeaways = [row[4] for row in rows]
        self._show_takeaway(0)
        kernels = self.query_one("#diff-kernels", DataTable)
        kernels.add_columns("change", "base", "new", "count", "name")
        self._kernel_rows = [dict(r, kind="kernel") for r in self.result["kernels"]]
        self._kernel_rows += [dict(r, kind="op") for r in self.result.get("ops", [])]
        self._kernel_rows += [dict(r, kind="call") for r in self.result.get("runtime", [])]
        for r in self._kernel_rows:
            kernels.add_row(
                fmt_signed_ns(r["delta_ns"]),
                fmt_ns(r["base_total_ns"]),
                fmt_ns(r["new_total_ns"]),
                f"{r['base_count']:,}→{r['new_count']:,}",
                # the mark first: a long name cut at the screen's edge must not take it along
                (status_tag(r).strip() + " " if status_tag(r) else "")
                + {"op": "op ", "call": "call "}.get(r["kind"], "")
                + elide(r["name"], 60),
            )
        (kernels if not rows else headline).focus()

    def _show_takeaway(self, i: int) -> None:
        text = self._takeaways[i] if 0 <= i < len(self._takeaways) else ""
        self.query_one("#diff-takeaway", Static).update(f"→ {text}" if text else "")

    def on_data_table_row_highlighted(self, event: DataTable.RowHighlighted) -> None:
        if event.data_table.id == "diff-headline":
            self._show_takeaway(event.cursor_row)

    def on_data_table_row_selected(self, event: DataTable.RowSelected) -> None:
        if event.data_table.id != "diff-kernels" or not self._kernel_rows:
            return
        row = self._kernel_rows[event.cursor_row]
        if row["kind"] != "kernel":
            what = "host ops" if row["kind"] == "op" else "runtime calls"
            self.notify(f"{what} have no kernel to show: pick a kernel row", severity="warning")
            return
        self.open_timelines(row)

    def open_timelines(self, row: dict[str, Any]) -> None:
        """Push both timelines at ``row``'s kernel (a row of the result's ``kernels``)."""
        self.push_screen(
            TimelinesScreen(
                [
                    (f"base {Path(self.result['base']['path']).name}", self.base, row.get("base_example")),
                    (f"new {Path(self.result['new']['path']).name}", self.new, row.get("new_example")),
                ]
            )
        )
