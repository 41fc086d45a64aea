"""Events files whose footer or ``kind`` column a writer other than profui's could leave.

A real Kineto trace is imported, then one events file of a copy is rewritten with pyarrow:

- footer metadata (``profui.table``, ``profui.source``, a key) that is not UTF-8, which
  Parquet's Thrift declares ``string``: every command refuses the file in one line naming it
  (it used to be a ``UnicodeDecodeError`` traceback, or Polars' "invalid utf8");
- ``kind`` stored as plain strings, not dictionary-encoded: the format's readers take the
  column by its value type (``readcheck``), so ``profui info`` reads it (it used to raise
  ``AttributeError``); ``kind`` as integers is refused in one line naming the column.

A cached import (``profui summary X.json.gz``) whose events file was damaged since (removed,
truncated, rewritten with fewer rows or with such metadata) is a miss: imported again, never
served (it used to be refused, naming the cache's own file).

The oracle is the source JSON (its events by ``cat``) and pyarrow's own reading of the file.
"""

from __future__ import annotations

import gzip
import json
import shutil
import subprocess
from pathlib import Path

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
import pytest

from profui.analysis import open_trace
from profui.capture.format import TraceFormatError
from profui.capture.ingest import import_trace

from realdata import run_profui, shared_trace

TRACE = "hta-critical_path-simple_add-benchmark_result_493459_1694039959_trace.json.gz"
EVENTS = "node=a/rank=0/events-00000.parquet"


def profui(*args: str | Path, cache: Path | None = None) -> subprocess.CompletedProcess:
    return run_profui(*args, cache=cache)


@pytest.fixture(scope="module")
def imported(tmp_path_factory) -> Path:
    src = tmp_path_factory.mktemp("src") / "a.json.gz"
    src.write_bytes(shared_trace(TRACE).read_bytes())
    out = tmp_path_factory.mktemp("footer") / "base"
    import_trace([src], out)
    assert (out / EVENTS).is_file()
    return out


def _rewrite(trace: Path, table: pa.Table, metadata: dict[bytes, bytes]) -> None:
    """Write ``table`` over the trace's events file with ``metadata`` as the footer's key-values
    (pyarrow adds its own ``ARROW:schema``)."""
    table = table.replace_schema_metadata(None)
    with pq.ParquetWriter(trace / EVENTS, table.schema) as w:
        w.write_table(table)
        w.add_key_value_metadata(metadata)


def _copy(imported: Path, tmp_path: Path, **meta_changes: bytes) -> Path:
    trace = tmp_path / "trace"
    shutil.copytree(imported, trace)
    table = pq.read_table(trace / EVENTS)
    meta = {k: v for k, v in pq.read_metadata(trace / EVENTS).metadata.items() if k != b"ARROW:schema"}
    for key, value in meta_changes.items():
        meta[key.encode("utf-8", "surrogateescape")] = value
    _rewrite(trace, table, meta)
    return trace


def _one_line_naming(proc: subprocess.CompletedProcess, path: Path, *words: str) -> None:
    assert proc.returncode == 2, proc.stderr
    assert "Traceback" not in proc.stderr
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1, proc.stderr
    assert str(path) in lines[0] and all(w in lines[0] for w in words), lines[0]


NOT_UTF8 = [
    pytest.param({"profui.table": b"ev\xffents"}, "profui.table", id="table"),
    pytest.param({"profui.source": b'{"file": "\xfe"}'}, "profui.source", id="source"),
    pytest.param({"profui.schema_version": b"\xc31"}, "profui.schema_version", id="version"),
    pytest.param({"odd\udcfekey": b"1"}, "key", id="key"),
]


@pytest.mark.parametrize("changes, named", NOT_UTF8)
@pytest.mark.parametrize("command", ["info", "summary"])
def test_footer_metadata_not_utf8_is_one_line(imported, tmp_path, changes, named, command) -> None:
    trace = _copy(imported, tmp_path, **changes)
    before = (trace / EVENTS).read_bytes()
    assert b"\xff" in before or b"\xfe" in before or b"\xc3" in before  # the damage is in the file
    proc = profui(command, trace)
    _one_line_naming(proc, trace / EVENTS, named, "not UTF-8")
    assert (trace / EVENTS).read_bytes() == before  # nothing rewritten


@pytest.mark.parametrize("changes, named", NOT_UTF8)
def test_opening_footer_metadata_not_utf8_names_the_file(imported, tmp_path, changes, named) -> None:
    """What ``profui open`` and every analysis load goes through."""
    trace = _copy(imported, tmp_path, **changes)
    with pytest.raises(TraceFormatError) as err:
        open_trace(trace)
    assert str(trace / EVENTS) in str(err.value) and named in str(err.value) and "\n" not in str(err.value)


