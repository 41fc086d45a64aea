"""The trace screen: a title line, a tab line, the registered views, the footer.

Number keys and Tab switch views; a trace whose manifest says ``running`` is polled and the
shown view reloads (in a worker) whenever new files land.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from rich.text import Text
from textual import events, work
from textual._context import NoActiveAppError
from textual.app import ComposeResult
from textual.binding import Binding
from textual.screen import Screen
from textual.widget import Widget
from textual.widgets import ContentSwitcher, Static

from profui.analysis.catalog import display_name
from profui.analysis.devices import fmt_devices
from profui.analysis.formatting import elide, fmt_short_count, plural
from profui.capture.format import TraceFormatError

from ..views.base import TraceView
from ..views.session import TraceSession
from ..widgets.keyline import KeyLine
from .status import STATUS_STYLE


class TraceScreen(Screen):
    """One opened trace and its views."""

    BINDINGS = [
        Binding("tab", "next_view", "Next view", priority=True),
        Binding("shift+tab", "prev_view", "Prev view", show=False, priority=True),
        Binding("ctrl+r", "reload", "Reload", show=False),
        Binding("escape", "back", "Back", show=False),
    ]

    DEFAULT_CSS = """
    TraceScreen #trace-title { height: 1; padding: 0 1; background: $panel; }
    TraceScreen #view-tabs { height: 1; padding: 0 1; }
    TraceScreen ContentSwitcher { height: 1fr; }
    """

    def __init__(self, path: Path, views: list, poll_s: float = 2.0) -> None:
        super().__init__()
        self.path = path
        self.specs = list(views)
        self.session = TraceSession(path)
        self.poll_s = poll_s
        self.current = self.specs[0].name if self.specs else ""
        #: The views shown before the current one, latest last: Esc goes back through them.
        self.came_from: list[str] = []
        self._fingerprint: tuple | None = None
        self._live = False
        self._mounting: dict[str, Any] = {}
        #: Keys typed while a view is being mounted, given to it once it has the focus.
        self._held: list[tuple[str, str | None]] | None = None
        for spec in self.specs:
            self._bindings.bind(spec.key, f"show_view('{spec.name}')", spec.title, show=False)

    # -- layout -------------------------------------------------------------------------
    def compose(self) -> ComposeResult:
        yield Static(self._title_text(), id="trace-title")
        yield Static(self._tabs_text(), id="view-tabs")
        # Only the first view is built now; the others are mounted when first shown, so the
        # dashboard appears without paying for tables and the timeline nobody opened yet.
        with ContentSwitcher(initial=self.current or None):
            for spec in self.specs[:1]:
                yield self._build(spec)
        yield KeyLine()

    def _build(self, spec) -> Widget:
        return spec.view_class()(self.session, id=spec.name)

    def _title_text(self) -> Text:
        try:
            d = self.session.dir
        except TraceFormatError as exc:
            return Text(str(exc), style="bold red")
        m = d.manifest
        status_style = STATUS_STYLE.get(m.status, "")
        rest = Text(" · ")
        rest.append(("● live" if m.status == "running" else m.status), style=status_style)
        if m.synthetic:
            rest.append(" · synthetic", style="italic")
        overview = self.session.overview
        # which devices ran anything (and what they are) is an answer of the analysis; until it
        # is in, say what the manifest lists, and nothing of GPUs where it lists none
        if overview:
            devices = f" · {fmt_devices({**overview, 'gpus_listed': len(m.gpus)})}"
        else:
            devices = f" · {plural(len(m.gpus), 'GPU')} listed" if m.gpus else ""
        rest.append(
            f" · {plural(len(d.nodes), 'node')} · {plural(len(d.ranks), 'rank')}"
            f"{devices} · {fmt_short_count(d.num_events)} events"
        )
        # the counts stay whole: where the line is too narrow, the trace's name gives way first,
        # cut in the middle (its head and tail tell traces apart), down to a few characters
        try:
            width = self.app.size.width - 2  # the line's padding
        except NoActiveAppError:
            width = 0
        name = display_name(m)
        if width > 0:
            name = elide(name, max(width - rest.cell_len, 8), bare=False)
        t = Text(no_wrap=True, overflow="ellipsis")
        t.append(name, style="bold")
        t.append_text(rest)
        return t

    def refresh_title(self) -> None:
        """Redraw the title line (the views call it once the trace's overview is known)."""
        self.query_one("#trace-title", Static).update(self._title_text())

    def _tabs_text(self) -> Text:
        t = Text(no_wrap=True, overflow="ellipsis")
        width = (self.app.size.width or 80) - 2
        padded = sum(len(s.key) + len(s.title) + 4 for s in self.specs)
        bare = sum(len(s.key) + len(s.title) + 2 for s in self.specs)
        # every view's key stays on screen: tabs lose their padding, then take their short
        # titles, where they would not fit
        pad = " " if padded <= width else ""
        shorten = bare > width
        for spec in self.specs:
            title = (getattr(spec, "short", "") or spec.title) if shorten else spec.title
            label = f"{pad}{spec.key} {title}{pad}"
            t.append(label, style="reverse bold" if spec.name == self.current else "")
            t.append(" ")
        return t

    def on_resize(self) -> None:
        self.query_one("#view-tabs", Static).update(self._tabs_text())
        self.refresh_title()

    def on_mount(self) -> None:
        self.show_view(self.current)
        try:
            self._live = self.session.manifest.status == "running"
        except TraceFormatError:
            self._live = False
        if self._live:
            self._fingerprint = self.session.fingerprint()
            self.set_interval(self.poll_s, self._poll, name="live-poll")

    # -- views ----------------------------------------------------------------------------
    def has_view(self, name: str) -> bool:
        """True when a view ``name`` is registered."""
        return any(s.name == name for s in self.specs)

    def view(self, name: str) -> Widget:
        """The widget of view ``name`` (mounted if it was not yet)."""
        found = self.query(f"#{name}")
        if found:
            return found.first()
        spec = next(s for s in self.specs if s.name == name)
        widget = self._build(spec)
        self._mounting[name] = self.query_one(ContentSwitcher).mount(widget)
        return widget

    def show_view(
        self, name: str, then: Callable[[Widget], object] | None = None, *, back: bool = False
    ) -> Widget:
        """Make ``name`` the shown view, loading it if needed; returns its widget.

        ``then(view)`` runs once the view is mounted and shown (at once when it already was).
        The view left is remembered for Esc, unless this is Esc going ``back``.
        """
        view = self.view(name)
        if name != self.current and not back:
            self.came_from = [*self.came_from[-15:], self.current]
        self.current = name
        self.query_one(ContentSwitcher).current = name
        self.query_one("#view-tabs", Static).update(self._tabs_text())

        def activate() -> None:
            if isinstance(view, TraceView):
                view.ensure_loaded()
                view.focus_main()
            if then is not None:
                then(view)

        mounting = self._mounting.pop(name, None)
        if mounting is None:
            activate()
        else:
            # the keys typed next belong to the view being mounted, not to the one left (a
            # "7]]]" burst moved the dashboard's charts and the Launch view never saw the "]")
            self._held = []
            self.set_focus(None)

            async def after_mount() -> None:
                await mounting
                activate()
                held, self._held = self._held or [], None
                for key, character in held:
                    self.app.post_message(events.Key(key, character))

            self.call_next(after_mount)
        return view

    def on_key(self, event: events.Key) -> None:
        # Keys reach the screen before any binding acts on them: a view's key switches to a
        # view not built yet here, at once, so the keys after it already find it being mounted.
        if self._held is not None:
            self._held.append((event.key, event.character))
        elif (spec := next((s for s in self.specs if s.key == event.key), None)) and not self.query(
            f"#{spec.name}"
        ):
            self.show_view(spec.name)
        else:
            return
        event.stop()
        event.prevent_default()

    def action_show_view(self, name: str) -> None:
        """Switch to view ``name``."""
        if self.has_view(name):
            self.show_view(name)

    def _step_view(self, delta: int) -> None:
        names = [s.name for s in self.specs]
        if not names:
            return
        i = names.index(self.current) if self.current in names else 0
        self.show_view(names[(i + delta) % len(names)])

    def action_next_view(self) -> None:
        """Next view (Tab)."""
        self._step_view(1)

    def action_prev_view(self) -> None:
        """Previous view (Shift+Tab)."""
        self._step_view(-1)

    def action_back(self) -> None:
        """Back to the view shown before this one; from the first, to the jobs list when the
        trace was opened from one."""
        while self.came_from:
            name = self.came_from.pop()
            if name != self.current and self.has_view(name):
                self.show_view(name, back=True)
                return
        if len(self.app.screen_stack) > 2:
            self.app.pop_screen()

    def action_reload(self) -> None:
        """Forget cached answers and reload the shown view."""
        self._refresh_generation()

    # -- live -----------------------------------------------------------------------------
    def _poll(self) -> None:
        self._check_changed()

    @work(thread=True, exclusive=True, group="live-poll")
    def _check_changed(self) -> None:
        try:
            fp = self.session.fingerprint()
        except TraceFormatError:
            return  # a file being renamed into place; the next poll sees it whole
        if fp != self._fingerprint:
            self._fingerprint = fp
            self.app.call_from_thread(self._refresh_generation)

    def _refresh_generation(self) -> None:
        self.session.new_generation()
        self.query_one("#trace-title", Static).update(self._title_text())
        view = self.view(self.current)
        if isinstance(view, TraceView) and self.current not in self._mounting:
            view.ensure_loaded()
