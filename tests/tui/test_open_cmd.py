"""`profui open`: what PATH means (trace, jobs folder, Kineto JSON), one-line errors, the bundled
sample, and the import progress screen on a real Kineto file."""

from __future__ import annotations

import asyncio
import subprocess
import sys
from pathlib import Path

import pytest
from pilotwait import wait_for

from profui.capture.format import open_trace_dir
from profui.capture.ingest import import_trace
from profui.capture.ingest.cache import resolve_trace
from profui.tui.app import OpenTarget, ProfuiApp
from profui.tui.cli.open_cmd import SAMPLE_NAME, bundled_sample, plan_open, samples_dir
from profui.tui.screens.trace import TraceScreen

from realdata import REPO, shared_trace

SMALL = "hta-trace_compare-base-base.json.gz"


def run_profui(*args: str, env: dict | None = None) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-c", "from profui.tui.cli import main; main()", *args],
        capture_output=True,
        text=True,
        timeout=120,
        env=env,
    )


@pytest.mark.parametrize(
    "make, problem",
    [
        (lambda d: d / "missing", "no such file or directory"),
        (lambda d: (d / "notes.txt").write_text("hello") and d / "notes.txt", "not a trace profui reads"),
        (lambda d: (d / "empty").mkdir() or d / "empty", "no profui traces and no trace files"),
    ],
    ids=["missing", "not-a-trace-file", "empty-folder"],
)
def test_bad_path_is_one_line_exit_2(tmp_path: Path, make, problem: str) -> None:
    path = make(tmp_path)
    res = run_profui("open", str(path))
    assert res.returncode == 2
    lines = res.stderr.strip().splitlines()
    assert len(lines) == 1, res.stderr
    assert lines[0].startswith(f"profui: {path}") and problem in lines[0]
    assert "Traceback" not in res.stderr


def test_truncated_kineto_json_fails_in_app_with_one_line(tmp_path: Path) -> None:
    bad = tmp_path / "rank0.json"
    bad.write_text('{"traceEvents": [{"ph": "X", "name": "k"')
    app = ProfuiApp(plan_open(bad))
    result = asyncio.run(_run_until_exit(app))
    assert app.return_code == 2
    assert result and str(bad) in result and "\n" not in result


async def _run_until_exit(app: ProfuiApp):
    async with app.run_test(size=(80, 24)) as pilot:
        await wait_for(pilot, lambda: app._exit_renderables or app.return_code is not None, 500)
    return app.return_value


def test_plan_open_kinds(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setenv("PROFUI_CACHE", str(tmp_path / "cache"))
    src = shared_trace(SMALL)
    assert plan_open(src) == OpenTarget("import", src)  # never imported: the import screen
    imported = resolve_trace(src)
    assert plan_open(src) == OpenTarget("trace", imported)  # imported and unchanged: straight in
    src_copy = tmp_path / src.name
    src_copy.write_bytes(src.read_bytes())
    assert plan_open(src_copy) == OpenTarget("import", src_copy)  # another file: imported anew
    one = tmp_path / "one"
    import_trace([src], one / "a")
    assert plan_open(one) == OpenTarget("trace", one / "a")  # a folder with one trace opens it
    import_trace([src], one / "b")
    assert plan_open(one) == OpenTarget("jobs", one)  # several: the jobs list
    assert plan_open(one / "a") == OpenTarget("trace", one / "a")


def test_no_path_opens_the_bundled_synthetic_sample() -> None:
    assert samples_dir() == REPO / "samples"
    sample = bundled_sample()
    assert sample == REPO / "samples" / SAMPLE_NAME
    td = open_trace_dir(sample)
    assert td.manifest.synthetic and td.manifest.source == "synthetic"
    assert len(td.nodes) == 2 and len(td.ranks) == 4
    assert plan_open(None) == OpenTarget("trace", sample)
    size = sum(p.stat().st_size for p in sample.rglob("*") if p.is_file() and ".profui" not in p.parts)
    assert size < 5_000_000


def test_import_screen_imports_then_opens_the_trace(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setenv("PROFUI_CACHE", str(tmp_path / "cache"))
    src = shared_trace(SMALL)
    app = ProfuiApp(plan_open(src), poll_s=60)

    async def go() -> Path:
        async with app.run_test(size=(80, 24)) as pilot:
            await wait_for(pilot, lambda: isinstance(app.screen, TraceScreen), 500)
            assert isinstance(app.screen, TraceScreen)
            return app.screen.path

    opened = asyncio.run(go())
    assert opened.parent == tmp_path / "cache" / "imports"
    m = open_trace_dir(opened).manifest
    assert m.status == "imported" and m.source == "kineto-import"


def _corrupt_pages(tmp_path: Path) -> tuple[Path, Path]:
    """The bundled sample, copied, with the first data pages of one events file damaged under an
    intact footer: the trace opens, its events cannot be read."""
    import shutil

    trace = tmp_path / "trace"
    shutil.copytree(REPO / "samples" / SAMPLE_NAME, trace, ignore=shutil.ignore_patterns(".profui"))
    victim = sorted(trace.rglob("events-*.parquet"))[0]
    data = bytearray(victim.read_bytes())
    footer_at = len(data) - 8 - int.from_bytes(data[-8:-4], "little")
    for i in range(8, min(footer_at, 4000)):
        data[i] ^= 0x5A
    victim.write_bytes(bytes(data))
    open_trace_dir(trace)
    return trace, victim


@pytest.mark.parametrize("cached", [False, True], ids=["analysed-here", "from-a-recorded-run"])
def test_a_trace_whose_events_cannot_be_read_ends_the_app_in_one_line(tmp_path: Path, cached: bool) -> None:
    # before, the dashboard said "not available (utilization: no output)" under "computed
    # (run-0001)" and the app went on, exit 0; now the app ends as every command does on bad input
    trace, victim = _corrupt_pages(tmp_path)
    if cached:  # a failed run is on record already: the dashboard reads it, then says the same
        assert run_profui("analyze", str(trace), "-q").returncode == 2
    app = ProfuiApp(OpenTarget("trace", trace), poll_s=60)
    result = asyncio.run(_run_until_exit(app))
    assert app.return_code == 2
    assert result and result.startswith(str(victim)) and "cannot read events" in result and "\n" not in result
    res = run_profui("open", str(trace))  # through the CLI: the line last on stderr, exit 2
    assert res.returncode == 2 and res.stderr.endswith(f"profui: {result}\n")
