"""The trace catalogue (analysis.catalog): what the jobs screen shows, usable from a notebook.

Traces are written with the trace-format writers (synthetic on purpose: statuses, start times
and a damaged manifest the shared corpus cannot have).
"""

from __future__ import annotations

from pathlib import Path

from profui.analysis.catalog import JobRow, display_name, folder_size, scan_jobs
from profui.capture.format import Manifest, to_table, write_events, write_manifest


def _trace(path: Path, name: str, start_ns: int, **fields) -> Path:
    write_manifest(path, Manifest(name=name, start_ns=start_ns, **fields))
    events = {"ts": [start_ns], "dur": [10], "kind": ["kernel"], "name": ["k"], "pid": [0], "tid": [0]}
    write_events(path, "hostA", 0, to_table("events", {**events, "device": [0], "stream": [7]}))
    return path


def test_rows_newest_first_with_sizes_and_a_damaged_manifest(tmp_path: Path) -> None:
    old = _trace(tmp_path / "a" / "old", "old", 1_000, status="completed", end_ns=5_000, hosts=["hostA"])
    new = _trace(tmp_path / "b" / "new", "new", 9_000, status="running")
    bad = tmp_path / "bad"
    bad.mkdir()
    (bad / "manifest.json").write_text("{not json")
    rows = scan_jobs(tmp_path)
    assert [r.path for r in rows] == [new, old, bad]
    o = rows[1]
    assert o == JobRow(old, "old", 1_000, "completed", 4_000, 1, 0, folder_size(old))
    assert o.size_bytes == sum(f.stat().st_size for f in old.rglob("*") if f.is_file()) > 0
    assert rows[0].status == "running" and rows[0].duration_ns > 0  # runs up to now
    assert rows[2].status == "unreadable" and rows[2].problem and "\n" not in rows[2].problem


def test_a_cached_import_is_named_after_its_sources() -> None:
    m = Manifest(
        name=".abc123.xyz", sources=[{"file": "/runs/rank0.json.gz"}, {"file": "/runs/rank1.json.gz"}]
    )
    assert display_name(m) == "rank0 +1"
    assert display_name(Manifest(name="train")) == "train"
