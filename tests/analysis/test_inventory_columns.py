"""``profui info``'s counts on hand-made events files: nulls where the format says not null are
refused in one line; plain-string kinds, a kind dictionary per row group and an end beyond int64
are counted (or refused) as the format reads them. Oracle: Counters over ``to_pylist()``."""

from __future__ import annotations

import shutil
import subprocess
import sys
from collections import Counter
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from profui.analysis.inventory import trace_info
from profui.capture.format import TraceFormatError

SAMPLE = Path(__file__).resolve().parents[2] / "samples" / "synthetic_gpu"
PROFUI = str(Path(sys.executable).with_name("profui"))


@pytest.fixture
def trace(tmp_path: Path) -> Path:
    """A copy of the four-rank synthetic sample (its events files only, no cache)."""
    out = tmp_path / "t"
    shutil.copytree(SAMPLE, out, ignore=shutil.ignore_patterns(".profui"))
    return out


def events_files(trace: Path) -> list[Path]:
    return sorted(trace.glob("node=*/rank=*/events-*.parquet"))


def rewrite(path: Path, table: pa.Table, **options) -> None:
    """Write ``table`` over ``path`` as it is (no writer checks), keeping the file's metadata."""
    metadata = {k: v for k, v in pq.ParquetFile(path).metadata.metadata.items() if k.startswith(b"profui.")}
    pq.write_table(table.replace_schema_metadata(metadata), path, **options)


def with_column(table: pa.Table, name: str, values: pa.Array | pa.ChunkedArray) -> pa.Table:
    i = table.schema.get_field_index(name)
    return table.set_column(i, pa.field(name, values.type), values)


def expected(trace: Path) -> tuple[Counter, Counter]:
    """Kinds, and (node, device, kind) of on-device events, over every events file."""
    kinds: Counter = Counter()
    on_device: Counter = Counter()
    for path in events_files(trace):
        t = pq.read_table(path, columns=["kind", "device"])
        node = path.parts[-3].removeprefix("node=")
        kinds.update(t["kind"].to_pylist())
        on_device.update(
            (node, d, k)
            for d, k in zip(t["device"].to_pylist(), t["kind"].to_pylist(), strict=True)
            if d >= 0
        )
    return kinds, on_device


def counted(info: dict) -> tuple[Counter, Counter]:
    by_device = Counter(
        {(d["node"], d["device"], k): n for d in info["devices"] for k, n in d["counts"].items()}
    )
    return Counter(info["counts"]), by_device


@pytest.mark.parametrize("column", ["ts", "dur", "kind", "device"])
def test_nulls_in_a_not_null_column_are_refused(trace: Path, column: str) -> None:
    path = events_files(trace)[-1]
    t = pq.read_table(path)
    values = t[column].to_pylist()
    values[len(values) // 2] = None
    rewrite(path, with_column(t, column, pa.array(values, t.schema.field(column).type)))
    with pytest.raises(TraceFormatError) as err:
        trace_info(trace)
    assert str(path) in str(err.value) and f"column {column} holds nulls" in str(err.value)


def test_dur_all_null_in_one_file_of_two_is_one_line_exit_2(trace: Path) -> None:
    path = events_files(trace)[-1]
    t = pq.read_table(path)
    rewrite(path, with_column(t, "dur", pa.nulls(t.num_rows, pa.int64())))
    proc = subprocess.run([PROFUI, "info", str(trace)], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 2, proc.stderr
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and str(path) in lines[0] and "column dur holds nulls" in lines[0], proc.stderr


def test_plain_string_kinds_are_counted(trace: Path) -> None:
    for path in events_files(trace)[::2]:
        t = pq.read_table(path)
        rewrite(path, with_column(t, "kind", t["kind"].cast(pa.string())))
    assert counted(trace_info(trace)) == expected(trace)


def test_a_kind_dictionary_per_row_group_is_counted(trace: Path) -> None:
    path = events_files(trace)[0]
    t = pq.read_table(path)
    kinds = t["kind"].to_pylist()
    # chunks of 7 rows, each with its own dictionary in its own order
    chunks = [pa.array(kinds[i : i + 7][::-1]).dictionary_encode() for i in range(0, len(kinds), 7)]
    chunks = [pa.DictionaryArray.from_arrays(c.indices, c.dictionary) for c in chunks]
    reversed_rows = pa.chunked_array(chunks).to_pylist()
    assert reversed_rows != kinds  # the chunks' rows are reversed: put them back in order
    order = [i + j for i in range(0, len(kinds), 7) for j in reversed(range(min(7, len(kinds) - i)))]
    rewrite(path, with_column(t.take(order), "kind", pa.chunked_array(chunks)), row_group_size=7)
    assert pq.ParquetFile(path).metadata.num_row_groups > 1
    assert counted(trace_info(trace)) == expected(trace)


def test_an_end_beyond_int64_is_refused(trace: Path) -> None:
    path = events_files(trace)[0]
    t = pq.read_table(path)
    ts = t["ts"].to_pylist()
    ts[-1] = 2**63 - 10
    rewrite(path, with_column(t, "ts", pa.array(ts, pa.int64())))
    with pytest.raises(TraceFormatError, match="beyond the int64 nanosecond range") as err:
        trace_info(trace)
    assert str(path) in str(err.value)
