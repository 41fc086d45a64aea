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
from .reader import Event, KinetoDoc
from .timeparse import us_text_to_ns

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


def convert_events(doc: KinetoDoc, progress: Callable[[int, int], None] | None = None) -> Converted:
    """Turn ``doc``'s events into an ``events`` Arrow table (unsorted; the writer sorts)."""
    events = doc.events
    base = doc.base_time_ns or 0
    base_decided = doc.base_time_ns is None

    ts_col: list[int] = []
    dur_col: list[int] = []
    kind_col: list[str] = []
    name_col: list[str] = []
    pid_col: list[int] = []
    tid_col: list[int] = []
    dev_col: list[int] = []
    stream_col: list[int] = []
    corr_col: list[int | None] = []
    ext_col: list[int | None] = []
    bytes_col: list[int | None] = []
    mk_col: list[str | None] = []
    args_col: list[bytes | None] = []

    processes: dict[str, dict[str, Any]] = {}
    threads: dict[str, dict[str, Any]] = {}
    spans: list[dict[str, Any]] = []
    markers: list[dict[str, Any]] = []
    flows: Counter[str] = Counter()
    flow_links: list[list[Any]] = []
    skipped: Counter[str] = Counter()
    unknown_cats: Counter[str] = Counter()
    runtime_size: dict[int, int] = {}
    ids = _Ids()
    total = len(events)

    def times(ev: Event) -> tuple[int, int]:
        nonlocal base, base_decided
        ts = us_text_to_ns(bytes(ev.ts))
        if not base_decided:
            # baseTimeNanoseconds applies to relative timestamps; a trace whose times are
            # already absolute epoch µs must not be shifted a second time.
            base_decided = True
            if ts >= _RELATIVE_LIMIT_NS:
                base = 0
        dur = us_text_to_ns(bytes(ev.dur)) if ev.dur else 0
        return ts + base, dur

    for i, ev in enumerate(events):
        if progress is not None and i % _PROGRESS_EVERY == 0 and i:
            progress(i, total)
        ph = ev.ph
        if ph == "M":
            if ev.args:
                _metadata_event(ev, processes, threads)
            continue
        if ph in ("s", "f", "t"):
            flows[f"{ev.cat}:{ph}"] += 1
            if ev.cat not in ("ac2g", "async_gpu") and ev.ts:
                # ac2g/async_gpu flows only restate args.correlation; other flows (fwdbwd) are
                # kept as [cat, id, ph, ts_ns, pid, tid] links.
                flow_links.append([ev.cat, ev.id, ph, times(ev)[0], ev.pid, ev.tid])
            continue
        if ph == "X":
            cat = ev.cat
            if cat == "Trace":
                ts, dur = times(ev)
                spans.append(
                    {
                        "name": ev.name,
                        "ts_ns": ts,
                        "dur_ns": dur,
                        "pid": ev.pid,
                        "tid": ev.tid,
                        "args": _decode_args(ev.args) if ev.args else None,
                    }
                )
                continue
            kind = KIND_BY_CAT.get(cat) if cat is not None else None
            if kind is None:
                kind = unknown_cat_kind(cat)
                unknown_cats[str(cat)] += 1
        elif ph in ("i", "I"):
            if ev.cat is None:
                ts, _ = times(ev)
                markers.append({"name": ev.name, "ts_ns": ts, "pid": ev.pid, "tid": ev.tid})
                continue
            cat = ev.cat
            kind = "instant"
        else:
            skipped[ph or "?"] += 1
            continue

        if not ev.ts:
            skipped[f"{ph}:no-ts"] += 1
            continue
        try:
            ts, dur = times(ev)
        except ValueError as exc:
            raise KinetoFormatError(doc.path, f"event {i} ({ev.name!r}): bad time ({exc})") from None
        if ph != "X":
            dur = 0
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
        ext_i = as_int(ext)
        if ext is not None and ext_i is None:
            args["External id"] = ext
        corr = args.get("correlation")
        corr_i = as_int(corr)
        if corr_i is not None:
            del args["correlation"]

        pid, pid_name = ids.get(ev.pid)
        tid, tid_name = ids.get(ev.tid)
        if pid_name is not None:
            args["pid"] = pid_name
        if tid_name is not None:
            args["tid"] = tid_name

        nbytes = None
        mkind = None
        if kind in DEVICE_SIDE:
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
            elif kind in ("memcpy", "memset"):
                b = args.get("bytes")
                nbytes = as_int(b)
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

        if cat != CANONICAL_CAT[kind]:
            args["cat"] = cat

        ts_col.append(ts)
        dur_col.append(dur)
        kind_col.append(kind)
        name_col.append(name)
        pid_col.append(pid)
        tid_col.append(tid)
        dev_col.append(device)
        stream_col.append(stream)
        corr_col.append(corr_i)
        ext_col.append(ext_i)
        bytes_col.append(nbytes)
        mk_col.append(mkind)
        args_col.append(_encode(args) if args else None)

    if runtime_size:
        # AMD memcpy activities have no byte count; the launching hipMemcpy* call has it.
        for j, kind in enumerate(kind_col):
            if kind == "memcpy" and bytes_col[j] is None and corr_col[j] is not None:
                bytes_col[j] = runtime_size.get(corr_col[j])

    n = len(ts_col)
    table = to_table(
        "events",
        {
            "ts": pa.array(ts_col, pa.int64()),
            "dur": pa.array(dur_col, pa.int64()),
            "kind": pa.array(kind_col, pa.string()),
            "name": pa.array(name_col, pa.string()),
            "pid": pa.array(pid_col, pa.int64()),
            "tid": pa.array(tid_col, pa.int64()),
            "device": pa.array(dev_col, pa.int32()),
            "stream": pa.array(stream_col, pa.int32()),
            "correlation": pa.array(corr_col, pa.int64()),
            "external_id": pa.array(ext_col, pa.int64()),
            "bytes": pa.array(bytes_col, pa.int64()),
            "memcpy_kind": pa.array(mk_col, pa.string()),
            "args": pa.array(args_col, pa.binary()).cast(pa.string()),
        },
    )
    counts = dict(sorted(Counter(kind_col).items()))
    first = last = None
    if n:
        first = pc.min(table["ts"]).as_py()
        last = pc.max(pc.add(table["ts"], table["dur"])).as_py()
    devices = sorted({d for d, k in zip(dev_col, kind_col, strict=True) if k in DEVICE_SIDE and d >= 0})
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
