"""Line charts' y labels name the rows they sit on, and the trace screen's title keeps its counts.

A user's walk at 80x24 with NO_COLOR read ``100.0 / 83.3 / 66.7 / 33.3 / 16.7 / 0.0`` on every
line chart: 7 labels on 6 rows, the middle one overwritten, so a 54 % peak was drawn on the
row labelled 66.7. And the title line was cut at 80 columns in the middle of its counts.
"""

from __future__ import annotations

import asyncio
import re
import shutil
from pathlib import Path

import pytest
from pilotwait import wait_for
from textual.app import App, ComposeResult

from profui.capture.ingest import import_trace
from profui.tui.widgets.charts import ChartData, ChartPanel, LinePlot, Series

from realdata import SAMPLES

LABEL = re.compile(r"^\s*(-?\d+(?:\.\d+)?)\s*[┤┼]")


class OneChart(App):
    def compose(self) -> ComposeResult:
        yield ChartPanel("c", "a chart", lines=True)


def screen_lines(app) -> list[str]:
    """The screen as drawn, one string per terminal line."""
    return [strip.text for strip in app.screen._compositor.render_strips()]


def draw(data: ChartData) -> list[str]:
    """The line chart's lines as a user sees them on an 80x24 terminal."""
    out: list[str] = []

    async def go() -> None:
        app = OneChart()
        async with app.run_test(size=(80, 24)) as pilot:
            panel = app.query_one(ChartPanel)
            panel.show(data)
            plot = app.query_one(LinePlot)
            assert await wait_for(pilot, lambda: plot.display and plot.size.height > 0)
            await pilot.pause()
            region = plot.region
            lines = screen_lines(app)[region.y : region.y + region.height]
            out.extend(line[region.x : region.x + region.width] for line in lines)

    asyncio.run(go())
    return out


def canvas(lines: list[str]) -> list[tuple[float | None, str]]:
    """The canvas rows, top first: each row's y label (None where it has none) and what is
    drawn right of the axis."""
    rows = []
    for line in lines:
        axis = re.search(r"[┤┼│]", line)
        if axis is None or "┌" in line or "└" in line:
            continue
        m = LABEL.match(line)
        rows.append((float(m.group(1)) if m else None, line[axis.end() :].rstrip("│ ")))
    return rows


def glyph_rows(rows, glyph: str = "•") -> list[int]:
    return [i for i, (_, body) in enumerate(rows) if glyph in body]


@pytest.fixture(autouse=True)
def no_color(monkeypatch) -> None:
    monkeypatch.setenv("NO_COLOR", "1")


@pytest.mark.parametrize("value", [0.0, 20.0, 50.0, 54.0, 66.7, 90.0, 100.0])
def test_a_constant_percentage_is_drawn_on_the_row_labelled_with_it(value: float) -> None:
    xs = [float(i) for i in range(40)]
    rows = canvas(
        draw(
            ChartData(
                kind="lines",
                series=[Series("u", xs, [value] * 40)],
                y_max=100.0,
                x_label="time (ms)",
                y_label="% busy",
            )
        )
    )
    labels = [label for label, _ in rows]
    # a label on every row, evenly spaced from 100 down to 0, each once: 50 among them
    assert None not in labels, rows
    assert labels[0] == 100.0 and labels[-1] == 0.0 and 50.0 in labels, labels
    step = 100.0 / (len(labels) - 1)
    assert all(abs(a - b - step) < 0.11 for a, b in zip(labels, labels[1:], strict=False)), labels
    drawn = glyph_rows(rows)
    assert len(drawn) == 1, rows
    # the row the value is drawn on is the one whose label is nearest the value
    assert abs(labels[drawn[0]] - value) <= step / 2 + 0.05, (value, labels[drawn[0]], rows)


def test_an_auto_ranged_chart_draws_each_level_on_the_row_named_for_it() -> None:
    """The memory chart (no y_max: the range is the data's) read 83.7/69.8/56.0/28.2/14.4/0.5."""
    levels = [0.5, 28.2, 42.1, 83.7]
    xs, ys = [], []
    for k, level in enumerate(levels):
        for i in range(20):
            xs.append(float(k * 20 + i))
            ys.append(level)
    rows = canvas(draw(ChartData(kind="lines", series=[Series("m", xs, ys)], x_label="t", y_label="GB")))
    labels = [label for label, _ in rows]
    assert None not in labels and len(set(labels)) == len(labels), labels
    assert labels[0] == pytest.approx(83.7, abs=0.05) and labels[-1] == pytest.approx(0.5, abs=0.05)
    step = (labels[0] - labels[-1]) / (len(labels) - 1)
    width = max(len(body) for _, body in rows)
    for k, level in enumerate(levels):
        col = int((k + 0.5) * width / len(levels))  # the middle of the level's run
        drawn = [i for i, (_, body) in enumerate(rows) if len(body) > col and body[col] == "•"]
        assert len(drawn) == 1, (level, col, rows)
        assert abs(labels[drawn[0]] - level) <= step / 2 + 0.05, (level, labels[drawn[0]], rows)


# -- the trace screen's title -------------------------------------------------------------


def title_line(trace: Path) -> str:
    from profui.tui.app import OpenTarget, ProfuiApp
    from profui.tui.views.dashboard import DashboardView

    out: list[str] = []

    async def go() -> None:
        app = ProfuiApp(OpenTarget("trace", trace), poll_s=600)
        async with app.run_test(size=(80, 24)) as pilot:
            view = app.screen.query_one(DashboardView)
            await wait_for(pilot, lambda: view.complete, 1500)
            await pilot.pause()
            out.append(screen_lines(app)[0])

    asyncio.run(go())
    return out[0]


@pytest.mark.parametrize(
    ("sample", "counts"),
    [
        ("synthetic_gpu", r"· 2 nodes · 4 ranks · 4 GPUs\b.* · 200k events$"),
        ("jax_cpu", r"· 1 node · 1 rank · 1 CPU device \(XLA\) · 317 events$"),
    ],
)
def test_the_title_keeps_its_counts_at_80_columns(tmp_path: Path, sample: str, counts: str) -> None:
    if sample == "jax_cpu":  # a JAX profile folder, imported as `profui open` does (its name)
        trace = tmp_path / "sample-host.trace"
        import_trace([SAMPLES / sample], trace)
    else:
        trace = tmp_path / sample
        shutil.copytree(SAMPLES / sample, trace)
    line = title_line(trace).rstrip()
    assert len(line) <= 80
    assert re.search(counts, line), line
