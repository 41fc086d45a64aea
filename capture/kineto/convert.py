"""Converting one decoded Kineto trace into the columns of the profui ``events`` table.

The Python code here defines every conversion rule. The optional C scan (:mod:`.native`)
applies the per-event args rules of :func:`_build_columns` to the common events in bulk, with
the categories and args keys it is handed from mapping.py, and leaves every other event to
this code. The rules over whole columns (:func:`_finish_rows`: times, instants' durations,
device/stream from pid/tid, a copy's kind from its name, steps) are applied once to the rows
of both paths. Tests hold the two paths to identical output.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from operator import attrgetter
from typing import Any

import msgspec
import pyarrow as pa
import pyarrow.compute as pc

from profui.capture.format import to_table

from .errors import KinetoFormatError
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
    SIZE,
    STEP_PREFIX,
    STREAM,
    as_int,
    memcpy_kind_from_direction,
    unknown_cat_kind,
)
from .native import scan_events
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

#: Field order of the row tuples built in the loop, and their Arrow types (strings are
#: dictionary-encoded once, at the end). ``ts``/``dur`` stay JSON text until every row is in:
#: :func:`_finish_rows` converts them (``timeparse.us_to_ns``) for both paths at once.
_ROW_FIELDS: tuple[tuple[str, pa.DataType], ...] = (
    ("ts", pa.large_string()),
    ("dur", pa.large_string()),
    ("kind", pa.string()),
    ("name", pa.string()),
    ("pid", pa.int64()),
    ("tid", pa.int64()),
    ("device", pa.int32()),
    ("stream", pa.int32()),
    ("correlation", pa.int64()),
    ("external_id", pa.int64()),
    ("bytes", pa.int64()),
    ("memcpy_kind", pa.string()),
    ("args", pa.string()),
)
_CHUNK_SCHEMA = pa.schema([pa.field(n, t) for n, t in _ROW_FIELDS])

#: The kind of a row of an unknown category until _finish_rows: an annotation that the step
#: rule (for user annotations) does not apply to.
_UNKNOWN_ANNOTATION = "annotation (unknown category)"
_CANONICAL_CAT = {**CANONICAL_CAT, _UNKNOWN_ANNOTATION: CANONICAL_CAT["annotation"]}


def _texts(values: list[msgspec.Raw]) -> pa.Array:
    """JSON texts (``Raw``) as an Arrow string array; split inside Arrow from one joined text,
    which avoids one Python bytes object per value."""
    joined = pa.array([b"\n".join(values)], pa.large_binary()).cast(pa.large_string())
    parts = pc.split_pattern(joined, "\n").flatten()
    if len(parts) != len(values):  # a value spelled over several lines: not a number anyway
        return pa.array(list(map(bytes, values)), pa.large_binary()).cast(pa.large_string())
    return parts


def _columns_to_chunk(columns: list[list]) -> pa.Table:
    """Python column lists (times still JSON text, ``Raw``) -> an Arrow table."""
    arrays = []
    for (name, typ), values in zip(_ROW_FIELDS, columns, strict=True):
        if name in ("ts", "dur"):
            arrays.append(_texts(values))
        elif name == "args":
            arrays.append(pa.array(values, pa.binary()).cast(pa.string()))
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
        self.runtime_size: dict[int, int] = {}
        self.ids = _Ids()
        self.repeats = 0  # metadata events skipped as verbatim repeats


_get_ts = attrgetter("ts")
_get_dur = attrgetter("dur")
_get_name = attrgetter("name")
_get_cat = attrgetter("cat")
_get_pid = attrgetter("pid")
_get_tid = attrgetter("tid")
_get_args = attrgetter("args")


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
    kind_by_cat = KIND_BY_CAT
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
            cat = ev.cat
            src.flows[f"{cat}:{ph}"] += 1
            if cat not in CORRELATION_FLOWS and ev.ts:
                # ac2g/async_gpu flows only restate args.correlation; other flows (fwdbwd) are
                # kept as [cat, id, ph, ts, pid, tid] links (ts: its text until the end).
                src.flow_links.append([cat, ev.id, ph, bytes(ev.ts), ev.pid, ev.tid])
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


def _build_columns(keep: list[BatchEvent], kinds: list[str], src: _Source) -> list[list]:
    """The row columns (in ``_ROW_FIELDS`` order) of the selected events.

    Plain fields are pulled out with C-level ``map``; only the args need a Python loop: known
    keys become columns and the rest is re-encoded as JSON text.
    """
    ts = list(map(_get_ts, keep))
    dur = list(map(_get_dur, keep))
    names = list(map(_get_name, keep))
    cats = list(map(_get_cat, keep))
    pids = list(map(_get_pid, keep))
    tids = list(map(_get_tid, keep))
    n = len(keep)
    # Only device rows with a device/stream arg set these; _finish_rows fills the rest.
    devices: list[int | None] = [None] * n
    streams: list[int | None] = [None] * n
    nbytes_col: list[int | None] = [None] * n
    mkinds: list[str | None] = [None] * n
    corrs: list[int | None] = []
    exts: list[int | None] = []
    args_col: list[bytes | None] = []
    add_corr = corrs.append
    add_ext = exts.append
    add_args = args_col.append
    canonical = _CANONICAL_CAT
    device_side = DEVICE_SIDE
    ids = src.ids
    runtime_size = src.runtime_size
    encode = _encode
    named_ids = {int} != set(map(type, pids)) | set(map(type, tids))
    i = -1
    decode_args = _decode_args
    # Each args object is decoded just before use (not all at once): heavy args (MTIA's input
    # shapes) then stay in the CPU cache between decoding, editing and re-encoding.
    for kind, raw_args, cat in zip(kinds, map(_get_args, keep), cats, strict=True):
        i += 1
        try:
            args = decode_args(raw_args)
        except msgspec.ValidationError:
            args = {"args": msgspec.json.decode(raw_args)}
        ext = args.pop(EXTERNAL_ID, None)
        if ext is None:
            ext = args.pop(EXTERNAL_ID_ALT, None)
        if ext is None:
            add_ext(None)
        elif type(ext) is int:
            add_ext(ext)
        else:
            ext_i = as_int(ext)
            if ext_i is None:
                args[EXTERNAL_ID] = ext
            add_ext(ext_i)
        corr = args.get(CORRELATION)
        if corr is None:
            corr_i = None
        else:
            corr_i = corr if type(corr) is int else as_int(corr)
            if corr_i is not None:
                del args[CORRELATION]
        add_corr(corr_i)

        if named_ids:
            pid = pids[i]
            if type(pid) is not int:
                pid, pid_name = ids.get(pid)
                pids[i] = pid
                if pid_name is not None:
                    args["pid"] = pid_name
            tid = tids[i]
            if type(tid) is not int:
                tid, tid_name = ids.get(tid)
                tids[i] = tid
                if tid_name is not None:
                    args["tid"] = tid_name

        if kind in device_side:
            device = _device_int(as_int(args.get(DEVICE)))
            if device is not None:
                del args[DEVICE]
                devices[i] = device
            stream = _device_int(as_int(args.get(STREAM)))
            if stream is not None:
                del args[STREAM]
                streams[i] = stream
            if kind == "kernel" and cat == DMA_CATEGORY and DIRECTION in args:
                # MTIA DMA transfers (dma_request) carry direction and size: they are copies.
                kind = kinds[i] = "memcpy"
                mkinds[i] = memcpy_kind_from_direction(args.pop(DIRECTION))
                nbytes_col[i] = as_int(args.pop(SIZE, None))
            elif kind == "memcpy" or kind == "memset":
                nbytes = as_int(args.get(BYTES))
                if nbytes is not None:
                    del args[BYTES]
                    nbytes_col[i] = nbytes
                if kind == "memcpy":  # else from the name, in _finish_rows
                    k = args.get(KIND)
                    if isinstance(k, str) and k and not k.isdigit():
                        mkinds[i] = k
                        del args[KIND]
        elif kind == "runtime" and corr_i is not None and SIZE in args:
            size = as_int(args[SIZE])
            if size is not None:
                runtime_size[corr_i] = size

        if cat != canonical[kind]:
            args[CAT] = cat
        add_args(encode(args) if args else None)
    return [ts, dur, kinds, names, pids, tids, devices, streams, corrs, exts, nbytes_col, mkinds, args_col]


def convert_events(
    doc: KinetoDoc, progress: Callable[[int, int], None] | None = None, *, native: bool = True
) -> Converted:
    """Turn ``doc``'s events into an ``events`` Arrow table (unsorted; the writer sorts).

    The native scan (:mod:`.native`, when built) converts the common events; the rest, or all
    of them with ``native=False`` or without the extension, go through the Python path below,
    which defines every rule. Rows keep the order of their events either way.
    """
    src = _Source()
    chunks: list[pa.Table] = []
    scan = scan_events(doc.events_text, _CHUNK_SCHEMA) if native and doc.events_text is not None else None
    if scan is not None:
        chunks.append(scan.table)
        src.flows.update(scan.flows)
        src.runtime_size.update(scan.runtime_size)
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
    for begin in range(0, len(events), _CHUNK_ROWS):
        if progress is not None and begin and begin % _PROGRESS_EVERY < _CHUNK_ROWS:
            progress(total - len(events) + begin, total)
        part = events[begin : begin + _CHUNK_ROWS]
        part_idx = indices[begin : begin + _CHUNK_ROWS]
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
        except ValueError as exc:  # a span's or marker's time that is not a number
            raise KinetoFormatError(doc.path, f"bad event time ({exc})") from None
        if keep:
            chunk = _chunk(_build_columns(keep, kinds, src), doc)
            if scan is not None:
                chunk = chunk.append_column("ord", pa.array([part_idx[j] for j in kept], pa.int64()))
            chunks.append(chunk)
            python_rows += len(keep)
        del keep, part
    processes, threads, spans, markers = src.processes, src.threads, src.spans, src.markers
    flows, flow_links, skipped, unknown_cats = src.flows, src.flow_links, src.skipped, src.unknown_cats
    runtime_size, ids = src.runtime_size, src.ids

    # The JSON text is no longer needed: free it before the last columns are built and written.
    events.clear()
    doc.release()
    if not chunks:
        chunks.append(_CHUNK_SCHEMA.empty_table())
    merged = pa.concat_tables(chunks).combine_chunks()
    chunks.clear()
    if scan is not None:
        if python_rows and scan.table.num_rows:  # rows from both paths: back into event order
            merged = merged.take(pc.sort_indices(merged["ord"]))
        merged = merged.drop_columns(["ord"])
    try:
        columns = _finish_rows(merged)
        for link, ts_ns in zip(flow_links, us_list_to_ns([link[3] for link in flow_links]), strict=True):
            link[3] = ts_ns
    except ValueError as exc:
        raise KinetoFormatError(doc.path, f"bad event time ({exc})") from None
    del merged
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
    on_device = pc.and_(pc.is_in(kinds, pa.array(sorted(DEVICE_SIDE))), pc.greater_equal(table["device"], 0))
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


def _decode_part(part: list, part_idx: list[int] | range, doc: KinetoDoc) -> list[BatchEvent]:
    """Decode ``part`` (events whose indices in the trace are ``part_idx``) in one call; on a
    malformed event, find and name the first one exactly as decoding them one by one does."""
    try:
        return batch_decoder.decode(b"[" + b",".join(part) + b"]")
    except (msgspec.ValidationError, msgspec.DecodeError):  # DecodeError: text that is not UTF-8
        pass
    for index, raw in zip(part_idx, part, strict=True):
        try:
            event_decoder.decode(raw)
        except (msgspec.ValidationError, msgspec.DecodeError) as exc:
            raise KinetoFormatError(doc.path, f"trace event {index} is malformed ({exc})") from None
    raise AssertionError("a batch of events failed to decode, but each one decodes")


def _finish_rows(merged: pa.Table) -> dict[str, Any]:
    """The rules over whole columns, for the rows of both paths at once: times in ns (an
    instant lasts 0, whatever its ``dur`` says, and so does an event without one); a device
    row without a device/stream arg has its pid/tid as device/stream where they fit (a
    device >= 0), -1 otherwise, and a host row -1; a copy without a ``kind`` arg takes its
    kind from its name (``Memcpy HtoD (Pageable -> Device)``); and a user annotation named
    ``ProfilerStep#N`` is a step."""
    columns = {name: merged.column(name) for name in merged.column_names}
    kind = columns["kind"]
    step = pc.and_(pc.equal(kind, "annotation"), pc.starts_with(columns["name"], STEP_PREFIX))
    unknown = pc.equal(kind, _UNKNOWN_ANNOTATION)
    if pc.any(step).as_py() or pc.any(unknown).as_py():
        kind = pc.if_else(step, "step", pc.if_else(unknown, "annotation", kind))
        columns["kind"] = kind
    columns["ts"] = us_to_ns(columns["ts"])
    dur = columns["dur"]
    no_dur = pc.or_(pc.equal(kind, "instant"), pc.is_null(dur))  # the native scan: null if absent
    columns["dur"] = us_to_ns(pc.if_else(no_dur, pa.scalar("0", pa.large_string()), dur))
    on_device = pc.is_in(kind, pa.array(sorted(DEVICE_SIDE)))
    for name, source, low in (("device", "pid", 0), ("stream", "tid", _INT32[0])):
        ids = columns[source]
        fits = pc.and_(on_device, pc.and_(pc.greater_equal(ids, low), pc.less_equal(ids, _INT32[1])))
        fallback = pc.cast(pc.if_else(fits, ids, pa.scalar(-1, pa.int64())), pa.int32())
        columns[name] = pc.coalesce(columns[name], fallback)
    mkind = columns["memcpy_kind"]
    from_name = pc.and_(pc.equal(kind, "memcpy"), pc.is_null(mkind))
    if pc.any(from_name).as_py():
        named = pc.struct_field(pc.extract_regex(columns["name"], MEMCPY_NAME_PATTERN), [0])
        columns["memcpy_kind"] = pc.if_else(from_name, named, mkind)
    return columns


def _chunk(columns: list[list], doc: KinetoDoc) -> pa.Table:
    try:
        return _columns_to_chunk(columns)
    except ValueError as exc:
        raise KinetoFormatError(doc.path, f"bad event time ({exc})") from None


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
