"""The timeline at 80x24 as a user walked it (tmux, NO_COLOR): ruler labels whole or absent,
step labels that never touch, a status line whose newest message is whole, Enter's words only
where a launch links to device work, and ``z`` zooming to the selected event. Oracles are the
events (Polars) and the text on screen, never the renderer's own arithmetic."""

from __future__ import annotations

import asyncio
import re
import shutil
from pathlib import Path

import polars as pl
import pytest
from pilotwait import wait_timeline

from profui.analysis import open_trace
from profui.capture.ingest import import_trace
from profui.tui.timeline import TimelineApp
from profui.tui.timeline.canvas import TimelineCanvas
from profui.tui.widgets.keyline import KeyLine

from realdata import SAMPLES

SIZE = (80, 24)
TICK = re.compile(r"╵(\S*)")
WHOLE_TICK = re.compile(r"-?\d+(\.\d+)?(s|ms|µs|ns)")


def run(coro) -> None:
    asyncio.run(coro)


def _copy(tmp_path_factory, name: str) -> Path:
    out = tmp_path_factory.mktemp("fit") / name
    shutil.copytree(SAMPLES / name, out, ignore=shutil.ignore_patterns(".profui"))
    return out


@pytest.fixture(scope="module")
def mlp(tmp_path_factory) -> Path:
    return _copy(tmp_path_factory, "mlp_cpu")


@pytest.fixture(scope="module")
def gpu(tmp_path_factory) -> Path:
    return _copy(tmp_path_factory, "synthetic_gpu")


