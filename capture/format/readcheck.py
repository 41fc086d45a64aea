"""Which data file of a trace cannot be read as its table, and why (asked once a read failed).

Opening a trace checks only the footers (cheap). A file whose footer is intact can still hold
corrupt pages, or a column of the wrong type (``ts`` as strings); the reader that meets it then
fails deep inside Polars or Arrow. :func:`unreadable` reads the files one by one, against the
format's declared schemas, to name the file and its problem in one line.
"""

from __future__ import annotations

from collections.abc import Iterable

from .errors import TraceFormatError
from .opener import TraceFile


def _same(got, want) -> bool:
    import pyarrow as pa

    def base(t):
        if pa.types.is_dictionary(t):
            t = t.value_type
        return pa.string() if pa.types.is_large_string(t) else t

    return base(got).equals(base(want))


def unreadable_schema(f: TraceFile) -> TraceFormatError | None:
    """The error naming ``f`` when a stored column's type is not the format's (or its schema
    cannot be read); None otherwise. Reads the footer only."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    from .schema import TABLE_SCHEMAS

    try:
        schema = pq.read_schema(f.path)
    except (OSError, pa.ArrowException) as exc:
        return TraceFormatError(f.path, f"cannot read {f.table} ({str(exc).splitlines()[0]})")
    for field in TABLE_SCHEMAS[f.table]:
        if field.name in schema.names and not _same(schema.field(field.name).type, field.type):
            got = schema.field(field.name).type
            return TraceFormatError(f.path, f"column {field.name} holds {got}, the format says {field.type}")
    return None


def unreadable(files: Iterable[TraceFile]) -> TraceFormatError | None:
    """The error naming the first of ``files`` that cannot be read as its table (a stored column
    of another type than the format declares, or pages that do not decode); None when every
    one reads (the failure was not the files')."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    from .schema import TABLE_SCHEMAS

    for f in files:
        found = unreadable_schema(f)
        if found is not None:
            return found
        want = TABLE_SCHEMAS[f.table]
        schema = pq.read_schema(f.path)
        try:
            pq.read_table(f.path, columns=[n for n in want.names if n in schema.names])
        except (OSError, pa.ArrowException) as exc:
            return TraceFormatError(f.path, f"cannot read {f.table} ({str(exc).splitlines()[0]})")
    return None
