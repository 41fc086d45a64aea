"""Columns of a local Parquet file read without ``pyarrow.parquet``.

Importing ``pyarrow.parquet`` imports ``pyarrow.fs``, which loads the S3, GCS, Azure and HDFS
filesystems and OpenSSL: ~8 MB resident and ~10 ms in every process that reads a trace this
way, none of it used to read a local file (the writer avoids it the same way: ``writer.py``).
``pyarrow.parquet.ParquetFile`` wraps ``pyarrow._parquet.ParquetReader``; this calls it with the
arguments ``ParquetFile(path).read(columns)`` passes it for a local path.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import pyarrow as pa


def read_columns(path: str | Path, names: Sequence[str]) -> pa.Table:
    """The columns ``names`` of the Parquet file at ``path`` (every row group). Raises what
    ``pyarrow.parquet`` would: ``OSError`` or ``pyarrow.ArrowException``."""
    try:
        from pyarrow._parquet import ParquetReader

        reader = ParquetReader()
        reader.open(
            str(path), use_memory_map=False, buffer_size=0, pre_buffer=True, arrow_extensions_enabled=True
        )
    except (ImportError, TypeError):  # a pyarrow whose private reader differs (17-20 lack a flag)
        import pyarrow.parquet as pq

        with pq.ParquetFile(str(path)) as whole:
            return whole.read(columns=list(names))
    try:
        indices = [reader.column_name_idx(name) for name in names]
        return reader.read_all(column_indices=indices, use_threads=True)
    finally:
        reader.close()
