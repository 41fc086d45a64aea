"""Random key sequences on ``profui open`` (issue #37): whatever a user types — every key bound
by the app, its screens, its views and the timeline, digits, ``/`` and text, Enter, Esc, Space,
arrows, PgUp/PgDn, ``[`` ``]`` — the app is still running afterwards and nothing was raised.

Three traces: the bundled GPU sample, the CPU MLP sample and a real Nsight export. Bounded: a few
dozen short sequences in all (each example opens the app anew, on a trace analysed beforehand)."""

from __future__ import annotations

import asyncio
import os
import shutil
import sys
from pathlib import Path

import pytest
from hypothesis import HealthCheck, Phase, given, note, settings
from hypothesis import strategies as st
from textual.binding import Binding
from textual.dom import DOMNode

from profui.analysis.lod_open import build_lod
from profui.capture.ingest import import_trace
from profui.tui.app import VIEWS, OpenTarget, ProfuiApp

from realdata import SAMPLES, nsys_export

QUIT_ACTIONS = ("quit", "app.quit")
#: Keys every screen shares, whether or not a binding names them.
BASE_KEYS = [
    *"0123456789",
    "slash",
    "enter",
    "escape",
    "space",
    "backspace",
    "up",
    "down",
    "left",
    "right",
    "pageup",
    "pagedown",
    "home",
    "end",
    "left_square_bracket",
    "right_square_bracket",
    "tab",
    "shift+tab",
    "question_mark",
]
#: Text typed into a search or step prompt (as single keys).
TEXT = "allreduceAR_:#gkm 15"
#: Whole prompts: `/` or `g`, words that find something or nothing (a bad regex, a step that
#: is not there), Enter.
WORDS = [
    "AllReduce",
    "all_reduce",
    "aten::mm",
    "ProfilerStep",
    "Sync",
    "3",
    "#2",
    "999",
    "/nccl/",
    "/[/",
    "zz",
]


def bound_keys() -> list[str]:
    """Every key bound by a class of profui's TUI (views imported first), quitting left out."""
    import profui.tui.screens.help
    import profui.tui.screens.trace  # noqa: F401 - their classes are walked below

    for spec in VIEWS:
        spec.view_class()
    from textual.widgets import DataTable

    classes: set[type] = {DataTable}
    for name, module in list(sys.modules.items()):
        if name.startswith("profui.tui") and module is not None:
            classes |= {
                c
                for c in vars(module).values()
                if isinstance(c, type) and issubclass(c, DOMNode) and c.__module__ == name
            }
    keys: set[str] = set()
    for cls in classes:
        for b in Binding.make_bindings(getattr(cls, "BINDINGS", [])):
            if b.action not in QUIT_ACTIONS and b.key not in ("q", "ctrl+c", "ctrl+q"):
                keys.add(b.key)
    return sorted(keys)


KEYS = sorted(set(BASE_KEYS) | set(bound_keys()))


def _prompt(opener: str, word: str) -> list[str]:
    return [opener, *word, "enter"]


def _timeline_keys() -> list[str]:
    from profui.tui.timeline.canvas import TimelineCanvas

    return sorted({b.key for b in Binding.make_bindings(TimelineCanvas.BINDINGS)})


chunks = (
    st.sampled_from(KEYS).map(lambda k: [k])
    | st.sampled_from(_timeline_keys()).map(lambda k: [k])
    | st.sampled_from(TEXT).map(lambda k: [k])
    | st.builds(_prompt, st.sampled_from(["slash", "g"]), st.sampled_from(WORDS))
)
#: Half the sequences start on the timeline (the view with the most keys), the others on a view
#: of the nine.
first = st.sampled_from(["5"] * 9 + [spec.key for spec in VIEWS]).map(lambda k: [k])
key_sequences = st.builds(
    lambda a, cs: [k for c in (a, *cs) for k in c], first, st.lists(chunks, max_size=24)
)
FUZZ = settings(
    # a few dozen in all; PROFUI_KEYSEQ_EXAMPLES=200 for a longer hunt
    max_examples=int(os.environ.get("PROFUI_KEYSEQ_EXAMPLES", "10")),
    deadline=None,
    database=None,
    # no shrinking: each example opens the app anew, and the sequence is noted as it was typed
    phases=(Phase.explicit, Phase.generate),
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
)


@pytest.fixture(scope="module")
def traces(tmp_path_factory) -> dict[str, Path]:
    """The three traces, copied (the samples) or imported, analysed and indexed once."""
    root = tmp_path_factory.mktemp("keyseq")
    out = {}
    for sample in ("synthetic_gpu", "mlp_cpu"):
        out[sample] = root / sample
        shutil.copytree(SAMPLES / sample, out[sample], ignore=shutil.ignore_patterns(".profui"))
    out["nsys"] = root / "nsys"
    import_trace([nsys_export("mfu_2gpu_before")], out["nsys"])
    for path in out.values():
        _warm(path)
    return out