def test_a_column_name_not_utf8_is_one_line(imported, tmp_path) -> None:
    trace = _copy(imported, tmp_path)
    data = bytearray((trace / EVENTS).read_bytes())
    length = int.from_bytes(data[-8:-4], "little")
    start = len(data) - 8 - length
    footer = bytes(data[start:-8])
    assert b"memcpy_kind" in footer
    # same length, so the Thrift lengths still hold: only the name's bytes are not UTF-8
    data[start:-8] = footer.replace(b"memcpy_kind", b"memcpy_kin\xff")
    (trace / EVENTS).write_bytes(bytes(data))
    _one_line_naming(profui("info", trace), trace / EVENTS, "column name", "not UTF-8")


def _kernels_in_source() -> int:
    events = json.loads(gzip.decompress(shared_trace(TRACE).read_bytes()))["traceEvents"]
    return sum(1 for e in events if e.get("cat") == "kernel")


def test_info_reads_kind_stored_as_plain_strings(imported, tmp_path) -> None:
    trace = _copy(imported, tmp_path)
    table = pq.read_table(trace / EVENTS)
    meta = {k: v for k, v in pq.read_metadata(trace / EVENTS).metadata.items() if k != b"ARROW:schema"}
    i = table.schema.get_field_index("kind")
    plain = table.set_column(
        i, pa.field("kind", pa.string(), nullable=False), table["kind"].cast(pa.string())
    )
    _rewrite(trace, plain, meta)
    assert pq.read_schema(trace / EVENTS).field("kind").type == pa.string()
    proc = profui("info", trace, "--json")
    assert proc.returncode == 0, proc.stderr
    counts = json.loads(proc.stdout)["counts"]
    stored = {
        r["values"]: r["counts"] for r in pc.value_counts(pq.read_table(trace / EVENTS)["kind"]).to_pylist()
    }
    assert counts == stored
    assert counts["kernel"] == _kernels_in_source()
    assert sum(counts.values()) == plain.num_rows


def test_info_refuses_kind_stored_as_integers(imported, tmp_path) -> None:
    trace = _copy(imported, tmp_path)
    table = pq.read_table(trace / EVENTS)
    meta = {k: v for k, v in pq.read_metadata(trace / EVENTS).metadata.items() if k != b"ARROW:schema"}
    i = table.schema.get_field_index("kind")
    codes = table["kind"].combine_chunks().indices
    _rewrite(trace, table.set_column(i, pa.field("kind", pa.int32(), nullable=False), codes), meta)
    _one_line_naming(profui("info", trace), trace / EVENTS, "column kind", "int32")


def _drop_file(entry: Path) -> None:
    (entry / EVENTS).unlink()


def _metadata_not_utf8(entry: Path) -> None:
    meta = {k: v for k, v in pq.read_metadata(entry / EVENTS).metadata.items() if k != b"ARROW:schema"}
    _rewrite(entry, pq.read_table(entry / EVENTS), {**meta, b"profui.table": b"ev\xffents"})


def _truncated(entry: Path) -> None:
    data = (entry / EVENTS).read_bytes()
    (entry / EVENTS).write_bytes(data[: len(data) // 2])


def _fewer_rows(entry: Path) -> None:
    meta = {k: v for k, v in pq.read_metadata(entry / EVENTS).metadata.items() if k != b"ARROW:schema"}
    table = pq.read_table(entry / EVENTS)
    _rewrite(entry, table.slice(0, table.num_rows - 1), meta)


@pytest.mark.parametrize("damage", [_drop_file, _metadata_not_utf8, _truncated, _fewer_rows])
def test_a_damaged_cached_import_is_imported_again(tmp_path, damage) -> None:
    """``profui summary X.json.gz`` over a cache entry damaged since: a miss, never served."""
    src = tmp_path / "a.json.gz"
    src.write_bytes(shared_trace(TRACE).read_bytes())
    cache = tmp_path / "cache"
    first = profui("summary", src, "--json", cache=cache)
    assert first.returncode == 0, first.stderr
    (entry,) = (cache / "imports").iterdir()
    damage(entry)
    again = profui("summary", src, "--json", cache=cache)
    assert again.returncode == 0, again.stderr
    assert json.loads(again.stdout)["sections"]["kernels"] == json.loads(first.stdout)["sections"]["kernels"]
    assert [p.name for p in (cache / "imports").iterdir()] == [entry.name]  # one entry, re-made
    assert pq.read_metadata(entry / EVENTS).num_rows == json.loads(first.stdout)["trace"]["events"]
