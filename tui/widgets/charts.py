"""Chart panels of the dashboard: a title, a body (text bars, a plotext line chart, or text) and
the one-line takeaway from analysis under it."""

from __future__ import annotations

import os
from dataclasses import dataclass, field

from rich.text import Text
from textual.app import ComposeResult
from textual.containers import Vertical
from textual.content import Content
from textual.widgets import Static
from textual_plotext import PlotextPlot

from .bars import Bar, Bars

#: Series markers in monochrome (NO_COLOR), one glyph each: braille dots read as "•" there, so
#: the first series gets a glyph of its own too (in colour it keeps braille's finer line).
MARKERS = ("•", "x", "+", "o", "*", "%")
#: Where several series pass through the same point, in monochrome (the last drawn would hide
#: the others).
SHARED = "#"
COLORS = ("cyan", "magenta", "yellow", "green", "red", "blue")


def shared_points(series: list[Series]) -> tuple[list[float], list[float]]:
    """The points (x, y) that two or more series have in common, in order of x."""
    seen: dict[tuple[float, float], int] = {}
    for s in series:
        for point in set(zip(s.xs, s.ys, strict=True)):
            seen[point] = seen.get(point, 0) + 1
    both = sorted(p for p, n in seen.items() if n > 1)
    return [x for x, _ in both], [y for _, y in both]


@dataclass
class Series:
    """One line of a line chart."""

    label: str
    xs: list[float]
    ys: list[float]


@dataclass
class ChartData:
    """What one panel shows. ``kind``: ``bars`` | ``lines`` | ``text``."""

    kind: str = "text"
    bars: list[Bar] = field(default_factory=list)
    scale: float | None = None
    series: list[Series] = field(default_factory=list)
    x_label: str = ""
    y_label: str = ""
    y_max: float | None = None
    text: str | Text = ""
    note: str | Text = ""  # a line between body and takeaway (e.g. the slowest steps)
    takeaway: str = ""
    marks: list[float] = field(default_factory=list)  # x positions of vertical lines (line charts)
    label_width: int = 18


def tick_count(rows: int) -> int:
    """How many y labels a canvas of ``rows`` rows gets: plotext puts a value on row
    ``floor(0.5 + (rows - 1) * fraction)``, so labels evenly spaced over the y range sit on rows
    of their own, each on the row its value is drawn on, only where ``rows - 1`` is a multiple of
    the gaps between them (7 labels on 6 rows overwrote the middle one, and the labels above it
    named rows a step too high). The most labels up to 8 that fit so; else one a row."""
    for n in range(min(rows, 8), 2, -1):
        if (rows - 1) % (n - 1) == 0:
            return n
    return max(rows, 2)


class LinePlot(PlotextPlot):
    """A plotext line chart of :class:`Series`."""

    # 7 canvas rows (with the frame, the x ticks and the axis labels): 0 to 100 % reads
    # 0, 16.7, 33.3, 50, 66.7, 83.3, 100, one a row, so 50 % has a row of its own
    DEFAULT_CSS = """
    LinePlot { height: 11; width: 1fr; }
    """

    _labelled = False  # whether the chart names its axes (set by show)

    def render(self):
        # the canvas is the widget less the two frame lines, the x tick labels and (with axis
        # labels) the line that names them, as plotext's build counts them
        rows = self.size.height - 3 - (1 if self._labelled else 0)
        if rows >= 2:
            self.plt.yfrequency(tick_count(rows))
        return super().render()

    def show(self, data: ChartData) -> None:
        """Draw ``data.series``."""
        plt = self.plt
        plt.clear_data()
        plt.clear_figure()
        mono = "NO_COLOR" in os.environ
        several = len(data.series) > 1
        for i, s in enumerate(data.series):
            kwargs = {"label": s.label} if several else {}
            marker = MARKERS[i % len(MARKERS)] if (mono or i) else "braille"
            plt.plot(s.xs, s.ys, marker=marker, color=COLORS[i % len(COLORS)], **kwargs)
        if mono and several:
            xs, ys = shared_points(data.series)
            if xs:
                plt.scatter(xs, ys, marker=SHARED, label="several")
        for x in data.marks:  # e.g. where the traced windows start and end
            plt.vertical_line(x) if mono else plt.vertical_line(x, color="orange")
        if data.y_max is not None:
            plt.ylim(0, data.y_max)
        plt.xlabel(data.x_label)
        plt.ylabel(data.y_label)
        self._labelled = bool(data.x_label.strip() or data.y_label.strip())
        self.refresh()


