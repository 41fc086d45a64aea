"""Converting one decoded Kineto trace into the columns of the profui ``events`` table.

Every conversion rule is defined here, once, and applied to columns. Events become rows of an
intermediate table: their fields (``ts``/``dur`` as JSON text), their args as ``body`` (``{``,
then every entry compact and followed by a comma) and, for each args key of
mapping.RULE_KEYS, the raw JSON text of its value and its entry's byte span in ``body``. The
optional native tokenizer (:mod:`.native`) builds those columns for the common events;
:func:`_build_columns` builds them (from msgspec) for every other event, or for all of them.
Then :func:`_args_rules` (external id, correlation, device/stream args, DMA direction/size,
bytes, a copy's kind arg, runtime sizes, named pid/tid, the source category, compact args) and
:func:`_finish_rows` (times, instants' durations, device/stream from pid/tid, a copy's kind from
its name, steps) apply the rules to the rows of both paths at once, in parts of rows on threads
where the rows are many (:mod:`.parts`). Tests hold the two paths to identical output.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import cache, partial
from operator import attrgetter
from typing import Any, cast

import msgspec
import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from profui.capture.conversion.errors import BadValue, KinetoFormatError, checked_int64, undecodable
from profui.capture.conversion.heap import give_back
from profui.capture.format import to_table

from .mapping import (
    BYTES,
    CANONICAL_CAT,
    CAT,
    CORRELATION,
    CORRELATION_FLOWS,
    DEVICE,
    DEVICE_SIDE,
    DIRECTION,
    DMA_CATEGORY,
    EXTERNAL_ID,
    EXTERNAL_ID_ALT,
    KIND,
    KIND_BY_CAT,
    MEMCPY_NAME_PATTERN,
    PID,
    RULE_KEYS,
    SIZE,
    STEP_MARK,
    STEP_PREFIX,
    STREAM,
    TID,
    as_int,
    memcpy_kind_from_direction,
    unknown_cat_kind,
)
from .native import Ahead, NativeScan, absent_columns, from_numpy, scan_events, spread
from .parts import PartsFailed, ScanRows, run_parts, split_rows
from .reader import BatchEvent, Event, KinetoDoc, batch_decoder, event_decoder
from .timeparse import us_list_to_ns, us_to_ns

_INT32 = (-(2**31), 2**31 - 1)
#: Below this many ns since the epoch (~1973) timestamps are relative to baseTimeNanoseconds.
_RELATIVE_LIMIT_NS = 10**17
_PROGRESS_EVERY = 20_000

_encode = msgspec.json.encode
_decode_args = msgspec.json.Decoder(dict[str, Any]).decode


@dataclass
class Converted:
    """The events table of one source file plus what was learnt about the source on the way."""

    table: pa.Table
    counts: dict[str, int]
    devices: list[int]
    first_ts_ns: int | None
    last_end_ns: int | None
    source: dict[str, Any] = field(default_factory=dict)


class _Ids:
    """Stable negative ids for non-numeric pid/tid strings (``"Spans"``, ``"PyTorch Profiler"``)."""

    def __init__(self) -> None:
        self.by_name: dict[str, int] = {}

    def get(self, value: int | str) -> tuple[int, str | None]:
        if isinstance(value, int):
            return value, None
        number = as_int(value)
        if number is not None:
            return number, None
        ident = self.by_name.get(value)
        if ident is None:
            ident = self.by_name[value] = -(len(self.by_name) + 1)
        return ident, value


def _device_int(value: int | None) -> int | None:
    if value is None or not (_INT32[0] <= value <= _INT32[1]):
        return None
    return value


#: Events are decoded, turned into row values and then into compact Arrow columns this many
#: at a time: small enough that a slice's Python objects are still in the CPU cache when they
#: are used (1024 rather than 16384 events: the whole conversion ~20% faster).
_CHUNK_ROWS = 1_024

#: The intermediate row columns (both paths), and their Arrow types. ``ts``/``dur`` stay JSON text
#: until every row is in: :func:`_finish_rows` converts them (``timeparse.us_to_ns``). ``body``:
#: ``{`` and the args entries, each followed by a comma; ``v{k}``/``s{k}``/``e{k}``: the raw value text and the entry's byte span in
#: ``body`` of ``RULE_KEYS[k]`` (null / -1 when absent). ``pid_name``/``tid_name``: a named id.
_ROW_FIELDS: tuple[tuple[str, pa.DataType], ...] = (
    ("ts", pa.large_string()),
    ("dur", pa.large_string()),
    ("kind", pa.string()),
    ("name", pa.string()),
    ("cat", pa.string()),
    ("pid", pa.int64()),
    ("tid", pa.int64()),
    ("pid_name", pa.string()),
    ("tid_name", pa.string()),
    ("body", pa.large_string()),
    *(
        field
        for k in range(len(RULE_KEYS))
        for field in ((f"v{k}", pa.large_string()), (f"s{k}", pa.int32()), (f"e{k}", pa.int32()))
    ),
)
_CHUNK_SCHEMA = pa.schema([pa.field(n, t) for n, t in _ROW_FIELDS])
_KEY_INDEX = {key: k for k, key in enumerate(RULE_KEYS)}

#: The kind of a row of an unknown category until _finish_rows: an annotation that the step
#: rule (for user annotations) does not apply to.
_UNKNOWN_ANNOTATION = "annotation (unknown category)"
_CANONICAL_CAT = {**CANONICAL_CAT, _UNKNOWN_ANNOTATION: CANONICAL_CAT["annotation"]}
_CANONICAL_CATS = list(_CANONICAL_CAT.values())

# Values given to Arrow's compute functions are typed: a bare Python value is inferred, and
# pyarrow's inference tries to import dateutil every time it is absent (~30 µs a call).
_DEVICE_SIDE = pa.array(sorted(DEVICE_SIDE), pa.string())
_COPY_KINDS = pa.array(["memcpy", "memset"], pa.string())
_INT32_LOW, _INT32_HIGH = (pa.scalar(v, pa.int64()) for v in _INT32)


def _str(value: str) -> pa.Scalar:
    """``value`` as an Arrow string scalar (typed, see above)."""
    return pa.scalar(value, pa.string())


def _texts(values: list[msgspec.Raw]) -> pa.Array:
    """JSON texts (``Raw``) as an Arrow string array; split inside Arrow from one joined text,
    which avoids one Python bytes object per value."""
    joined = pa.array([b"\n".join(values)], pa.large_binary()).cast(pa.large_string())
    parts = pc.split_pattern(joined, "\n").flatten()
    if len(parts) != len(values):  # a value spelled over several lines: not a number anyway
        return pa.array(list(map(bytes, values)), pa.large_binary()).cast(pa.large_string())
    return parts


def _columns_to_chunk(columns: dict[str, Any]) -> pa.Table:
    """Python column lists (times still JSON text, ``Raw``) -> an Arrow table."""
    n = len(columns["kind"])
    absent = cache(absent_columns)
    for k, listed in enumerate(columns["keys"]):
        rows, values, starts, ends = zip(*listed, strict=True) if listed else ((), (), (), ())
        columns[f"v{k}"], columns[f"s{k}"], columns[f"e{k}"] = spread(
            n,
            np.array(rows, np.int64),
            np.array(starts, np.int32),
            np.array(ends, np.int32),
            pa.array(values, pa.large_binary()),
            absent,
        )
    arrays = []
    for name, typ in _ROW_FIELDS:
        values = columns[name]
        if not isinstance(values, list):
            arrays.append(values)
            continue
        if name in ("ts", "dur"):
            arrays.append(_texts(values))
        elif typ == pa.large_string():
            arrays.append(pa.array(values, pa.large_binary()).cast(typ))
        else:
            arrays.append(pa.array(values, typ))
    return pa.Table.from_arrays(arrays, schema=_CHUNK_SCHEMA)


class _Source:
    """What is learnt about the source besides the rows (metadata, spans, flows, ...)."""

    def __init__(self) -> None:
        self.processes: dict[str, dict[str, Any]] = {}
        self.threads: dict[str, dict[str, Any]] = {}
        self.seen_meta: set[bytes] = set()
        self.spans: list[dict[str, Any]] = []
        self.markers: list[dict[str, Any]] = []
        self.flows: Counter[str] = Counter()
        self.flow_links: list[list[Any]] = []
        self.skipped: Counter[str] = Counter()
        self.unknown_cats: Counter[str] = Counter()
        self.ids = _Ids()
        self.repeats = 0  # metadata events skipped as verbatim repeats


_get_ts = attrgetter("ts")
_get_dur = attrgetter("dur")
_get_name = attrgetter("name")
_get_cat = attrgetter("cat")
_get_pid = attrgetter("pid")
_get_tid = attrgetter("tid")
_get_args = attrgetter("args")
#: The first bytes of a JSON number: a flow whose ``ts`` starts otherwise (a string, null, ...)
#: has no time and is dropped, counted in ``skipped``.
_NUMBER_STARTS = frozenset(b"-0123456789")


def _select_rows(
    decoded: list[BatchEvent], part: list[msgspec.Raw], src: _Source
) -> tuple[list[BatchEvent], list[str], list[int]]:
    """The events of one slice that become rows, their kinds and their positions in ``part``;
    every other event is recorded in ``src``."""
    kept: list[int] = []
    keep: list[BatchEvent] = []
    kinds: list[str] = []
    keep_event = keep.append
    add_kind = kinds.append
    # an event without a category (cat None) finds no kind, as a dict answers for any key
    kind_by_cat = cast("dict[str | None, str]", KIND_BY_CAT)
    for j, ev in enumerate(decoded):
        ph = ev.ph
        if ph == "X":
            cat = ev.cat
            kind = kind_by_cat.get(cat)
            if kind is None:
                if cat == "Trace":
                    src.spans.append(_side_record(event_decoder.decode(part[j]), with_dur=True))
                    continue
                kind = unknown_cat_kind(cat)
                if kind == "annotation":  # not a step whatever its name: see _finish_rows
                    kind = _UNKNOWN_ANNOTATION
                src.unknown_cats[str(cat)] += 1
        elif ph == "M":
            # Metadata events repeat verbatim up to 100k times (MTIA): read each text once.
            text = bytes(part[j])
            if text in src.seen_meta:
                src.repeats += 1
                continue
            src.seen_meta.add(text)
            meta = event_decoder.decode(text)
            if meta.args:
                _metadata_event(meta, src.processes, src.threads)
            continue
        elif ph == "s" or ph == "f" or ph == "t":
            ts = bytes(ev.ts)
            if not ts or ts[0] not in _NUMBER_STARTS:  # the C scan leaves such flows here too
                src.skipped[f"{ph}:bad-ts" if ts else f"{ph}:no-ts"] += 1
                continue
            cat = ev.cat
            src.flows[f"{cat}:{ph}"] += 1
            if cat not in CORRELATION_FLOWS:
                # ac2g/async_gpu flows only restate args.correlation; other flows (fwdbwd) are
                # kept as [cat, id, ph, ts, pid, tid] links (ts: its text until the end).
                src.flow_links.append([cat, ev.id, ph, ts, ev.pid, ev.tid])
            continue
        elif ph == "i" or ph == "I":
            if ev.cat is None:
                src.markers.append(_side_record(event_decoder.decode(part[j]), with_dur=False))
                continue
            kind = "instant"
        else:
            src.skipped[ph or "?"] += 1
            continue
        if not ev.ts:
            src.skipped[f"{ph}:no-ts"] += 1
            continue
        keep_event(ev)
        add_kind(kind)
        kept.append(j)
    return keep, kinds, kept


def _build_columns(keep: list[BatchEvent], kinds: list[str], src: _Source) -> dict[str, Any]:
    """The intermediate columns (``_ROW_FIELDS``) of the selected events: what the native
    tokenizer makes of an event, built here from msgspec. No args rule is applied here
    (:func:`_args_rules` applies them to the rows of both paths)."""
    n = len(keep)
    pids = list(map(_get_pid, keep))
    tids = list(map(_get_tid, keep))
    cols: dict[str, list] = {
        "ts": list(map(_get_ts, keep)),
        "dur": list(map(_get_dur, keep)),
        "kind": kinds,
        "name": list(map(_get_name, keep)),
        "cat": list(map(_get_cat, keep)),
        "pid": pids,
        "tid": tids,
        "pid_name": [None] * n,
        "tid_name": [None] * n,
    }
    if {int} != set(map(type, pids)) | set(map(type, tids)):
        ids = src.ids
        for col, names in ((pids, cols["pid_name"]), (tids, cols["tid_name"])):
            for i, value in enumerate(col):
                if type(value) is not int:
                    col[i], names[i] = ids.get(value)
    bodies: list[bytes] = []
    add_body = bodies.append
    # per key, (row, value text, start, end) of the rows that have it (as the extension lists them)
    listed: list[list[tuple[int, bytes, int, int]]] = [[] for _ in RULE_KEYS]
    key_index = _KEY_INDEX
    keyset = key_index.keys()
    heads = {key: _encode(key) + b":" for key in RULE_KEYS}
    encode = _encode
    decode_args = _decode_args
    for i, raw_args in enumerate(map(_get_args, keep)):
        try:
            args = decode_args(raw_args)
        except msgspec.ValidationError:
            args = {"args": msgspec.json.decode(raw_args)}
        if not args:
            add_body(b"{")
            continue
        text = encode(args)
        present = keyset & args.keys()
        if not present:
            add_body(text[:-1] + b",")
            continue
        # Where each key's entry is: found in the text when it occurs there once (else the entries
        # are encoded one by one, below). A value's text is as msgspec writes it, in either case.
        found = []
        for key in present:
            head = heads[key]
            at = text.find(head)
            if text.find(head, at + 1) >= 0:
                break
            found.append((key_index[key], at, head, encode(args[key])))
        else:
            for k, at, head, value_text in found:
                listed[k].append((i, value_text, at, at + len(head) + len(value_text) + 1))
            add_body(text[:-1] + b",")
            continue
        pieces: list[bytes] = [b"{"]
        at = 1
        rest: dict[str, Any] = {}
        for key, value in args.items():
            slot = key_index.get(key)
            if slot is None:
                rest[key] = value
                continue
            if rest:
                piece = encode(rest)[1:-1] + b","
                pieces.append(piece)
                at += len(piece)
                rest = {}
            text = encode(value)
            piece = encode(key) + b":" + text + b","
            pieces.append(piece)
            listed[slot].append((i, text, at, at + len(piece)))
            at += len(piece)
        if rest:
            pieces.append(encode(rest)[1:-1] + b",")
        add_body(b"".join(pieces))
    cols["body"] = bodies
    cols["keys"] = listed
    return cols


def _ints(raw: pa.Array) -> pa.Array:
    """``mapping.as_int`` of each raw JSON value text (null where absent or not an integer):
    plain JSON integers in Arrow, any other value (``"0x1f"``, ``true``, ``1.5``) decoded and
    passed to ``as_int`` itself."""
    try:  # the common case: every value a plain JSON integer
        return pc.cast(raw, pa.int64())
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError):
        pass
    plain = pc.fill_null(pc.match_substring_regex(raw, r"^-?[0-9]{1,18}$"), False)
    out = pc.cast(pc.if_else(plain, raw, pa.scalar(None, raw.type)), pa.int64())
    other = pc.and_(pc.invert(plain), pc.is_valid(raw))
    if pc.any(other).as_py():
        texts = pc.filter(raw, other).to_pylist()
        values = [as_int(_decode_json(t)) for t in texts]
        for v in values:
            if v is not None:
                checked_int64(v, "an id or size")
        out = pc.replace_with_mask(out, other, pa.array(values, pa.int64()))
    return out


def _int32(values: pa.Array) -> pa.Array:
    """Values that fit int32 (device and stream ids); null otherwise."""
    fits = pc.and_(pc.greater_equal(values, _INT32_LOW), pc.less_equal(values, _INT32_HIGH))
    return pc.cast(pc.if_else(fits, values, pa.scalar(None, pa.int64())), pa.int32())


def _per_value(raw: pa.Array, rule: Callable[[Any], Any], typ: pa.DataType) -> pa.Array:
    """``rule`` of each decoded raw JSON value (None where absent), applied once per distinct
    text: for columns of few distinct values (copy kinds, DMA directions)."""
    if not pc.any(pc.is_valid(raw)).as_py():
        return pa.nulls(len(raw), typ)
    codes = pc.dictionary_encode(raw)
    table = [rule(_decode_json(t)) for t in codes.dictionary.to_pylist()]
    return pc.take(pa.array(table, typ), codes.indices)


def _json_texts(values: pa.Array) -> pa.Array:
    """Each value (strings or null) as JSON text, once per distinct value."""
    codes = pc.dictionary_encode(values, null_encoding="encode")
    table = [_encode(v).decode() for v in codes.dictionary.to_pylist()]
    return pc.take(pa.array(table, pa.large_string()), codes.indices)


def _decode_json(text: str | None) -> Any:
    return None if text is None else msgspec.json.decode(text)


def _memcpy_kind_arg(value: Any) -> str | None:
    """A copy's ``kind`` arg, where it is a name (``HtoD``), not a number."""
    if isinstance(value, str) and value and not value.isdigit():
        return value
    return None


