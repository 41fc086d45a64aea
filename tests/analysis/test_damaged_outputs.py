"""Damaged stage outputs under ``TRACE/.profui/artifacts`` are misses: recomputed, never served.

Each test damages the real files of a real analysed copy of the bundled sample
``samples/synthetic_gpu`` the way a disk, a copy or a user's editor would (bytes overwritten in
place, sizes kept, so the recorded sizes still match), then runs the commands that read them
(``profui diff``, ``profui analyze``, the dashboard of ``profui open``). The oracle is the same
analysis of the undamaged copy: after the command the outputs must equal it again.
"""

from __future__ import annotations

import asyncio
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import polars as pl
import pytest
from polars.testing import assert_frame_equal

from profui.analysis.pipeline import analyze, latest_outputs
from profui.analysis.pipeline.answers import cached

from realdata import SAMPLES, same_numbers

PROFUI = [sys.executable, "-c", "from profui.tui.cli import main; main()"]


@pytest.fixture(scope="module")
def analysed(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The sample trace, analysed once (run-0001: every stage computed)."""
    dst = tmp_path_factory.mktemp("damaged") / "pristine"
    shutil.copytree(SAMPLES / "synthetic_gpu", dst, ignore=shutil.ignore_patterns(".profui"))
    assert analyze(dst).status == "succeeded"
    return dst


@pytest.fixture()
def trace(analysed: Path, tmp_path: Path) -> Path:
    """A private copy of the analysed trace (copy2 keeps the mtimes, so its outputs are warm)."""
    dst = tmp_path / "trace"
    shutil.copytree(analysed, dst)
    return dst


def output(trace: Path, stage: str, file: str) -> Path:
    """The file ``file`` of the stage's (one) output folder."""
    (path,) = (trace / ".profui" / "artifacts" / stage).glob(f"*/{file}")
    return path


def overwrite_same_size(path: Path, data: bytes) -> None:
    """Overwrite ``path`` in place with ``data`` cut or padded to its size."""
    size = path.stat().st_size
    path.write_bytes((data * (size // max(len(data), 1) + 1))[:size])


def cli(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([*PROFUI, *args], capture_output=True, text=True, timeout=120)


def test_garbage_steps_json_is_recomputed_by_diff(trace: Path, analysed: Path) -> None:
    pristine = json.loads(output(analysed, "steps", "steps.json").read_bytes())
    want = cli("diff", str(analysed), str(analysed), "--json")
    assert want.returncode == 0, want.stderr
    overwrite_same_size(output(trace, "steps", "steps.json"), b"\x00garbage{[")

    r = cli("diff", str(trace), str(trace), "--json")
    assert r.returncode == 0, r.stderr
    assert "Traceback" not in r.stderr
    got, expected = json.loads(r.stdout), json.loads(want.stdout)
    for part in ("steps", "kernels", "ops", "metrics"):
        assert same_numbers(got[part], expected[part]), part
    # the damaged output was replaced by the recomputed one, equal to the undamaged analysis
    assert same_numbers(json.loads(output(trace, "steps", "steps.json").read_bytes()), pristine)


def test_corrupted_kernel_stats_parquet_is_no_cache_hit(trace: Path, analysed: Path) -> None:
    pristine = pl.read_parquet(output(analysed, "kernels", "stats.parquet"))
    damaged = output(trace, "kernels", "stats.parquet")
    data = bytearray(damaged.read_bytes())
    mid = len(data) // 2
    data[mid : mid + 64] = bytes(64)  # a zeroed block, as a bad sector reads
    damaged.write_bytes(bytes(data))

    r = cli("analyze", str(trace), "--json", "-q")
    assert r.returncode == 0, r.stderr
    rec = json.loads(r.stdout)
    stages = {s["name"]: s for s in rec["stages"]}
    assert stages["kernels"]["provenance"] == "computed"
    # nothing else was damaged: every other stage is still a cache hit (the on-demand timeline
    # is not part of a run without --stages)
    assert stages.pop("timeline")["status"] == "skipped"
    assert all(s["provenance"] == "cache" for n, s in stages.items() if n != "kernels")
    assert_frame_equal(pl.read_parquet(output(trace, "kernels", "stats.parquet")), pristine)


def test_random_summary_json_is_a_miss_for_the_dashboard(trace: Path, analysed: Path) -> None:
    pristine = json.loads(output(analysed, "summary", "summary.json").read_bytes())
    overwrite_same_size(output(trace, "summary", "summary.json"), os.urandom(4096))

    # the warm read of `profui open` takes nothing from a damaged folder
    assert cached(trace, ["summary"]) is None
    assert "summary" not in latest_outputs(trace)

    from profui.tui.app import OpenTarget, ProfuiApp
    from profui.tui.views.dashboard import DashboardView

    async def go() -> None:
        app = ProfuiApp(OpenTarget("trace", trace), poll_s=60)
        async with app.run_test(size=(100, 30)) as pilot:
            view = app.screen.query_one(DashboardView)
            for _ in range(3000):
                await pilot.pause()
                if view.complete:
                    break
                await asyncio.sleep(0.02)
            assert view.complete, "the dashboard never completed"
        assert app.return_code in (None, 0)

    asyncio.run(go())
    assert same_numbers(json.loads(output(trace, "summary", "summary.json").read_bytes()), pristine)


def test_damaged_meta_json_is_a_miss(trace: Path, analysed: Path) -> None:
    pristine = pl.read_parquet(output(analysed, "steps", "stats.parquet"))
    # meta.json nested far deeper than the interpreter's recursion limit, built as text
    output(trace, "steps", "meta.json").write_text('{"outputs": ' + "[" * 100_000 + "]" * 100_000 + "}")

    r = cli("analyze", str(trace), "--json", "-q")
    assert r.returncode == 0, r.stderr
    assert "Traceback" not in r.stderr
    stages = {s["name"]: s for s in json.loads(r.stdout)["stages"]}
    assert stages["steps"]["provenance"] == "computed"
    assert_frame_equal(pl.read_parquet(output(trace, "steps", "stats.parquet")), pristine)


def test_a_fifo_in_place_of_an_output_is_a_miss_without_a_hang(trace: Path, analysed: Path) -> None:
    pristine = json.loads(output(analysed, "steps", "steps.json").read_bytes())
    fifo = output(trace, "steps", "steps.json")
    fifo.unlink()
    os.mkfifo(fifo)
    meta = output(trace, "idle", "meta.json")
    meta.unlink()
    os.mkfifo(meta)

    r = cli("analyze", str(trace), "--json", "-q")  # a read of either FIFO would block for ever
    assert r.returncode == 0, r.stderr
    stages = {s["name"]: s for s in json.loads(r.stdout)["stages"]}
    assert stages["steps"]["provenance"] == stages["idle"]["provenance"] == "computed"
    assert same_numbers(json.loads(output(trace, "steps", "steps.json").read_bytes()), pristine)
