"""Horizontal text bar charts: readable at 80 columns, in 256 colours and in monochrome.

The bars are glyphs (``█`` plus eighth blocks), so they stay legible when colour is stripped
(``NO_COLOR``) and over any terminal that can show Unicode box characters.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from rich.text import Text
from textual.geometry import Size
from textual.widget import Widget

from profui.analysis.formatting import elide_all

_EIGHTHS = " ▏▎▍▌▋▊▉"
#: Bars keep at least this many cells; labels get the rest (up to their ``label_width``).
MIN_BAR = 16


@dataclass(frozen=True)
class Bar:
    """One bar: ``label``, its length driver ``value``, the ``text`` shown at its right."""

    label: str
    value: float
    text: str
    style: str = "cyan"
    #: A stacked bar instead: (fraction of the full width, glyph, style) per segment.
    segments: tuple[tuple[float, str, str], ...] = ()


def bar_glyphs(fraction: float, width: int) -> str:
    """A bar ``fraction`` (0..1) of ``width`` cells long, with eighth-block resolution."""
    fraction = min(max(fraction, 0.0), 1.0)
    eighths = round(fraction * width * 8)
    full, rest = divmod(eighths, 8)
    return "█" * full + (_EIGHTHS[rest] if rest else "")


class Bars(Widget):
    """A list of labelled horizontal bars scaled to ``scale`` (default: the largest value)."""

    DEFAULT_CSS = """
    Bars { height: auto; width: 1fr; }
    """

    def __init__(
        self,
        bars: Iterable[Bar] = (),
        scale: float | None = None,
        label_width: int = 18,
        empty: str = "no data",
        id: str | None = None,
        classes: str | None = None,
    ) -> None:
        super().__init__(id=id, classes=classes)
        self._bars: list[Bar] = list(bars)
        self._scale = scale
        self._label_width = label_width
        self._empty = empty

    @property
    def bars(self) -> list[Bar]:
        """The bars shown."""
        return list(self._bars)

    def set_bars(
        self,
        bars: Iterable[Bar],
        scale: float | None = None,
        empty: str | None = None,
        label_width: int | None = None,
    ) -> None:
        """Replace the bars (and the scale, label width) and redraw."""
        self._bars = list(bars)
        self._scale = scale
        if label_width is not None:
            self._label_width = label_width
        if empty is not None:
            self._empty = empty
        self.refresh(layout=True)

    def get_content_height(self, container: Size, viewport: Size, width: int) -> int:
        return max(1, len(self._bars))

    def render(self) -> Text:
        if not self._bars:
            return Text(self._empty, style="italic")
        width = max(self.size.width, 20)
        text_w = max(len(b.text) for b in self._bars)
        longest = max(len(b.label) for b in self._bars)
        label_w = max(4, min(self._label_width, longest, width - text_w - 3 - MIN_BAR))
        bar_w = max(4, width - label_w - text_w - 3)
        scale = self._scale if self._scale else max((b.value for b in self._bars), default=0.0)
        out = Text(no_wrap=True, overflow="ellipsis")
        labels = elide_all([b.label for b in self._bars], label_w)  # kernel names made bare, as in the tables
        for i, (b, label) in enumerate(zip(self._bars, labels, strict=True)):
            if i:
                out.append("\n")
            out.append(label.ljust(label_w), style="bold")
            out.append(" ")
            if b.segments:
                used = 0
                for frac, glyph, style in b.segments:
                    n = min(bar_w - used, round(frac * bar_w))
                    out.append(glyph * n, style=style)
                    used += n
                out.append(" " * (bar_w - used + 1))
            else:
                glyphs = bar_glyphs(b.value / scale if scale > 0 else 0.0, bar_w)
                out.append(glyphs, style=b.style)
                out.append(" " * (bar_w - len(glyphs) + 1))
            out.append(b.text.rjust(text_w))
        return out