#: Rows from which freed memory is given back between the conversion's steps: below, the peak
#: is small and the pages given back would only be faulted in again (a few % of the time).
_GIVE_BACK_ROWS = 1 << 20


def _give_back(rows: int) -> None:
    """:func:`give_back` for a conversion of ``rows`` rows worth it."""
    if rows >= _GIVE_BACK_ROWS:
        give_back()


#: Bytes of args text cut at a time: the cut works on a byte mask, so it is bounded per block.
_CUT_BLOCK_BYTES = 16 << 20


class _CutSpans:
    """The byte spans ``[start, end)`` to cut from ``body``'s rows (relative to each row; those
    of one row do not overlap), gathered key by key as positions in ``body``'s data: compact, so
    that each key's dense span columns can go as soon as they are read."""

    def __init__(self, body: pa.Array) -> None:
        n = len(body)
        self._offsets = np.frombuffer(body.buffers()[1], np.int64)[body.offset : body.offset + n + 1]
        self._starts: list[np.ndarray] = [np.zeros(0, np.int64)]
        self._ends: list[np.ndarray] = [np.zeros(0, np.int64)]
        self.removed = np.zeros(n, np.int64)

    def add(self, start: pa.Array, end: pa.Array, mask: pa.Array) -> None:
        """Cut the span ``[start, end)`` of each row where ``mask`` is true (not null)."""
        keep = pc.fill_null(mask, False).to_numpy(zero_copy_only=False)
        count = int(np.count_nonzero(keep))
        if not count:
            return
        # A common key (an id, most rows have it) is gathered by its mask, a rare one by its
        # rows' numbers: the fewer new arrays, the better (new pages are most of the time here).
        picked = keep if count > len(keep) // 4 else np.flatnonzero(keep)
        at = self._offsets[:-1][picked]
        s, e = start.to_numpy()[picked], end.to_numpy()[picked]
        self._starts.append(at + s)
        at += e
        self._ends.append(at)
        self.removed[picked] += e - s

    def starting_in(self, a: int, z: int) -> tuple[np.ndarray, np.ndarray]:
        """The starts and ends of the spans that start in ``[a, z)`` of ``body``'s data (each
        key's spans lie in row order, so each is found by bisection)."""
        cut_at, kept_at = [], []
        for starts, ends in zip(self._starts, self._ends, strict=True):
            i, j = np.searchsorted(starts, [a, z])
            cut_at.append(starts[i:j])
            kept_at.append(ends[i:j])
        return np.concatenate(cut_at), np.concatenate(kept_at)

    def __bool__(self) -> bool:
        return any(len(s) for s in self._starts)


