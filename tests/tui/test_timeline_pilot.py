"""The Timeline view driven by keys on a real trace (HTA's NCCL trace, imported with the project's
importer). Every expected viewport, selection and details line is computed here from the raw
events with Polars, not read back from the index the view draws from."""

from __future__ import annotations

import asyncio
import shutil
from pathlib import Path

import polars as pl
import pytest
from pilotwait import wait_timeline

from profui.analysis import open_trace
from profui.analysis.formatting import fmt_ns
from profui.analysis.lod_open import build_lod
from profui.capture.ingest import import_trace
from profui.tui.app import OpenTarget, ProfuiApp
from profui.tui.timeline import TimelineApp, TimelineView
from profui.tui.timeline.canvas import TimelineCanvas
from profui.tui.timeline.render import LINK_LINE, MATCH, STYLES

from realdata import shared_trace

NCCL = "hta-nccl_parser_config-nccl_data.json.gz"
SIZE = (100, 32)


@pytest.fixture(scope="module")
def imported(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("timeline") / "nccl"
    import_trace([shared_trace(NCCL)], out)
    build_lod(out)  # warm: each app below opens the cached index
    return out


@pytest.fixture(scope="module")
def raw(imported: Path) -> pl.DataFrame:
    ev = open_trace(imported).events().collect()
    base = ev["ts"].min()
    return ev.with_columns(
        (pl.col("ts") - base).alias("t"), (pl.col("ts") + pl.col("dur") - base).alias("end")
    )


def run(coro) -> None:
    asyncio.run(coro)


def details(view: TimelineView) -> str:
    return str(view.query_one("#tl-details").render())


def status(view: TimelineView) -> str:
    return str(view.query_one("#tl-status").render())


def step_window(raw: pl.DataFrame, n: int) -> tuple[float, float]:
    s = raw.filter(pl.col("name") == f"ProfilerStep#{n}").row(0, named=True)
    pad = (s["end"] - s["t"]) * 0.01
    return s["t"] - pad, s["end"] + pad


def test_fit_zoom_pan(imported: Path, raw: pl.DataFrame) -> None:
    span = raw["end"].max()

    async def go() -> None:
        app = TimelineApp(imported)
        async with app.run_test(size=SIZE) as pilot:
            view = await wait_timeline(pilot, app)
            st = view.state
            assert (st.t0, st.t1) == (0, span)
            assert status(view).startswith(f"Δ {fmt_ns(span)}")
            await pilot.press("plus")
            assert (st.t0, st.t1) == pytest.approx((span / 4, 3 * span / 4))
            await pilot.press("l")  # pan right a quarter of the window
            assert (st.t0, st.t1) == pytest.approx((span / 4 + span / 8, 3 * span / 4 + span / 8))
            await pilot.press("minus", "minus")
            assert st.t1 - st.t0 == pytest.approx(span * 1.1)  # at most the trace plus margins
            await pilot.press("i", "i", "i", "H")  # zoom ×8, then a page left
            w = st.t1 - st.t0
            assert w == pytest.approx(span * 1.1 / 8)
            await pilot.press("f")
            assert (st.t0, st.t1) == (0, span)
            ruler = app.query_one(TimelineCanvas).frame()[0].text
            assert [tok for tok in ruler.split("│", 1)[1].split() if tok.startswith("╵")] == [
                "╵0.0s",
                "╵0.2s",
                "╵0.4s",
                "╵0.6s",
            ]

    run(go())


def test_step_jump_next_prev(imported: Path, raw: pl.DataFrame) -> None:
    async def go() -> None:
        app = TimelineApp(imported)
        async with app.run_test(size=SIZE) as pilot:
            view = await wait_timeline(pilot, app)
            st = view.state
            await pilot.press("g", "5", "enter")
            assert (st.t0, st.t1) == pytest.approx(step_window(raw, 5))
            assert "ProfilerStep#5 (2/3)" in status(view)
            band = app.query_one(TimelineCanvas).frame()[1].text
            assert "#5" in band and "#4" not in band
            await pilot.press("n")
            assert (st.t0, st.t1) == pytest.approx(step_window(raw, 6))
            await pilot.press("n")
            assert (st.t0, st.t1) == pytest.approx(step_window(raw, 6)) and "no later step" in status(view)
            await pilot.press("N", "N")
            assert (st.t0, st.t1) == pytest.approx(step_window(raw, 4))
            await pilot.press("g", "9", "enter")
            numbers = sorted(int(n.split("#")[1]) for n in raw.filter(pl.col("kind") == "step")["name"])
            assert numbers == [4, 5, 6]
            assert "no step 9 (steps 4–6)" in status(view)  # says which steps exist

    run(go())


def test_select_events_on_a_stream_and_details(imported: Path, raw: pl.DataFrame) -> None:
    t0, _ = step_window(raw, 5)
    activity = raw.filter(
        pl.col("stream") == 7, pl.col("kind") != "gpu_annotation", pl.col("t") >= int(t0)
    ).sort(["t", "dur"], descending=[False, True])
    launches = raw.filter(pl.col("kind") == "runtime").select("correlation", launch_ts="ts")

    async def go() -> None:
        app = TimelineApp(imported)
        async with app.run_test(size=SIZE) as pilot:
            view = await wait_timeline(pilot, app)
            st = view.state
            await pilot.press("g", "5", "enter")
            target = next(
                i
                for i, vr in enumerate(st.visible_rows())
                if vr.lane.kind == "stream" and vr.lane.stream == 7
            )
            await pilot.press(*["down"] * target)
            assert st.current().lane.label == "stream 7"
            for k in range(3):
                await pilot.press("right")
                want = activity.row(k, named=True)
                rec = st.ix.event(st.selected)
                assert (rec["ts"], rec["name"]) == (want["ts"], want["name"])
                text = details(view)
                first = text.splitlines()[0]
                assert first == want["name"] or (first.endswith("…") and want["name"].startswith(first[:-1]))
                assert f"{want['kind']} · rank 0 · GPU 0 · stream 7" in text
                assert f"dur {fmt_ns(want['dur'])}" in text
                assert f"correlation {want['correlation']}" in text
                lat = launches.filter(pl.col("correlation") == want["correlation"])["launch_ts"][0]
                assert f"launch latency {fmt_ns(want['ts'] - lat)}" in text
                assert st.t0 <= want["t"] < st.t1
            await pilot.press("left")
            assert st.ix.event(st.selected)["ts"] == activity.row(1, named=True)["ts"]
            await pilot.press("escape")
            assert st.selected == -1 and "select an event" in details(view)

    run(go())


def test_follow_launch_to_kernel_and_back(imported: Path, raw: pl.DataFrame) -> None:
    launch = (
        raw.filter(pl.col("device") < 0, pl.col("name").str.to_lowercase().str.contains("cudalaunchkernel"))
        .sort("ts")
        .row(0, named=True)
    )
    kernel = raw.filter(pl.col("device") >= 0, pl.col("correlation") == launch["correlation"]).row(
        0, named=True
    )

    async def go() -> None:
        app = TimelineApp(imported)
        async with app.run_test(size=SIZE) as pilot:
            view = await wait_timeline(pilot, app)
            st = view.state
            await pilot.press("slash", *"cudaLaunchKernel", "enter")
            host = st.selected
            rec = st.ix.event(host)
            assert (rec["ts"], rec["name"], rec["tid"]) == (launch["ts"], launch["name"], launch["tid"])
            await pilot.press("enter")
            k = st.selected
            rec = st.ix.event(k)
            assert (rec["ts"], rec["name"], rec["stream"]) == (kernel["ts"], kernel["name"], kernel["stream"])
            assert st.linked == host and st.current().lane.kind == "stream"
            assert st.t0 <= launch["t"] and kernel["end"] <= st.t1  # both ends in view
            assert f"launch latency {fmt_ns(kernel['ts'] - launch['ts'])}" in details(view)
            # the status names the kernel in at most 40 cells (the takeaways' width), in words of
            # its name: at 80 columns the step label stays beside it
            said = st.message.removeprefix("→ kernel ")
            assert st.message.startswith("→ kernel ") and len(said) <= 40
            assert said and all(part in kernel["name"] for part in said.split("…"))
            frame = app.query_one(TimelineCanvas).frame()
            assert any(seg.style == STYLES[LINK_LINE] for line in frame for seg in line)  # the drawn link
            await pilot.press("enter")  # and back, to the launch on the GPU's launch lane
            rec = st.ix.event(st.selected)
            assert (rec["ts"], rec["name"], rec["correlation"]) == (
                launch["ts"],
                launch["name"],
                launch["correlation"],
            )
            assert st.current().lane.kind == "launch" and st.linked == k

    run(go())


def test_follow_nccl_kernel_from_the_kernels_hook(imported: Path, raw: pl.DataFrame) -> None:
    nccl = raw.filter(pl.col("name").str.starts_with("ncclKernel_AllReduce")).sort("ts")
    first = nccl.row(0, named=True)
    launch = raw.filter(pl.col("kind") == "runtime", pl.col("correlation") == first["correlation"]).row(
        0, named=True
    )

    async def go() -> None:
        app = TimelineApp(imported)
        async with app.run_test(size=SIZE) as pilot:
            view = await wait_timeline(pilot, app)
            st = view.state
            app.goto_timeline(kernel=first["name"])
            await pilot.pause()
            rec = st.ix.event(st.selected)
            assert (rec["ts"], rec["stream"]) == (first["ts"], first["stream"])
            assert st.t0 <= first["t"] and first["end"] <= st.t1
            assert (st.t1 - st.t0) == pytest.approx(
                3 * first["dur"]
            )  # the kernel fills a third of the screen
            await pilot.press("x")
            rec = st.ix.event(st.selected)
            assert (rec["name"], rec["ts"]) == (launch["name"], launch["ts"])
            assert rec["name"] == "cudaLaunchKernelExC"
            assert f"launch latency {fmt_ns(first['ts'] - launch['ts'])}" in details(view)
            await pilot.press("x")
            assert st.ix.event(st.selected)["ts"] == first["ts"]

    run(go())


def test_search_regex_next_prev(imported: Path, raw: pl.DataFrame) -> None:
    hits = raw.filter(pl.col("name").str.contains(r"^nccl:(all_reduce|broadcast)$")).sort("ts")

    async def go() -> None:
        app = TimelineApp(imported)
        async with app.run_test(size=SIZE) as pilot:
            view = await wait_timeline(pilot, app)
            st = view.state
            await pilot.press("slash", *"/^nccl:(all_reduce|broadcast)$/", "enter")
            assert st.matches.size == hits.height == 42
            assert f"{hits.height} matches" in status(view) and f"match 1/{hits.height}" in status(view)
            assert st.ix.event(st.selected)["ts"] == hits["ts"][0]
            await pilot.press("n", "n")
            assert st.ix.event(st.selected)["ts"] == hits["ts"][2]
            assert st.t0 <= hits["t"][2] < st.t1
            await pilot.press("N")
            assert st.ix.event(st.selected)["ts"] == hits["ts"][1]
            await pilot.press("f")  # at coarse zoom the matches stay marked
            frame = app.query_one(TimelineCanvas).frame()
            marked = sum(len(seg.text) for line in frame for seg in line if seg.style == STYLES[MATCH])
            assert 0 < marked <= hits.height
            await pilot.press("slash", *"no-such-kernel", "enter")
            assert st.matches.size == 0 and "no event matches" in status(view)

    run(go())


def test_fold_and_hide_empty_lanes(imported: Path, raw: pl.DataFrame) -> None:
    async def go() -> None:
        app = TimelineApp(imported)
        async with app.run_test(size=SIZE) as pilot:
            view = await wait_timeline(pilot, app)
            st = view.state
            n = len(st.visible_rows())
            await pilot.press("down")  # the rank header
            assert st.current().lane.kind == "rank"
            await pilot.press("space")
            assert len(st.visible_rows()) == 2  # node + folded rank
            await pilot.press("space")
            assert len(st.visible_rows()) == n
            # a window holding only the first step's start: rows with nothing in it disappear
            await pilot.press("g", "4", "enter", "i", "i", "i", "i", "i", "i", "i", "i", "i", "i")
            await pilot.press("e")
            shown = [vr for vr in st.visible_rows() if vr.row is not None]
            for vr in shown:
                assert st.ix.events_between(vr.row, int(st.t0), int(st.t1) + 1) > 0
            assert len(shown) < len([vr for vr in st._rows if vr.row is not None])

    run(go())


def test_registered_in_the_profui_app(imported: Path, raw: pl.DataFrame, tmp_path: Path) -> None:
    trace = tmp_path / "nccl"
    shutil.copytree(imported, trace)

    async def go() -> None:
        app = ProfuiApp(OpenTarget("trace", trace), poll_s=60)
        async with app.run_test(size=(80, 24)) as pilot:
            await pilot.press("5")
            view = await wait_timeline(pilot, app)
            assert app.goto_timeline(step=6)
            assert (view.state.t0, view.state.t1) == pytest.approx(step_window(raw, 6))
            assert app.goto_timeline(kernel=raw.filter(pl.col("kind") == "memcpy").sort("ts")["name"][0])
            rec = view.state.ix.event(view.state.selected)
            assert rec["kind"] == "memcpy" and rec["ts"] == raw.filter(pl.col("kind") == "memcpy")["ts"].min()

    run(go())


def test_keys_typed_at_once_after_g_reach_the_prompt(
    imported: Path, raw: pl.DataFrame, tmp_path: Path
) -> None:
    """`g 5 Enter` arriving together (a fast typist, tmux send-keys) must not let `5` switch views."""
    from textual import events

    trace = tmp_path / "nccl"
    shutil.copytree(imported, trace)

    async def go() -> None:
        app = ProfuiApp(OpenTarget("trace", trace), poll_s=60)
        async with app.run_test(size=(80, 24)) as pilot:
            await pilot.press("5")
            view = await wait_timeline(pilot, app)
            for key, char in (("g", "g"), ("5", "5"), ("enter", None)):
                app.post_message(events.Key(key, char))
            for _ in range(20):
                await pilot.pause()
            assert app.screen.current == "timeline"
            assert (view.state.t0, view.state.t1) == pytest.approx(step_window(raw, 5))

    run(go())


def test_mouse_click_selects_the_event_under_it(imported: Path, raw: pl.DataFrame) -> None:
    async def go() -> None:
        app = TimelineApp(imported)
        async with app.run_test(size=SIZE) as pilot:
            view = await wait_timeline(pilot, app)
            st = view.state
            await pilot.press("g", "5", "enter", "C")  # unfold everything: deep threads start folded
            y = (
                next(
                    i for i, vr in enumerate(st.visible_rows()) if vr.lane.kind == "thread" and vr.depth == 1
                )
                + 2
            )
            lw = app.query_one(TimelineCanvas).renderer.label_width(SIZE[0])
            x = lw + 5
            await pilot.click("#tl-canvas", offset=(x, y))
            cw = SIZE[0] - lw
            t = st.t0 + (5.5) * (st.t1 - st.t0) / cw
            rec = st.ix.event(st.selected)
            assert rec["t"] <= t < rec["t"] + rec["dur"] and rec["name"] == "## forward ##"
            assert st.current().depth == 1 and "## forward ##" in details(view)

    run(go())


def test_monochrome_no_color(imported: Path, raw: pl.DataFrame, monkeypatch) -> None:
    """Under NO_COLOR (Textual's monochrome filter) every frame draws: blocks stay visible as
    reverse video, the selection as underline."""
    monkeypatch.setenv("NO_COLOR", "1")

    async def go() -> None:
        app = TimelineApp(imported)
        assert app.no_color
        async with app.run_test(size=(80, 24)) as pilot:
            view = await wait_timeline(pilot, app)
            await pilot.press("g", "5", "enter", "C", "slash", *"ncclKernel_AllReduce", "enter", "enter")
            await pilot.pause()
            svg = app.export_screenshot()
            assert "ProfilerStep#5" in status(view) and view.state.linked >= 0
            frame = app.query_one(TimelineCanvas).frame()
            styles = [seg.style for line in frame for seg in line]
            assert all(s is not None for s in styles)
            assert any(s.reverse for s in styles) and any(s.underline for s in styles)
            assert "<svg" in svg

    run(go())


class _RecordingView(TimelineView):
    lines: list[str] = []

    def _status_line(self, line: str) -> None:
        self.lines.append(line)
        super()._status_line(line)


class _RecordingApp(TimelineApp):
    def compose(self):
        yield _RecordingView(self.session, id="timeline")


def test_cold_open_builds_the_index_in_a_worker(imported: Path, tmp_path: Path) -> None:
    trace = tmp_path / "cold"
    shutil.copytree(imported, trace, ignore=shutil.ignore_patterns(".profui"))

    async def go() -> None:
        app = _RecordingApp(trace)
        async with app.run_test(size=SIZE) as pilot:
            view = await wait_timeline(pilot, app)
            assert view.state.ix.folder.parent == trace / ".profui" / "artifacts" / "timeline"
            assert status(view).startswith("Δ ")

    run(go())
    lines = _RecordingView.lines
    # the stages the index reads run first (a recorded run: the next open reads them), then it
    said = [line.split(" ", 2)[-1].split(" ")[0] for line in lines if line.startswith("timeline: [")]
    assert said == ["ingest", "correlate", "steps", "timeline"]  # the graph's order
    assert lines[0] == "timeline: [1/4] ingest …"
    assert any("scanning" in line for line in lines) and any("indexing" in line for line in lines)
    assert lines[-1] == "timeline: timeline index ready (100%)"
