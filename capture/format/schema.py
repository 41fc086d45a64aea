"""Arrow schemas of the trace format: the ``events`` and ``metrics`` tables.

Times are integer nanoseconds since the Unix epoch. ``node`` and ``rank`` are not stored in the
files: they are Hive partition folders (``node=<host>/rank=<r>/``).
"""

from __future__ import annotations

import pyarrow as pa

#: Version of the on-disk layout and schemas. Bump on any incompatible change; readers refuse
#: files written by a newer version.
SCHEMA_VERSION = 1

#: Every value the ``kind`` column may hold.
EVENT_KINDS: tuple[str, ...] = (
    "cpu_op",
    "python",
    "annotation",
    "step",
    "runtime",
    "driver",
    "kernel",
    "memcpy",
    "memset",
    "sync",
    "gpu_annotation",
    "instant",
)

#: Kinds that run on a device (``device >= 0``) rather than on the host.
DEVICE_KINDS: frozenset[str] = frozenset({"kernel", "memcpy", "memset", "sync", "gpu_annotation"})

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

#: Parquet key-value metadata keys written into every file.
META_SCHEMA_VERSION = b"profui.schema_version"
META_TABLE = b"profui.table"