def _cut(body: pa.Array, spans: _CutSpans, suffix: pa.Array | None = None, own: bool = False) -> pa.Array:
    """``body`` (large_string, no nulls) with the byte ``spans`` gathered for it removed, and
    each row followed by its ``suffix`` text (large_string, no nulls) when one is given.
    ``own``: the body's text buffer is this function's to change (no other array reads it):
    without a suffix, the text is then cut in place (the kept bytes only move back), not
    copied, so that the old text and the new are not held at once."""
    if not spans and suffix is None:
        return body
    removed = spans.removed
    n = len(body)
    offsets = np.frombuffer(body.buffers()[1], np.int64)[body.offset : body.offset + n + 1]
    lo, hi = int(offsets[0]), int(offsets[-1])
    data = np.frombuffer(body.buffers()[2], np.uint8) if hi > lo else np.zeros(0, np.uint8)
    kept_offsets = (offsets - lo) - np.concatenate(([0], np.cumsum(removed)))
    if suffix is None:
        new_offsets = kept_offsets
    else:
        if suffix.null_count:
            raise ValueError("a suffix row is null (write an empty text)")
        added = np.frombuffer(suffix.buffers()[1], np.int64)[suffix.offset : suffix.offset + n + 1]
        new_offsets = kept_offsets + (added - added[0])
        del added
    in_place = own and suffix is None and hi > lo and body.buffers()[2].is_mutable
    out = data[lo:] if in_place else np.empty(int(new_offsets[-1]), np.uint8)
    # Blocks begin at row starts, so no cut spans two of them.
    row_at = np.searchsorted(offsets, np.arange(lo, hi, _CUT_BLOCK_BYTES))  # ascending
    if len(row_at):  # its distinct values (np.unique would load numpy.ma: 15-20 ms, once)
        row_at = np.append(row_at[np.concatenate(([True], row_at[1:] != row_at[:-1]))], n)
    else:
        row_at = np.array([0, n])
    edges = offsets[row_at]
    empty = pa.scalar("", pa.large_string())
    for b in range(len(edges) - 1):
        a, z = int(edges[b]), int(edges[b + 1])
        r0, r1 = int(row_at[b]), int(row_at[b + 1])
        if r1 == r0:
            continue
        c_at, k_at = spans.starting_in(a, z)
        block = data[a:z]
        if len(c_at):
            # the bytes between cut boundaries are kept or not as a whole (at a position where one
            # span ends and the next begins, the order does not matter: the segment between them
            # is empty); the kept segments, as values of a binary array over the data, are
            # gathered by Arrow's filter, a copy per segment rather than a test per byte
            bounds = np.concatenate(([a], c_at, k_at, [z]))
            order = np.argsort(bounds, kind="stable")
            step = np.concatenate(([0], np.ones(len(c_at), np.int8), -np.ones(len(k_at), np.int8), [0]))
            inside = np.cumsum(step[order])[:-1] > 0  # segment j: between bounds[order][j] and the next
            segments = pa.Array.from_buffers(
                pa.large_binary(), len(inside), [None, pa.py_buffer(bounds[order]), body.buffers()[2]]
            )
            kept = pc.filter(segments, from_numpy(~inside))
            ends = np.frombuffer(kept.buffers()[1], np.int64)[kept.offset : kept.offset + len(kept) + 1]
            lo_k, hi_k = int(ends[0]), int(ends[-1])
            block = np.frombuffer(kept.buffers()[2], np.uint8)[lo_k:hi_k] if hi_k > lo_k else block[:0]
        if suffix is not None:
            rows = pa.Array.from_buffers(
                pa.large_string(),
                r1 - r0,
                [None, pa.py_buffer(kept_offsets[r0 : r1 + 1] - kept_offsets[r0]), pa.py_buffer(block)],
            )
            joined = pc.binary_join_element_wise(rows, suffix.slice(r0, r1 - r0), empty).buffers()[2]
            size = int(new_offsets[r1] - new_offsets[r0])
            block = np.frombuffer(joined, np.uint8)[:size] if size else block[:0]
        at = int(new_offsets[r0])
        if not (in_place and lo + at == a and not len(c_at)):  # else: already where it goes
            out[at : at + len(block)] = block  # in place: lo + at <= a, and the block is read first
    if in_place:  # the offsets are into the body's buffer, from where its rows began
        return pa.Array.from_buffers(
            pa.large_string(), n, [None, pa.py_buffer(new_offsets + lo), body.buffers()[2]]
        )
    return pa.Array.from_buffers(pa.large_string(), n, [None, pa.py_buffer(new_offsets), pa.py_buffer(out)])


