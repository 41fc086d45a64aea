"""A folder of traces holding stray files (#37 item 3): ``profui open``, ``summary`` and ``import``
of it open what can be opened and list what was skipped and why, one rule for all three.

The shared traces folder holds, beside Kineto traces, a PyTorch execution trace (not a Kineto
trace) and a ``reference/`` folder of HTA's results (JSON, not traces). The folder here is built
from those real files, plus a FIFO named like a trace (made with ``os.mkfifo``: opening it
would block). The oracle for what was opened is the import of the one real trace on its own.
"""

from __future__ import annotations

import asyncio
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from pilotwait import wait_dashboard, wait_for

from profui.capture.format import open_trace_dir, read_manifest
from profui.capture.ingest import import_trace
from profui.tui.app import ProfuiApp
from profui.tui.cli.open_cmd import plan_open
from profui.tui.screens.jobs import JobsScreen
from profui.tui.screens.trace import TraceScreen

from realdata import shared_trace

TRACE = "hta-execution_trace-benchmark_simple_add_trace.json.gz"
STRAY = "hta-execution_trace-benchmark_simple_add_et.json.gz"  # the execution trace beside it
OTHER_JOB = "hta-trace_compare-base-base.json.gz"
REFERENCE = "hta-execution_trace-benchmark_simple_add_trace.json"


def _folder(tmp_path: Path, *traces: str) -> Path:
    folder = tmp_path / "traces"
    (folder / "reference").mkdir(parents=True)
    for name in (*traces, STRAY):
        shutil.copy(shared_trace(name), folder / name)
    shutil.copy(shared_trace(STRAY).parent / "reference" / REFERENCE, folder / "reference" / REFERENCE)
    os.mkfifo(folder / "pipe.json")
    return folder


def _profui(*args: str, cache: Path) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-c", "from profui.tui.cli import main; main()", *args],
        capture_output=True,
        text=True,
        timeout=300,
        env={**os.environ, "PROFUI_CACHE": str(cache), "COLUMNS": "1000"},
    )


def _events(trace: Path) -> int:
    return sum(f.num_rows for f in open_trace_dir(trace).events)


@pytest.fixture()
def cache(tmp_path: Path, monkeypatch) -> Path:
    monkeypatch.setenv("PROFUI_CACHE", str(tmp_path / "cache"))
    return tmp_path / "cache"


def test_open_a_folder_with_stray_files_opens_the_trace_and_lists_them(tmp_path: Path, cache: Path) -> None:
    folder = _folder(tmp_path, TRACE)
    alone = tmp_path / "alone"
    import_trace([shared_trace(TRACE)], alone)

    async def go() -> list[str]:
        app = ProfuiApp(plan_open(folder), poll_s=60)
        async with app.run_test(size=(200, 40)) as pilot:
            # the import screen first (the folder was never imported), then the trace
            assert await wait_for(pilot, lambda: isinstance(app.screen, TraceScreen))
            await wait_dashboard(pilot, app)
            notes = app.screen.query_one("#dash-notes")
            assert notes.display
            return notes.render().plain.splitlines()

    lines = asyncio.run(go())
    stray, pipe = folder / STRAY, folder / "pipe.json"
    assert any(line.startswith(f"note: skipped {stray}: a PyTorch execution trace") for line in lines), lines
    assert any(line.startswith(f"note: skipped {pipe}: ") and "FIFO" in line for line in lines), lines
    assert not any("reference" in line for line in lines), lines  # a folder of traces: not below it
    (imported,) = (cache / "imports").iterdir()
    manifest = read_manifest(imported)
    assert [Path(s["file"]).name for s in manifest.sources] == [TRACE]
    assert _events(imported) == _events(alone)


def test_open_a_folder_of_several_jobs_lists_the_skipped_files(tmp_path: Path, cache: Path) -> None:
    folder = _folder(tmp_path, TRACE, OTHER_JOB)

    async def go() -> tuple[int, str]:
        app = ProfuiApp(plan_open(folder), poll_s=60)
        async with app.run_test(size=(200, 40)) as pilot:
            assert await wait_for(pilot, lambda: isinstance(app.screen, JobsScreen) and app.screen.rows)
            await pilot.pause()
            return len(app.screen.rows), app.screen.query_one("#jobs-notes").render().plain

    rows, notes = asyncio.run(go())
    assert rows == 2
    assert f"note: skipped {folder / STRAY}: a PyTorch execution trace" in notes


def test_summary_and_import_of_the_folder_say_what_they_skipped(tmp_path: Path, cache: Path) -> None:
    folder = _folder(tmp_path, TRACE)
    alone = tmp_path / "alone"
    import_trace([shared_trace(TRACE)], alone)
    line = (
        f"note: skipped {folder / STRAY}: a PyTorch execution trace (top-level 'nodes'), not a Kineto trace"
    )

    summary = _profui("summary", str(folder), cache=cache)
    assert summary.returncode == 0, summary.stderr
    assert line in summary.stdout

    out = tmp_path / "out"
    imported = _profui("import", str(folder), "-o", str(out), cache=cache)
    assert imported.returncode == 0, imported.stderr
    assert line in imported.stdout
    assert [Path(s["file"]).name for s in read_manifest(out).sources] == [TRACE]
    assert _events(out) == _events(alone)


@pytest.mark.parametrize("command", ["open", "summary", "import"])
def test_a_folder_of_stray_files_only_is_one_line(tmp_path: Path, cache: Path, command: str) -> None:
    folder = _folder(tmp_path)  # the execution trace and the FIFO, nothing to open
    out = tmp_path / "out"
    res = _profui(command, str(folder), *(["-o", str(out)] if command == "import" else []), cache=cache)
    assert res.returncode == 2
    lines = res.stderr.strip().splitlines()
    assert len(lines) == 1, res.stderr
    assert (
        lines[0].startswith(f"profui: {folder}") and f"skipped {STRAY}: a PyTorch execution trace" in lines[0]
    )
    assert "Traceback" not in res.stderr
    assert not out.exists()


def test_a_config_json_beside_a_rank_folder_does_not_stop_the_scan(tmp_path: Path, cache: Path) -> None:
    """A run folder holding a config.json (JSON, not a trace) and rank0/ with the trace: the
    config file is no trace of the folder's own, so the scan goes into rank0/ (it said 'no
    trace files in this folder' when any file named like a trace kept it at the top)."""
    folder = tmp_path / "run"
    (folder / "rank0").mkdir(parents=True)
    shutil.copy(shared_trace(TRACE), folder / "rank0" / "rank0.pt.trace.json.gz")
    (folder / "config.json").write_text('{"lr": 0.1, "batch_size": 32}\n')
    alone = tmp_path / "alone"
    import_trace([shared_trace(TRACE)], alone)
    line = f"note: skipped {folder / 'config.json'}: "

    summary = _profui("summary", str(folder), cache=cache)
    assert summary.returncode == 0, summary.stderr
    assert any(s.startswith(line) and "not a Kineto trace" in s for s in summary.stdout.splitlines())

    out = tmp_path / "out"
    imported = _profui("import", str(folder), "-o", str(out), cache=cache)
    assert imported.returncode == 0, imported.stderr
    assert any(s.startswith(line) for s in imported.stdout.splitlines()), imported.stdout
    assert [Path(s["file"]).name for s in read_manifest(out).sources] == ["rank0.pt.trace.json.gz"]
    assert _events(out) == _events(alone)
