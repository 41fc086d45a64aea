"""Writers that only ever leave whole, self-describing Parquet files behind."""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from itertools import accumulate
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc

from .atomic import write_with
from .layout import events_path, metrics_path, next_seq, node_dir, rank_dir
from .schema import META_SCHEMA_VERSION, META_TABLE, SCHEMA_VERSION, TABLE_SCHEMAS

# Integer columns that grow slowly row to row once sorted by ts: delta encoding shrinks them.
_DELTA_COLUMNS = {"events": ("ts", "dur", "correlation", "external_id"), "metrics": ("ts",)}
#: zstd level 1: against level 3, writing a 3M-event table costs ~20% less CPU (the args
#: text, most of the bytes, even compresses smaller) for ~1.2% more bytes in all.
ZSTD_LEVEL = 1
#: Rows per row group: readers decode row groups in parallel (reading the df_index trace's 151k
#: events: 13 -> 8 ms on 2 cores), for about 1% more bytes than one row group per file.
ROW_GROUP_ROWS = 1 << 16


def _parquet_writer(path: str, schema: pa.Schema, **options: Any) -> Any:
    """A Parquet writer of ``schema`` at ``path``: the one ``pyarrow.parquet.ParquetWriter`` wraps
    (it adds only the resolution of filesystems), whose module is not ``pyarrow.parquet``:
    importing that imports ``pyarrow.fs``, which loads the S3, GCS, Azure and HDFS filesystems and
    OpenSSL, 8 MB resident in every process that writes a trace, none of it used for a local file.
    The public writer where this pyarrow's private one differs."""
    try:
        from pyarrow._parquet import ParquetWriter

        return ParquetWriter(path, schema, **options)
    except (ImportError, TypeError):
        import pyarrow.parquet as pq

        return pq.ParquetWriter(path, schema, **options)


def _sorted_parts(table: pa.Table, order: pa.Array, threads: int) -> Iterator[pa.Table]:
    """``table`` in ``order``, a row group at a time. With ``threads`` ≥ 2 the next row group is
    gathered on a thread while the caller encodes this one (both release the GIL): a fifth of a
    large write's time; with 1 (the daemon's conversion, beside a training job) all on the caller's."""
    starts = range(0, len(order), ROW_GROUP_ROWS)
    take = _taker(table)
    if threads < 2 or len(starts) == 1:
        for start in starts:
            yield take(order[start : start + ROW_GROUP_ROWS])
        return
    with ThreadPoolExecutor(1, thread_name_prefix="profui-sort") as pool:
        ahead = pool.submit(take, order[:ROW_GROUP_ROWS])
        for start in starts:
            part = ahead.result()
            after = start + ROW_GROUP_ROWS
            if after < len(order):
                ahead = pool.submit(take, order[after : after + ROW_GROUP_ROWS])
            yield part


def _taker(table: pa.Table) -> Callable[[pa.Array], pa.Table]:
    """A function of row indices to ``table``'s rows at them. Of a table in several chunks, each
    chunk's rows are taken from it and then put in order: Arrow's take of a chunked column of
    text first joins its chunks, a copy of the whole column at each call. The rows are Arrow's
    take's, dictionaries included."""
    batches = table.to_batches()
    if len(batches) < 2:
        return table.take
    # each row group's dictionaries are then the whole column's, as when its chunks are joined
    batches = table.unify_dictionaries().to_batches()
    first = [pa.scalar(n, pa.uint64()) for n in accumulate((b.num_rows for b in batches), initial=0)]

    def take(indices: pa.Array) -> pa.Table:
        indices = indices.cast(pa.uint64())
        parts, at = [], []
        for batch, lo, hi in zip(batches, first[:-1], first[1:], strict=True):
            here = pc.and_(pc.greater_equal(indices, lo), pc.less(indices, hi))
            rows = pc.filter(indices, here)
            if len(rows):
                parts.append(batch.take(pc.subtract(rows, lo)))
                at.append(pc.indices_nonzero(here))
        back = pc.sort_indices(pa.chunked_array(at, pa.uint64()))  # where each row taken goes
        return pa.Table.from_batches(parts, table.schema).combine_chunks().take(back)

    return take