def _close(texts: pa.Array, own: bool) -> pa.Array:
    """Args texts ``{`` + entries each followed by a comma -> JSON objects (the last comma
    becomes ``}``); null where there is no entry. ``own``: the texts' buffer is this function's
    to change (made for it: no other array reads it), else it is copied."""
    n = len(texts)
    offsets = np.frombuffer(texts.buffers()[1], np.int64)[texts.offset : texts.offset + n + 1]
    lo = int(offsets[0])
    buf = texts.buffers()[2]
    if buf is None:
        data = np.zeros(0, np.uint8)
    elif own and buf.is_mutable:
        data = np.frombuffer(buf, np.uint8)[lo : int(offsets[-1])]
    else:
        data = np.frombuffer(buf, np.uint8)[lo : int(offsets[-1])].copy()
    offsets = offsets - lo
    valid = np.diff(offsets) > 1
    data[offsets[1:][valid] - 1] = ord("}")
    bitmap = np.packbits(valid, bitorder="little")
    return pa.Array.from_buffers(
        pa.large_string(),
        n,
        [pa.py_buffer(bitmap), pa.py_buffer(np.ascontiguousarray(offsets)), pa.py_buffer(data)],
    )


def _other_cat(kind: pa.Array, cat: pa.Array) -> pa.Array:
    """Whether each row's category is not its kind's canonical one (true where either is null
    or unknown), compared as positions in the canonical list, not as a column of its names."""
    cats = _CANONICAL_CATS
    first = pa.array([cats.index(c) for c in cats], pa.int32())  # index_in finds a name's first place
    canon = pc.take(first, pc.index_in(kind, pa.array(list(_CANONICAL_CAT), pa.string())))
    return pc.fill_null(pc.not_equal(pc.index_in(cat, pa.array(cats, pa.string())), canon), True)


def _array(column: pa.ChunkedArray) -> pa.Array:
    """One array of a column (combine_chunks copies even a single chunk)."""
    return column.chunk(0) if column.num_chunks == 1 else column.combine_chunks()


def _scan_rows(scan: NativeScan) -> ScanRows:
    """The intermediate columns of a native scan's rows (:class:`.parts.ScanRows`: its args
    keys' dense columns made as they are read)."""
    rows, scan.rows = scan.rows, None  # the table goes: its columns go as they are popped
    assert rows is not None, "a scan's rows are made into columns once"
    n = scan.num_rows
    columns = {name: _array(rows.column(name)) for name in rows.column_names if name != "ord"}
    del rows
    keys = {f"{c}{k}" for k in scan.keys for c in "vse"}
    for f in _CHUNK_SCHEMA:
        if f.name not in columns and f.name not in keys:
            columns[f.name] = pa.nulls(n, f.type)
    listed, scan.keys = scan.keys, {}
    return ScanRows(columns.items(), listed, n)


