"""The Timeline view of the trace screen: status line, canvas, details panel, prompt.

The LOD index is opened (built on first use, cached under ``trace/.profui/lod/``) in a worker
with progress on the status line; the UI stays live meanwhile. ``p`` draws the critical path of
the step in view (the ``critical_path`` stage's outputs, loaded in a worker when first asked for).
"""

from __future__ import annotations

import re
from typing import Any

from rich.text import Text
from textual import on, work
from textual.app import ComposeResult
from textual.binding import Binding
from textual.widgets import Input, Static

from profui.analysis.lod import LodIndex

from ..views.base import TraceView
from .canvas import TimelineCanvas
from .details import details_text, status_text
from .heap import freeze_loaded
from .state import TimelineState


class TimelineView(TraceView):
    """Host-to-device timeline. ``goto(kernel=..., step=..., rank=...)`` opens it on a kernel
    instance or a step."""

    DEFAULT_CSS = """
    TimelineView #tl-status { height: 1; padding: 0 1; }
    TimelineView #tl-details { height: 4; padding: 0 1; border-top: none; background: $panel; }
    TimelineView #tl-prompt { height: 1; border: none; padding: 0 1; display: none; }
    TimelineView #tl-prompt.shown { display: block; }
    """

    BINDINGS = [
        Binding("slash", "prompt('search')", "Search"),
        Binding("g", "prompt('step')", "Go to step"),
    ]

    def __init__(self, session, id: str | None = None) -> None:
        super().__init__(session, id=id)
        self.state: TimelineState | None = None
        self._pending: dict[str, Any] | None = None
        self._prompt_kind = ""
        self.ready = False
        #: the critical path to draw once its stage outputs are in: (on, rank), None when none waits
        self._path_wanted: tuple[bool, int | None] | None = None
        #: the step (and rank) whose path a finding asked for: shown from the stage's own window
        #: where the index has no such step marker
        self._path_step: tuple[int, int | None] | None = None

    def compose(self) -> ComposeResult:
        yield Static("timeline: loading…", id="tl-status")
        yield TimelineCanvas(id="tl-canvas")
        yield Static("", id="tl-details")
        yield Input(id="tl-prompt")

    def focus_main(self) -> None:
        self.query_one(TimelineCanvas).focus()

    # -- loading --------------------------------------------------------------------------
    def load(self) -> None:
        self.ready = False
        self._load()

    @work(thread=True, exclusive=True, group="timeline")
    def _load(self) -> None:
        from profui.analysis.lod_open import open_lod

        def progress(fraction: float, message: str) -> None:
            # a stage the index reads says its name alone (fraction 0); the index how far it is
            done = f" ({fraction:.0%})" if fraction else ""
            self.app.call_from_thread(self._status_line, f"timeline: {message}{done}")

        try:
            index = self.session.memo("timeline-lod", lambda: open_lod(self.session.path, progress=progress))
        except Exception as exc:  # shown, not raised: the other views keep working
            if self.ended_on_bad_input(exc):
                return
            self.app.call_from_thread(self._status_line, f"timeline unavailable: {type(exc).__name__}: {exc}")
            return
        self.app.call_from_thread(self._ready, index)

    def _status_line(self, line: str) -> None:
        self.query_one("#tl-status", Static).update(Text(line))  # an error's text is no markup

    def _ready(self, index: LodIndex) -> None:
        self.state = TimelineState(index)
        freeze_loaded()
        self.query_one(TimelineCanvas).set_state(self.state)
        self.ready = True
        if self._pending:
            where, self._pending = self._pending, None
            self.goto(**where)
        self._update()

    # -- entry points ---------------------------------------------------------------------
    def goto(
        self,
        kernel: str | None = None,
        step: int | str | None = None,
        rank: int | None = None,
        ts_ns: int | None = None,
        pos: int | None = None,
        node: str | None = None,
        memory_peak: bool = False,
        op: str | None = None,
        critical_path: bool = False,
        **_: Any,
    ) -> None:
        """Show a kernel instance (``kernel`` name, optional ``ts_ns`` start and ``rank``), a
        step (the job's, or with ``rank``/``node`` that rank's own, its lanes in view), a host
        ``op``'s calls (searched by exact name: the first selected, ``n`` the next) or, with
        ``memory_peak``, the highest allocated-memory peak. With ``critical_path`` the step's
        critical path is drawn too (``rank``'s on the path line)."""
        if self.state is None:
            self._pending = dict(
                kernel=kernel,
                step=step,
                rank=rank,
                ts_ns=ts_ns,
                pos=pos,
                node=node,
                memory_peak=memory_peak,
                op=op,
                critical_path=critical_path,
            )
            return
        st = self.state
        st.message = ""
        if memory_peak:
            st.goto_memory_peak()
        elif pos is not None:
            st.select(int(pos), fill=True)
        elif kernel is not None:
            p = st.ix.find_kernel(name=kernel, ts_ns=ts_ns, rank=rank)
            if p < 0:
                st.message = f"kernel not found: {kernel[:50]}"
                st.version += 1
            else:
                st.select(p, fill=True)
                st.message = f"kernel {kernel[:50]}"
        elif op is not None:
            st.search(f"/^{re.escape(op)}$/")
        elif step is not None:
            st.goto_step(step, rank=rank, node=node)
        if critical_path:
            if step is not None and str(step).lstrip("-").isdigit():
                self._path_step = (int(step), rank)
            self._show_path(True, rank)
        self.query_one(TimelineCanvas).refresh()
        self._update()

    # -- critical path --------------------------------------------------------------------
    def action_critical_path(self) -> None:
        """Draw (or stop drawing) the critical path of the step in view."""
        if self.state is not None:
            self._show_path(not self.state.path_on, None)
            self.query_one(TimelineCanvas).refresh()
            self._update()

    def _show_path(self, on: bool, rank: int | None) -> None:
        st = self.state
        if st is None:
            return
        if not on or st.paths is not None:
            self._frame_path_step()
            st.show_path(on, rank)
            return
        self._path_wanted = (on, rank)
        st.message = "critical path: loading…"
        st.version += 1
        self._load_paths(st.ix)

    @work(thread=True, exclusive=True, group="timeline-path")
    def _load_paths(self, index: LodIndex) -> None:
        from .critical import CriticalPaths

        try:
            outputs = self.session.stage_outputs(("critical_path",))
            paths = CriticalPaths(index, outputs)
        except Exception as exc:  # shown, not raised: the timeline keeps working without it
            if self.ended_on_bad_input(exc):
                return
            self.app.call_from_thread(
                self._path_failed, f"critical path unavailable: {type(exc).__name__}: {exc}"
            )
            return
        self.app.call_from_thread(self._paths_ready, paths)

    def _frame_path_step(self) -> None:
        """The step a finding asked for, from the stage's window where no marker shows it."""
        asked, self._path_step = self._path_step, None
        if asked is not None and self.state is not None:
            self.state.goto_path_step(*asked)

    def _path_failed(self, line: str) -> None:
        if self.state is not None:
            self.state.message = line
            self.state.version += 1
        self._path_wanted = None
        self.query_one(TimelineCanvas).refresh()
        self._update()

    def _paths_ready(self, paths) -> None:
        st = self.state
        if st is None:
            return
        st.paths = paths
        wanted, self._path_wanted = self._path_wanted, None
        if wanted is not None:
            self._frame_path_step()
            st.show_path(*wanted)
        self.query_one(TimelineCanvas).refresh()
        self._update()

    # -- prompt (search, step number) -----------------------------------------------------
    def action_prompt(self, kind: str) -> None:
        if self.state is None:
            return
        self._prompt_kind = kind
        prompt = self.query_one("#tl-prompt", Input)
        prompt.placeholder = (
            "search event names (text, or /regex/) — Enter" if kind == "search" else "step number — Enter"
        )
        prompt.value = ""
        prompt.add_class("shown")
        prompt.focus()

    @on(Input.Submitted, "#tl-prompt")
    def _submitted(self, event: Input.Submitted) -> None:
        event.stop()
        self._apply(event.value)

    def _apply(self, value: str) -> None:
        value = value.strip()
        self._close_prompt()
        if self.state is None or not value:
            return
        if self._prompt_kind == "search":
            self.state.search(value)
        else:
            try:
                number: int | str = int(value.lstrip("#"))
            except ValueError:
                number = value
            self.state.goto_step(number)
        self.query_one(TimelineCanvas).refresh()
        self._update()

    def _close_prompt(self) -> None:
        prompt = self.query_one("#tl-prompt", Input)
        prompt.remove_class("shown")
        self.query_one(TimelineCanvas).focus()

    def on_key(self, event) -> None:
        prompt = self.query_one("#tl-prompt", Input)
        if not prompt.has_class("shown"):
            # Opened here rather than through the bindings (which run later, as messages) so
            # that the keys typed right after `g` or `/` already find the prompt open.
            if event.key in ("g", "slash") and self.state is not None:
                event.stop()
                event.prevent_default()
                self.action_prompt("step" if event.key == "g" else "search")
            return
        if prompt.has_focus:
            if event.key == "escape":
                event.stop()
                self._close_prompt()
            return
        # Keys typed right after `/` or `g`, before the prompt has taken the focus: they belong
        # to the prompt, not to the screen's bindings (a digit would switch views).
        event.stop()
        event.prevent_default()
        if event.key == "enter":
            self._apply(prompt.value)
        elif event.key == "escape":
            self._close_prompt()
        elif event.key == "backspace":
            prompt.value = prompt.value[:-1]
        elif event.is_printable and event.character:
            prompt.value += event.character
            prompt.cursor_position = len(prompt.value)

    # -- panel ----------------------------------------------------------------------------
    @on(TimelineCanvas.PathToggled)
    def _path_toggled(self, event: TimelineCanvas.PathToggled) -> None:
        event.stop()
        self.action_critical_path()

    @on(TimelineCanvas.Changed)
    def _changed(self, _event: TimelineCanvas.Changed) -> None:
        self._update()

    def on_resize(self) -> None:
        self._update()

    def _update(self) -> None:
        if self.state is None:
            return
        status = self.query_one("#tl-status", Static)
        width = status.size.width - 2 if status.size.width > 2 else 200  # less its padding
        status.update(status_text(self.state, width))
        panel = self.query_one("#tl-details", Static)
        panel.update(details_text(self.state, max(panel.size.width - 2, 20) if panel.size.width else 200))