def _warm(path: Path) -> None:
    """The dashboard's analysis and the timeline's index, computed before the examples."""

    async def go() -> None:
        from pilotwait import wait_dashboard

        app = ProfuiApp(OpenTarget("trace", path), poll_s=60)
        async with app.run_test(size=(80, 24)) as pilot:
            await wait_dashboard(pilot, app)

    asyncio.run(go())
    build_lod(path)


async def _type(path: Path, keys: list[str]) -> None:
    app = ProfuiApp(OpenTarget("trace", path), poll_s=60)
    async with app.run_test(size=(80, 24)) as pilot:
        for key in keys:
            await pilot.press(key)
        for _ in range(5):  # let the views' workers answer what the keys started
            await pilot.pause(0.05)
        assert app.is_running and app.return_code is None, app.return_code
        assert app._exception is None, repr(app._exception)
        shown = "\n".join(str(w.render()) for w in app.screen.query("Static"))
        assert "Traceback" not in shown


@pytest.mark.parametrize("trace", ["synthetic_gpu", "mlp_cpu", "nsys"])
def test_any_key_sequence_leaves_the_app_running(traces: dict[str, Path], trace: str) -> None:
    path = traces[trace]

    @FUZZ
    @given(keys=key_sequences)
    def check(keys: list[str]) -> None:
        note(f"{trace}: {' '.join(keys)}")
        asyncio.run(_type(path, keys))

    check()


def test_the_keys_include_every_view_and_the_timeline() -> None:
    """The sequences draw from the timeline's keys and the views' own, not only the shared ones."""
    assert {"c", "C", "n", "N", "x", "z", "M", "e", "f", "g", "i", "o", "H", "L"} <= set(KEYS)
    assert {spec.key for spec in VIEWS} <= set(KEYS)
    assert "ctrl+r" in KEYS  # the trace screen's reload
    assert not {"q", "ctrl+c"} & set(KEYS)


def test_a_filter_with_markup_brackets_in_the_kernels_view(traces: dict[str, Path]) -> None:
    """Found by the sequences: `2` `/` `[/` ended the app (the Kernels view's status line took the
    typed filter as markup: MarkupError)."""

    async def go() -> None:
        from pilotwait import wait_for

        app = ProfuiApp(OpenTarget("trace", traces["synthetic_gpu"]), poll_s=60)
        async with app.run_test(size=(80, 24)) as pilot:
            await pilot.press("2")
            view = app.screen.query_one("#kernels")
            assert await wait_for(pilot, lambda: view.ready)
            await pilot.press("slash", "left_square_bracket", "slash", "enter")
            await pilot.pause()
            assert app.is_running and app._exception is None
            status = str(app.screen.query_one("#kernels-status").render())
            assert "0 of" in status and "“[/”" in status

    asyncio.run(go())


def test_a_filter_with_markup_brackets_in_the_jobs_list(tmp_path: Path) -> None:
    """The jobs list's status line took the typed filter as markup too: `/` `[/` ended the app."""
    from pilotwait import wait_for

    from realdata import shared_trace

    for name in ("base", "other"):
        import_trace(
            [shared_trace("hta-cpu_only-rank-34.Jul_15_10_52_41.1074.pt.trace.json.gz")], tmp_path / name
        )

    async def go() -> None:
        app = ProfuiApp(OpenTarget("jobs", tmp_path), poll_s=60)
        async with app.run_test(size=(80, 24)) as pilot:
            table = app.screen.query_one("#jobs-table")
            assert await wait_for(pilot, lambda: table.row_count == 2)
            await pilot.press("slash", "left_square_bracket", "slash")
            await pilot.pause()
            assert app.is_running and app._exception is None
            status = str(app.screen.query_one("#jobs-status").render())
            assert status.startswith("0 of 2 traces") and "“[/”" in status

    asyncio.run(go())


@pytest.mark.parametrize("key", [spec.key for spec in VIEWS])
def test_every_view_of_a_cpu_run_opens(traces: dict[str, Path], key: str) -> None:
    """Found by the sequences: `9` on the CPU MLP sample ended the app (IndexError in FrameTable:
    a view with nothing to show sets a frame without columns). Each view opens and says its line."""
    from pilotwait import wait_for

    spec = next(s for s in VIEWS if s.key == key)

    async def go() -> None:
        app = ProfuiApp(OpenTarget("trace", traces["mlp_cpu"]), poll_s=60)
        async with app.run_test(size=(80, 24)) as pilot:
            await pilot.press(key)
            view = app.screen.query_one(f"#{spec.name}")
            assert await wait_for(pilot, lambda: getattr(view, "ready", True) or not app.is_running)
            await pilot.pause()
            assert app.is_running and app._exception is None
            assert app.screen.current == spec.name

    asyncio.run(go())