def _args_rules(col: dict[str, pa.Array], whole: int | None = None) -> tuple[pa.Table, dict[int, int]]:
    """The per-event args rules, once, over the intermediate rows of both paths (``col``, by
    column name; ``body`` is taken out of it, to free it as soon as it is cut); returns the
    rows (``kind`` to ``args`` as the events table has them) and the copy sizes of runtime calls
    by correlation (AMD: :func:`_fill_memcpy_bytes`). ``whole``: the rows of the whole
    conversion, where ``col`` is a part of them (what freed memory is given back for).

    - ``External id`` (else ``external id``) becomes ``external_id``; one that is not an integer
      is kept as args ``External id`` (last);
    - an integer ``correlation`` becomes ``correlation``;
    - on device-side kinds, ``device``/``stream`` args that fit int32 become columns (else
      :func:`_finish_rows` takes them from pid/tid);
    - an MTIA DMA transfer (``mtia_ccp_events`` with a ``direction``) is a copy: its kind from the
      direction, its bytes from ``size``;
    - a copy's or memset's integer ``bytes`` becomes ``bytes``; a copy's ``kind`` arg that is a
      name becomes ``memcpy_kind`` (else the name gives it, in :func:`_finish_rows`);
    - a runtime call's ``size`` (with a correlation) is recorded for its copy;
    - a named pid/tid is kept as args ``pid``/``tid``, a category that is not the kind's canonical
      one as args ``cat``;
    - args are written compact; none left is null.
    """

    def raw(key: str) -> pa.Array:
        return col[f"v{_KEY_INDEX[key]}"]

    def taken(key: str) -> pa.Array:  # read once: its column goes as soon as it is read
        return col.pop(f"v{_KEY_INDEX[key]}")

    spans = _CutSpans(col["body"])

    def cut(key: str, mask: pa.Array) -> None:  # the key's entry goes where mask holds
        k = _KEY_INDEX[key]
        spans.add(col.pop(f"s{k}"), col.pop(f"e{k}"), mask)

    def null_text(values: pa.Array) -> pa.Array:
        return pc.fill_null(pc.equal(values, pa.scalar("null", values.type)), True)

    kind, cat = col["kind"], col["cat"]
    none_i64 = pa.scalar(None, pa.int64())
    empty = pa.scalar("", pa.large_string())

    def text(value: str) -> pa.Scalar:
        return pa.scalar(value, pa.large_string())

    main, alt = taken(EXTERNAL_ID), taken(EXTERNAL_ID_ALT)
    main_none = null_text(main)
    ext_raw = main if alt.null_count == len(alt) else pc.if_else(main_none, alt, main)
    if pc.any(pc.equal(ext_raw, pa.scalar("null", ext_raw.type))).as_py():
        ext_raw = pc.if_else(null_text(ext_raw), pa.scalar(None, ext_raw.type), ext_raw)
    external_id = _ints(ext_raw)
    ext_back = pc.and_(pc.is_valid(ext_raw), pc.is_null(external_id))
    ext_piece = None
    if pc.any(ext_back).as_py():
        ext_piece = pc.binary_join_element_wise(
            text(_encode(EXTERNAL_ID).decode() + ":"), ext_raw, text(","), empty
        )
        ext_piece = pc.if_else(ext_back, ext_piece, empty)
    cut(EXTERNAL_ID, pc.is_valid(main))
    cut(EXTERNAL_ID_ALT, pc.and_(main_none, pc.is_valid(alt)))
    del main, alt, main_none, ext_raw, ext_back

    correlation = _ints(taken(CORRELATION))
    cut(CORRELATION, pc.is_valid(correlation))

    device_side = pc.is_in(kind, _DEVICE_SIDE)
    device = pc.if_else(device_side, _int32(_ints(taken(DEVICE))), pa.scalar(None, pa.int32()))
    stream = pc.if_else(device_side, _int32(_ints(taken(STREAM))), pa.scalar(None, pa.int32()))
    cut(DEVICE, pc.is_valid(device))
    cut(STREAM, pc.is_valid(stream))

    direction = taken(DIRECTION)
    dma = pc.and_(
        pc.and_(pc.equal(kind, _str("kernel")), pc.fill_null(pc.equal(cat, _str(DMA_CATEGORY)), False)),
        pc.is_valid(direction),
    )
    size_text = taken(SIZE)
    size_given = pc.is_valid(size_text)
    size = _ints(size_text)
    del size_text
    copy = pc.is_in(kind, _COPY_KINDS)
    bytes_arg = _ints(taken(BYTES))
    copy_bytes = pc.and_(copy, pc.is_valid(bytes_arg))
    nbytes = pc.if_else(dma, size, pc.if_else(copy_bytes, bytes_arg, none_i64))
    kind_arg = _per_value(taken(KIND), _memcpy_kind_arg, pa.string())
    copy_kind = pc.and_(pc.equal(kind, _str("memcpy")), pc.is_valid(kind_arg))
    from_direction = _per_value(direction, memcpy_kind_from_direction, pa.string())
    del direction
    memcpy_kind = pc.if_else(
        dma, from_direction, pc.if_else(copy_kind, kind_arg, pa.scalar(None, pa.string()))
    )
    cut(DIRECTION, dma)
    cut(SIZE, pc.and_(dma, size_given))
    cut(BYTES, copy_bytes)
    cut(KIND, copy_kind)
    del size_given
    _give_back(whole or len(kind))  # the keys' texts and spans (C heap), for the Arrow columns still to come

    runtime = pc.and_(pc.and_(pc.equal(kind, _str("runtime")), pc.is_valid(correlation)), pc.is_valid(size))
    runtime_size: dict[int, int] = {}
    if pc.any(runtime).as_py():
        runtime_size = dict(
            zip(
                pc.filter(correlation, runtime).to_pylist(), pc.filter(size, runtime).to_pylist(), strict=True
            )
        )

    if pc.any(dma).as_py():
        kind = pc.if_else(dma, _str("memcpy"), kind)
    other_cat = _other_cat(kind, cat)
    del size, bytes_arg, kind_arg, from_direction, device_side, copy, copy_bytes, copy_kind, runtime

    # The args text: the body less the cut entries, then what is added (in this order), closed.
    pieces = [] if ext_piece is None else [ext_piece]
    del ext_piece
    # A key the args already have is set in place (below, rarely); the others are added.
    in_place = None
    for key, value, when in (
        (PID, col["pid_name"], pc.is_valid(col["pid_name"])),
        (TID, col["tid_name"], pc.is_valid(col["tid_name"])),
        (CAT, cat, other_cat),
    ):
        if not pc.any(when).as_py():
            continue
        has = pc.is_valid(raw(key))
        here = pc.and_(when, has)
        in_place = here if in_place is None else pc.or_(in_place, here)
        piece = pc.binary_join_element_wise(
            text(_encode(key).decode() + ":"), _json_texts(value), text(","), empty
        )
        pieces.append(pc.if_else(pc.and_(when, pc.invert(has)), piece, empty))
    suffix = None
    if len(pieces) == 1:
        suffix = pieces[0]
    elif pieces:
        suffix = pc.binary_join_element_wise(*pieces, empty)
    del pieces
    for key in (PID, TID, CAT):  # every args key's columns are read: gone before the new text
        k = _KEY_INDEX[key]
        for column in (f"v{k}", f"s{k}", f"e{k}"):
            col.pop(column)
    _give_back(whole or len(kind))  # what the rules above let go of, before the largest column is made again
    cut_from = col.pop("body")
    body = _cut(cut_from, spans, suffix, own=True)
    fresh = body is not cut_from  # a new buffer or the body's cut in place: _close may change it
    del cut_from, suffix
    spans = None  # type: ignore[assignment]  # noqa: F841 (the gathered spans go; the closure above holds the name)
    args = _close(body, own=fresh)
    del body
    if in_place is not None and pc.any(in_place).as_py():
        fixed = []
        for i in np.flatnonzero(in_place.to_numpy(zero_copy_only=False)).tolist():
            value = args[i].as_py()
            d = _decode_args(value) if value is not None else {}
            if col["pid_name"][i].is_valid:
                d[PID] = col["pid_name"][i].as_py()
            if col["tid_name"][i].is_valid:
                d[TID] = col["tid_name"][i].as_py()
            if other_cat[i].as_py():
                d[CAT] = cat[i].as_py()
            fixed.append(_encode(d).decode())
        args = pc.replace_with_mask(args, in_place, pa.array(fixed, pa.large_string()))
    out = {
        "ts": col["ts"],
        "dur": col["dur"],
        "kind": kind,
        "name": col["name"],
        "pid": col["pid"],
        "tid": col["tid"],
        "device": device,
        "stream": stream,
        "correlation": correlation,
        "external_id": external_id,
        "bytes": nbytes,
        "memcpy_kind": memcpy_kind,
        "args": args.cast(pa.string()),
    }
    return pa.table(out), runtime_size


