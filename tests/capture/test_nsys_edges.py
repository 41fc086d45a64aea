"""Nsight exports damaged at their edges, each made here from a real export with sqlite3: an op
id too long for an int, a process name stored as a BLOB, tables without the columns their rows
need. The file is read correctly (exit 0, numbers checked against the export read here), or its
loss is said on ``profui import``, ``profui info``, ``profui summary`` and the dashboard, or it is
refused in one line (exit 2) when nothing usable is left; never a traceback."""

from __future__ import annotations

import asyncio
import os
import shutil
import sqlite3
import subprocess
from pathlib import Path

import polars as pl
import pytest
from test_bad_input_import import PROFUI, assert_refused, profui

from profui.analysis import open_trace
from profui.capture.format import read_manifest

from realdata import nsys_export

EXPORT = "h100_2gpu_1s"
KERNELS = "CUPTI_ACTIVITY_KIND_KERNEL"
RUNTIME = "CUPTI_ACTIVITY_KIND_RUNTIME"


def _damaged(tmp_path: Path, *sql: str, name: str = "run.sqlite") -> Path:
    bad = tmp_path / name
    shutil.copy(nsys_export(EXPORT), bad)
    os.chmod(bad, 0o644)
    conn = sqlite3.connect(bad)
    for statement in sql:
        conn.execute(statement)
    conn.commit()
    conn.close()
    return bad


def _count(table: str, where: str = "") -> int:
    conn = sqlite3.connect(f"file:{nsys_export(EXPORT)}?mode=ro", uri=True)
    try:
        return conn.execute(f"SELECT count(*) FROM {table} {where}").fetchone()[0]
    finally:
        conn.close()


def _import(src: Path, out: Path) -> str:
    proc = profui("import", src, "-o", out)
    assert proc.returncode == 0, proc.stderr
    assert "Traceback" not in proc.stderr
    return proc.stdout


def _kinds(out: Path) -> dict[str, int]:
    ev = open_trace(out).events().collect()
    return dict(ev.group_by("kind").len().iter_rows())


@pytest.fixture(scope="module")
def whole(tmp_path_factory) -> Path:
    """The undamaged export imported: the counts a damaged one is held against."""
    out = tmp_path_factory.mktemp("nsys") / "whole"
    _import(nsys_export(EXPORT), out)
    return out


def test_an_op_id_of_5000_digits_is_an_annotation(tmp_path: Path, whole: Path) -> None:
    text = "aten::mm, op_id = " + "9" * 5000
    conn = sqlite3.connect(f"file:{nsys_export(EXPORT)}?mode=ro", uri=True)
    (rowid,) = conn.execute(
        "SELECT n.rowid FROM NVTX_EVENTS n LEFT JOIN StringIds s ON s.id = n.textId "
        "WHERE n.eventType = 59 AND coalesce(n.text, s.value) LIKE '%, op_id = %' LIMIT 1"
    ).fetchone()
    conn.close()
    bad = _damaged(tmp_path, f"UPDATE NVTX_EVENTS SET text = '{text}', textId = NULL WHERE rowid = {rowid}")
    out = tmp_path / "t"
    _import(bad, out)
    before, after = _kinds(whole), _kinds(out)
    assert after["cpu_op"] == before["cpu_op"] - 1
    assert after.get("annotation", 0) == before.get("annotation", 0) + 1
    names = open_trace(out).events().filter(pl.col("kind") == "annotation").collect()["name"]
    assert text in names.to_list()


def test_a_process_name_stored_as_a_blob_is_its_text(tmp_path: Path) -> None:
    conn = sqlite3.connect(f"file:{nsys_export(EXPORT)}?mode=ro", uri=True)
    names = {(g >> 24) & 0xFFFFFF: n for g, n in conn.execute("SELECT globalPid, name FROM PROCESSES")}
    conn.close()
    bad = _damaged(tmp_path, "UPDATE PROCESSES SET name = CAST(name AS BLOB)")
    with sqlite3.connect(bad) as conn:
        assert {t for (t,) in conn.execute("SELECT typeof(name) FROM PROCESSES")} == {"blob"}
    out = tmp_path / "t"
    _import(bad, out)
    sources = read_manifest(out).sources
    assert sources and all(s["metadata"]["process_name"] == names[s["metadata"]["pid"]] for s in sources)


def _said_everywhere(src: Path, out: Path, *words: str) -> None:
    """``words`` are in one note line of ``profui import``, ``info`` and ``summary`` alike."""

    def noted(text: str) -> bool:
        return any(all(w in line for w in words) for line in text.splitlines() if "note" in line)

    assert noted(_import(src, out)), "import"
    for command in ("info", "summary"):
        # wide enough that a note is one line: under pytest the children see COLUMNS=80
        proc = subprocess.run(
            [PROFUI, command, str(out)],
            capture_output=True,
            text=True,
            timeout=120,
            stdin=subprocess.DEVNULL,
            env={**os.environ, "COLUMNS": "1000"},
        )
        assert proc.returncode == 0 and "Traceback" not in proc.stderr, proc.stderr
        assert noted(proc.stdout), command


