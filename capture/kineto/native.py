"""The native tokenizer of a Kineto ``traceEvents`` array (the ``_scan`` C extension) as Arrow.

The extension splits the common events into their fields and their args (the compact args text
plus the raw value text and entry span of every key of mapping.RULE_KEYS) in one pass over the
JSON text, and hands back the rest (metadata, profiler spans, markers, unusual events) as
*specials* for the pure-Python path. It applies no conversion rule: its columns are the same
intermediate the pure path builds (convert._build_columns), and convert._args_rules and
convert._finish_rows apply every rule to both. It spells no Kineto name itself: :func:`_policy`
hands it mapping.py's categories, args keys and flow categories. When the extension is not
built (no C compiler at install time) or ``PROFUI_PURE_PYTHON=1`` is set, :func:`scan_events`
returns None and the import runs entirely in Python, with identical results.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Callable
from dataclasses import dataclass
from functools import cache

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from .mapping import CORRELATION_FLOWS, KIND_BY_CAT, RULE_KEYS
from .reader import EVENTS_KEY, address_of

try:
    from . import _scan  # type: ignore[attr-defined]  # the C extension: no stub for mypy to read
except ImportError:  # built without a C compiler: the pure-Python path does everything
    _scan = None

#: Kind names by the code the extension writes for each row.
KIND_NAMES: tuple[str, ...] = tuple(sorted({*KIND_BY_CAT.values(), "instant", "step", "memcpy"}))

#: The flow counts the extension returns, in its order (per category of CORRELATION_FLOWS).
_FLOW_KEYS = tuple(f"{cat}:{ph}" for cat in CORRELATION_FLOWS for ph in "sft")


def available() -> bool:
    """True when the extension is built and not switched off by ``PROFUI_PURE_PYTHON=1``."""
    return _scan is not None and os.environ.get("PROFUI_PURE_PYTHON", "") not in ("1", "true", "yes")


#: The least JSON text a thread of the scan is given: below it the text is scanned by fewer
#: threads. Joining a part's columns to those before it copies them (~0.15 CPU-s per 100 MB
#: of text), which a small text's scan does not earn back.
MIN_PART_BYTES = 64 << 20


def parts_for(size: int, threads: int) -> int:
    """How many parts the scan of ``size`` bytes of text is cut into with ``threads`` threads."""
    return max(1, min(threads, size // MIN_PART_BYTES))


@cache
def _policy() -> tuple:
    """The arguments of ``_scan.scan`` after the text: every name and code it matches on."""
    cats = [(cat.encode(), KIND_NAMES.index(kind)) for cat, kind in KIND_BY_CAT.items()]
    return (
        cats,
        [k.encode() for k in RULE_KEYS],
        [c.encode() for c in CORRELATION_FLOWS],
        KIND_NAMES.index("instant"),
    )


@dataclass
class NativeScan:
    """What the extension made of an events array.

    ``rows``: the rows it split (the converter's intermediate chunk columns but the args keys',
    ``dur`` null where absent, plus ``ord``, the event's index in the array), ``num_rows`` of
    them; ``keys``: each args
    key's listed rows, value texts and spans, made into its dense columns by the converter's rows
    as they are read (:attr:`table`: all of them at once);
    ``specials``: ``(index, text)`` of every event left to the Python converter, in order
    (copied out of the JSON text, which may be gone);
    ``flows``: counts of the CORRELATION_FLOWS flow events it consumed, by
    ``"cat:ph"``; ``events``: the number of events in the array.
    """

    rows: pa.Table | None
    num_rows: int
    keys: dict[int, tuple[np.ndarray, np.ndarray, np.ndarray, pa.Array]]
    schema: pa.Schema
    specials: list[tuple[int, bytes]]
    flows: dict[str, int]
    events: int

    @property
    def table(self) -> pa.Table:
        """The rows with every args key's dense columns (``schema`` plus ``ord``)."""
        absent = cache(absent_columns)
        rows = self.rows
        assert rows is not None, "the scan's rows were taken by the converter's columns"
        columns = {name: rows.column(name) for name in rows.column_names}
        n = self.num_rows
        for k, (at, start, end, values) in self.keys.items():
            columns[f"v{k}"], columns[f"s{k}"], columns[f"e{k}"] = spread(n, at, start, end, values, absent)
        arrays = [columns[f.name] if f.name in columns else pa.nulls(n, f.type) for f in self.schema]
        return pa.Table.from_arrays(
            [*arrays, columns["ord"]], schema=self.schema.append(pa.field("ord", pa.int64()))
        )


class Ahead:
    """The scan of a document's events array started on a thread of its own before the document
    is decoded (:func:`scan_ahead`): the JSON decoder, which holds the GIL, and the scan, which
    does not, then run at once. The decoder still reads and checks the whole document and finds
    the array; the scan's result is used only where it scanned exactly that array
    (:meth:`take`), else the array is scanned again as it would have been."""

    def __init__(self, data: bytes | bytearray | memoryview, start: int, mapped: bool, threads: int) -> None:
        text = memoryview(data)[start:]
        self._at = address_of(text)
        self._result: dict | None = None
        self._started = threading.Event()
        self._thread = threading.Thread(
            target=self._scan, args=(text, mapped, parts_for(len(text), threads)), daemon=True
        )
        del text
        self._thread.start()
        # the decoder holds the GIL from its first byte to its last: the scan must have begun
        # (it lets the GIL go once it has read its arguments) before the caller goes on to decode
        self._started.wait()

    def _scan(self, text: memoryview, mapped: bool, parts: int) -> None:
        self._started.set()
        try:
            self._result = _scan.scan(text, *_policy(), mapped, parts, True)
        except (ValueError, MemoryError):  # scanned again where it is taken: the same error there
            self._result = None

    def take(self, text: bytes | bytearray | memoryview) -> dict | None:
        """The scan's result when it scanned exactly the array ``text`` (same first byte, same
        end), else None; waits for the scan to end."""
        self.close()
        result, self._result = self._result, None
        if result is None or address_of(text) != self._at or result["end"] != len(memoryview(text)):
            return None
        return result

    def close(self) -> None:
        """Wait for the scan to end (it reads the caller's text: the caller may not free it
        before); what it made is kept for :meth:`take` only."""
        self._thread.join()


def scan_ahead(data: bytes | bytearray | memoryview, threads: int, mapped: bool) -> Ahead | None:
    """Start scanning the events array of the Kineto document ``data`` (JSON text) while the
    caller decodes it; None where it does not pay or cannot be found: a single thread (the
    daemon's conversion, beside a training job), a text under :data:`MIN_PART_BYTES`, no
    extension, or no top-level ``traceEvents`` array found by a quick walk (the values before it
    skipped). ``mapped``: as for :func:`scan_events`. The caller closes it
    (:meth:`~Ahead.close`) whatever happens, before its text may go."""
    if threads < 2 or len(memoryview(data)) < MIN_PART_BYTES or not available():
        return None
    start = _scan.array_of_key(data, EVENTS_KEY.encode())
    if start < 0:
        return None
    try:
        return Ahead(data, start, mapped, threads)
    except RuntimeError:  # no thread to be had (a process at its limit): decoded, then scanned
        return None


def scan_events(
    text: bytes | bytearray | memoryview,
    schema: pa.Schema,
    release: Callable[[], None] | None = None,
    mapped: bool = False,
    threads: int = 1,
    ahead: Ahead | None = None,
) -> NativeScan | None:
    """Scan the JSON text of a ``traceEvents`` array; None when the extension is unavailable
    or the text is not an array of objects (the Python path then reports what is wrong).
    ``schema`` is the converter's chunk schema; the table gets it plus ``ord``. ``release`` is
    called once the scan has succeeded and its specials are copied out, before the table's
    columns are built: the caller lets go of the text there (it is no longer read). ``mapped``:
    the text lies in a read-only file mapping (``reader.is_mapped``), whose pages the scan
    lets go of behind it. ``threads``: at most this many threads scan parts of the text at once
    (:func:`parts_for`); the result is the same for any number. ``ahead``: a scan of this text
    started before it was decoded (:func:`scan_ahead`), taken where it scanned this very text."""
    if not available():
        return None
    res = ahead.take(text) if ahead is not None else None
    if res is None:
        try:
            res = _scan.scan(text, *_policy(), mapped, parts_for(len(memoryview(text)), threads))
        except ValueError:
            return None
    try:
        texts = _texts(res)
    except pa.ArrowInvalid:  # text that is not UTF-8: the Python path names the event
        return None
    triples = memoryview(res["special"]).cast("q")
    view = memoryview(text)
    specials = [(triples[i], bytes(view[triples[i + 1] : triples[i + 2]])) for i in range(0, len(triples), 3)]
    del view, text
    if release is not None:
        release()
    flows = {key: c for key, c in zip(_FLOW_KEYS, res["flows"], strict=True) if c}
    keys = {
        k: (
            np.frombuffer(rows, np.int64),
            np.frombuffer(start, np.int32),
            np.frombuffer(end, np.int32),
            texts.pop(f"v{k}"),
        )
        for k, (rows, start, end, _, _) in enumerate(res["keys"])
    }
    return NativeScan(_table(res, texts), res["rows"], keys, schema, specials, flows, res["events"])


def from_numpy(values: np.ndarray) -> pa.Array:
    """A 1-d numpy array of numbers or booleans as an Arrow array without nulls, its buffer
    taken as it is (booleans packed into bits). ``pa.array`` would do the same but first loads
    ``numpy.ma`` (15-20 ms, once per process) to test for a masked array."""
    if values.dtype == np.bool_:
        return pa.Array.from_buffers(
            pa.bool_(), len(values), [None, pa.py_buffer(np.packbits(values, bitorder="little"))]
        )
    values = np.ascontiguousarray(values)
    return pa.Array.from_buffers(pa.from_numpy_dtype(values.dtype), len(values), [None, pa.py_buffer(values)])


def absent_columns(n: int) -> tuple[pa.Array, pa.Array]:
    """The columns of an args key no row has: all-null text and span -1. A caller building one
    table passes :func:`spread` this function cached (``functools.cache``), so that its keys
    share one pair that goes with the table."""
    return pa.nulls(n, pa.large_string()), from_numpy(np.full(n, -1, np.int32))


def spread(
    n: int,
    at: np.ndarray,
    start: np.ndarray,
    end: np.ndarray,
    values: pa.Array,
    absent: Callable[[int], tuple[pa.Array, pa.Array]] = absent_columns,
) -> tuple[pa.Array, pa.Array, pa.Array]:
    """One args key, listed for the rows ``at`` (ascending) that have it (both paths list them
    so), as the intermediate's dense columns of ``n`` rows: its raw value text (null elsewhere,
    checked to be UTF-8) and its entry's span (-1 elsewhere); ``absent(n)`` when no row has it."""
    if not len(at):
        text, span = absent(n)
        return text, span, span
    if len(at) > 1 and not bool(np.all(at[1:] > at[:-1])):  # the values' bytes are laid in row order
        raise ValueError("args key rows not ascending")
    spans = []
    for part in (start, end):
        dense = np.full(n, -1, np.int32)
        dense[at] = part
        spans.append(from_numpy(dense))
    values = values.cast(pa.large_string())  # checks UTF-8
    listed = np.frombuffer(values.buffers()[1], np.int64)[values.offset : values.offset + len(values) + 1]
    lengths = np.zeros(n, np.int64)
    lengths[at] = np.diff(listed)
    offsets = np.empty(n + 1, np.int64)
    offsets[0] = listed[0]
    np.cumsum(lengths, out=offsets[1:])
    offsets[1:] += listed[0]
    del lengths
    has = np.zeros(n, bool)
    has[at] = True
    # the listed values' bytes, in row order, are the dense column's bytes: not copied
    text = pa.Array.from_buffers(
        pa.large_string(),
        n,
        [pa.py_buffer(np.packbits(has, bitorder="little")), pa.py_buffer(offsets), values.buffers()[2]],
    )
    return text, spans[0], spans[1]


def _texts(res: dict) -> dict[str, pa.Array]:
    """The extension's text columns as Arrow strings, zero-copy but for the UTF-8 check and the
    names' 32-bit offsets (either raises ``pa.ArrowInvalid``): the row columns by name, each
    args key's listed values by its number. All that can fail happens here, before the JSON
    text is let go."""
    n = res["rows"]

    def text(parts: tuple[bytes, bytes, bytes]) -> pa.Array:
        valid, offsets, data = parts
        raw = pa.Array.from_buffers(
            pa.large_binary(), n, [pa.py_buffer(valid), pa.py_buffer(offsets), pa.py_buffer(data)]
        )
        return raw.cast(pa.large_string())  # checks UTF-8

    out: dict[str, pa.Array] = {name: text(res[name]) for name in ("ts", "dur", "body")}
    for name in ("name", "cat"):  # as the table holds them, while the text can still be read instead
        out[name] = text(res[name]).cast(pa.string())
    for k, (rows, _, _, offsets, data) in enumerate(res["keys"]):
        values = pa.Array.from_buffers(
            pa.large_binary(), len(rows) // 8, [None, pa.py_buffer(offsets), pa.py_buffer(data)]
        )
        out[f"v{k}"] = values.cast(pa.large_string())
    return out


def _table(res: dict, texts: dict[str, pa.Array]) -> pa.Table:
    """The extension's row columns (all but the args keys') as an Arrow table, plus ``ord``,
    zero-copy; ``texts`` are the checked text columns."""
    n = res["rows"]

    def plain(typ: pa.DataType, data: bytes) -> pa.Array:
        return pa.Array.from_buffers(typ, n, [None, pa.py_buffer(data)])

    return pa.table(
        {
            "ts": texts["ts"],
            "dur": texts["dur"],
            "kind": pc.take(pa.array(KIND_NAMES, pa.string()), plain(pa.uint8(), res["kind"])),
            "name": texts["name"],
            "cat": texts["cat"],
            "pid": plain(pa.int64(), res["pid"]),
            "tid": plain(pa.int64(), res["tid"]),
            "body": texts["body"],
            "ord": plain(pa.int64(), res["ord"]),
        }
    )