def convert_events(
    doc: KinetoDoc,
    progress: Callable[[int, int], None] | None = None,
    *,
    native: bool = True,
    threads: int = 1,
    ahead: Ahead | None = None,
) -> Converted:
    """Turn ``doc``'s events into an ``events`` Arrow table (unsorted; the writer sorts).

    The native scan (:mod:`.native`, when built) converts the common events; the rest, or all
    of them with ``native=False`` or without the extension, go through the Python path below,
    which defines every rule. Rows keep the order of their events either way. ``threads``: how
    many threads the native scan may use; ``ahead``: its scan started before ``doc`` was decoded
    (:func:`.native.scan_ahead`). A value no trace can hold raises
    :class:`KinetoFormatError` naming the file (:class:`FailedInParts` where there are several,
    in rows whose rules ran in several parts).
    """
    try:
        return _convert_events(doc, progress, native, scan_threads=threads, ahead=ahead)
    except BadValue as exc:
        raise KinetoFormatError(doc.path, str(exc)) from None
    except PartsFailed as exc:
        raise FailedInParts(doc.path, str(exc)) from None


class FailedInParts(KinetoFormatError):
    """Rows with bad values in several of the parts the rules ran in (:mod:`.parts`): the
    message is the first part's error, which may not be the first a one-part run names; convert
    the document again with ``threads=1`` for that one."""


def _convert_events(
    doc: KinetoDoc,
    progress: Callable[[int, int], None] | None,
    native: bool,
    scan_threads: int,
    ahead: Ahead | None,
) -> Converted:
    src = _Source()
    chunks: list[pa.Table] = []
    scan = None
    if native and doc.events_text is not None:
        scan = scan_events(
            doc.events_text,
            _CHUNK_SCHEMA,
            release=doc.release,
            mapped=doc.mapped,
            threads=scan_threads,
            ahead=ahead,
        )
    if scan is not None:
        src.flows.update(scan.flows)
        events: list = [text for _, text in scan.specials]
        indices: list[int] | range = [i for i, _ in scan.specials]
        scan.specials.clear()
        total = scan.events
        if progress is not None:
            progress(total - len(events), total)
    else:
        events = doc.event_list()
        indices = range(len(events))
        total = len(events)
    python_rows = 0
    for begin, end in _parts(indices):
        if progress is not None and begin and begin % _PROGRESS_EVERY < _CHUNK_ROWS:
            progress(total - len(events) + begin, total)
        part = events[begin:end]
        part_idx = indices[begin:end]
        if src.repeats > len(part) // 4:
            # A trace that repeats its metadata events (MTIA: 300k of them) is likely to go on
            # doing so: drop the known repeats before decoding instead of after.
            seen = src.seen_meta
            src.repeats = 0
            fresh = [k for k, raw in enumerate(part) if bytes(raw) not in seen]
            part = [part[k] for k in fresh]
            part_idx = [part_idx[k] for k in fresh]
        else:
            src.repeats = 0
        decoded = _decode_part(part, part_idx, doc)
        try:
            keep, kinds, kept = _select_rows(decoded, part, src)
        except msgspec.DecodeError as exc:  # args not UTF-8, or a number beyond a double
            raise _bad_args(doc, part, part_idx, exc) from None
        except ValueError as exc:  # a span's or marker's time that is not a number
            raise KinetoFormatError(doc.path, f"bad event time ({exc})") from None
        if keep:
            try:
                columns = _build_columns(keep, kinds, src)
            except msgspec.DecodeError as exc:
                raise _bad_args(doc, part, part_idx, exc) from None
            chunk = _chunk(columns, doc)
            if scan is not None:
                chunk = chunk.append_column("ord", pa.array([part_idx[j] for j in kept], pa.int64()))
            chunks.append(chunk)
            python_rows += len(keep)
        del keep, part
    processes, threads, spans, markers = src.processes, src.threads, src.spans, src.markers
    flows, flow_links, skipped, unknown_cats = src.flows, src.flow_links, src.skipped, src.unknown_cats
    ids = src.ids

    # The JSON text is no longer needed: free it before the last columns are built and written.
    events.clear()
    doc.release()
    if scan is not None and not python_rows:
        rows: dict[str, pa.Array] = _scan_rows(scan)
    else:
        if scan is not None:
            chunks.insert(0, scan.table)
        if not chunks:
            chunks.append(_CHUNK_SCHEMA.empty_table())
        merged = pa.concat_tables(chunks).combine_chunks()
        chunks.clear()
        if scan is not None:
            if python_rows and scan.num_rows:  # rows from both paths: back into event order
                merged = merged.take(pc.sort_indices(merged["ord"]))
            merged = merged.drop_columns(["ord"])
        rows = {name: _array(merged.column(name)) for name in merged.column_names}
        del merged
    scan = None
    # Names are few and long: held as the events table holds them (to_table keeps the encoding).
    rows["name"] = pc.dictionary_encode(rows["name"])
    _give_back(len(rows["ts"]))  # what building the rows let go of (the scan's and the spread's scratch)
    columns, runtime_size = _rules(rows, scan_threads)
    del rows
    try:
        for link, ts_ns in zip(flow_links, us_list_to_ns([link[3] for link in flow_links]), strict=True):
            link[3] = ts_ns
    except ValueError as exc:
        raise KinetoFormatError(doc.path, f"bad event time ({exc})") from None
    if runtime_size:
        columns["bytes"] = _fill_memcpy_bytes(columns, runtime_size)
    base = 0
    ts = columns["ts"]
    if doc.base_time_ns is not None and len(ts) and pc.min(ts).as_py() < _RELATIVE_LIMIT_NS:
        # baseTimeNanoseconds applies to relative timestamps; a trace whose times are already
        # absolute epoch µs must not be shifted a second time.
        base = doc.base_time_ns
        columns["ts"] = pc.add(ts, pa.scalar(base, pa.int64()))
    for rec in (*spans, *markers):
        rec["ts_ns"] += base
    for link in flow_links:
        link[3] += base

    table = to_table("events", columns)
    del columns
    kinds = (
        table["kind"].combine_chunks().dictionary_decode() if table.num_rows else pa.array([], pa.string())
    )
    counts = {v["values"]: v["counts"] for v in pc.value_counts(kinds).to_pylist()}
    counts = dict(sorted(counts.items()))
    first = last = None
    if table.num_rows:
        first = pc.min(table["ts"]).as_py()
        last = pc.max(pc.add(table["ts"], table["dur"])).as_py()
    on_device = pc.and_(
        pc.is_in(kinds, _DEVICE_SIDE), pc.greater_equal(table["device"], pa.scalar(0, pa.int32()))
    )
    devices = sorted(pc.unique(pc.filter(table["device"], on_device)).to_pylist())
    source: dict[str, Any] = {
        "processes": processes,
        "threads": threads,
        "profiler_spans": spans,
        "markers": markers,
        "flows": dict(sorted(flows.items())),
    }
    if flow_links:
        source["flow_links"] = compact_flow_links(flow_links)
    if ids.by_name:
        source["named_ids"] = ids.by_name
    if skipped:
        source["skipped"] = dict(skipped)
    if unknown_cats:
        source["unknown_categories"] = dict(unknown_cats)
    if progress is not None:
        progress(total, total)
    return Converted(table, counts, devices, first, last, source)


