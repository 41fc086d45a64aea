"""The profui Textual app: jobs list → trace screen with its views (Dashboard, Kernels, Steps,
Runs, Timeline, Communication, Launches, Idle, Sync, Findings).

Views are registered in :data:`VIEWS`, one entry each. The dashboard is imported with the app;
every other view's module is imported when the view is first shown (the timeline alone brings
numpy and the level-of-detail index, which a dashboard-only open should not pay for). Nothing
catches those imports: a broken view fails loudly the moment it is opened, and
``tests/tui/test_views_registered.py`` imports every one. A view class is built as ``View(session, id=<name>)`` (``session`` is a
:class:`~profui.tui.views.session.TraceSession`); it may define ``load()`` (called when it is
first shown and after a live trace changes) and ``goto(**where)`` (used by
:meth:`ProfuiApp.goto_view`, e.g. the timeline's ``goto(kernel=..., step=...)``).
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from rich.segment import Segment
from rich.style import Style
from textual.app import App
from textual.binding import Binding
from textual.filter import LineFilter

from .views.dashboard import DashboardView


@dataclass(frozen=True)
class ViewSpec:
    """One view of an opened trace: its id, tab title, key, and the view class to build."""

    name: str
    title: str
    key: str
    #: The view class, or where it lives (``"views.kernels:KernelsView"``, under ``profui.tui``).
    cls: type | str
    short: str = ""  # the tab's title where the full titles would not fit (default: title)

    def view_class(self) -> type:
        """The view class (its module imported now, once, where ``cls`` says where it lives)."""
        if isinstance(self.cls, type):
            return self.cls
        module, _, name = self.cls.partition(":")
        return getattr(importlib.import_module(f"profui.tui.{module}"), name)


#: The views of the trace screen, in tab order. Adding a view = adding one entry here.
VIEWS: list[ViewSpec] = [
    ViewSpec("dashboard", "Dashboard", "1", DashboardView, short="Dash"),
    ViewSpec("kernels", "Kernels", "2", "views.kernels:KernelsView"),
    ViewSpec("steps", "Steps", "3", "views.steps:StepsView"),
    ViewSpec("runs", "Runs", "4", "views.runs:RunsView"),
    ViewSpec("timeline", "Timeline", "5", "timeline:TimelineView", short="Time"),
    ViewSpec("comm", "Comm", "6", "views.communication:CommunicationView"),
    ViewSpec("launches", "Launch", "7", "views.launches:LaunchesView"),
    ViewSpec("idle", "Idle", "8", "views.idle:IdleView"),
    ViewSpec("sync", "Sync", "9", "views.sync:SyncView"),
    # a letter: the timeline's 0 fits the trace, and a view key not yet shown is taken first
    ViewSpec("findings", "Findings", "F", "views.findings:FindingsView", short="Find"),
]


@dataclass(frozen=True)
class OpenTarget:
    """What ``profui open`` was asked to show: a ``trace`` folder, a ``jobs`` folder, or
    Kineto JSON to ``import`` first with ``resolve`` (path, progress) -> trace folder, which the
    command line supplies (the app never imports the importers)."""

    kind: str  # "trace" | "jobs" | "import"
    path: Path
    resolve: Callable[..., Path] | None = field(default=None, compare=False, repr=False)
    #: What the jobs list is of, when ``path`` is where they were imported to (the cache).
    label: str | None = field(default=None, compare=False)


class NullStyleSafe(LineFilter):
    """Wraps a colour filter so segments without a style pass through it (Textual's monochrome
    filter for ``NO_COLOR`` fails on a segment whose style is None)."""

    def __init__(self, inner: LineFilter) -> None:
        super().__init__(enabled=inner.enabled)
        self.inner = inner

    def apply(self, segments: list[Segment], background: Any) -> list[Segment]:
        null = Style.null()
        safe = [seg if seg.style is not None else Segment(seg.text, null, seg.control) for seg in segments]
        return self.inner.apply(safe, background)


class ProfuiApp(App[str | None]):
    """``profui open``: the app. Its result is ``None``, or a one-line error for the CLI."""

    TITLE = "profui"
    CSS_PATH = "profui.tcss"
    ENABLE_COMMAND_PALETTE = False
    BINDINGS = [
        Binding("q", "quit", "Quit", priority=False),
        Binding("ctrl+c", "quit", "Quit", show=False, priority=True),
        Binding("question_mark", "help", "Keys"),
    ]

    def __init__(self, target: OpenTarget, views: list[ViewSpec] | None = None, poll_s: float = 2.0) -> None:
        super().__init__()
        self._filters = [NullStyleSafe(f) for f in self._filters]
        self.target = target
        self.views = list(VIEWS if views is None else views)
        self.poll_s = poll_s

    def on_mount(self) -> None:
        from .screens.importing import ImportScreen
        from .screens.jobs import JobsScreen

        if self.target.kind == "jobs":
            self.push_screen(JobsScreen(self.target.path, refresh_s=self.poll_s, label=self.target.label))
        elif self.target.kind == "import":
            if self.target.resolve is None:
                raise ValueError("OpenTarget('import', ...) needs resolve=")
            self.push_screen(ImportScreen(self.target.path, self.target.resolve))
        else:
            self.open_trace(self.target.path)

    def open_trace(self, path: Path, replace: bool = False) -> None:
        """Show the trace screen of ``path`` (on top of the jobs screen, or replacing the current)."""
        from profui.capture.format import TraceFormatError, open_trace_dir

        from .screens.trace import TraceScreen

        try:
            open_trace_dir(path, require_data=False)
        except TraceFormatError as exc:  # e.g. picked from the jobs list but damaged
            if replace or not self.screen_stack[1:]:
                self.fail(str(exc))
            else:
                self.notify(str(exc), title="cannot open", severity="error", timeout=8)
            return
        screen = TraceScreen(Path(path), self.views, poll_s=self.poll_s)
        if replace:
            self.switch_screen(screen)
        else:
            self.push_screen(screen)

    def open_jobs(self, path: Path, label: str | None = None) -> None:
        """Replace the current screen with the jobs list of ``path`` (files of several jobs,
        imported one trace folder per job)."""
        from .screens.jobs import JobsScreen

        self.switch_screen(JobsScreen(path, refresh_s=self.poll_s, label=label))

    def fail(self, message: str) -> None:
        """Leave the app; the CLI prints ``profui: <message>`` and exits with status 2."""
        self.exit(result=message, return_code=2)

    def goto_view(self, name: str, **where: Any) -> bool:
        """Switch the trace screen to view ``name`` and, when it has ``goto``, move it to ``where``.

        Returns False when no trace screen is open or no such view is registered.
        """
        from .screens.trace import TraceScreen

        screen = self.screen
        if not isinstance(screen, TraceScreen) or not screen.has_view(name):
            return False

        def go(view: Any) -> None:
            goto = getattr(view, "goto", None)
            if where and callable(goto):
                goto(**where)

        screen.show_view(name, then=go)
        return True

    def goto_timeline(self, **where: Any) -> bool:
        """Open the timeline on a kernel instance or step (``kernel=``, ``step=``, ...)."""
        return self.goto_view("timeline", **where)

    def action_help(self) -> None:
        """Show every key of the current screen."""
        from .screens.help import toggle_help

        # what the arrows, PgUp/PgDn and Enter do is the view's own (in a table they move and
        # open, on the timeline they pan and follow): listed with the keys, not here
        toggle_help(self, "Tab / the number keys switch views")
