"""What every view of the trace screen shares: its session and lazy, generation-aware loading."""

from __future__ import annotations

from textual.containers import Vertical

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