class ChartPanel(Vertical, can_focus=True):
    """One titled chart with its takeaway. Focusable so ``[``/``]`` can move between charts.

    Three widgets whatever the chart: a head (title and text), the body (bars, or a line chart
    where the chart draws lines) and a foot (note and takeaway). Every widget on the dashboard
    is styled, laid out and drawn at each open; one per line of text made a warm open slow.
    """

    DEFAULT_CSS = """
    ChartPanel { height: auto; border: round $panel; padding: 0 1; margin: 0 0 0 0; }
    ChartPanel:focus { border: round $accent; }
    ChartPanel > .chart-text { height: auto; }
    ChartPanel > .chart-foot { height: auto; }
    """

    def __init__(self, chart_id: str, title: str, hint: str = "", lines: bool = False) -> None:
        super().__init__(id=f"chart-{chart_id}")
        self.chart_id = chart_id
        self.title = title
        self.hint = hint
        self.lines = lines
        self.data: ChartData | None = None

    def compose(self) -> ComposeResult:
        # Widgets are shown and hidden through ``display`` (not CSS classes): a class change
        # restyles the whole subtree, which made a warm dashboard several times slower.
        yield Static(self._head(Text("computing…", style="italic")), classes="chart-text")
        if self.lines:
            plot = LinePlot()
            plot.display = False
            yield plot
        else:
            bars = Bars()
            bars.display = False
            yield bars
        foot = Static("", classes="chart-foot")
        foot.display = False
        yield foot

    def on_mount(self) -> None:
        self.border_title = None

    def _head(self, text: str | Text, hint: str = "") -> Text:
        head = Text(
            self.title + (f"  ({hint})" if hint else ""), style="bold", no_wrap=True, overflow="ellipsis"
        )
        if text:
            head.append("\n")
            head.append_text(text if isinstance(text, Text) else Text(text))
        return head

    def retitle(self, title: str) -> None:
        """Name the chart ``title`` (once what the trace's devices are is known)."""
        if title == self.title:
            return
        self.title = title
        if self.data is not None:
            self.show(self.data)
        elif self.is_mounted:
            self.query_one(".chart-text", Static).update(self._head(Text("computing…", style="italic")))

    def show(self, data: ChartData) -> None:
        """Draw ``data`` in the panel."""
        self.data = data
        self.query_one(".chart-text", Static).update(self._head(data.text, self.hint))
        for bars in self.query(Bars):
            bars.display = data.kind == "bars"
            if data.kind == "bars":
                bars.set_bars(data.bars, data.scale, label_width=data.label_width)
        for plot in self.query(LinePlot):
            plot.display = data.kind == "lines"
            if data.kind == "lines":
                plot.show(data)
        foot = Text()
        if data.note:
            foot.append_text(data.note if isinstance(data.note, Text) else Text(data.note))
        if data.takeaway:
            if foot:
                foot.append("\n")
            foot.append("→ " + data.takeaway)
        self.query_one(".chart-foot", Static).update(foot)
        self.query_one(".chart-foot", Static).display = bool(foot)

    def show_error(self, message: str) -> None:
        """Say why this chart could not be drawn (the rest of the dashboard still works)."""
        self.show(ChartData(kind="text", text=Text(message, style="italic")))

    def takeaway_shown(self) -> str:
        """The takeaway line as drawn (without its arrow); empty when there is none."""
        drawn = self.query_one(".chart-foot", Static).visual
        assert isinstance(drawn, Content)  # a Static draws its text (str or rich Text) as Content
        lines = drawn.plain.splitlines()
        return lines[-1].removeprefix("→ ") if lines and lines[-1].startswith("→ ") else ""
