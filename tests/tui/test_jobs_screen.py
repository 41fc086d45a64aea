"""The jobs screen over a folder of real imported traces: rows, sort, `/` filter, Enter opens.

The traces are real shared Kineto traces imported with the project's importer; two manifests
are then marked ``running`` and ``failed`` (statuses the shared corpus cannot have).
"""

from __future__ import annotations

import asyncio
from dataclasses import replace
from pathlib import Path

import pytest

from profui.capture.format import read_manifest, write_manifest
from profui.capture.ingest import import_trace
from profui.tui.app import OpenTarget, ProfuiApp
from profui.tui.screens.jobs import JobsScreen
from profui.tui.screens.trace import TraceScreen

from realdata import shared_trace

SOURCES = {
    "base": "hta-trace_compare-base-base.json.gz",
    "triton": "hta-triton_example-triton_example.json.gz",
    "amd": "hta-amd_trace-mi250_minitoy_train_ROCm6_2_kineto.json.gz",
}


@pytest.fixture(scope="module")
def jobs_root(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("jobs")
    for name, file in SOURCES.items():
        import_trace([shared_trace(file)], root / name)
    m = read_manifest(root / "triton")
    write_manifest(root / "triton", replace(m, status="running", end_ns=None))
    m = read_manifest(root / "amd")
    write_manifest(root / "amd", replace(m, status="failed", exit_code=1))
    return root


def table_rows(screen: JobsScreen) -> list[list[str]]:
    table = screen.query_one("#jobs-table")
    return [[str(c) for c in table.get_row_at(i)] for i in range(table.row_count)]


async def wait_rows(pilot, screen: JobsScreen, n: int) -> None:
    for _ in range(200):
        await pilot.pause()
        if screen.query_one("#jobs-table").row_count == n:
            return
        await asyncio.sleep(0.02)
    raise AssertionError("jobs table never filled")


def test_rows_match_manifests(jobs_root: Path) -> None:
    asyncio.run(_test_rows_match_manifests(jobs_root))


async def _test_rows_match_manifests(jobs_root: Path) -> None:
    app = ProfuiApp(OpenTarget("jobs", jobs_root))
    async with app.run_test(size=(80, 24)) as pilot:
        screen = app.screen
        assert isinstance(screen, JobsScreen)
        await wait_rows(pilot, screen, 3)
        rows = {r[0]: r for r in table_rows(screen)}
        assert set(rows) == set(SOURCES)
        for name in SOURCES:
            m = read_manifest(jobs_root / name)
            assert rows[name][2] == m.status
            assert rows[name][4] == str(len(m.hosts))
            assert rows[name][5] == str(len(m.gpus))
        assert rows["triton"][2] == "running"
        assert rows["amd"][2] == "failed"
        assert rows["base"][2] == "imported"


def test_sort_and_reverse_by_keys(jobs_root: Path) -> None:
    asyncio.run(_test_sort_and_reverse_by_keys(jobs_root))


async def _test_sort_and_reverse_by_keys(jobs_root: Path) -> None:
    app = ProfuiApp(OpenTarget("jobs", jobs_root))
    async with app.run_test(size=(80, 24)) as pilot:
        screen = app.screen
        await wait_rows(pilot, screen, 3)
        # created -> status -> ... : cycle with `s` until the name column, ascending after `r`
        while screen.sort_column != "name":
            await pilot.press("s")
        names = [r[0] for r in table_rows(screen)]
        assert names == sorted(names, key=str.lower, reverse=screen.sort_reverse)
        await pilot.press("r")
        assert [r[0] for r in table_rows(screen)] == list(reversed(names))
        await pilot.press("s")  # created
        await pilot.press("s")  # status
        assert screen.sort_column == "status"
        statuses = [r[2] for r in table_rows(screen)]
        assert statuses == sorted(statuses, reverse=screen.sort_reverse)


def test_filter_by_name_then_clear(jobs_root: Path) -> None:
    asyncio.run(_test_filter_by_name_then_clear(jobs_root))


async def _test_filter_by_name_then_clear(jobs_root: Path) -> None:
    app = ProfuiApp(OpenTarget("jobs", jobs_root))
    async with app.run_test(size=(80, 24)) as pilot:
        screen = app.screen
        await wait_rows(pilot, screen, 3)
        await pilot.press("slash", "t", "r", "i")
        assert [r[0] for r in table_rows(screen)] == ["triton"]
        assert "1 of 3 traces" in str(screen.query_one("#jobs-status").render())
        await pilot.press("enter")  # keep the filter, back to the table
        assert [r[0] for r in table_rows(screen)] == ["triton"]
        await pilot.press("slash", "escape")
        assert len(table_rows(screen)) == 3


def test_enter_opens_running_job_live(jobs_root: Path) -> None:
    asyncio.run(_test_enter_opens_running_job_live(jobs_root))


async def _test_enter_opens_running_job_live(jobs_root: Path) -> None:
    app = ProfuiApp(OpenTarget("jobs", jobs_root), poll_s=60)
    async with app.run_test(size=(80, 24)) as pilot:
        screen = app.screen
        await wait_rows(pilot, screen, 3)
        await pilot.press("slash", "t", "r", "i", "t", "enter")
        await pilot.press("enter")
        await pilot.pause()
        trace_screen = app.screen
        assert isinstance(trace_screen, TraceScreen)
        assert trace_screen.path == jobs_root / "triton"
        assert "● live" in str(trace_screen.query_one("#trace-title").render())
        assert trace_screen._live
        await pilot.press("escape")  # back to the list
        assert app.screen is screen


def test_damaged_trace_in_the_list_says_why_and_stays(jobs_root: Path, tmp_path: Path) -> None:
    import shutil

    root = tmp_path / "jobs"
    shutil.copytree(jobs_root, root)
    (root / "base" / "manifest.json").write_text("{not json")
    asyncio.run(_damaged(root))


async def _damaged(root: Path) -> None:
    app = ProfuiApp(OpenTarget("jobs", root), poll_s=60)
    async with app.run_test(size=(80, 24), notifications=True) as pilot:
        screen = app.screen
        await wait_rows(pilot, screen, 3)
        rows = {r[0]: r for r in table_rows(screen)}
        assert rows["base"][2] == "unreadable"
        await pilot.press("slash", "b", "a", "s", "e", "enter", "enter")
        await pilot.pause()
        assert app.screen is screen  # not opened
        notes = list(app._notifications)
        assert notes and "manifest is not valid JSON" in notes[-1].message


def test_running_job_status_refreshes_and_cursor_stays(jobs_root: Path, tmp_path: Path) -> None:
    import shutil

    root = tmp_path / "jobs"
    shutil.copytree(jobs_root, root)
    asyncio.run(_refreshes(root))


async def _refreshes(root: Path) -> None:
    app = ProfuiApp(OpenTarget("jobs", root), poll_s=0.2)
    async with app.run_test(size=(80, 24)) as pilot:
        screen = app.screen
        await wait_rows(pilot, screen, 3)
        await pilot.press("down")
        chosen = table_rows(screen)[1][0]
        m = read_manifest(root / "triton")
        write_manifest(root / "triton", replace(m, status="completed", end_ns=m.start_ns + 5_000_000))
        for _ in range(300):
            await pilot.pause()
            rows = {r[0]: r for r in table_rows(screen)}
            if rows["triton"][2] == "completed":
                break
            await asyncio.sleep(0.02)
        assert rows["triton"][2] == "completed"
        assert rows["triton"][3] == "5 ms"
        table = screen.query_one("#jobs-table")
        assert table_rows(screen)[table.cursor_row][0] == chosen


def test_folder_of_unrelated_trace_files_opens_as_a_jobs_list(tmp_path: Path, monkeypatch) -> None:
    """``profui open`` on a folder of three unrelated Kineto files (other GPUs and years): the
    import screen, then one row per job (each file alone, by the identity rule), Enter opens one;
    the second open goes straight to the list. Oracle: each row's trace holds exactly the events of
    importing its file on its own."""
    from profui.tui.cli.open_cmd import plan_open

    monkeypatch.setenv("PROFUI_CACHE", str(tmp_path / "cache"))
    folder = tmp_path / "old_runs"
    folder.mkdir()
    for file in SOURCES.values():
        (folder / file).symlink_to(shared_trace(file))
    target = plan_open(folder)
    assert target.kind == "import"
    asyncio.run(_open_unrelated(target, tmp_path))
    again = plan_open(folder)
    assert again.kind == "jobs" and again.label == str(folder)
    folders = sorted(p for p in again.path.iterdir() if p.is_dir())
    assert len(folders) == 3
    for f in folders:
        [src] = read_manifest(f).sources
        alone = import_trace([Path(src["file"])], tmp_path / f"alone-{f.name}")
        assert read_manifest(f).sources[0]["num_events"] == alone.sources[0]["num_events"]


async def _open_unrelated(target: OpenTarget, tmp_path: Path) -> None:
    app = ProfuiApp(target, poll_s=60)
    async with app.run_test(size=(80, 24)) as pilot:
        for _ in range(3000):
            await pilot.pause()
            if isinstance(app.screen, JobsScreen) and app.screen.query_one("#jobs-table").row_count == 3:
                break
            await asyncio.sleep(0.02)
        screen = app.screen
        assert isinstance(screen, JobsScreen), type(screen)
        assert "jobs in" in str(screen.query_one("#jobs-title").render())
        rows = table_rows(screen)
        stems = {f.removesuffix(".json.gz") for f in SOURCES.values()}
        # each row names its job by its file (its start is the Created column); at 80 columns a
        # long name keeps its head and tail around "…" (18 wide) so the other columns fit
        shown = {}
        for r in rows:
            head, _, tail = r[0].partition("…")
            (full,) = [s for s in stems if s.startswith(head) and s.endswith(tail) and len(s) >= len(r[0])]
            shown[full] = r[0]
            assert len(r[0]) <= 18
        assert sorted(shown) == sorted(stems)
        first = next(full for full, text in shown.items() if text == rows[0][0])
        await pilot.press("enter")
        await pilot.pause()
        assert isinstance(app.screen, TraceScreen)
        assert app.screen.path.name.endswith(f"-{first}")
        # the title keeps its counts whole at 80 columns and cuts the name in the middle
        name = str(app.screen.query_one("#trace-title").render()).split(" · ")[0]
        head, cut, tail = name.partition("…")
        assert name == first if not cut else (first.startswith(head) and first.endswith(tail)), name
