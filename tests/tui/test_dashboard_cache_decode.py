"""The kept dashboard (``<trace>/.profui/tui/dashboard.json``) is read with a typed schema: a kept
file of the right key whose values could not be drawn (NaN in a series, x values of ±1e308, a
bar segment of 1e308, a span that ends before it starts, deep nesting) is a miss: the app
stays up, draws the dashboard from the stage outputs and keeps a good one in its place.

Oracle: the charts the cold open drew (from the stage outputs) on a copy of the bundled sample;
the warm open after the damage must show exactly those and leave a kept file that reads back as
them. Property: whatever JSON (any shape, any depth, built as text past the recursion limit) sits
anywhere in a real kept file, :func:`dashboard_cache.decode` gives a miss or charts that the
dashboard's own widgets draw (Bars, plotext, Rich text), never an exception.
"""

from __future__ import annotations

import asyncio
import io
import json
import math
import os
import shutil
from pathlib import Path

import pytest
from hypothesis import event, given
from hypothesis import strategies as st
from pilotwait import wait_dashboard
from rich.console import Console

from profui.analysis.devices import fmt_devices, words_for
from profui.capture.format import open_trace_dir, private_dir_for
from profui.tui.app import OpenTarget, ProfuiApp
from profui.tui.views import dashboard_cache
from profui.tui.views import dashboard_charts as dc
from profui.tui.widgets.bars import Bars
from profui.tui.widgets.charts import LinePlot

from anyjson import FUZZ, deep_text, json_value, scalar
from realdata import SAMPLES

DEEP = 100_000


def _kept(trace: Path) -> Path:
    return private_dir_for(trace) / "tui" / "dashboard.json"


def _open(trace: Path) -> tuple[dict[str, dict], bool, BaseException | None]:
    """Open ``trace`` headless until the dashboard is complete: every chart's data as JSON,
    whether the app is still running then, and the exception it ended on (None)."""

    async def go():
        app = ProfuiApp(OpenTarget("trace", trace), poll_s=3600)
        async with app.run_test(size=(100, 40)) as pilot:
            view = await wait_dashboard(pilot, app)
            for _ in range(5):  # let every panel render a few frames
                await pilot.pause()
            charts = {c.id: dashboard_cache._chart_to_json(view.panel(c.id).data) for c in dc.CHARTS}
            charts[dc.HEADLINE] = dashboard_cache._chart_to_json(view.headline)  # kept beside them
            return charts, app.is_running, app._exception

    return asyncio.run(go())


@pytest.fixture
def trace(tmp_path: Path) -> Path:
    dst = tmp_path / "trace"
    shutil.copytree(SAMPLES / "synthetic_gpu", dst, ignore=shutil.ignore_patterns(".profui"))
    return dst


def _series(doc: dict, chart: str) -> dict:
    return next(s for s in doc["charts"][chart]["series"] if len(s["xs"]) > 4)


def _nan_series(doc: dict) -> str:
    _series(doc, "gpu_util")["ys"][3] = math.nan
    return json.dumps(doc)  # NaN as Python's json writes it


def _huge_xs(doc: dict) -> str:
    xs = _series(doc, "gpu_util")["xs"]
    xs[0], xs[-1] = -1e308, 1e308
    return json.dumps(doc)


def _huge_segment(doc: dict) -> str:
    doc["charts"]["activity"]["bars"][0]["segments"][0][0] = 1e308
    return json.dumps(doc)


def _infinite_y_max(doc: dict) -> str:
    doc["charts"]["gpu_util"]["y_max"] = math.inf
    return json.dumps(doc)


def _tiny_y_max(doc: dict) -> str:  # the percentages 1e302 axis heights off it
    doc["charts"]["gpu_util"]["y_max"] = 1e-300
    return json.dumps(doc)


def _span_backwards(doc: dict) -> str:
    doc["charts"]["flops"]["note"]["spans"] = [[10, 2, "bold"]]
    return json.dumps(doc)


