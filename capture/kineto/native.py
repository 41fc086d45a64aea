"""The native scan of a Kineto ``traceEvents`` array (the ``_scan`` C extension) as Arrow columns.

The extension turns the common events into row columns in one pass over the JSON text and
hands back the rest (metadata, profiler spans, markers, unusual events) as *specials* for the
pure-Python converter, which remains the reference for every rule. It spells no Kineto name
itself: :func:`_policy` hands it mapping.py's categories and args keys, and it leaves
``ts``/``dur`` as text for :func:`.timeparse.us_to_ns`. When the extension is not
built (no C compiler at install time) or ``PROFUI_PURE_PYTHON=1`` is set, :func:`scan_events`
returns None and the import runs entirely in Python, with identical results.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from functools import cache

import pyarrow as pa
import pyarrow.compute as pc

from .mapping import (
    BYTES,
    CANONICAL_CAT,
    CAT,
    CORRELATION,
    CORRELATION_FLOWS,
    DEVICE,
    DEVICE_SIDE,
    DIRECTION,
    DIRECTIONS,
    DMA_CATEGORY,
    EXTERNAL_ID,
    EXTERNAL_ID_ALT,
    KIND,
    KIND_BY_CAT,
    SIZE,
    STREAM,
)

try:
    from . import _scan
except ImportError:  # built without a C compiler: the pure-Python path does everything
    _scan = None

#: Kind names by the code the extension writes for each row.
KIND_NAMES: tuple[str, ...] = tuple(sorted({*KIND_BY_CAT.values(), "instant", "step", "memcpy"}))

#: The args keys the extension reads, in the order of its ``K_*`` enum.
_ARG_KEYS = (EXTERNAL_ID, EXTERNAL_ID_ALT, CORRELATION, DEVICE, STREAM, BYTES, KIND, DIRECTION, SIZE, CAT)

#: The flow counts the extension returns, in its order (per category of CORRELATION_FLOWS).
_FLOW_KEYS = tuple(f"{cat}:{ph}" for cat in CORRELATION_FLOWS for ph in "sft")

# Flags of a category, as _scan.c reads them.
_F_DEVICE, _F_MEMCPY, _F_MEMSET, _F_RUNTIME, _F_DMA, _F_CANON = 1, 2, 4, 8, 16, 32


def available() -> bool:
    """True when the extension is built and not switched off by ``PROFUI_PURE_PYTHON=1``."""
    return _scan is not None and os.environ.get("PROFUI_PURE_PYTHON", "") not in ("1", "true", "yes")


@cache
def _policy() -> tuple:
    """The arguments of ``_scan.scan`` after the text: every name and code it matches on."""
    cats = []
    for cat, kind in KIND_BY_CAT.items():
        flags = _F_DEVICE if kind in DEVICE_SIDE else 0
        flags |= {
            "memcpy": _F_MEMCPY,
            "memset": _F_MEMSET,
            "runtime": _F_RUNTIME,
        }.get(kind, 0)
        if cat == DMA_CATEGORY and kind == "kernel":
            flags |= _F_DMA
        if CANONICAL_CAT[kind] == cat:
            flags |= _F_CANON
        cats.append((cat.encode(), KIND_NAMES.index(kind), flags))
    dirs = [(k.encode(), v.encode()) for k, v in DIRECTIONS.items()]
    return (
        cats,
        dirs,
        [k.encode() for k in _ARG_KEYS],
        [c.encode() for c in CORRELATION_FLOWS],
        KIND_NAMES.index("instant"),
        CANONICAL_CAT["instant"].encode(),
        KIND_NAMES.index("memcpy"),
    )


@dataclass
class NativeScan:
    """What the extension made of an events array.

    ``table``: the rows it converted (the converter's chunk columns, ``ts``/``dur`` still JSON
    text and ``dur`` null where absent, plus ``ord``, the event's index in the array);
    ``specials``: ``(index, text)`` of every event left to the Python converter, in order;
    ``flows``: counts of the CORRELATION_FLOWS flow events it consumed, by
    ``"cat:ph"``; ``runtime_size``: copy sizes of runtime calls by correlation (AMD);
    ``events``: the number of events in the array.
    """

    table: pa.Table
    specials: list[tuple[int, memoryview]]
    flows: dict[str, int]
    runtime_size: dict[int, int]
    events: int


def scan_events(text: bytes | memoryview, schema: pa.Schema) -> NativeScan | None:
    """Scan the JSON text of a ``traceEvents`` array; None when the extension is unavailable
    or the text is not an array of objects (the Python path then reports what is wrong).
    ``schema`` is the converter's chunk schema; the table gets it plus ``ord``."""
    if not available():
        return None
    try:
        res = _scan.scan(text, *_policy())
    except ValueError:
        return None
    try:
        table = _table(res, schema)
    except pa.ArrowInvalid:  # text that is not UTF-8: the Python path names the event
        return None
    triples = memoryview(res["special"]).cast("q")
    view = memoryview(text)
    specials = [(triples[i], view[triples[i + 1] : triples[i + 2]]) for i in range(0, len(triples), 3)]
    flows = {key: c for key, c in zip(_FLOW_KEYS, res["flows"], strict=True) if c}
    pairs = memoryview(res["sizes"]).cast("q")
    runtime_size = {pairs[i]: pairs[i + 1] for i in range(0, len(pairs), 2)}
    return NativeScan(table, specials, flows, runtime_size, res["events"])


def _table(res: dict, schema: pa.Schema) -> pa.Table:
    """The extension's column buffers as an Arrow table (``schema`` plus ``ord``), zero-copy
    except for the UTF-8 check of the text columns."""
    n = res["rows"]

    def plain(typ: pa.DataType, data: bytes) -> pa.Array:
        return pa.Array.from_buffers(typ, n, [None, pa.py_buffer(data)])

    def nullable(parts: tuple[bytes, bytes], typ: pa.DataType = pa.int64()) -> pa.Array:
        valid, data = parts
        return pa.Array.from_buffers(typ, n, [pa.py_buffer(valid), pa.py_buffer(data)])

    def number_column(parts: tuple[bytes, bytes, bytes]) -> pa.Array:
        valid, offsets, data = parts  # JSON numbers, checked by the extension: ASCII
        return pa.Array.from_buffers(
            pa.large_string(), n, [pa.py_buffer(valid), pa.py_buffer(offsets), pa.py_buffer(data)]
        )

    def text_column(parts: tuple[bytes, bytes, bytes]) -> pa.Array:
        valid, offsets, data = parts
        raw = pa.Array.from_buffers(
            pa.large_binary(), n, [pa.py_buffer(valid), pa.py_buffer(offsets), pa.py_buffer(data)]
        )
        return raw.cast(pa.large_string()).cast(pa.string())  # the first cast checks UTF-8

    columns = {
        "ts": number_column(res["ts"]),
        "dur": number_column(res["dur"]),
        "kind": pc.take(pa.array(KIND_NAMES, pa.string()), plain(pa.uint8(), res["kind"])),
        "name": text_column(res["name"]),
        "pid": plain(pa.int64(), res["pid"]),
        "tid": plain(pa.int64(), res["tid"]),
        "device": nullable(res["device"], pa.int32()),
        "stream": nullable(res["stream"], pa.int32()),
        "correlation": nullable(res["correlation"]),
        "external_id": nullable(res["external_id"]),
        "bytes": nullable(res["bytes"]),
        "memcpy_kind": text_column(res["memcpy_kind"]),
        "args": text_column(res["args"]),
    }
    arrays = [columns[f.name] if f.name in columns else pa.nulls(n, f.type) for f in schema]
    return pa.Table.from_arrays(
        [*arrays, plain(pa.int64(), res["ord"])], schema=schema.append(pa.field("ord", pa.int64()))
    )
