"""Bad Nsight input to ``profui import`` / ``summary``: one stderr line naming the file, exit 2, no
traceback, nothing written. Each broken file is made here from a real export (or is SQLite that
is not one)."""

from __future__ import annotations

import os
import shutil
import sqlite3
import subprocess
from pathlib import Path

from test_bad_input_import import PROFUI, assert_refused, profui, refused_and_nothing_written

from realdata import nsys_export


def test_text_named_sqlite(tmp_path: Path) -> None:
    bad = tmp_path / "run.sqlite"
    bad.write_text("not a database\n")
    refused_and_nothing_written(tmp_path, bad, "not an sqlite file")


def test_sqlite_that_is_not_an_nsightnsys_export(tmp_path: Path) -> None:
    bad = tmp_path / "app.sqlite"
    conn = sqlite3.connect(bad)
    conn.execute("CREATE TABLE users (id INTEGER, name TEXT)")
    conn.commit()
    conn.close()
    refused_and_nothing_written(tmp_path, bad, "not an nsight systems export")


def test_export_without_cuda_or_nvtx_tables(tmp_path: Path) -> None:
    bad = tmp_path / "osrt.sqlite"
    shutil.copy(nsys_export("h100_2gpu_1s"), bad)
    os.chmod(bad, 0o644)
    conn = sqlite3.connect(bad)
    for table in ("CUPTI_ACTIVITY_KIND_KERNEL", "CUPTI_ACTIVITY_KIND_MEMCPY", "CUPTI_ACTIVITY_KIND_MEMSET"):
        conn.execute(f"DROP TABLE {table}")
    for table in ("CUPTI_ACTIVITY_KIND_SYNCHRONIZATION", "CUPTI_ACTIVITY_KIND_RUNTIME", "NVTX_EVENTS"):
        conn.execute(f"DROP TABLE {table}")
    conn.commit()
    conn.close()
    refused_and_nothing_written(tmp_path, bad, "no cuda or nvtx events")


def test_truncatednsys_export(tmp_path: Path) -> None:
    data = nsys_export("mfu_2gpu_before").read_bytes()
    bad = tmp_path / "cut.sqlite"
    bad.write_bytes(data[: len(data) // 3])
    refused_and_nothing_written(tmp_path, bad, "sqlite")


def test_report_without_nsys_on_path(tmp_path: Path) -> None:
    report = tmp_path / "run.nsys-rep"
    report.write_bytes(b"\x00" * 64)
    out = tmp_path / "out"
    env = {**os.environ, "PATH": str(Path(PROFUI).parent)}
    proc = subprocess.run(
        [PROFUI, "import", str(report), "-o", str(out)],
        capture_output=True,
        text=True,
        timeout=120,
        env=env,
        stdin=subprocess.DEVNULL,
    )
    line = assert_refused(proc, report, "no nsys on path")
    assert "nsys export --type sqlite" in line
    assert not out.exists()


def test_summary_of_a_broken_export_is_one_line(tmp_path: Path) -> None:
    bad = tmp_path / "run.sqlite"
    bad.write_text("not a database\n")
    assert_refused(profui("summary", bad), bad, "not an sqlite file")


def test_a_fifo_named_sqlite_is_refused_without_blocking(tmp_path: Path) -> None:
    fifo = tmp_path / "run.sqlite"
    os.mkfifo(fifo)
    refused_and_nothing_written(tmp_path, fifo, "fifo")


def test_a_fifo_named_like_a_jax_trace_is_refused_without_blocking(tmp_path: Path) -> None:
    fifo = tmp_path / "host.trace.json.gz"
    os.mkfifo(fifo)
    refused_and_nothing_written(tmp_path, fifo, "fifo")


def test_a_multi_rank_export_is_refused_on_import(tmp_path: Path) -> None:
    from realdata import SAMPLES

    export = tmp_path / "all.json.gz"
    proc = subprocess.run(
        [PROFUI, "export", str(SAMPLES / "synthetic_gpu"), "-o", str(export)],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert proc.returncode == 0, proc.stderr
    refused_and_nothing_written(tmp_path, export, "export one rank per file")


def test_two_nsight_exports_get_their_own_ranks(tmp_path: Path) -> None:
    """Two exports of one job (one per node) each number their processes from 0; the second
    goes on where the first stopped. The corpus has no two exports of one job (before/after are
    two runs, refused as such in test_jobs_import), so a copy of one export stands in for the
    other node's: the same times, so one job by the identity rule."""
    import shutil

    from profui.capture.format import read_manifest
    from profui.capture.ingest import import_trace

    other = tmp_path / "node-b.sqlite"
    shutil.copy(nsys_export("mfu_2gpu_before"), other)
    out = tmp_path / "two"
    import_trace([nsys_export("mfu_2gpu_before"), other], out)
    m = read_manifest(out)
    assert m.ranks == [0, 1, 2, 3] and [s["rank"] for s in m.sources] == [0, 1, 2, 3]


def test_a_jax_trace_without_a_usable_event_is_one_line(tmp_path: Path) -> None:
    bad = tmp_path / "host.trace.json"
    bad.write_text('{"traceEvents":[{"ph":"M","pid":1,"name":"process_name","args":{"name":"/host:CPU"}},'
                   '{"ph":"X","pid":1,"tid":"a","ts":1.0,"dur":2.0,"name":"x"}]}')  # fmt: skip
    refused_and_nothing_written(tmp_path, bad, "no complete")


def test_a_jax_run_folder_gives_only_its_trace_files(tmp_path: Path) -> None:
    import shutil

    from profui.capture.format import read_manifest
    from profui.capture.ingest import import_trace

    from realdata import SAMPLES

    logs = tmp_path / "logs"
    shutil.copytree(SAMPLES / "jax_cpu", logs)
    (run,) = (logs / "plugins" / "profile").iterdir()
    (run / "sample-host.memory_profile.json.gz").write_bytes(b"not even gzip")
    shutil.copy(next(run.glob("*.trace.json.gz")), run / "perfetto_trace.json.gz")
    out = tmp_path / "t"
    import_trace([logs], out)
    assert [Path(s["file"]).name for s in read_manifest(out).sources] == ["sample-host.trace.json.gz"]