def _bad_bar_style(doc: dict) -> str:
    doc["charts"]["top_time"]["bars"][0]["style"] = "on on on"
    return json.dumps(doc)


def _overview_gpus_text(doc: dict) -> str:
    doc["overview"]["gpus"] = "4"
    return json.dumps(doc)


def _overview_devices_text(doc: dict) -> str:
    doc["overview"]["devices"] = "many"
    return json.dumps(doc)


def _overview_device_type_list(doc: dict) -> str:
    doc["overview"]["device_type"] = [1]
    return json.dumps(doc)


def _overview_device_type_unknown(doc: dict) -> str:
    doc["overview"]["device_type"] = "tpu"
    return json.dumps(doc)


def _deep_overview(doc: dict) -> str:
    doc["overview"]["gpus"] = "@DEEP@"
    return json.dumps(doc).replace('"@DEEP@"', "[" * DEEP + "]" * DEEP)


DAMAGES = {
    "nan-in-a-series": _nan_series,
    "x-of-plus-minus-1e308": _huge_xs,
    "bar-segment-of-1e308": _huge_segment,
    "y_max-infinite": _infinite_y_max,
    "y_max-of-1e-300": _tiny_y_max,
    "span-ending-before-it-starts": _span_backwards,
    "bar-style-rich-cannot-parse": _bad_bar_style,
    "overview-gpus-a-string": _overview_gpus_text,
    "overview-devices-a-string": _overview_devices_text,
    "overview-device_type-a-list": _overview_device_type_list,
    "overview-device_type-unknown": _overview_device_type_unknown,
    "overview-nested-100000-deep": _deep_overview,
}


@pytest.mark.parametrize("damage", list(DAMAGES), ids=list(DAMAGES))
def test_a_kept_dashboard_that_cannot_be_drawn_is_a_miss_and_is_kept_anew(trace: Path, damage: str) -> None:
    cold, running, exc = _open(trace)
    assert running and exc is None
    kept = _kept(trace)
    good = json.loads(kept.read_bytes())
    kept.write_text(DAMAGES[damage](good))  # the right key: only the values are wrong
    assert dashboard_cache.load(open_trace_dir(trace)) is None

    warm, running, exc = _open(trace)
    assert running and exc is None, exc  # the app is still up once the dashboard is complete
    assert warm == cold  # drawn from the stage outputs, not from the damaged file
    again = dashboard_cache.load(open_trace_dir(trace))  # and a good one kept in its place
    assert again is not None
    assert {cid: dashboard_cache._chart_to_json(d) for cid, d in again[0].items()} == cold
    assert again[1]["gpus"] == 4  # the sample's 4 GPUs


def test_a_fifo_in_place_of_the_kept_dashboard_is_a_miss_not_a_wait(trace: Path) -> None:
    cold, _, _ = _open(trace)
    kept = _kept(trace)
    kept.unlink()
    os.mkfifo(kept)
    assert dashboard_cache.load(open_trace_dir(trace)) is None  # would block on open


def test_the_overview_is_open_to_new_keys_but_flat(kept_doc) -> None:
    # a newer analysis may add keys to the overview: kept; a record inside it is not an overview
    doc = json.loads(json.dumps(kept_doc))
    doc["overview"]["added_later"] = [1, "a", None, 2.5, True]
    got = dashboard_cache.decode(json.dumps(doc).encode(), doc["key"])
    assert got is not None and got[1]["added_later"] == [1, "a", None, 2.5, True]
    doc["overview"]["added_later"] = {"a": 1}
    assert dashboard_cache.decode(json.dumps(doc).encode(), doc["key"]) is None
    del doc["overview"]["added_later"], doc["overview"]["gpus"]  # what the title line reads
    assert dashboard_cache.decode(json.dumps(doc).encode(), doc["key"]) is None


# -- property: any JSON anywhere is a miss or drawable charts ----------------------------------