def _parts(indices: list[int] | range) -> list[tuple[int, int]]:
    """Slices of the events left to this path (trace indices ``indices``, ascending) that hold
    the events of one block of ``_CHUNK_ROWS`` trace events each: the pure path's chunks, and
    the same blocks for the natively scanned trace's specials. Within a part, a malformed event
    is found (at decoding) before a bad value (at building the rows), so both paths name the
    same bad event of a trace that holds several."""
    blocks = np.asarray(indices, dtype=np.int64) // _CHUNK_ROWS
    cuts = np.flatnonzero(np.diff(blocks)) + 1
    bounds = [0, *cuts.tolist(), len(indices)]
    return [(a, b) for a, b in zip(bounds[:-1], bounds[1:], strict=True) if b > a]


def _bad_args(doc: KinetoDoc, part: list, part_idx: list[int] | range, exc: Exception) -> KinetoFormatError:
    """The error naming the first event of ``part`` whose args cannot be read, found by reading
    them one by one (as :func:`_decode_part` names a malformed event)."""
    for index, raw in zip(part_idx, part, strict=True):
        args = event_decoder.decode(raw).args
        try:
            if args:
                msgspec.json.decode(args)
        except msgspec.DecodeError as bad:
            return KinetoFormatError(doc.path, f"trace event {index} has malformed args ({undecodable(bad)})")
    return KinetoFormatError(doc.path, f"malformed args ({undecodable(exc)})")


def _decode_part(part: list, part_idx: list[int] | range, doc: KinetoDoc) -> list[BatchEvent]:
    """Decode ``part`` (events whose indices in the trace are ``part_idx``) in one call; on a
    malformed event, find and name the first one exactly as decoding them one by one does."""
    try:
        return batch_decoder.decode(b"[" + b",".join(part) + b"]")
    except (msgspec.ValidationError, msgspec.DecodeError):  # DecodeError: text that is not UTF-8
        pass
    out: list[BatchEvent] = []
    for index, raw in zip(part_idx, part, strict=True):
        try:
            event_decoder.decode(raw)
            out.append(_one_decoder.decode(raw))
        except (msgspec.ValidationError, msgspec.DecodeError) as exc:
            flow = _correlation_flow(raw)
            if flow is None:
                raise KinetoFormatError(doc.path, f"trace event {index} is malformed ({exc})") from None
            out.append(flow)
    return out


class _FlowProbe(msgspec.Struct):
    ph: Any = None
    cat: Any = None
    ts: msgspec.Raw = msgspec.Raw()  # a flow without one is dropped, counted, by both paths


_one_decoder = msgspec.json.Decoder(BatchEvent)
_probe_decoder = msgspec.json.Decoder(_FlowProbe)


def _correlation_flow(raw: bytes) -> BatchEvent | None:
    """A launch -> kernel flow event whose other fields are odd (a float pid): such flows are
    only counted (they restate ``args.correlation``), so its odd fields do not matter, as the
    C scan, which never reads them, agrees. None for any other event."""
    try:
        probe = _probe_decoder.decode(raw)
    except (msgspec.ValidationError, msgspec.DecodeError):
        return None
    if probe.ph in ("s", "f", "t") and probe.cat in CORRELATION_FLOWS:
        return BatchEvent(ph=probe.ph, cat=probe.cat, ts=probe.ts)
    return None


#: Rows a part of the rules holds at least: below, a part's fixed cost outweighs a thread.
_PART_ROWS = 1 << 19


