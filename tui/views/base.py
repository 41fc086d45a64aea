"""What every view of the trace screen shares: its session and lazy, generation-aware loading."""

from __future__ import annotations

from typing import TYPE_CHECKING

from textual.containers import Vertical

from profui.capture.format import TraceFormatError

from .session import TraceSession

if TYPE_CHECKING:
    from profui.analysis.pipeline.result import Result


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

    def stage_result(self, stages: tuple[str, ...]) -> Result:
        """The typed result of the pipeline's ``stages`` for this view's trace (the session's
        answers: cached, recorded or computed in memory)."""
        return self.session.stage_outputs(stages)

    def focus_main(self) -> None:
        """Give focus to the view's main widget."""
        self.focus()

    def ended_on_bad_input(self, exc: BaseException) -> bool:
        """From a worker thread: when ``exc`` is bad input (a trace file the analysis cannot
        read), end the app with its one line and exit status 2, as every command says bad input,
        and return True; any other failure stays the view's to show (False)."""
        if not isinstance(exc, TraceFormatError):
            return False
        self.app.call_from_thread(self.app.exit, str(exc), 2)
        return True