PLACES = [
    "",
    "key",
    "charts",
    "charts.gpu_util",
    "charts.gpu_util.series.0.xs.1",
    "charts.gpu_util.series.0.ys",
    "charts.gpu_util.y_max",
    "charts.gpu_util.marks",
    "charts.gpu_util.kind",
    "charts.top_time.bars.0",
    "charts.top_time.bars.0.value",
    "charts.top_time.bars.0.style",
    "charts.top_time.scale",
    "charts.top_time.label_width",
    "charts.activity.bars.0.segments.0.0",
    "charts.activity.bars.0.segments.0.2",
    "charts.flops.note",
    "charts.flops.note.spans",
    "charts.flops.note.style",
    "charts.allocations.text",
    "overview",
    "overview.gpus",
    "overview.ranks",
    "overview.devices",
    "overview.device_type",
    "overview.gpus_listed",
]


def _put(doc: dict, place: str, text: str) -> str:
    """``doc`` as JSON with the value at ``place`` (dotted; "" the whole document) written as
    ``text``."""
    if not place:
        return text
    *parents, last = place.split(".")
    node = doc
    for p in parents:
        node = node[int(p)] if isinstance(node, list) else node[p]
    node[int(last) if isinstance(node, list) else last] = "@HERE@"
    return json.dumps(doc).replace('"@HERE@"', text, 1)


@pytest.fixture(scope="module")
def kept_doc(tmp_path_factory) -> dict:
    """A real kept dashboard: the bundled sample's, as its cold open keeps it."""
    trace = tmp_path_factory.mktemp("kept") / "trace"
    shutil.copytree(SAMPLES / "synthetic_gpu", trace, ignore=shutil.ignore_patterns(".profui"))
    _open(trace)
    return json.loads(_kept(trace).read_bytes())


def _draw(charts: dict, overview: dict | None) -> None:
    """Draw every chart with the dashboard's widgets (the oracle: they must not fail)."""
    console = Console(width=100, file=io.StringIO(), color_system="truecolor")
    for data in charts.values():
        console.print(data.text, data.note, data.takeaway)
        if data.kind == "bars":
            console.print(Bars(data.bars, data.scale, data.label_width).render())
        if data.kind == "lines":
            plot = LinePlot()
            plot.show(data)
            plot.plt.plotsize(90, 12)
            plot.plt.build()
    if overview is not None:
        # what the app reads of it: the title line's device count (the screen adds the
        # manifest's listed GPUs) and the words naming the devices (the charts' titles)
        console.print(fmt_devices({**overview, "gpus_listed": 4}))
        words = words_for(overview)
        console.print(words.devices(2), words.Device, words.Work, words.time, words.overhead)
        for chart in dc.CHARTS:
            console.print(dc.chart_title(chart, words), dc.applies(chart, words))


def _check(data: bytes, key: str) -> None:
    got = dashboard_cache.decode(data, key)
    event("a miss" if got is None else "charts")
    if got is not None:
        _draw(*got)


@FUZZ
@given(
    place=st.sampled_from(PLACES),
    text=st.one_of(scalar.map(json.dumps), json_value.map(json.dumps), deep_text),
)
def test_any_json_anywhere_in_a_kept_file_is_a_miss_or_drawable(kept_doc, place: str, text: str) -> None:
    _check(_put(json.loads(json.dumps(kept_doc)), place, text).encode(), kept_doc["key"])


@FUZZ
@given(data=st.binary(max_size=64) | deep_text.map(str.encode))
def test_any_bytes_are_a_miss(kept_doc, data: bytes) -> None:
    assert dashboard_cache.decode(data, kept_doc["key"]) is None


def test_the_real_kept_file_decodes_and_draws(kept_doc) -> None:
    got = dashboard_cache.decode(json.dumps(kept_doc).encode(), kept_doc["key"])
    assert got is not None and set(got[0]) == {c.id for c in dc.CHARTS} | {dc.HEADLINE}
    _draw(*got)
    assert dashboard_cache.decode(json.dumps(kept_doc).encode(), "another key") is None
