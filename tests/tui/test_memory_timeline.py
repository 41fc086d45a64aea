"""The timeline's memory lanes and the jump to the peak, driven by keys on the shared df_index
trace (28,010 ``[memory]`` events). The expected peaks come from the raw JSON (gzip + json, the
``[memory]`` events' ``Total Allocated``), never from the index the view draws."""

from __future__ import annotations

import asyncio
import gzip
import json
import shutil
from pathlib import Path

import pytest
from pilotwait import wait_timeline

from profui.analysis.lod_open import build_lod
from profui.capture.ingest import import_trace
from profui.tui.app import OpenTarget, ProfuiApp
from profui.tui.timeline import TimelineApp, TimelineView
from profui.tui.timeline.canvas import TimelineCanvas

from realdata import shared_trace

DF_INDEX = "hta-df_index_resolver-df_index_resolver.json.gz"
SIZE = (80, 24)


@pytest.fixture(scope="module")
def imported(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("memtl") / "dfi"
    import_trace([shared_trace(DF_INDEX)], out)
    build_lod(out)
    return out


@pytest.fixture(scope="module")
def oracle() -> dict:
    """Per device label: (peak bytes, the first instant at the peak, ns since the epoch)."""
    with gzip.open(shared_trace(DF_INDEX), "rt") as f:
        doc = json.load(f)
    evs = doc["traceEvents"]
    out = {}
    for label, dtype in (("cuda1", 1), ("cpu", 0)):
        mem = sorted(
            (e for e in evs if e.get("name") == "[memory]" and e["args"]["Device Type"] == dtype),
            key=lambda e: (e["ts"], e["args"]["Ev Idx"]),
        )
        peak = max(e["args"]["Total Allocated"] for e in mem)
        t = next(e["ts"] for e in mem if e["args"]["Total Allocated"] == peak)
        out[label] = (peak, t * 1000)  # int µs since the epoch in this file
    return out


def run(coro) -> None:
    asyncio.run(coro)


def _screen(view: TimelineView) -> list[str]:
    return [s.text for s in view.query_one(TimelineCanvas).frame()]


def test_memory_lanes_and_M_goes_to_the_highest_peak(imported: Path, oracle: dict) -> None:
    async def go() -> None:
        app = TimelineApp(imported)
        async with app.run_test(size=SIZE) as pilot:
            view = await wait_timeline(pilot, app)
            st = view.state
            labels = [vr.lane.label for vr in st.visible_rows()[:4]]
            assert labels[:4] == ["hta-df_index_resolver-df_index_resolver", "rank 1", "mem cpu", "mem cuda1"]
            # the lane's highest cell over the whole trace is the raw peak
            cuda = next(vr for vr in st.visible_rows() if vr.lane.label == "mem cuda1")
            assert st.ix.metric_cells(cuda.series, 0, st.ix.span_ns + 1, 60).max() == oracle["cuda1"][0]
            await pilot.press("M")
            await pilot.pause()
            peak, t = oracle["cuda1"]
            t -= st.ix.base_ns  # the view's times are relative to its index's origin
            assert st.t0 <= t <= st.t1 and (st.t0 + st.t1) / 2 == pytest.approx(t, abs=st.span * 0.06)
            assert st.current().lane.label == "mem cuda1"
            assert "memory peak 6.63 GB on cuda1" in str(view.query_one("#tl-status").render())
            row = next(line for line in _screen(view) if line.lstrip(" ▶").startswith("mem cuda1"))
            assert "▲" in row

    run(go())


def test_enter_on_a_memory_lane_goes_to_its_own_peak(imported: Path, oracle: dict) -> None:
    async def go() -> None:
        app = TimelineApp(imported)
        async with app.run_test(size=SIZE) as pilot:
            view = await wait_timeline(pilot, app)
            st = view.state
            i = next(k for k, vr in enumerate(st.visible_rows()) if vr.lane.label == "mem cpu")
            await pilot.press(*(["down"] * (i - st.cursor)))
            assert st.current().lane.label == "mem cpu"
            assert "Enter: go to its peak" in str(view.query_one("#tl-details").render())
            await pilot.press("enter")
            await pilot.pause()
            _, t = oracle["cpu"]
            t -= st.ix.base_ns
            assert st.t0 <= t <= st.t1
            assert "memory peak 8 B on cpu" in str(view.query_one("#tl-status").render())

    run(go())


def test_dashboard_memory_chart_enter_opens_the_timeline_at_the_peak(
    imported: Path, oracle: dict, tmp_path: Path
) -> None:
    trace = tmp_path / "dfi"
    shutil.copytree(imported, trace)

    async def go() -> None:
        from profui.tui.views.dashboard import DashboardView

        app = ProfuiApp(OpenTarget("trace", trace), poll_s=60)
        async with app.run_test(size=SIZE) as pilot:
            dash = app.screen.query_one(DashboardView)
            for _ in range(3000):
                await pilot.pause()
                if dash.complete:
                    break
                await asyncio.sleep(0.02)
            panel = dash.panel("allocations")
            assert panel.data is not None and panel.data.kind == "lines"
            assert str(panel.data.takeaway).startswith("Peak allocated 6.63 GB on cuda1")
            panel.focus()
            await pilot.press("enter")
            view = await wait_timeline(pilot, app)
            for _ in range(50):
                await pilot.pause()
            st = view.state
            _, t = oracle["cuda1"]
            t -= st.ix.base_ns
            assert app.screen.current == "timeline" and st.t0 <= t <= st.t1
            assert st.current().lane.label == "mem cuda1"

    run(go())


def test_no_memory_events_said_in_the_timeline(tmp_path: Path) -> None:
    out = tmp_path / "base"
    import_trace([shared_trace("hta-trace_compare-base-base.json.gz")], out)

    async def go() -> None:
        app = TimelineApp(out)
        async with app.run_test(size=SIZE) as pilot:
            view = await wait_timeline(pilot, app)
            assert not any(vr.lane.label.startswith("mem ") for vr in view.state.visible_rows())
            await pilot.press("M")
            await pilot.pause()
            assert "no memory events in this trace" in str(view.query_one("#tl-status").render())

    run(go())


def test_an_added_oom_event_is_marked_on_its_lane(tmp_path: Path, oracle: dict) -> None:
    """No real trace holds an [OutOfMemory]: this test adds ONE to df_index, a copy of the CUDA
    peak's [memory] event renamed, 1 µs after it."""
    with gzip.open(shared_trace(DF_INDEX), "rt") as f:
        doc = json.load(f)
    peak, t = oracle["cuda1"]
    src = next(e for e in doc["traceEvents"] if e.get("name") == "[memory]" and e["ts"] * 1000 == t
               and e["args"]["Total Allocated"] == peak)  # fmt: skip
    oom = {**src, "name": "[OutOfMemory]", "ts": src["ts"] + 1}
    doc["traceEvents"].append(oom)
    path = tmp_path / "oom.json"
    path.write_text(json.dumps(doc))
    out = tmp_path / "oom"
    import_trace([path], out)

    async def go() -> None:
        app = TimelineApp(out)
        async with app.run_test(size=SIZE) as pilot:
            view = await wait_timeline(pilot, app)
            for key in ("M", "f"):  # at the peak (▲ and ✗ in one cell: ✗ wins), then the whole trace
                await pilot.press(key)
                await pilot.pause()
                row = next(line for line in _screen(view) if line.lstrip(" ▶").startswith("mem cuda1"))
                assert row.count("✗") == 1, row
            cpu = next(line for line in _screen(view) if line.lstrip(" ▶").startswith("mem cpu"))
            assert "✗" not in cpu

    run(go())
