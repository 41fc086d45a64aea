"""The trace format: schemas, whole-file writes, manifest and the validating opener."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from profui.capture.format import (
    EVENTS_SCHEMA,
    METRICS_SCHEMA,
    SCHEMA_VERSION,
    Manifest,
    TraceFormatError,
    open_trace_dir,
    read_manifest,
    to_table,
    write_events,
    write_manifest,
    write_metrics,
)
from profui.capture.format.atomic import atomic_path
from profui.capture.format.schema import META_SCHEMA_VERSION


def _events(n: int = 5) -> pa.Table:
    # Deliberately unsorted timestamps: the writer must sort them.
    ts = [1_700_000_000_000_000_123 + (n - i) * 1000 for i in range(n)]
    return to_table(
        "events",
        {
            "ts": ts,
            "dur": [10] * n,
            "kind": ["kernel"] * (n - 1) + ["cpu_op"],
            "name": [f"k{i % 2}" for i in range(n)],
            "pid": [1] * n,
            "tid": [7] * n,
            "device": [0] * (n - 1) + [-1],
            "stream": [7] * (n - 1) + [-1],
            "correlation": list(range(n)),
        },
    )


def _trace(tmp: Path, status: str = "completed") -> Path:
    write_manifest(tmp, Manifest(name="t", status=status))
    return tmp


def test_written_events_are_sorted_typed_and_versioned(tmp_path: Path) -> None:
    trace = _trace(tmp_path)
    path = write_events(trace, "host-a", 3, _events())
    assert path == trace / "node=host-a" / "rank=3" / "events-00000.parquet"
    table = pq.read_table(path)
    assert table.schema.remove_metadata() == EVENTS_SCHEMA
    ts = table.column("ts").to_pylist()
    assert ts == sorted(ts)
    assert ts[0] == 1_700_000_000_000_001_123  # exact ns, not float-rounded
    footer = pq.read_metadata(path).metadata
    assert footer[META_SCHEMA_VERSION] == str(SCHEMA_VERSION).encode()
    # stored once, in the footer; not repeated inside the ARROW:schema copy of the schema
    assert META_SCHEMA_VERSION not in (table.schema.metadata or {})
    assert table.column("bytes").null_count == 5
    meta = pq.read_metadata(path)
    assert meta.row_group(0).column(0).compression == "ZSTD"
    # A second write gets the next sequence number and never touches the first file.
    second = write_events(trace, "host-a", 3, _events(2))
    assert second.name == "events-00001.parquet"
    assert pq.read_metadata(path).num_rows == 5


def test_opener_lists_partitions_and_rows(tmp_path: Path) -> None:
    trace = _trace(tmp_path)
    write_events(trace, "a", 0, _events(4))
    write_events(trace, "a", 1, _events(3))
    write_events(trace, "b", 0, _events(2))
    write_metrics(
        trace,
        "a",
        to_table(
            "metrics",
            {
                "ts": [2, 1],
                "source": ["cpu"] * 2,
                "device": [-1, -1],
                "metric": ["util_pct"] * 2,
                "value": [1.5, 2.5],
            },
        ),
    )
    t = open_trace_dir(trace)
    assert t.ranks == [("a", 0), ("a", 1), ("b", 0)]
    assert t.nodes == ["a", "b"]
    assert t.num_events == 9
    assert [m.num_rows for m in t.metrics] == [2]
    assert pq.read_table(t.metrics[0].path).schema.remove_metadata() == METRICS_SCHEMA


def test_failed_write_leaves_no_file(tmp_path: Path) -> None:
    final = tmp_path / "x.parquet"
    with pytest.raises(RuntimeError), atomic_path(final) as tmp:
        tmp.write_bytes(b"partial")
        raise RuntimeError("disk full")
    assert not final.exists()
    assert list(tmp_path.iterdir()) == []


def test_opener_ignores_temporary_files_of_a_running_writer(tmp_path: Path) -> None:
    trace = _trace(tmp_path, status="running")
    write_events(trace, "a", 0, _events(3))
    (trace / "node=a" / "rank=0" / ".events-00001.parquet.abc.tmp").write_bytes(b"PAR1 half")
    t = open_trace_dir(trace)
    assert t.num_events == 3


def test_newer_schema_version_is_refused(tmp_path: Path) -> None:
    trace = _trace(tmp_path)
    path = write_events(trace, "a", 0, _events(2))
    table = pq.read_table(path)
    table = table.replace_schema_metadata({**pq.read_metadata(path).metadata, META_SCHEMA_VERSION: b"99"})
    pq.write_table(table, path)
    with pytest.raises(TraceFormatError, match="newer profui") as err:
        open_trace_dir(trace)
    assert str(path) in str(err.value)


def test_manifest_roundtrip_and_newer_format_refused(tmp_path: Path) -> None:
    m = Manifest(name="job", status="failed", exit_code=3, command=["python", "t.py"], notes=["no NVML"])
    write_manifest(tmp_path, m)
    back = read_manifest(tmp_path)
    assert back == m
    data = json.loads((tmp_path / "manifest.json").read_text())
    data["format_version"] = SCHEMA_VERSION + 1
    data["future_field"] = 1
    (tmp_path / "manifest.json").write_text(json.dumps(data))
    with pytest.raises(TraceFormatError, match="newer profui"):
        read_manifest(tmp_path)


def test_opener_errors_are_one_line_and_name_the_file(tmp_path: Path) -> None:
    with pytest.raises(TraceFormatError, match="no such file") as e1:
        open_trace_dir(tmp_path / "missing")
    assert "\n" not in str(e1.value)
    with pytest.raises(TraceFormatError, match="no manifest.json"):
        open_trace_dir(tmp_path)
    (tmp_path / "manifest.json").write_text("{trunc")
    with pytest.raises(TraceFormatError, match="not valid JSON") as e3:
        open_trace_dir(tmp_path)
    assert "manifest.json" in str(e3.value)
    write_manifest(tmp_path, Manifest(name="t", status="completed"))
    with pytest.raises(TraceFormatError, match="empty trace"):
        open_trace_dir(tmp_path)
    bad = tmp_path / "node=a" / "rank=0" / "events-00000.parquet"
    bad.parent.mkdir(parents=True)
    bad.write_bytes(b"not parquet at all")
    with pytest.raises(TraceFormatError, match="not a readable Parquet") as e5:
        open_trace_dir(tmp_path)
    assert str(bad) in str(e5.value) and "\n" not in str(e5.value)
    os.remove(bad)
    pq.write_table(pa.table({"ts": [1]}), bad)
    with pytest.raises(TraceFormatError, match="not written by profui"):
        open_trace_dir(tmp_path)


def test_required_columns_are_enforced() -> None:
    with pytest.raises(ValueError, match="'ts' is required"):
        to_table("events", {"dur": [1]})


def test_whole_files_follow_the_umask(tmp_path: Path) -> None:
    old = os.umask(0o022)
    try:
        trace = _trace(tmp_path)
        path = write_events(trace, "a", 0, _events(2))
    finally:
        os.umask(old)
    assert path.stat().st_mode & 0o777 == 0o644
    assert (trace / "manifest.json").stat().st_mode & 0o777 == 0o644
