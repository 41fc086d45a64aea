"""What an import writes besides its rows: the events file's bytes and the manifest's version.

- The writer calls pyarrow's Parquet writer itself, not through ``pyarrow.parquet`` (whose import
  loads pyarrow's cloud filesystems): the bytes must be those ``pyarrow.parquet.ParquetWriter``
  writes with the same options, the oracle here, on a real trace's events.
- The manifest's profui version is read from the distribution's metadata without
  ``importlib.metadata``; that package's ``version("profui")`` is the oracle, on the installed
  profui and on distribution folders made here (which one ``sys.path`` finds first).
"""

from __future__ import annotations

import importlib.metadata
import sys
from pathlib import Path

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
import pytest

from profui.capture.format.schema import META_SCHEMA_VERSION, META_TABLE, SCHEMA_VERSION
from profui.capture.format.writer import ROW_GROUP_ROWS, ZSTD_LEVEL, write_table
from profui.capture.ingest.importer import _profui_version
from profui.capture.kineto.convert import convert_events
from profui.capture.kineto.reader import decode, read_bytes

from realdata import shared_trace


def _events(name: str) -> pa.Table:
    src = shared_trace(name)
    return convert_events(decode(src, read_bytes(src))).table


@pytest.mark.parametrize("threads", [1, 2], ids=["1-thread", "2-threads"])
@pytest.mark.parametrize(
    "rows", [None, 100_000, "two traces"], ids=["trace", "two-row-groups", "chunks-of-two-traces"]
)
def test_events_file_bytes_are_pyarrow_parquets(tmp_path: Path, rows: int | str | None, threads: int) -> None:
    table = _events("hta-nccl_parser_config-nccl_data.json.gz")
    if rows == "two traces":  # chunks whose names and kinds have dictionaries of their own, rows
        # of each in every row group (a table an import converted in parts is in chunks)
        other = _events("hta-df_index_resolver-df_index_resolver.json.gz").cast(table.schema)
        shift = pa.scalar(pc.min(table["ts"]).as_py() - pc.min(other["ts"]).as_py(), pa.int64())
        table = pa.concat_tables(
            [table, other.set_column(0, table.schema.field("ts"), pc.add(other["ts"], shift))]
        )
        assert table["name"].num_chunks == 2 and table.num_rows > ROW_GROUP_ROWS
    elif rows:  # more rows than a row group holds: the sort goes a row group at a time
        table = pa.concat_tables([table] * (rows // table.num_rows + 1)).slice(0, rows)
    extra = {"profui.source": '{"file":"x"}'}
    # with 2 threads the next row group is gathered while one is written: the same bytes
    ours = write_table("events", table, tmp_path / "ours.parquet", extra, threads=threads)

    # the oracle: pyarrow.parquet's writer, the options written out independently
    order = pc.sort_indices(table["ts"])
    with pq.ParquetWriter(
        tmp_path / "theirs.parquet",
        table.schema.remove_metadata(),
        compression="zstd",
        compression_level=ZSTD_LEVEL,
        use_dictionary=["kind", "name", "memcpy_kind"],
        column_encoding={c: "DELTA_BINARY_PACKED" for c in ("ts", "dur", "correlation", "external_id")},
        write_statistics=True,
    ) as writer:
        for start in range(0, table.num_rows, ROW_GROUP_ROWS):
            writer.write_table(
                table.take(order[start : start + ROW_GROUP_ROWS]).replace_schema_metadata(None),
                row_group_size=ROW_GROUP_ROWS,
            )
        writer.add_key_value_metadata(
            {META_SCHEMA_VERSION: str(SCHEMA_VERSION), META_TABLE: "events", **extra}
        )
    assert ours.read_bytes() == (tmp_path / "theirs.parquet").read_bytes()
    assert pq.read_metadata(ours).num_row_groups == -(-table.num_rows // ROW_GROUP_ROWS)


def test_a_pyarrow_whose_private_parquet_differs_gets_the_public_one(tmp_path: Path, monkeypatch) -> None:
    """pyarrow 17-20's private reader lacks a keyword profui passes (TypeError), and another
    version may lack the private classes: the public writer and reader then do the work, with the
    same bytes and the same columns (pyarrow 17 and 21 were run by hand; this is the fallback)."""
    import pyarrow._parquet as private

    from profui.capture.format.parquet_read import read_columns

    table = _events("hta-nccl_parser_config-nccl_data.json.gz")
    first = write_table("events", table, tmp_path / "first.parquet", {})
    expected = read_columns(first, ["ts", "kind"])

    real_writer, calls = private.ParquetWriter, []

    def first_refused(real):
        def make(*args, **kwargs):  # profui's own call refused; the public class's call served
            calls.append(real)
            if calls.count(real) == 1:
                raise TypeError("unexpected keyword argument")
            return real(*args, **kwargs)

        return make

    class OldReader:  # pyarrow 17-20's: open() takes no arrow_extensions_enabled
        def open(self, *args, **kwargs):
            raise TypeError("open() got an unexpected keyword argument 'arrow_extensions_enabled'")

    monkeypatch.setattr(private, "ParquetWriter", first_refused(real_writer))
    again = write_table("events", table, tmp_path / "again.parquet", {})
    assert calls == [real_writer, real_writer]  # refused, then the public writer's
    assert again.read_bytes() == first.read_bytes()
    monkeypatch.setattr(private, "ParquetReader", OldReader)  # pyarrow.parquet keeps its own
    assert read_columns(again, ["ts", "kind"]).equals(expected)


def test_version_is_importlib_metadatas() -> None:
    assert _profui_version() == importlib.metadata.version("profui")


def _dist(folder: Path, name: str, version: str) -> None:
    """A distribution folder ``name`` under ``folder`` whose metadata states ``version``."""
    meta = folder / name
    meta.mkdir(parents=True)
    file = "METADATA" if name.endswith(".dist-info") else "PKG-INFO"
    (meta / file).write_text(
        f"Metadata-Version: 2.1\nName: profui\nVersion: {version}\nSummary: x\n\nVersion: 0.0.bodytext\n"
    )


@pytest.mark.parametrize(
    "layout",
    [
        [("a", "profui-9.8.7.dist-info", "9.8.7")],
        [("a", "profui.egg-info", "1.2.3.dev4")],
        [("a", "profui_other-5.0.dist-info", "5.0"), ("b", "profui-2.0.dist-info", "2.0")],
        [("a", "unrelated-1.0.dist-info", "1.0"), ("b", "profui-3.1.egg-info", "3.1")],
    ],
    ids=["dist-info", "egg-info", "not-a-prefix", "second-entry"],
)
def test_version_found_as_importlib_metadata_finds_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, layout: list[tuple[str, str, str]]
) -> None:
    for entry, name, version in layout:
        _dist(tmp_path / entry, name, version)
    monkeypatch.setattr(sys, "path", [str(tmp_path / "a"), str(tmp_path / "b"), *sys.path])
    assert _profui_version() == importlib.metadata.version("profui") == layout[-1][2]


def test_version_unknown_where_no_distribution(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(sys, "path", [str(tmp_path)])
    with pytest.raises(importlib.metadata.PackageNotFoundError):
        importlib.metadata.version("profui")
    assert _profui_version() == "unknown"