@pytest.fixture(scope="module")
def jax(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("fit") / "jax_cpu"
    import_trace([SAMPLES / "jax_cpu"], out)
    return out


def lines(app) -> list[str]:
    return [s.text for s in app.screen.query_one(TimelineCanvas).frame()]


def status(app) -> str:
    return app.screen.query_one("#tl-status").render_line(0).text.strip()


def step_numbers(trace: Path) -> list[int]:
    ev = open_trace(trace).events().collect()
    names = ev.filter((pl.col("kind") == "step") & pl.col("name").str.contains(r"#\d+$"))["name"]
    return sorted({int(n.rsplit("#", 1)[1]) for n in names.to_list()})


def test_ruler_labels_are_whole_or_absent(mlp: Path, gpu: Path) -> None:
    """`╵0.02`, `╵0`: a tick label cut at the right edge lost its digits or unit."""
    seen: list[str] = []

    async def go(path: Path) -> None:
        app = TimelineApp(path)
        async with app.run_test(size=SIZE) as pilot:
            await wait_timeline(pilot, app)
            for keys in ((), ("plus",), ("plus",), ("l",), ("l",), ("plus",), ("l",), ("f",), ("minus",)):
                await pilot.press(*keys)
                await pilot.pause()
                ruler = lines(app)[0]
                assert len(ruler) == 80
                for label in TICK.findall(ruler[18:]):
                    seen.append(label)
                    assert WHOLE_TICK.fullmatch(label), (keys, ruler)

    run(go(mlp))
    run(go(gpu))
    assert len(seen) > 20


def test_step_labels_never_touch(mlp: Path, jax: Path) -> None:
    """`#4#5 #6` (MLP), `#3#4` (JAX): labels drawn against each other read as one."""

    async def go(path: Path) -> None:
        want = set(step_numbers(path))
        app = TimelineApp(path)
        async with app.run_test(size=SIZE) as pilot:
            await wait_timeline(pilot, app)
            drawn = 0
            for keys in ((), ("minus",), ("plus",), ("plus",)):
                await pilot.press(*keys)
                await pilot.pause()
                band = lines(app)[1][18:]
                assert not re.search(r"\d#", band), band
                for m in re.finditer(r"#(\d+)", band):
                    assert m.start() == 0 or band[m.start() - 1] == " ", band
                    assert int(m.group(1)) in want
                    drawn += 1
            assert drawn > 0

    run(go(mlp))
    run(go(jax))


def test_status_line_keeps_the_newest_message_whole(mlp: Path) -> None:
    """`/allreduce` (nothing found) then `g2⏎` read `… /allreduce 0 matches · no step 2 (steps`;
    `M` without memory events read `no memory events in this trace (recorded`."""
    numbers = step_numbers(mlp)
    assert numbers and 2 not in numbers

    async def go() -> None:
        app = TimelineApp(mlp)
        async with app.run_test(size=SIZE) as pilot:
            view = await wait_timeline(pilot, app)
            await pilot.press("slash", *"allreduce", "enter")
            await pilot.pause()
            assert view.state.matches.size == 0
            await pilot.press("g", "2", "enter")
            await pilot.pause()
            line = status(app)
            assert len(line) <= 78
            assert "allreduce" not in line, line
            assert line.endswith(f"no step 2 (steps {numbers[0]}–{numbers[-1]})") or (
                f"no step 2 (steps {numbers[0]}–{numbers[-1]})  ?: keys" in line
            ), line
            # a long message: the older parts give way, the message stays whole
            view.state.message = "no memory events in this trace (the allocator's [memory] events)"
            view._update()
            await pilot.pause()
            line = status(app)
            assert len(line) <= 78
            assert "no memory events in this trace (the allocator's [memory] events)" in line, line

    run(go())


def test_enter_is_worded_by_the_trace(mlp: Path, gpu: Path, jax: Path) -> None:
    """CPU-only and XLA-on-CPU runs were told `Enter follows a launch to its kernel` and shown
    `⏎ Launch↔kernel` though no event is a kernel or links to one."""
    for path, follows in ((mlp, False), (jax, False), (gpu, True)):  # launches joined to device work
        ev = open_trace(path).events().collect()
        launches = ev.filter(
            pl.col("kind").is_in(["runtime", "driver"]) & pl.col("correlation").is_not_null()
        )
        assert (launches.height > 0) == follows

    async def go(path: Path, follows: bool) -> None:
        app = TimelineApp(path)
        async with app.run_test(size=SIZE) as pilot:
            await wait_timeline(pilot, app)
            await pilot.pause()
            hint = app.screen.query_one("#tl-details").render_line(0).text
            keys = app.screen.query_one(KeyLine).keys_text().plain
            assert ("Launch↔kernel" in keys) == follows, keys
            assert ("to its kernel" in hint) == follows, hint
            if not follows:
                assert "launch" not in hint.lower() and "kernel" not in hint.lower(), hint

    run(go(mlp, False))
    run(go(jax, False))
    run(go(gpu, True))


def test_z_zooms_to_the_selected_event(mlp: Path) -> None:
    """`z` on a 17.2 ms step widened an 18.3 ms window to 51.5 ms: zoom to the event itself."""
    ev = open_trace(mlp).events().collect()
    step4 = ev.filter(pl.col("name") == "ProfilerStep#4")
    assert step4.height >= 1

    async def go() -> None:
        app = TimelineApp(mlp)
        async with app.run_test(size=SIZE) as pilot:
            view = await wait_timeline(pilot, app)
            st = view.state
            before = (st.t0, st.t1)
            await pilot.press("z")  # nothing selected: said so, the window stays
            await pilot.pause()
            assert (st.t0, st.t1) == before
            assert "no event selected" in status(app)
            await pilot.press("g", "4", "enter")
            await pilot.pause()
            span_step = st.t1 - st.t0
            for _ in range(8):  # the cursor to the first lane row with events (the step row)
                if st.current().row is not None:
                    break
                await pilot.press("down")
                await pilot.pause()
            await pilot.press("right")
            await pilot.pause()
            assert st.selected >= 0
            rec = st.ix.event(st.selected)
            name = rec["name"]
            mine = ev.filter(pl.col("name") == name)
            assert mine.height >= 1
            dur = float(rec["dur"])
            start = float(rec["t"])
            await pilot.press("z")
            await pilot.pause()
            assert st.t0 <= start and start + dur <= st.t1
            # the event fills the window (the walk's 17.2 ms step got a 51.5 ms window)
            assert st.t1 - st.t0 <= max(dur * 1.2, st.MIN_SPAN), (st.t1 - st.t0, dur)
            assert st.t1 - st.t0 < 1.2 * span_step

    run(go())
