"""The plain-Python Parquet footer reader agrees with pyarrow, and opening a trace needs no pyarrow."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from profui.capture.format import FooterError, read_footer

from realdata import SAMPLES


def _agrees_with_pyarrow(path: Path) -> None:
    footer = read_footer(path)
    meta = pq.read_metadata(path)
    assert footer.num_rows == meta.num_rows
    assert list(footer.columns) == meta.schema.to_arrow_schema().names
    assert footer.metadata == dict(meta.metadata or {})


def test_footers_of_the_bundled_samples_agree_with_pyarrow() -> None:
    files = sorted(SAMPLES.rglob("*.parquet"))
    assert files, "no bundled sample traces"
    for f in files:
        _agrees_with_pyarrow(f)


def test_nested_columns_many_row_groups_and_metadata(tmp_path: Path) -> None:
    n = 30_000
    table = pa.table(
        {
            "a": list(range(n)),
            "lst": [[1, 2]] * n,
            "st": [{"x": 1, "y": "s"}] * n,
            "flag": [True, False] * (n // 2),
            "f": [1.5] * n,
            "s": pa.array(["k"] * n).dictionary_encode(),
        }
    ).replace_schema_metadata({"k": "v", "profui.table": "events"})
    path = tmp_path / "x.parquet"
    pq.write_table(table, path, row_group_size=2_000, compression="zstd")
    _agrees_with_pyarrow(path)
    footer = read_footer(path)
    assert footer.columns == ("a", "lst", "st", "flag", "f", "s")  # top level only
    assert footer.metadata[b"k"] == b"v"


@pytest.mark.parametrize("keep", [0, 3, 11, -1, -9, -200])
def test_truncated_or_foreign_files_raise_footer_error(tmp_path: Path, keep: int) -> None:
    path = tmp_path / "x.parquet"
    pq.write_table(pa.table({"a": list(range(1000))}), path)
    data = path.read_bytes()
    path.write_bytes(data[:keep] if keep >= 0 else data[:keep])
    with pytest.raises(FooterError):
        read_footer(path)


def test_corrupt_footer_bytes_raise_footer_error(tmp_path: Path) -> None:
    path = tmp_path / "x.parquet"
    pq.write_table(pa.table({"a": list(range(1000))}), path)
    data = bytearray(path.read_bytes())
    length = int.from_bytes(data[-8:-4], "little")
    for garbage in (b"\xff", b"\x1c"):  # bad types; structs nested without end
        data[-8 - length : -8] = garbage * length
        path.write_bytes(bytes(data))
        with pytest.raises(FooterError):
            read_footer(path)


def test_opening_a_trace_and_summarizing_it_never_imports_pyarrow() -> None:
    trace = next(p.parent.parent.parent for p in SAMPLES.rglob("events-*.parquet"))
    code = (
        "import sys\n"
        "from profui.analysis import open_trace\n"
        "from profui.analysis.summary import summarize\n"
        f"s = summarize(open_trace({str(trace)!r}))\n"
        "assert s.trace['events'] > 0\n"
        "print(sorted(m for m in ('pyarrow', 'pandas') if m in sys.modules))\n"
    )
    # numpy is the critical path's (its graph and replay are numpy arrays: the summary's
    # first line is the top finding); pyarrow and pandas stay out
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"
