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


class _Columns:
    """The events columns as Python lists (times still JSON text, parsed at the end in bulk)."""

    def __init__(self) -> None:
        self.ts: list[bytes] = []
        self.dur: list[bytes] = []
        self.kind: list[str] = []
        self.name: list[str] = []
        self.pid: list[int] = []
        self.tid: list[int] = []
        self.device: list[int] = []
        self.stream: list[int] = []
        self.correlation: list[int | None] = []
        self.external_id: list[int | None] = []
        self.nbytes: list[int | None] = []
        self.memcpy_kind: list[str | None] = []
        self.args: list[bytes | None] = []

    @classmethod
    def from_rows(cls, rows: list[tuple]) -> _Columns:
        """Transpose row tuples (in field order) into columns."""
        cols = cls()
        if rows:
            (
                cols.ts,
                cols.dur,
                cols.kind,
                cols.name,
                cols.pid,
                cols.tid,
                cols.device,
                cols.stream,
                cols.correlation,
                cols.external_id,
                cols.nbytes,
                cols.memcpy_kind,
                cols.args,
            ) = (list(c) for c in zip(*rows, strict=True))
        return cols


def convert_events(doc: KinetoDoc, progress: Callable[[int, int], None] | None = None) -> Converted:
    """Turn ``doc``'s events into an ``events`` Arrow table (unsorted; the writer sorts)."""
    events = doc.events
    processes: dict[str, dict[str, Any]] = {}
    threads: dict[str, dict[str, Any]] = {}
    seen_meta: set[tuple] = set()
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
    decode_event = event_decoder.decode
    kind_by_cat = KIND_BY_CAT
    canonical = CANONICAL_CAT
    device_side = DEVICE_SIDE

    for i, raw_event in enumerate(events):
        if progress is not None and i % _PROGRESS_EVERY == 0 and i:
            progress(i, total)
        try:
            ev: Event = decode_event(raw_event)
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
            if ev.args:
                key = (ev.name, ev.pid, ev.tid, bytes(ev.args))
                if key not in seen_meta:  # a few distinct values, repeated up to 100k times
                    seen_meta.add(key)
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

    cols = _Columns.from_rows(rows)
    del rows
    if runtime_size:
        # AMD memcpy activities have no byte count; the launching hipMemcpy* call has it.
        for j, kind in enumerate(cols.kind):
            if kind == "memcpy" and cols.nbytes[j] is None and cols.correlation[j] is not None:
                cols.nbytes[j] = runtime_size.get(cols.correlation[j])

    try:
        ts = us_texts_to_ns(cols.ts)
        dur = us_texts_to_ns(cols.dur)
    except ValueError as exc:
        raise KinetoFormatError(doc.path, f"bad event time ({exc})") from None
    cols.ts = cols.dur = []
    base = 0
    if doc.base_time_ns is not None and len(ts) and pc.min(ts).as_py() < _RELATIVE_LIMIT_NS:
        # baseTimeNanoseconds applies to relative timestamps; a trace whose times are already
        # absolute epoch µs must not be shifted a second time.
        base = doc.base_time_ns
        ts = pc.add(ts, pa.scalar(base, pa.int64()))
    for rec in (*spans, *markers):
        rec["ts_ns"] += base
    for link in flow_links:
        link[3] += base

    table = to_table(
        "events",
        {
            "ts": ts,
            "dur": dur,
            "kind": pa.array(cols.kind, pa.string()),
            "name": pa.array(cols.name, pa.string()),
            "pid": pa.array(cols.pid, pa.int64()),
            "tid": pa.array(cols.tid, pa.int64()),
            "device": pa.array(cols.device, pa.int32()),
            "stream": pa.array(cols.stream, pa.int32()),
            "correlation": pa.array(cols.correlation, pa.int64()),
            "external_id": pa.array(cols.external_id, pa.int64()),
            "bytes": pa.array(cols.nbytes, pa.int64()),
            "memcpy_kind": pa.array(cols.memcpy_kind, pa.string()),
            "args": pa.array(cols.args, pa.binary()).cast(pa.string()),
        },
    )
    counts = dict(sorted(Counter(cols.kind).items()))
    first = last = None
    if table.num_rows:
        first = pc.min(table["ts"]).as_py()
        last = pc.max(pc.add(table["ts"], table["dur"])).as_py()
    devices = sorted({d for d, k in zip(cols.device, cols.kind, strict=True) if k in DEVICE_SIDE and d >= 0})
    source: dict[str, Any] = {
        "processes": processes,
        "threads": threads,
        "profiler_spans": spans,
        "markers": markers,
        "flows": dict(sorted(flows.items())),
    }
    if flow_links:
        source["flow_links"] = flow_links
    if ids.by_name:
        source["named_ids"] = ids.by_name
    if skipped:
        source["skipped"] = dict(skipped)
    if unknown_cats:
        source["unknown_categories"] = dict(unknown_cats)
    if progress is not None:
        progress(total, total)
    return Converted(table, counts, devices, first, last, source)


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
