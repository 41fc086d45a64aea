"""Arrow schemas of the trace format: the ``events`` and ``metrics`` tables.

Times are integer nanoseconds since the Unix epoch. ``node`` and ``rank`` are not stored in the
files: they are Hive partition folders (``node=<host>/rank=<r>/``).
"""

from __future__ import annotations

import pyarrow as pa

from .columns import (  # noqa: F401  (re-exported: the constants used to live here)
    DEVICE_KINDS,
    EVENT_KINDS,
    META_SCHEMA_VERSION,
    META_TABLE,
    SCHEMA_VERSION,
    TABLE_COLUMNS,
)

_DICT_STR = pa.dictionary(pa.int32(), pa.string())

EVENTS_SCHEMA = pa.schema(
    [
        pa.field("ts", pa.int64(), nullable=False),
        pa.field("dur", pa.int64(), nullable=False),
        pa.field("kind", _DICT_STR, nullable=False),
        pa.field("name", _DICT_STR, nullable=False),
        pa.field("pid", pa.int64(), nullable=False),
        pa.field("tid", pa.int64(), nullable=False),
        pa.field("device", pa.int32(), nullable=False),
        pa.field("stream", pa.int32(), nullable=False),
        pa.field("correlation", pa.int64()),
        pa.field("external_id", pa.int64()),
        pa.field("bytes", pa.int64()),
        pa.field("memcpy_kind", _DICT_STR),
        pa.field("args", pa.string()),
    ]
)

METRICS_SCHEMA = pa.schema(
    [
        pa.field("ts", pa.int64(), nullable=False),
        pa.field("source", _DICT_STR, nullable=False),
        pa.field("device", pa.int32(), nullable=False),
        pa.field("metric", _DICT_STR, nullable=False),
        pa.field("value", pa.float64(), nullable=False),
    ]
)

TABLE_SCHEMAS: dict[str, pa.Schema] = {"events": EVENTS_SCHEMA, "metrics": METRICS_SCHEMA}

assert all(tuple(TABLE_SCHEMAS[t].names) == cols for t, cols in TABLE_COLUMNS.items())