def to_table(table_name: str, columns: Mapping[str, Sequence[Any] | pa.Array]) -> pa.Table:
    """Build a table of the given schema from plain columns (lists or Arrow arrays).

    Missing nullable columns become nulls; string columns are dictionary-encoded here so
    callers can pass plain Python strings.
    """
    schema = TABLE_SCHEMAS[table_name]
    n = None
    for value in columns.values():
        n = len(value)
        break
    n = n or 0
    arrays = []
    for f in schema:
        value = columns.get(f.name)
        if value is None:
            if not f.nullable:
                raise ValueError(f"{table_name}: column {f.name!r} is required")
            arrays.append(pa.nulls(n, type=f.type))
            continue
        if pa.types.is_dictionary(f.type):
            arr = value if isinstance(value, pa.Array | pa.ChunkedArray) else pa.array(value, pa.string())
            if not pa.types.is_dictionary(arr.type):
                arr = pc.dictionary_encode(arr.cast(pa.string()))
            arr = arr.cast(f.type)
        else:
            arr = value if isinstance(value, pa.Array | pa.ChunkedArray) else pa.array(value, f.type)
            if arr.type != f.type:
                arr = arr.cast(f.type)
        arrays.append(arr)
    return pa.Table.from_arrays(arrays, schema=schema)


def write_table(
    table_name: str,
    table: pa.Table,
    path: str | Path,
    extra_metadata: Mapping[str, str] | None = None,
    threads: int = 1,
) -> Path:
    """Sort ``table`` by ``ts``, then write it atomically to ``path`` as zstd Parquet.

    The schema version and table name go into the file's key-value metadata, plus any
    ``extra_metadata`` (strings) the caller wants to keep with the file. ``threads``: how many
    threads the write may use (:func:`_sorted_parts`); the bytes are the same for any number.
    """
    schema = TABLE_SCHEMAS[table_name]
    if table.schema.remove_metadata() != schema:
        table = table.select(schema.names).cast(schema)
    # Sorted a row group at a time (Arrow's sort is stable, as sort_by's): a sorted copy of the
    # whole table would be held beside it while it is written.
    order = pc.sort_indices(table["ts"]) if table.num_rows > 1 else None
    meta = {META_SCHEMA_VERSION: str(SCHEMA_VERSION).encode(), META_TABLE: table_name.encode()}
    for key, value in (extra_metadata or {}).items():
        meta[key.encode()] = value.encode()
    # The metadata goes into the file footer only, not into the table's schema: pyarrow would
    # otherwise store it twice (again inside the base64 ARROW:schema), which doubled the
    # footer of a small capture window.
    table = table.replace_schema_metadata(None)
    delta = _DELTA_COLUMNS[table_name]
    dict_cols = [f.name for f in schema if pa.types.is_dictionary(f.type)]

    def _write(tmp: Path) -> None:
        writer = _parquet_writer(
            str(tmp),
            table.schema,
            compression="zstd",
            compression_level=ZSTD_LEVEL,
            use_dictionary=dict_cols,
            column_encoding={c: "DELTA_BINARY_PACKED" for c in delta},
            write_statistics=True,
            # pyarrow.parquet.ParquetWriter's defaults, stated: the files stay byte for byte the same
            version="2.6",
            data_page_version="1.0",
            writer_engine_version="V2",
        )
        try:
            if order is None:
                writer.write_table(table, row_group_size=ROW_GROUP_ROWS)
            else:
                for part in _sorted_parts(table, order, threads):
                    writer.write_table(part, row_group_size=ROW_GROUP_ROWS)
            writer.add_key_value_metadata(meta)
        finally:
            writer.close()

    write_with(path, _write)
    return Path(path)


def write_events(
    trace_dir: str | Path,
    node: str,
    rank: int,
    table: pa.Table,
    seq: int | None = None,
    extra_metadata: Mapping[str, str] | None = None,
    threads: int = 1,
) -> Path:
    """Write one events file for ``node``/``rank`` (next free ``seq`` unless given), with at most
    ``threads`` threads (:func:`write_table`)."""
    if seq is None:
        seq = next_seq(rank_dir(trace_dir, node, rank), "events")
    return write_table("events", table, events_path(trace_dir, node, rank, seq), extra_metadata, threads)


def write_metrics(
    trace_dir: str | Path,
    node: str,
    table: pa.Table,
    seq: int | None = None,
    extra_metadata: Mapping[str, str] | None = None,
) -> Path:
    """Write one metrics file for ``node`` (next free ``seq`` unless given)."""
    if seq is None:
        seq = next_seq(node_dir(trace_dir, node), "metrics")
    return write_table("metrics", table, metrics_path(trace_dir, node, seq), extra_metadata)
