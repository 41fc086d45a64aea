"""The timeline canvas: one focusable widget drawn line by line (Textual's line API).

Nothing here knows about events: keys call :class:`TimelineState` methods, lines come from the
:class:`Renderer`, cached per state version and size.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace

from rich.segment import Segment
from rich.style import Style
from textual.actions import SkipAction
from textual.binding import Binding
from textual.message import Message
from textual.strip import Strip
from textual.widget import Widget

from .render import Renderer
from .state import TimelineState


class TimelineCanvas(Widget, can_focus=True):
    """Lane tree + time canvas. Posts :class:`TimelineCanvas.Changed` after every action."""

    DEFAULT_CSS = """
    TimelineCanvas { height: 1fr; width: 1fr; }
    """

    BINDINGS = [
        Binding("up,k", "cursor(-1)", "Lane up", show=False),
        Binding("down,j", "cursor(1)", "Lane down", show=False),
        Binding("left", "event(-1)", "Prev event", show=False),
        Binding("right", "event(1)", "Next event", show=False),
        Binding("plus,equals_sign,i", "zoom(2.0)", "Zoom in"),
        Binding("minus,o", "zoom(0.5)", "Zoom out"),
        Binding("h,shift+left", "pan(-0.25)", "Pan left", show=False),
        Binding("l,shift+right", "pan(0.25)", "Pan right", show=False),
        Binding("H,pageup", "pan(-1.0)", "Page left", show=False),
        Binding("L,pagedown", "pan(1.0)", "Page right", show=False),
        Binding("f,0,home", "fit", "Fit all"),
        # p here, not on the view: the key line lists the focused canvas's keys first, and at 80
        # columns it ended before the view's
        Binding("p", "critical_path", "Critical path"),
        Binding("n", "next(1)", "Next step/match"),
        Binding("N", "next(-1)", "Prev step/match", show=False),
        Binding("enter,x", "follow", "Launch↔kernel"),
        Binding("space", "fold", "Fold", show=False),
        Binding("c", "fold_all", "Fold ranks", show=False),
        Binding("C", "unfold_all", "Unfold all", show=False),
        Binding("e", "hide_empty", "Hide empty", show=False),
        Binding("z", "zoom_selected", "Zoom to event", show=False),
        Binding("M", "memory_peak", "Memory peak", show=False),
        Binding("escape", "clear", "Clear", show=False),
    ]

    class Changed(Message):
        """The view changed (viewport, cursor, selection or search)."""

    class PathToggled(Message):
        """``p``: draw (or stop drawing) the critical path (the view loads it)."""

    def __init__(self, state: TimelineState | None = None, id: str | None = None) -> None:
        super().__init__(id=id)
        self.state: TimelineState | None = state
        self.renderer: Renderer | None = Renderer(state) if state else None
        self._frame: list[Strip] = []
        self._frame_key: tuple | None = None

    def set_state(self, state: TimelineState) -> None:
        """Show ``state`` (an opened index)."""
        self.state = state
        self.renderer = Renderer(state)
        self._frame_key = None
        self._word_follow(state)
        self.refresh()

    def _word_follow(self, state: TimelineState) -> None:
        """The footer's Enter in the trace's words (``Launch↔kernel``, ``Run↔XLA op``), left
        out when no event links a launch to device work (Enter then only folds)."""
        w = state.words
        desc = f"{w.launch.capitalize()}↔{w.work}"
        for key, bindings in self._bindings.key_to_bindings.items():
            self._bindings.key_to_bindings[key] = [
                replace(b, description=desc, show=state.has_links) if b.action == "follow" else b
                for b in bindings
            ]
        self.refresh_bindings()

    # -- drawing ------------------------------------------------------------------------------
    def frame(self) -> list[Strip]:
        """The current frame's lines (rendered once per state version and size)."""
        w, h = self.size.width, self.size.height
        if self.state is None or self.renderer is None or w <= 0 or h <= 0:
            return []
        key = (self.state.version, w, h)
        if key != self._frame_key:
            self._frame = self.renderer.render(w, h)
            self._frame_key = key
        return self._frame

    def render_line(self, y: int) -> Strip:
        frame = self.frame()
        if y < len(frame):
            return frame[y]
        return Strip([Segment(" " * self.size.width, Style())], self.size.width)

    def rows_height(self) -> int:
        """Lane rows on screen."""
        return self.renderer.rows_height(self.size.height) if self.renderer else 1

    def _changed(self) -> None:
        self.refresh()
        self.post_message(self.Changed())

    # -- actions ------------------------------------------------------------------------------
    def _go(self, fn: Callable[[TimelineState], object]) -> None:
        st = self.state
        if st is None:
            return
        st.message = ""
        fn(st)
        self._changed()

    def action_cursor(self, delta: int) -> None:
        self._go(lambda st: st.move_cursor(delta))

    def action_event(self, direction: int) -> None:
        self._go(lambda st: st.step_event(direction))

    def action_zoom(self, factor: float) -> None:
        self._go(lambda st: st.zoom(factor))

    def action_pan(self, fraction: float) -> None:
        self._go(lambda st: st.pan(fraction))

    def action_critical_path(self) -> None:
        self.post_message(self.PathToggled())

    def action_fit(self) -> None:
        self._go(lambda st: st.fit())

    def action_next(self, direction: int) -> None:
        """Next/previous search match while a search is active, else next/previous step."""
        st = self.state
        if st is None:
            return
        if st.matches.size:
            self._go(lambda st: st.next_match(direction))
        else:
            self._go(lambda st: st.next_step(direction))

    def action_follow(self) -> None:
        st = self.state
        if st is None:
            return
        vr = st.current()
        if vr is not None and vr.is_header:
            self._go(lambda st: st.toggle())
        elif vr is not None and vr.series is not None and vr.series in st.ix.memory_peak:
            self._go(lambda st: st.goto_memory_peak(vr.series))  # Enter on a memory lane: its peak
        else:
            self._go(lambda st: st.follow())

    def action_fold(self) -> None:
        self._go(lambda st: st.toggle())

    def action_fold_all(self) -> None:
        self._go(lambda st: st.set_all(True))

    def action_unfold_all(self) -> None:
        self._go(lambda st: st.set_all(False))

    def action_hide_empty(self) -> None:
        self._go(lambda st: st.toggle_hide_empty())

    def action_memory_peak(self) -> None:
        """Go to the highest allocated-memory peak of the trace."""
        self._go(lambda st: st.goto_memory_peak())

    def action_zoom_selected(self) -> None:
        if self.state is not None:
            self._go(lambda st: st.zoom_to_selected())

    # -- mouse (a bonus: everything has a key) --------------------------------------------------
    def on_click(self, event) -> None:
        """Click a lane to put the cursor there; click an event to select it."""
        st, r = self.state, self.renderer
        top = r.header_lines() if r is not None else 2
        if st is None or r is None or event.y < top:
            return
        rows = st.visible_rows()
        i = st.top + event.y - top
        if not 0 <= i < len(rows):
            return
        st.cursor = i
        vr = rows[i]
        lw = r.label_width(self.size.width)
        if vr.row is not None and event.x >= lw:
            cw = max(self.size.width - lw, 1)
            t = st.t0 + (event.x - lw + 0.5) * (st.t1 - st.t0) / cw
            p = st.ix.at(vr.row, t)
            if p >= 0 and abs(float(st.ix.t[p]) - t) <= (st.t1 - st.t0) / cw + float(
                st.ix.end[p] - st.ix.t[p]
            ):
                st._select(p, keep_row=True)
        st.version += 1
        self._changed()

    def on_mouse_scroll_up(self, _event) -> None:
        self.action_zoom(1.25)

    def on_mouse_scroll_down(self, _event) -> None:
        self.action_zoom(0.8)

    def action_clear(self) -> None:
        """Esc: let go of the selection and the search; with neither, Esc is the screen's (back
        to the view the user came from)."""
        st = self.state
        if st is None or not st.clear_selection():
            raise SkipAction()
        self._changed()