def _rules(rows: dict[str, pa.Array], threads: int) -> tuple[dict[str, Any], dict[int, int]]:
    """:func:`_args_rules`, then :func:`_finish_rows`, of the intermediate ``rows`` (left
    empty): the events' columns and the runtime calls' copy sizes. With ``threads`` > 1 and
    rows enough, in parts of consecutive rows on threads (:mod:`.parts`): each column then has
    a chunk a part, and the sizes of a later part win, as a later row's do in one run."""
    parts = min(threads, len(rows["ts"]) // _PART_ROWS)
    if parts < 2:
        return _part_rules(rows)
    done = run_parts(partial(_part_rules, whole=len(rows["ts"])), split_rows(rows, parts))
    joined = pa.concat_tables([pa.table(c) for c, _ in done])  # the parts' chunks, not copied
    columns = {name: joined.column(name) for name in joined.column_names}
    runtime_size: dict[int, int] = {}
    for _, sizes in done:
        runtime_size.update(sizes)
    return columns, runtime_size


def _part_rules(rows: dict[str, pa.Array], whole: int | None = None) -> tuple[dict[str, Any], dict[int, int]]:
    merged, runtime_size = _args_rules(rows, whole)
    rows.clear()
    return _finish_rows(merged), runtime_size


def _finish_rows(merged: pa.Table) -> dict[str, Any]:
    """The rules over whole columns, for the rows of both paths at once: times in ns (an
    instant lasts 0, whatever its ``dur`` says, and so does an event without one); a device
    row without a device/stream arg has its pid/tid as device/stream where they fit (a
    device >= 0), -1 otherwise, and a host row -1; a copy without a ``kind`` arg takes its
    kind from its name (``Memcpy HtoD (Pageable -> Device)``); and a user annotation named
    ``ProfilerStep#N`` (or marked ``profui_step`` by ``profui export``) is a step."""
    columns = {name: merged.column(name) for name in merged.column_names}
    kind = columns["kind"]
    annotation = pc.fill_null(pc.equal(kind, _str("annotation")), False)
    # only an annotation's args are searched for the mark (all args are most of the text)
    marked = np.zeros(len(kind), np.bool_)
    at = np.flatnonzero(annotation.to_numpy(zero_copy_only=False))
    if len(at):
        found = pc.match_substring(pc.filter(columns["args"], annotation), f'"{STEP_MARK}":true')
        marked[at] = pc.fill_null(found, False).to_numpy(zero_copy_only=False)
    names = _array(columns["name"])
    step = pc.and_(annotation, pc.or_(_per_name(names, pc.starts_with, STEP_PREFIX), from_numpy(marked)))
    unknown = pc.equal(kind, _str(_UNKNOWN_ANNOTATION))
    if pc.any(step).as_py() or pc.any(unknown).as_py():
        kind = pc.if_else(step, _str("step"), pc.if_else(unknown, _str("annotation"), kind))
        columns["kind"] = kind
    try:
        columns["ts"] = us_to_ns(columns["ts"])
        dur = columns["dur"]
        no_dur = pc.or_(pc.equal(kind, _str("instant")), pc.is_null(dur))  # the native scan: null if absent
        columns["dur"] = us_to_ns(pc.if_else(no_dur, pa.scalar("0", pa.large_string()), dur))
        try:  # every end (ts + dur) is a time too: it must fit int64 ns as well
            pc.add_checked(columns["ts"], columns["dur"])
        except pa.ArrowInvalid:
            raise BadValue("an event ends beyond the int64 nanosecond range (ts + dur overflows)") from None
    except ValueError as exc:
        raise BadValue(f"bad event time ({exc})") from None
    on_device = pc.is_in(kind, _DEVICE_SIDE)
    for name, source, low in (("device", "pid", pa.scalar(0, pa.int64())), ("stream", "tid", _INT32_LOW)):
        ids = columns[source]
        fits = pc.and_(on_device, pc.and_(pc.greater_equal(ids, low), pc.less_equal(ids, _INT32_HIGH)))
        fallback = pc.cast(pc.if_else(fits, ids, pa.scalar(-1, pa.int64())), pa.int32())
        columns[name] = pc.coalesce(columns[name], fallback)
    mkind = columns["memcpy_kind"]
    from_name = pc.and_(pc.equal(kind, _str("memcpy")), pc.is_null(mkind))
    if pc.any(from_name).as_py():
        named = pc.struct_field(_per_name(names, pc.extract_regex, MEMCPY_NAME_PATTERN), [0])
        columns["memcpy_kind"] = pc.if_else(from_name, named, mkind)
    return columns


def _per_name(names: pa.Array, function: Callable[..., pa.Array], *args: Any) -> pa.Array:
    """``function(names, *args)`` for dictionary-encoded ``names``: computed on each distinct
    name once."""
    return pc.take(function(names.dictionary, *args), names.indices)


def _chunk(columns: dict[str, Any], doc: KinetoDoc) -> pa.Table:
    try:
        return _columns_to_chunk(columns)
    except BadValue:
        raise
    except ValueError as exc:
        raise KinetoFormatError(doc.path, f"bad event time ({exc})") from None
    except OverflowError:  # a pid, tid or id that Arrow cannot hold as int64
        raise KinetoFormatError(doc.path, "an event's pid, tid or id does not fit a 64-bit integer") from None


def _fill_memcpy_bytes(columns: dict[str, Any], runtime_size: dict[int, int]) -> pa.Array:
    """AMD memcpy activities have no byte count; the launching hipMemcpy* call has it."""
    kinds = columns["kind"].to_pylist()
    nbytes = columns["bytes"].to_pylist()
    corr = columns["correlation"].to_pylist()
    for j, kind in enumerate(kinds):
        if kind == "memcpy" and nbytes[j] is None and corr[j] is not None:
            nbytes[j] = runtime_size.get(corr[j])
    return pa.array(nbytes, pa.int64())


def _side_record(ev: Event, with_dur: bool) -> dict[str, Any]:
    """A profiler span (cat ``Trace``) or a global marker instant, kept as source metadata."""
    times = [bytes(ev.ts) if ev.ts else b"0"]
    if with_dur:
        times.append(bytes(ev.dur) if ev.dur else b"0")
    ns = us_list_to_ns(times)
    rec: dict[str, Any] = {"name": ev.name, "ts_ns": ns[0]}
    if with_dur:
        rec["dur_ns"] = ns[1]
    rec["pid"] = ev.pid
    rec["tid"] = ev.tid
    if ev.args:
        rec["args"] = msgspec.json.decode(ev.args)
    return rec


def _metadata_event(ev: Event, processes: dict, threads: dict) -> None:
    name = ev.name
    args = msgspec.json.decode(ev.args)
    if not isinstance(args, dict):
        return
    if name.startswith("process_"):
        entry = processes.setdefault(str(ev.pid), {})
    elif name.startswith("thread_"):
        entry = threads.setdefault(f"{ev.pid}/{ev.tid}", {})
    else:
        return
    for key, value in args.items():
        entry[key] = value


def compact_flow_links(links: list[list[Any]]) -> dict[str, Any]:
    """Flow events (``[cat, id, ph, ts_ns, pid, tid]`` rows) as columns per category.

    Kept in the file's metadata, so they are stored compactly: times as offsets from ``ts0_ns``
    and phases as one string (``"ssf..."``) — a row list cost ~110 bytes a link, which in a
    small capture window weighed as much as its events.
    """
    out: dict[str, Any] = {}
    for cat in sorted({str(link[0]) for link in links}):  # str: a flow without a category has None
        rows = [link for link in links if str(link[0]) == cat]
        ts0 = min(r[3] for r in rows)
        out[cat] = {
            "ts0_ns": ts0,
            "id": [r[1] for r in rows],
            "ph": "".join(str(r[2])[:1] for r in rows),
            "ts_offset_ns": [r[3] - ts0 for r in rows],
            "pid": [r[4] for r in rows],
            "tid": [r[5] for r in rows],
        }
    return out
