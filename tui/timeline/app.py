"""A small app showing only the timeline of one trace (for tests and ``python -m profui.tui.timeline``)."""

from __future__ import annotations

import sys
from pathlib import Path

from textual.app import App, ComposeResult
from textual.binding import Binding

from ..views.session import TraceSession
from ..widgets.keyline import KeyLine
from .view import TimelineView


class TimelineApp(App[None]):
    """The Timeline view alone, full screen."""

    ENABLE_COMMAND_PALETTE = False
    BINDINGS = [Binding("q", "quit", "Quit")]

    def __init__(self, path: str | Path) -> None:
        super().__init__()
        self.session = TraceSession(Path(path))

    def compose(self) -> ComposeResult:
        yield TimelineView(self.session, id="timeline")
        yield KeyLine()

    def on_mount(self) -> None:
        view = self.query_one(TimelineView)
        view.load()
        view.focus_main()

    def goto_timeline(self, **where) -> bool:
        """Same hook as the full app's: move the timeline to a kernel or step."""
        self.query_one(TimelineView).goto(**where)
        return True


def main(argv: list[str] | None = None) -> None:
    """``python -m profui.tui.timeline TRACE``."""
    args = sys.argv[1:] if argv is None else argv
    if len(args) != 1:
        print("usage: python -m profui.tui.timeline TRACE_DIR", file=sys.stderr)
        raise SystemExit(2)
    TimelineApp(args[0]).run()