def test_a_kernel_table_without_times_is_said_lost(tmp_path: Path, whole: Path) -> None:
    bad = _damaged(
        tmp_path, f"ALTER TABLE {KERNELS} DROP COLUMN start", f"ALTER TABLE {KERNELS} DROP COLUMN end"
    )
    out = tmp_path / "t"
    n = _count(KERNELS)
    _said_everywhere(bad, out, KERNELS, "start", f"{n:,} of its {n:,} rows are left out")
    before, after = _kinds(whole), _kinds(out)
    assert "kernel" not in after and after == {k: v for k, v in before.items() if k != "kernel"}


def test_a_kernel_table_without_its_device_is_said_lost(tmp_path: Path, whole: Path) -> None:
    bad = _damaged(tmp_path, f"ALTER TABLE {KERNELS} DROP COLUMN deviceId")
    out = tmp_path / "t"
    n = _count(KERNELS)
    _said_everywhere(bad, out, KERNELS, "deviceId", f"{n:,} of its {n:,} rows are left out")
    assert "kernel" not in _kinds(out)


def test_the_lost_count_is_only_the_rows_lost_for_the_column(tmp_path: Path) -> None:
    # a kernel table without deviceId whose every 7th row also ends before it starts: those
    # rows are lost for their times, not for the column, and the note does not count them
    bad = _damaged(
        tmp_path,
        f'UPDATE {KERNELS} SET "end" = start - 1 WHERE rowid % 7 = 0',
        f"ALTER TABLE {KERNELS} DROP COLUMN deviceId",
    )
    conn = sqlite3.connect(bad)
    total = conn.execute(f"SELECT count(*) FROM {KERNELS}").fetchone()[0]
    backwards = conn.execute(f'SELECT count(*) FROM {KERNELS} WHERE "end" < start').fetchone()[0]
    for_column = conn.execute(f'SELECT count(*) FROM {KERNELS} WHERE "end" >= start').fetchone()[0]
    conn.close()
    assert backwards > 0 and for_column + backwards == total
    out = tmp_path / "t"
    _said_everywhere(bad, out, KERNELS, "deviceId", f"{for_column:,} of its {total:,} rows are left out")
    assert "kernel" not in _kinds(out)


def test_runtime_and_nvtx_without_names_are_said(tmp_path: Path, whole: Path) -> None:
    bad = _damaged(
        tmp_path,
        f"ALTER TABLE {RUNTIME} DROP COLUMN nameId",
        "ALTER TABLE NVTX_EVENTS DROP COLUMN text",
        "ALTER TABLE NVTX_EVENTS DROP COLUMN textId",
    )
    out = tmp_path / "t"
    calls = _count(RUNTIME)
    ranges = _count("NVTX_EVENTS", "WHERE eventType IN (34, 59, 60)")
    _said_everywhere(bad, out, RUNTIME, "nameId", f"its {calls:,} CUDA calls", "unknown CUDA call")
    _said_everywhere(bad, tmp_path / "t2", "NVTX_EVENTS", "text", f"{ranges:,} of its {ranges:,} rows")
    ev = open_trace(out).events().collect()
    runtime = ev.filter(pl.col("kind").is_in(["runtime", "driver"]))
    assert runtime.height == _kinds(whole)["runtime"] and set(runtime["name"]) == {"unknown CUDA call"}
    assert not {"cpu_op", "annotation", "step", "instant"} & set(ev["kind"])


def test_the_dashboard_says_what_the_import_left_out(tmp_path: Path) -> None:
    from textual.widgets import Static

    from profui.tui.app import OpenTarget, ProfuiApp
    from profui.tui.views.dashboard import DashboardView

    bad = _damaged(tmp_path, f"ALTER TABLE {KERNELS} DROP COLUMN deviceId")
    out = tmp_path / "t"
    _import(bad, out)
    n = _count(KERNELS)

    async def go() -> None:
        app = ProfuiApp(OpenTarget("trace", out), poll_s=60)
        async with app.run_test(size=(160, 40)) as pilot:
            view = app.screen.query_one(DashboardView)
            for _ in range(3000):  # the charts are drawn by workers (tests/tui/pilotwait.py)
                await pilot.pause()
                if view.complete:
                    break
                await asyncio.sleep(0.02)
            assert view.complete
            notes = view.query_one("#dash-notes", Static)
            assert notes.display
            text = str(notes.render())
            assert KERNELS in text and f"{n:,} of its {n:,} rows are left out" in text

    asyncio.run(go())


def test_an_export_with_nothing_usable_left_is_one_line(tmp_path: Path) -> None:
    tables = (KERNELS, "CUPTI_ACTIVITY_KIND_MEMCPY", "CUPTI_ACTIVITY_KIND_MEMSET")
    tables += ("CUPTI_ACTIVITY_KIND_SYNCHRONIZATION", RUNTIME, "NVTX_EVENTS")
    bad = _damaged(tmp_path, *(f"ALTER TABLE {t} DROP COLUMN start" for t in tables))
    out = tmp_path / "t"
    proc = subprocess.run(
        [PROFUI, "import", str(bad), "-o", str(out)], capture_output=True, text=True, timeout=120
    )
    line = assert_refused(proc, bad, "no kernel, copy, cuda call or nvtx range")
    assert f"{KERNELS} has no start column" in line
    assert not out.exists()
