"""Which data file of a trace cannot be read as its table, and why (asked once a read failed).

Opening a trace checks only the footers (cheap). A file whose footer is intact can still hold
corrupt pages, or a column of the wrong type (``ts`` as strings); the reader that meets it then
fails deep inside Polars or Arrow. :func:`unreadable` reads the files one by one, against the
format's declared schemas, to name the file and its problem in one line.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING

from .errors import TraceFormatError
from .opener import TraceFile

if TYPE_CHECKING:
    import pyarrow as pa


def _same(got, want) -> bool:
    import pyarrow as pa

    def base(t):
        if pa.types.is_dictionary(t):
            t = t.value_type
        return pa.string() if pa.types.is_large_string(t) else t

    return base(got).equals(base(want))


def wrong_column(f: TraceFile, stored: pa.Schema | pa.Table) -> TraceFormatError | None:
    """The error naming the first column of ``stored`` (the Arrow schema read from ``f``, or a
    table read from it) whose type is not the one the format declares for ``f``'s table, or, for
    a table, that holds nulls where the format says not null; None when all are as declared. A
    dictionary-encoded or plain string column is the same string column: the encoding is how a
    writer stored it, not what it holds."""
    import pyarrow as pa

    from .schema import TABLE_SCHEMAS

    schema = stored if isinstance(stored, pa.Schema) else stored.schema
    for field in TABLE_SCHEMAS[f.table]:
        if field.name not in schema.names:
            continue
        got = schema.field(field.name).type
        if not _same(got, field.type):
            return TraceFormatError(f.path, f"column {field.name} holds {got}, the format says {field.type}")
        if not field.nullable and isinstance(stored, pa.Table) and stored[field.name].null_count:
            return TraceFormatError(f.path, f"column {field.name} holds nulls, the format says not null")
    return None


def unreadable(files: Iterable[TraceFile]) -> TraceFormatError | None:
    """The error naming the first of ``files`` that cannot be read as its table (a stored column
    of another type than the format declares, nulls where it says not null, or pages that do not
    decode); None when every one reads (the failure was not the files')."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    for f in files:
        try:
            wrong = wrong_column(f, pq.read_schema(f.path))  # before decoding: a type is cheap
            if wrong is None:
                wrong = wrong_column(f, pq.read_table(f.path))  # every page decoded, then nulls
            if wrong is not None:
                return wrong
        except (OSError, pa.ArrowException) as exc:
            return TraceFormatError(f.path, f"cannot read {f.table} ({str(exc).splitlines()[0]})")
    return None


def kind_not_in_format(files: Iterable[TraceFile], kinds: Iterable[str]) -> TraceFormatError:
    """The error naming the first events file of ``files`` that holds one of ``kinds``, values
    of ``kind`` the format does not have (:data:`~.columns.EVENT_KINDS`)."""
    import pyarrow.compute as pc
    import pyarrow.parquet as pq

    from .columns import EVENT_KINDS

    wanted = sorted(kinds)
    for f in files:
        held = pc.unique(pq.read_table(f.path, columns=["kind"])["kind"].cast("string")).to_pylist()
        odd = [k for k in wanted if k in held]
        if odd:
            return TraceFormatError(
                f.path,
                f"events of kind {odd[0]!r}, which is not one of the format's ({', '.join(EVENT_KINDS)})",
            )
    return TraceFormatError(next(iter(files)).path, f"events of kind {wanted[0]!r}, not one of the format's")
