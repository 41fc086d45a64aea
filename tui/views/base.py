"""What every view of the trace screen shares: its session and lazy, generation-aware loading."""

from __future__ import annotations

from textual.containers import Vertical
from textual.widgets import Static

from .session import TraceSession


class TraceView(Vertical):
    """Base of the trace screen's views. Subclasses override :meth:`load` (start a worker)."""

    DEFAULT_CSS = """
    TraceView { height: 1fr; }
    """

    def __init__(self, session: TraceSession, id: str | None = None) -> None:
        super().__init__(id=id)
        self.session = session
        self.loaded_generation = -1
        #: True once the view shows everything it loads (tests and the benchmark wait on it).
        self.ready = False

    def ensure_loaded(self) -> None:
        """Load once per session generation (first show, and after a live trace changed)."""
        if self.loaded_generation != self.session.generation:
            self.loaded_generation = self.session.generation
            self.ready = False
            self.load()

    def load(self) -> None:
        """Start computing what the view shows (in a worker)."""

    def focus_main(self) -> None:
        """Give focus to the view's main widget."""
        self.focus()


class UnavailableView(TraceView):
    """Stands in for a registered view whose module is missing or failed to import."""

    def __init__(self, session: TraceSession, title: str, reason: str, id: str | None = None) -> None:
        super().__init__(session, id=id)
        self.title = title
        self.reason = reason

    def compose(self):
        yield Static(f"{self.title} is not available: {self.reason}", classes="unavailable")
