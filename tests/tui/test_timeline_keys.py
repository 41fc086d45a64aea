"""The timeline as a user drives it in ``profui open`` (issue #37 items 1 and 11): a search over
folded ranks, names searched with case and separators ignored, Esc back to the view the user came
from, the help's words for PgUp/PgDn, the lane of device events that name no stream. Expected
counts come from the events (Polars) or from the source files (JSON, sqlite3), never from the
index the view draws from."""

from __future__ import annotations

import asyncio
import gzip
import json
import re
import shutil
import sqlite3
from pathlib import Path

import polars as pl
import pytest
from pilotwait import wait_for, wait_timeline

from profui.analysis import open_trace
from profui.analysis.lod_open import build_lod
from profui.capture.ingest import import_trace
from profui.tui.app import OpenTarget, ProfuiApp
from profui.tui.timeline import TimelineApp
from profui.tui.timeline.canvas import TimelineCanvas

from realdata import SAMPLES, nsys_export, shared_trace

SIZE = (80, 24)


def run(coro) -> None:
    asyncio.run(coro)


def loose(name: str) -> str:
    """The oracle's normalisation: lower case, no ``_ : -`` or spaces."""
    return re.sub(r"[_:\- ]", "", name.lower())


@pytest.fixture(scope="module")
def sample(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("keys") / "synthetic_gpu"
    shutil.copytree(SAMPLES / "synthetic_gpu", out, ignore=shutil.ignore_patterns(".profui"))
    build_lod(out)
    return out


def frame_text(app) -> str:
    canvas = app.screen.query_one(TimelineCanvas)
    return "\n".join(strip.text for strip in canvas.frame())


def test_search_over_folded_ranks_keeps_the_app_running(sample: Path) -> None:
    """`5` `c` `/AllReduce⏎` ended the app (TypeError in render: a folded rank has no row of its
    own); so did Space on a folded rank while a search was active."""
    ev = open_trace(sample).events().collect()
    want = ev.filter(
        pl.col("name").map_elements(loose, return_dtype=pl.String).str.contains("allreduce")
    ).height
    assert want > 0

    async def go() -> None:
        app = ProfuiApp(OpenTarget("trace", sample), poll_s=60)
        async with app.run_test(size=SIZE) as pilot:
            await pilot.press("5")
            view = await wait_timeline(pilot, app)
            await pilot.press("c", "slash", *"AllReduce", "enter")
            await pilot.pause()
            st = view.state
            assert st.matches.size == want  # nccl:all_reduce ops and ncclDevKernel_AllReduce kernels
            # the first match unfolded its rank, the others stay folded, drawn with the matches
            assert any(vr.row is None and vr.lane.kind == "rank" for vr in st.visible_rows())
            assert frame_text(app)
            # every rank folded again, zoomed out: the folded ranks mark where matches start
            await pilot.press("n", "c", "minus", "minus")
            await pilot.pause()
            assert st.selected >= 0
            text = frame_text(app)
            assert "rank 0" in text and "rank 3" in text
            # Space on a folded rank (the cursor on the first rank header) while the search is on
            await pilot.press("home", "up", "up", "up", "down", "space", "space", "down", "space")
            await pilot.pause()
            assert frame_text(app)
            assert app.is_running and app.return_code is None
            assert st.pattern == "AllReduce" and st.matches.size == want

    run(go())


def test_search_ignores_case_and_separators(tmp_path: Path) -> None:
    """`/allreduce` finds `gloo:all_reduce` (a CPU-only gloo run's collective; none before)."""
    src = shared_trace("hta-cpu_only-rank-34.Jul_15_10_52_41.1074.pt.trace.json.gz")
    raw = json.loads(gzip.decompress(src.read_bytes()))["traceEvents"]
    want = sum(1 for e in raw if e.get("ph") == "X" and "allreduce" in loose(str(e.get("name", ""))))
    assert want == sum(1 for e in raw if e.get("name") == "gloo:all_reduce") > 0
    trace = tmp_path / "cpu"
    import_trace([src], trace)

    async def go() -> None:
        app = TimelineApp(trace)
        async with app.run_test(size=SIZE) as pilot:
            view = await wait_timeline(pilot, app)
            await pilot.press("slash", *"allreduce", "enter")
            await pilot.pause()
            st = view.state
            assert st.matches.size == want
            assert st.ix.event(st.selected)["name"] == "gloo:all_reduce"
            assert f"{want} matches" in str(view.query_one("#tl-status").render())
            # a regex is still taken as written
            await pilot.press("slash", *"/all_reduce$/", "enter")
            await pilot.pause()
            assert st.matches.size == want
            await pilot.press("slash", *"/allreduce/", "enter")
            await pilot.pause()
            assert st.matches.size == 0

    run(go())


def test_escape_goes_back_to_the_view_you_came_from(sample: Path) -> None:
    """Esc on the timeline lets go of the selection first, then returns to the view the user came
    from: the Kernels view after Enter on a kernel, the dashboard after `5` (it did nothing)."""

    async def go() -> None:
        app = ProfuiApp(OpenTarget("trace", sample), poll_s=60)
        async with app.run_test(size=SIZE) as pilot:
            screen = app.screen
            await pilot.press("2")
            kernels = screen.query_one("#kernels")
            assert await wait_for(pilot, lambda: kernels.ready)
            await pilot.press("enter")  # the first kernel, on the timeline
            view = await wait_timeline(pilot, app)
            assert await wait_for(pilot, lambda: view.state.selected >= 0)
            assert screen.current == "timeline"
            await pilot.press("escape")
            assert screen.current == "timeline" and view.state.selected == -1
            await pilot.press("escape")
            assert screen.current == "kernels"
            await pilot.press("1", "5")
            assert screen.current == "timeline"
            await pilot.press("escape")
            assert screen.current == "dashboard"
            assert app.is_running

    run(go())


def test_help_of_the_timeline_says_pgup_pgdn_pan(sample: Path) -> None:
    """The help's last line said "↑↓ PgUp PgDn move" on the timeline, where PgUp/PgDn pan a page."""

    async def go() -> None:
        app = TimelineApp(sample)
        async with app.run_test(size=(100, 40)) as pilot:
            view = await wait_timeline(pilot, app)
            st = view.state
            await pilot.press("plus", "plus")
            t0, span = st.t0, st.span
            await pilot.press("pagedown")
            assert st.t0 == pytest.approx(t0 + span)
            await pilot.press("pageup")
            assert st.t0 == pytest.approx(t0)

    run(go())

    async def help_text() -> str:
        app = ProfuiApp(OpenTarget("trace", sample), poll_s=60)
        async with app.run_test(size=(100, 40)) as pilot:
            await pilot.press("5")
            await wait_timeline(pilot, app)
            await pilot.press("question_mark")
            await pilot.pause()
            return str(app.screen.query_one("#help-text").render())

    text = asyncio.run(help_text())
    lines = {line.split("  ")[0].strip(): line for line in text.splitlines()}
    assert "PgUp PgDn move" not in text and "move" not in text.splitlines()[-1]
    assert re.search(r"pgup\s+Page left", text) and re.search(r"pgdn\s+Page right", text), lines


def test_device_events_without_a_stream_are_labelled_so(tmp_path: Path) -> None:
    """Nsight's event syncs name no stream (CUPTI writes 0xFFFFFFFF): their lane read "stream -1";
    it reads "no stream", holds those rows, and the details say "no stream"."""
    src = nsys_export("mfu_2gpu_before")
    with sqlite3.connect(f"file:{src}?mode=ro", uri=True) as db:
        (want,) = db.execute(
            "SELECT count(*) FROM CUPTI_ACTIVITY_KIND_SYNCHRONIZATION WHERE streamId = 4294967295"
        ).fetchone()
    assert want > 0
    trace = tmp_path / "nsys"
    import_trace([src], trace)

    async def go() -> None:
        app = TimelineApp(trace)
        async with app.run_test(size=(100, 40)) as pilot:
            view = await wait_timeline(pilot, app)
            st = view.state
            text = frame_text(app)
            assert "stream -1" not in text
            lanes = [vr for vr in st.visible_rows() if vr.row is not None and vr.lane.stream == -1]
            assert text.count("no stream") == len(lanes) == 2  # one per GPU
            assert sum(vr.lane.n_events for vr in lanes) == want
            # the cursor on the first such lane, its first event selected
            st.cursor = st.visible_rows().index(lanes[0])
            st.version += 1
            await pilot.press("right")
            await pilot.pause()
            details = str(view.query_one("#tl-details").render())
            assert "no stream" in details and "stream -1" not in details
            assert st.ix.event(st.selected)["name"] == "Event Sync"

    run(go())


def test_whole_job_charts_start_at_zero(sample: Path) -> None:
    """The sample's NVML and CPU charts began their time axis at -1 ms: time 0 was the first
    sample, and the trace starts 1 ms before it. Time 0 is now the earlier of the two; the first
    sample sits at its offset from the trace's first event, read from the events and metrics."""
    from pilotwait import wait_dashboard

    t = open_trace(sample)
    first_event = t.events().select(pl.col("ts").min()).collect().item()
    first_sample = t.metrics().select(pl.col("ts").min()).collect().item()
    offset_ms = (first_sample - first_event) / 1e6
    assert offset_ms > 0

    async def go() -> None:
        app = ProfuiApp(OpenTarget("trace", sample), poll_s=60)
        async with app.run_test(size=(120, 40)) as pilot:
            view = await wait_dashboard(pilot, app)
            for chart in ("gpu_util", "cpu"):
                panel = view.panel(chart)
                data = panel.data
                xs = [x for s in data.series for x in s.xs]
                assert min(data.marks) == 0 and min(xs) >= 0, chart
                assert min(s.xs[0] for s in data.series) == pytest.approx(offset_ms), chart
                foot = str(panel.query_one(".chart-foot").render())
                assert "at -" not in foot and "traced (│): " in foot, foot

    run(go())


def test_a_jax_run_on_cpu_has_no_gpu_lane(tmp_path: Path) -> None:
    """The JAX sample ran on CPU (samples/train_jax.py): its device lane read "GPU 0" and the
    details "GPU 0 · stream 0"; they read "CPU device 0"."""
    trace = tmp_path / "jax"
    import_trace([SAMPLES / "jax_cpu"], trace)
    ev = open_trace(trace).events().filter(pl.col("device") >= 0).collect()
    assert ev.height and set(ev["device"]) == {0}

    async def go() -> None:
        app = TimelineApp(trace)
        async with app.run_test(size=(100, 40)) as pilot:
            view = await wait_timeline(pilot, app)
            st = view.state
            text = frame_text(app)
            assert "GPU" not in text and "CPU device 0" in text
            st.cursor = next(i for i, vr in enumerate(st.visible_rows()) if vr.lane.kind == "stream")
            st.version += 1
            await pilot.press("right")
            await pilot.pause()
            details = str(view.query_one("#tl-details").render())
            assert st.selected >= 0 and "CPU device 0 · stream" in details and "GPU" not in details

    run(go())
