"""Converting one decoded Kineto trace into the columns of the profui ``events`` table."""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import msgspec
import pyarrow as pa
import pyarrow.compute as pc

from profui.capture.format import to_table

from .errors import KinetoFormatError
from .mapping import (
    CANONICAL_CAT,
    DEVICE_SIDE,
    KIND_BY_CAT,
    STEP_PREFIX,
    as_int,
    memcpy_kind_from_direction,
    memcpy_kind_from_name,
    unknown_cat_kind,
)
from .reader import Event, KinetoDoc, event_decoder
from .timeparse import us_text_to_ns, us_texts_to_ns

_INT32 = (-(2**31), 2**31 - 1)
#: Below this many ns since the epoch (~1973) timestamps are relative to baseTimeNanoseconds.
_RELATIVE_LIMIT_NS = 10**17
_PROGRESS_EVERY = 20_000
_ZERO = b"0"

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


#: Rows are turned into compact Arrow columns every this many rows, so the Python objects of
#: only one chunk are alive at a time.
_CHUNK_ROWS = 16_384

#: Field order of the row tuples built in the loop, and their Arrow types (strings are
#: dictionary-encoded once, at the end).
_ROW_FIELDS: tuple[tuple[str, pa.DataType], ...] = (
    ("ts", pa.int64()),
    ("dur", pa.int64()),
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


def _rows_to_chunk(rows: list[tuple]) -> pa.Table:
    """Row tuples (times still JSON text) -> an Arrow table of plain columns (times relative)."""
    columns = list(zip(*rows, strict=True))
    arrays = []
    for (name, typ), values in zip(_ROW_FIELDS, columns, strict=True):
        if name in ("ts", "dur"):
            arrays.append(us_texts_to_ns(values))
        elif name == "args":
            arrays.append(pa.array(values, pa.binary()).cast(pa.string()))
        else:
            arrays.append(pa.array(values, typ))
    return pa.Table.from_arrays(arrays, schema=_CHUNK_SCHEMA)


def convert_events(doc: KinetoDoc, progress: Callable[[int, int], None] | None = None) -> Converted:
    """Turn ``doc``'s events into an ``events`` Arrow table (unsorted; the writer sorts).

    Consumes ``doc.events`` (emptied once read) so the JSON text is freed early.
    """
    events = doc.events
    processes: dict[str, dict[str, Any]] = {}
    threads: dict[str, dict[str, Any]] = {}
    seen_meta: set[bytes] = set()
    spans: list[dict[str, Any]] = []
    markers: list[dict[str, Any]] = []
    flows: Counter[str] = Counter()
    flow_links: list[list[Any]] = []
    skipped: Counter[str] = Counter()
    unknown_cats: Counter[str] = Counter()
    runtime_size: dict[int, int] = {}
    ids = _Ids()
    total = len(events)

    rows: list[tuple] = []
    add_row = rows.append
    chunks: list[pa.Table] = []
    decode_event = event_decoder.decode
    kind_by_cat = KIND_BY_CAT
    canonical = CANONICAL_CAT
    device_side = DEVICE_SIDE

    for i, raw_event in enumerate(events):
        if len(rows) >= _CHUNK_ROWS:
            chunks.append(_chunk(rows, doc))
            rows.clear()
        if progress is not None and i % _PROGRESS_EVERY == 0 and i:
            progress(i, total)
        text = bytes(raw_event)
        if text in seen_meta:
            continue  # metadata events repeat verbatim up to 100k times (MTIA): read each once
        try:
            ev: Event = decode_event(text)
        except msgspec.ValidationError as exc:
            raise KinetoFormatError(doc.path, f"trace event {i} is malformed ({exc})") from None
        ph = ev.ph
        cat = ev.cat
        if ph == "X":
            if cat == "Trace":
                spans.append(_side_record(ev, with_dur=True))
                continue
            kind = kind_by_cat.get(cat) if cat is not None else None
            if kind is None:
                kind = unknown_cat_kind(cat)
                unknown_cats[str(cat)] += 1
            dur_text = bytes(ev.dur) if ev.dur else _ZERO
        elif ph == "M":
            seen_meta.add(text)
            if ev.args:
                _metadata_event(ev, processes, threads)
            continue
        elif ph in ("s", "f", "t"):
            flows[f"{cat}:{ph}"] += 1
            if cat not in ("ac2g", "async_gpu") and ev.ts:
                # ac2g/async_gpu flows only restate args.correlation; other flows (fwdbwd) are
                # kept as [cat, id, ph, ts_ns, pid, tid] links.
                flow_links.append([cat, ev.id, ph, us_text_to_ns(bytes(ev.ts)), ev.pid, ev.tid])
            continue
        elif ph in ("i", "I"):
            if cat is None:
                markers.append(_side_record(ev, with_dur=False))
                continue
            kind = "instant"
            dur_text = _ZERO
        else:
            skipped[ph or "?"] += 1
            continue
        if not ev.ts:
            skipped[f"{ph}:no-ts"] += 1
            continue

        try:
            args = _decode_args(ev.args) if ev.args else {}
        except msgspec.ValidationError:
            args = {"args": msgspec.json.decode(ev.args)}
        name = ev.name
        if kind == "annotation" and name.startswith(STEP_PREFIX):
            kind = "step"

        ext = args.pop("External id", None)
        if ext is None:
            ext = args.pop("external id", None)
        ext_i = ext if type(ext) is int else (as_int(ext) if ext is not None else None)
        if ext is not None and ext_i is None:
            args["External id"] = ext
        corr = args.get("correlation")
        corr_i = corr if type(corr) is int else (as_int(corr) if corr is not None else None)
        if corr_i is not None:
            del args["correlation"]

        pid = ev.pid
        if type(pid) is not int:
            pid, pid_name = ids.get(pid)
            if pid_name is not None:
                args["pid"] = pid_name
        tid = ev.tid
        if type(tid) is not int:
            tid, tid_name = ids.get(tid)
            if tid_name is not None:
                args["tid"] = tid_name

        nbytes = None
        mkind = None
        if kind in device_side:
            device = _device_int(as_int(args.get("device")))
            if device is not None:
                del args["device"]
            else:
                device = _device_int(pid) if pid >= 0 else None
                device = -1 if device is None else device
            stream = _device_int(as_int(args.get("stream")))
            if stream is not None:
                del args["stream"]
            else:
                stream = _device_int(tid)
                stream = -1 if stream is None else stream
            if kind == "kernel" and cat == "mtia_ccp_events" and "direction" in args:
                # MTIA DMA transfers (dma_request) carry direction and size: they are copies.
                kind = "memcpy"
                mkind = memcpy_kind_from_direction(args.pop("direction"))
                nbytes = as_int(args.pop("size", None))
            elif kind == "memcpy" or kind == "memset":
                nbytes = as_int(args.get("bytes"))
                if nbytes is not None:
                    del args["bytes"]
                if kind == "memcpy":
                    k = args.get("kind")
                    if isinstance(k, str) and k and not k.isdigit():
                        mkind = k
                        del args["kind"]
                    else:
                        mkind = memcpy_kind_from_name(name)
        else:
            device = -1
            stream = -1
            if kind == "runtime" and corr_i is not None and "size" in args:
                size = as_int(args["size"])
                if size is not None:
                    runtime_size[corr_i] = size

        if cat != canonical[kind]:
            args["cat"] = cat

        add_row(
            (
                bytes(ev.ts),
                dur_text,
                kind,
                name,
                pid,
                tid,
                device,
                stream,
                corr_i,
                ext_i,
                nbytes,
                mkind,
                _encode(args) if args else None,
            )
        )

    # The JSON text is no longer needed: free it before the last columns are built and written.
    events.clear()
    raw_event = ev = text = None
    if rows or not chunks:
        chunks.append(_chunk(rows, doc) if rows else _CHUNK_SCHEMA.empty_table())
    rows.clear()
    merged = pa.concat_tables(chunks).combine_chunks()
    chunks.clear()
    columns = {name: merged.column(name) for name in merged.column_names}
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


def _chunk(rows: list[tuple], doc: KinetoDoc) -> pa.Table:
    try:
        return _rows_to_chunk(rows)
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
    rec: dict[str, Any] = {"name": ev.name, "ts_ns": us_text_to_ns(bytes(ev.ts)) if ev.ts else 0}
    if with_dur:
        rec["dur_ns"] = us_text_to_ns(bytes(ev.dur)) if ev.dur else 0
    rec["pid"] = ev.pid
    rec["tid"] = ev.tid
    if ev.args:
        rec["args"] = msgspec.json.decode(ev.args)
    return rec


def _metadata_event(ev: Event, processes: dict, threads: dict) -> None:
    name = ev.name
    try:
        args = msgspec.json.decode(ev.args)
    except msgspec.DecodeError:
        return
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
    for cat in sorted({link[0] for link in links}):
        rows = [link for link in links if link[0] == cat]
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

