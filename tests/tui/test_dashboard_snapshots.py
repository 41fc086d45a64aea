"""SVG snapshots of each screen at 80×24 and 160×48 on a real trace (HTA's NCCL trace imported
with the project's importer): jobs list, dashboard (top and scrolled), Kernels, Steps, Runs, and
at 80×24 the Communication, Launches, Idle and Sync views.

Everything that varies between runs is pinned: the trace is analysed once and its run record's
times are fixed, paths are relative, dates are shown in UTC. Update after an intended change
with ``pytest tests/tui/test_dashboard_snapshots.py --snapshot-update``.
"""

from __future__ import annotations

import asyncio
import json
import shutil
import time
from pathlib import Path

import pytest
from pilotwait import wait_for

from profui.capture.ingest import import_trace
from profui.tui.app import OpenTarget, ProfuiApp
from profui.tui.views import dashboard_charts as dc
from profui.tui.views.session import TraceSession

from realdata import shared_trace

NCCL = "hta-nccl_parser_config-nccl_data.json.gz"
SIZES = [(80, 24), (160, 48)]
FIXED = "2026-01-01T00:00:00.000+00:00"


@pytest.fixture(scope="module")
def analysed(tmp_path_factory) -> Path:
    """The NCCL trace, analysed once (so each snapshot is a warm open), run times pinned."""
    root = tmp_path_factory.mktemp("snap")
    trace = root / "nccl"
    import_trace([shared_trace(NCCL)], trace)
    TraceSession(trace).stage_outputs(dc.STAGES)
    for rec in (trace / ".profui" / "runs").glob("run-*.json"):
        data = json.loads(rec.read_text())
        data["created"] = data["ended"] = FIXED
        data["pid"] = 1
        for st in data["stages"]:
            st["start"] = st["end"] = FIXED if st.get("start") else None
        rec.write_text(json.dumps(data))
    for name, src in (
        ("base", "hta-trace_compare-base-base.json.gz"),
        ("amd", "hta-amd_trace-mi250_minitoy_train_ROCm6_2_kineto.json.gz"),
    ):
        import_trace([shared_trace(src)], root / "jobs" / name)
    shutil.copytree(trace, root / "jobs" / "nccl", ignore=shutil.ignore_patterns(".profui"))
    return root


@pytest.fixture()
def here(analysed: Path, tmp_path: Path, monkeypatch) -> Path:
    shutil.copytree(analysed, tmp_path / "w")
    monkeypatch.chdir(tmp_path / "w")
    monkeypatch.setenv("TZ", "UTC")
    time.tzset()
    yield tmp_path / "w"
    monkeypatch.delenv("TZ")
    time.tzset()


def wait_view(name: str, keys: tuple[str, ...] = ()):
    async def run_before(pilot) -> None:
        app = pilot.app
        for _ in range(1500):
            await pilot.pause()
            if getattr(app.screen, "current", None):
                dash = app.screen.query_one("#dashboard")
                if dash.ready:
                    break
            await asyncio.sleep(0.02)
        if name != "dashboard":
            keys_of = {"kernels": "2", "steps": "3", "runs": "4", "comm": "6", "launches": "7", "idle": "8"}
            await pilot.press({**keys_of, "sync": "9"}[name])
            view = app.screen.query_one(f"#{name}")
            await wait_for(pilot, lambda: view.ready, 1500)
        for k in keys:
            await pilot.press(k)
        await pilot.pause()

    return run_before


@pytest.mark.parametrize("size", SIZES, ids=lambda s: f"{s[0]}x{s[1]}")
def test_dashboard_top(snap_compare, here: Path, size) -> None:
    app = ProfuiApp(OpenTarget("trace", Path("nccl")), poll_s=600)
    assert snap_compare(app, terminal_size=size, run_before=wait_view("dashboard"))


@pytest.mark.parametrize("size", SIZES, ids=lambda s: f"{s[0]}x{s[1]}")
def test_dashboard_kernels_and_steps_charts(snap_compare, here: Path, size) -> None:
    app = ProfuiApp(OpenTarget("trace", Path("nccl")), poll_s=600)
    keys = ("right_square_bracket",) * 4  # to "Top kernels by time"
    assert snap_compare(app, terminal_size=size, run_before=wait_view("dashboard", keys))


@pytest.mark.parametrize("view", ["kernels", "steps", "runs"])
@pytest.mark.parametrize("size", SIZES, ids=lambda s: f"{s[0]}x{s[1]}")
def test_table_views(snap_compare, here: Path, size, view: str) -> None:
    app = ProfuiApp(OpenTarget("trace", Path("nccl")), poll_s=600)
    assert snap_compare(app, terminal_size=size, run_before=wait_view(view))


@pytest.mark.parametrize(
    ("view", "keys"),
    [
        ("comm", ()),
        ("comm", ("right_square_bracket",)),  # exposed vs overlapped
        ("launches", ()),
        ("launches", ("right_square_bracket",) * 3),  # per kernel
        ("idle", ()),
        ("sync", ()),
    ],
    ids=["comm", "comm-overlap", "launches", "launches-per-kernel", "idle", "sync"],
)
def test_analysis_views(snap_compare, here: Path, view: str, keys: tuple[str, ...]) -> None:
    app = ProfuiApp(OpenTarget("trace", Path("nccl")), poll_s=600)
    assert snap_compare(app, terminal_size=(80, 24), run_before=wait_view(view, keys))


@pytest.mark.parametrize("size", SIZES, ids=lambda s: f"{s[0]}x{s[1]}")
def test_jobs_screen(snap_compare, here: Path, size, monkeypatch) -> None:
    # Sizes depend on bytes no layout cares about (the source path recorded in each file's
    # metadata differs between checkouts): pin them to the job's event count.
    from profui.analysis import catalog
    from profui.capture.format import open_trace_dir

    monkeypatch.setattr(catalog, "folder_size", lambda p: 100 * open_trace_dir(p).num_events)
    app = ProfuiApp(OpenTarget("jobs", Path("jobs")), poll_s=600)

    async def run_before(pilot) -> None:
        table = pilot.app.screen.query_one("#jobs-table")
        await wait_for(pilot, lambda: table.row_count == 3, 500)
        await pilot.press("s", "s", "s", "s", "s", "s")  # sort by name (created ties: same source times)
        await pilot.press("r")

    assert snap_compare(app, terminal_size=size, run_before=run_before)
