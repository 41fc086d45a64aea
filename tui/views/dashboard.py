"""The dashboard: every chart of a hosted training profiler, drawn in the terminal.

Charts fill in one by one as the analysis pipeline's stages finish (in a worker); each has the
one-line takeaway analysis computed for it; the headline above them is the top finding (what
would save the most time per step: ``F`` lists them all). ``]``/``[`` move between charts, ``a`` picks the
annotation of the custom chart, ``n`` cycles its rank, Enter on a chart opens its table view.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import TYPE_CHECKING

from rich.text import Text
from textual import work
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import VerticalScroll
from textual.message import Message
from textual.widgets import Static

from profui.analysis.formatting import plural

from ..widgets.charts import ChartData, ChartPanel
from . import dashboard_charts as dc
from .base import TraceView

if TYPE_CHECKING:
    from profui.analysis.pipeline.result import Result

#: Cached stage outputs up to this size are read on the UI thread, so the first frame a warm open
#: draws is the finished dashboard (about 0.1 s of Parquet at most; larger ones load in a worker).
READ_IN_PLACE_BYTES = 8 << 20


class DashboardView(TraceView):
    """All dashboard charts in one scrollable column (two columns when the terminal is wide)."""

    BINDINGS = [
        Binding("right_square_bracket", "next_chart", "Next chart"),
        Binding("F", "screen.show_view('findings')", "Findings"),
        Binding("left_square_bracket", "prev_chart", "Prev chart", show=False),
        Binding("a", "pick_annotation", "Annotation"),
        Binding("n", "next_rank", "Next rank (steps, custom)", show=False),
        Binding("enter", "open_chart", "Open", show=False),
    ]

    DEFAULT_CSS = """
    DashboardView #dash-status { height: 1; padding: 0 1; color: $text-muted; }
    DashboardView #dash-headline { height: auto; max-height: 2; padding: 0 1; }
    DashboardView #dash-notes { height: auto; max-height: 4; padding: 0 1; color: $warning; display: none; }
    DashboardView #charts { height: 1fr; }
    DashboardView.-wide #charts { layout: grid; grid-size: 2; grid-rows: auto; grid-gutter: 0 1; }
    """

    class Ready(Message):
        """Every chart is drawn (or says why it cannot be)."""

        def __init__(self, seconds: float) -> None:
            super().__init__()
            self.seconds = seconds

    def __init__(self, session, id: str | None = None) -> None:
        super().__init__(session, id=id)
        from profui.analysis.pipeline.result import Result

        #: The stage outputs loaded so far, as one typed result (the charts read it).
        self.result = Result({}, "")
        self.complete = False
        self.annotation: str | None = None
        self.drawn: set[str] = set()
        self.rank_index = 0
        self.started = 0.0
        #: Seconds from load() to the last chart drawn (the benchmark reads it).
        self.seconds = 0.0
        #: What the headline shows (the top finding), kept with the charts.
        self.headline: ChartData | None = None
        #: What to do once the stage outputs of a dashboard drawn from what was kept are in.
        self._then: Callable[[], None] | None = None

    def compose(self) -> ComposeResult:
        yield Static("", id="dash-status")
        yield Static("", id="dash-headline")
        yield Static("", id="dash-notes")
        words = dc.device_words(self.result, self)  # no outputs yet: the session's or the manifest's
        with VerticalScroll(id="charts"):
            for chart in dc.CHARTS:
                panel = ChartPanel(chart.id, dc.chart_title(chart, words), chart.hint, lines=chart.lines)
                panel.display = dc.applies(chart, words)
                yield panel

    def on_resize(self) -> None:
        self.set_class(self.size.width >= 140, "-wide")

    def panels(self) -> list[ChartPanel]:
        """The chart panels drawn for this trace, in order."""
        return [p for p in self.query(ChartPanel) if p.display]

    def panel(self, chart_id: str) -> ChartPanel:
        """The panel of chart ``chart_id``."""
        return self.query_one(f"#chart-{chart_id}", ChartPanel)

    def focus_main(self) -> None:
        focused = self.app.focused
        if focused is not None and focused in self.panels():
            return
        panels = self.panels()
        if panels:
            panels[0].focus(scroll_visible=False)

    # -- loading ----------------------------------------------------------------------------
    def load(self) -> None:
        self.complete = False
        self.drawn = set()
        self.started = time.perf_counter()
        self._show_notes()
        if self._draw_kept():
            # the stage outputs (for picking an annotation, the next rank...) are loaded when an
            # action first needs them: a warm open shows the dashboard without importing Polars
            return
        got = self.session.cached_stage_outputs(dc.STAGES, max_bytes=READ_IN_PLACE_BYTES)
        if got is not None:
            self._all_ready(got)
            return
        self._status("loading…")
        self._load()

    def _show_notes(self) -> None:
        """The importers' notes (what an import left out, ...) above the charts; hidden when none."""
        try:
            notes = self.session.manifest.source_notes()
        except Exception:  # a trace that cannot be opened now: the normal path says why
            notes = []
        widget = self.query_one("#dash-notes", Static)
        widget.update(Text("\n".join(f"note: {n}" for n in notes), overflow="ellipsis"))
        widget.display = bool(notes)

    def _draw_kept(self) -> bool:
        """Draw what the last complete dashboard of this trace as it is now drew
        (:mod:`.dashboard_cache`); False when nothing is kept for it."""
        from . import dashboard_cache

        try:
            kept = dashboard_cache.load(self.session.dir)
        except Exception:  # a trace that cannot be opened now: the normal path says why
            return False
        if kept is None or set(kept[0]) != {c.id for c in dc.CHARTS} | {dc.HEADLINE}:
            return False
        charts, overview = kept
        self.session.overview, self.session.source = overview, "cache"
        with self.app.batch_update():
            self._retitle()
            self._show_headline(charts[dc.HEADLINE])
            for chart in dc.CHARTS:
                self.drawn.add(chart.id)
                self.panel(chart.id).show(charts[chart.id])
        self._finished()
        return True

    @work(thread=True, exclusive=True, group="dashboard")
    def _load(self) -> None:
        generation = self.session.generation
        app_call = self.app.call_from_thread

        def call(fn, *args) -> None:
            # a live trace may have moved on while this worker computed: drop stale results
            if self.session.generation == generation:
                app_call(fn, *args)

        try:
            got = self.session.stage_outputs(
                dc.STAGES,
                on_stage=lambda stage, out: call(self._stage_ready, stage, out),
                on_progress=lambda line: call(self._status, line),
            )
        except Exception as exc:  # one line in the UI, never a crash
            if self.ended_on_bad_input(exc):
                return
            from profui.analysis.pipeline.result import Result

            call(self._status, f"analysis failed: {type(exc).__name__}: {exc}")
            got = Result({}, "")
        call(self._all_ready, got)

    def _status(self, line: str) -> None:
        self.query_one("#dash-status", Static).update(Text(line, no_wrap=True, overflow="ellipsis"))

    def _show_headline(self, data: ChartData) -> None:
        self.headline = data
        self.query_one("#dash-headline", Static).update(data.text)

    def _draw_headline(self) -> None:
        try:
            data = dc.build_headline(self.result, self)
        except Exception as exc:  # a findings table not as declared says so, like a chart
            data = ChartData(kind="text", text=f"headline: cannot draw: {type(exc).__name__}: {exc}")
        self._show_headline(data)

    def _retitle(self) -> None:
        """Name the charts for the trace's devices (GPUs, XLA's CPU devices, none), and draw
        only those that apply: no device chart for a run without device work."""
        words = dc.device_words(self.result, self)
        for chart in dc.CHARTS:
            panel = self.panel(chart.id)
            panel.retitle(dc.chart_title(chart, words))
            panel.display = dc.applies(chart, words)

    def _stage_ready(self, stage: str, out: dict) -> None:
        self.result.outputs[stage] = out
        with self.app.batch_update():
            if stage in ("ingest", "summary"):  # they bring the overview: what the devices are
                self._retitle()
            if stage == "findings":
                self._draw_headline()
            for chart in dc.CHARTS:
                # the summary stage brings every chart's takeaway: redraw the charts drawn so far
                touched = stage in chart.stages or (stage == "summary" and chart.id in self.drawn)
                if touched and all(self.result.ran(s) for s in chart.stages):
                    self._draw(chart)

    def _draw(self, chart: dc.Chart) -> None:
        self.drawn.add(chart.id)
        panel = self.panel(chart.id)
        try:
            data = chart.build(self.result, self)
        except Exception as exc:  # a chart whose frame is not what we expect says so
            panel.show_error(f"cannot draw: {type(exc).__name__}: {exc}")
            return
        panel.show(data)

    def _all_ready(self, got: Result) -> None:
        self.result.outputs.update(got.outputs)
        self.result.source = got.source
        with self.app.batch_update():
            self._retitle()
            if self.result.ran("findings"):
                self._draw_headline()
            else:
                self._show_headline(
                    ChartData(kind="text", text="headline: not available (findings: no output)")
                )
            for chart in dc.CHARTS:
                missing = [s for s in chart.stages if not self.result.ran(s)]
                if missing:
                    why = "; ".join(f"{s}: no output" for s in missing)
                    self.panel(chart.id).show_error(f"not available ({why})")
                elif chart.id not in self.drawn:  # outputs memoised earlier: no on_stage calls
                    self._draw(chart)
        if self.complete:  # the outputs behind a dashboard drawn from what was kept
            then, self._then = self._then, None
            self._status(self._ready_line())
            if then is not None and self.result.outputs:
                then()
            return
        if all(self.result.ran(s) for c in dc.CHARTS for s in c.stages) and self.result.ran("findings"):
            self._keep()
        self._finished()

    def _keep(self) -> None:
        from . import dashboard_cache

        try:
            charts = {c.id: self.panel(c.id).data for c in dc.CHARTS}
            charts[dc.HEADLINE] = self.headline
            drawn = {k: d for k, d in charts.items() if d is not None}
            if len(drawn) == len(charts):
                dashboard_cache.save(self.session.dir, drawn, self.session.overview)
        except Exception:  # keeping is an optimisation: never a failure of the dashboard
            pass

    def _ready_line(self) -> str:
        source = self.session.source or "analysis"
        shown = len(self.panels())
        words = dc.device_words(self.result, self)
        # counted from the rule that hides them (applies), so no other hidden chart is blamed on it
        left = sum(1 for c in dc.CHARTS if c.id in dc.DEVICE_CHARTS and not dc.applies(c, words))
        why = f" ({plural(left, 'device chart')} not drawn: no device work traced)" if left else ""
        # the keys line at the bottom names ] [, a, F and ?; Enter is the one it does not
        return f"{shown} charts{why} · stage outputs: {source} · Enter opens a chart's view"

    def _finished(self) -> None:
        seconds = time.perf_counter() - self.started
        self.seconds = seconds
        self._status(self._ready_line())
        refresh_title = getattr(self.screen, "refresh_title", None)
        if callable(refresh_title):
            refresh_title()
        self.complete = True
        self.ready = True
        self.post_message(self.Ready(seconds))

    # -- keys -------------------------------------------------------------------------------
    def _move(self, delta: int) -> None:
        panels = self.panels()
        focused = self.app.focused
        i = panels.index(focused) if focused in panels else -1
        target = panels[(i + delta) % len(panels)]
        target.focus(scroll_visible=False)
        self.query_one("#charts", VerticalScroll).scroll_to_widget(target, animate=False, top=True)

    def action_next_chart(self) -> None:
        """Focus the next chart."""
        self._move(1)

    def action_prev_chart(self) -> None:
        """Focus the previous chart."""
        self._move(-1)

    def action_pick_annotation(self) -> None:
        """Choose the annotation the custom chart shows."""
        from .pick import PickScreen

        if self._still_loading(self.action_pick_annotation):
            return
        names = dc.annotation_choices(self.result)
        if not names:
            self.app.notify("no annotations in this trace", severity="warning")
            return

        def chosen(name: str | None) -> None:
            if name:
                self.annotation = name
                self._redraw_annotation()

        self.app.push_screen(PickScreen("Annotation for the custom chart", names), chosen)

    def action_next_rank(self) -> None:
        """Show the step-time and custom charts for the next rank."""
        if self._still_loading(self.action_next_rank):
            return
        self.rank_index += 1
        for chart_id in ("steps", "host_steps", "annotation"):
            chart = dc.chart_by_id(chart_id)
            if all(self.result.ran(s) for s in chart.stages):
                self._draw(chart)

    def _still_loading(self, then: Callable[[], None]) -> bool:
        """True while a dashboard drawn from what was kept has no stage outputs yet: they load
        (in a worker) and ``then`` runs once they are in."""
        if self.result.outputs or not self.complete:
            return False
        self._then = then
        self._status("loading the analysis outputs…")
        self._load()
        return True

    def _redraw_annotation(self) -> None:
        chart = dc.chart_by_id("annotation")
        if all(self.result.ran(s) for s in chart.stages):
            self._draw(chart)
        panel = self.panel("annotation")
        panel.focus(scroll_visible=False)
        self.query_one("#charts", VerticalScroll).scroll_to_widget(panel, animate=False, top=True)

    def action_open_chart(self) -> None:
        """Open the table view behind the focused chart (kernels → Kernels, steps → Steps)."""
        focused = self.app.focused
        if isinstance(focused, ChartPanel):
            target = dc.chart_by_id(focused.chart_id).view
            if focused.chart_id == "allocations":  # the timeline finds the peak in its own index
                self.app.goto_view(target, memory_peak=True)  # type: ignore[attr-defined]
            elif target:
                self.app.goto_view(target)  # type: ignore[attr-defined]
            else:  # said, not silent: the status line promises Enter opens a chart's view
                title = dc.chart_title(dc.chart_by_id(focused.chart_id), dc.device_words(self.result, self))
                self.app.notify(f"{title}: no view of its own; profui summary prints its tables")
