"""The previous Nsight Systems converter (ae71989's ``capture/nsys/convert.py`` and the
row-by-row rules of its ``names.py``), kept under tests as the oracle of the column-wise one:
every row read as a dict and turned into an event one at a time. Changed only to be one module
(``names.X`` -> ``X``) and to read ``StringIds`` as ae71989's ``Export.strings`` did."""

# ruff: noqa
from __future__ import annotations

import re
import sqlite3
from collections import Counter, defaultdict
from collections.abc import Callable
from pathlib import Path
from typing import Any
import msgspec
from profui.capture.conversion.converted import EVENT_FIELDS, empty_columns, events_table, write_rank
from profui.capture.conversion.result import ConvertResult, detect_node
from profui.capture.nsys.cell_text import text as _text
from profui.capture.nsys.tables import Export, NsysFormatError, open_export


def _strings(export: Export) -> dict:
    """ae71989's ``Export.strings``: id -> text, of every row whose value is text (or a BLOB)."""
    rows = export.conn.execute("SELECT id, value FROM StringIds")
    return {i: v for i, v in ((i, _text(v)) for i, v in rows) if isinstance(v, str)}


#: API version suffix Nsight appends to CUDA runtime names (``cudaLaunchKernel_v7000``); a
#: ``_v2`` that is part of the API's own name (``cudaStreamGetCaptureInfo_v2``) is kept.
_API_VERSION = re.compile(r"_v\d{4,}$")

#: PyTorch's ``--pytorch=autograd-nvtx`` op range: ``aten::mm, seq = 12, op_id = 345`` (then
#: optionally ``, sizes = [...]`` and ``, input_op_ids = [...]``). Its numbers are ASCII digits
#: that fit the int64 ids of the trace (18 at most): a text with a longer one is no op range.
OP_RANGE = re.compile(
    r"^(?P<op>[^,]+?)(?:, seq = (?P<seq>[0-9]{1,18}))?, op_id = (?P<op_id>[0-9]{1,18})(?![0-9])(?P<rest>.*)$",
    re.S,
)

#: The default step range: the one PyTorch's profiler writes; ``profui import --nvtx-step`` sets another.
DEFAULT_STEP_PATTERN = r"^ProfilerStep#\d+$"

#: CUPTI memcpy kinds (``ENUM_CUDA_MEMCPY_OPER`` names, prefix dropped) -> Kineto's spelling.
_COPY_KINDS = {
    "HTOD": "HtoD",
    "DTOH": "DtoH",
    "HTOA": "HtoA",
    "ATOH": "AtoH",
    "ATOA": "AtoA",
    "ATOD": "AtoD",
    "DTOA": "DtoA",
    "DTOD": "DtoD",
    "HTOH": "HtoH",
    "PTOP": "PtoP",
    "UVM_HTOD": "HtoD",
    "UVM_DTOH": "DtoH",
    "UVM_DTOD": "DtoD",
}
#: CUPTI's numbering of the same kinds, for exports without the enum table.
_COPY_KIND_IDS = {1: "HTOD", 2: "DTOH", 3: "HTOA", 4: "ATOH", 5: "ATOA", 6: "ATOD", 7: "DTOA", 8: "DTOD"}
_COPY_KIND_IDS.update({9: "HTOH", 10: "PTOP", 11: "UVM_HTOD", 12: "UVM_DTOH", 13: "UVM_DTOD"})

#: ``ENUM_CUDA_MEM_KIND`` names (prefix dropped) -> Kineto's spelling in a copy's name.
_MEM_KINDS = {
    "PAGEABLE": "Pageable",
    "PINNED": "Pinned",
    "DEVICE": "Device",
    "ARRAY": "Array",
    "MANAGED": "Managed",
    "DEVICE_STATIC": "Device Static",
    "MANAGED_STATIC": "Managed Static",
}
_MEM_KIND_IDS = {0: "PAGEABLE", 1: "PINNED", 2: "DEVICE", 3: "ARRAY", 4: "MANAGED"}
_MEM_KIND_IDS.update({5: "DEVICE_STATIC", 6: "MANAGED_STATIC"})

#: ``ENUM_CUPTI_SYNC_TYPE`` names (prefix dropped) -> Kineto's sync event names.
_SYNC_NAMES = {
    "EVENT_SYNCHRONIZE": "Event Sync",
    "STREAM_WAIT_EVENT": "Stream Wait Event",
    "STREAM_SYNCHRONIZE": "Stream Sync",
    "CONTEXT_SYNCHRONIZE": "Context Sync",
}
_SYNC_IDS = {
    1: "EVENT_SYNCHRONIZE",
    2: "STREAM_WAIT_EVENT",
    3: "STREAM_SYNCHRONIZE",
    4: "CONTEXT_SYNCHRONIZE",
}


def _enum_key(enum: dict[int, str], ids: dict[int, str], value: object, prefix: str) -> str | None:
    if not isinstance(value, int):
        return None
    name = enum.get(value)
    if name is None:
        return ids.get(value)
    return name[len(prefix) :] if name.startswith(prefix) else name


def runtime_name(raw: str) -> tuple[str, str]:
    """``(name, kind)`` of a CUDA API call: the name without Nsight's version suffix, and
    ``runtime`` for the runtime API (``cuda*``) or ``driver`` for the driver API (``cu*``)."""
    name = _API_VERSION.sub("", raw)
    kind = "driver" if name.startswith("cu") and not name.startswith("cuda") else "runtime"
    return name, kind


def copy_kind(enum: dict[int, str], value: object) -> str | None:
    """A memcpy's kind (``HtoD`` ...) from its ``copyKind``; None when unknown."""
    key = _enum_key(enum, _COPY_KIND_IDS, value, "CUDA_MEMCPY_KIND_")
    return _COPY_KINDS.get(key) if key else None


def mem_kind(enum: dict[int, str], value: object) -> str:
    """A memory kind as a copy's or memset's name says it (``Pinned``); ``Unknown`` when unknown."""
    key = _enum_key(enum, _MEM_KIND_IDS, value, "CUDA_MEMOPR_MEMORY_KIND_")
    return _MEM_KINDS.get(key, "Unknown") if key else "Unknown"


def copy_name(kind: str | None, src: str, dst: str) -> str:
    """Kineto's name of a copy: ``Memcpy HtoD (Pinned -> Device)``."""
    return f"Memcpy {kind or 'Unknown'} ({src} -> {dst})"


def sync_name(enum: dict[int, str], value: object) -> str:
    """Kineto's name of a CUPTI synchronization row (``Stream Sync``); ``Unknown Sync`` else."""
    key = _enum_key(enum, _SYNC_IDS, value, "CUPTI_ACTIVITY_SYNCHRONIZATION_TYPE_")
    return _SYNC_NAMES.get(key or "", "Unknown Sync")


def nvtx_range(text: str, step: re.Pattern[str]) -> tuple[str, str, dict[str, object]]:
    """``(kind, name, args)`` of an NVTX range: a ``step`` when ``step`` matches the text, a
    PyTorch op range as a ``cpu_op`` named by its op (sequence number and op id in args, the
    rest of the text too), else an ``annotation`` named by its text."""
    if step.search(text):
        return "step", text, {}
    m = OP_RANGE.match(text)
    if m:
        args: dict[str, object] = {"op_id": int(m["op_id"])}
        if m["seq"] is not None:
            args["Sequence number"] = int(m["seq"])
        if m["rest"]:
            args["nvtx"] = m["rest"].lstrip(", ")
        return "cpu_op", m["op"], args
    return "annotation", text, {}


Progress = Callable[[int, int], None]

_DEVICE_TABLES = (
    ("kernel", "CUPTI_ACTIVITY_KIND_KERNEL"),
    ("memcpy", "CUPTI_ACTIVITY_KIND_MEMCPY"),
    ("memset", "CUPTI_ACTIVITY_KIND_MEMSET"),
    ("sync", "CUPTI_ACTIVITY_KIND_SYNCHRONIZATION"),
)
_DEVICE_COLUMNS = ("start", "end", "deviceId", "contextId", "streamId", "correlationId", "globalPid")
_KERNEL_COLUMNS = (
    "demangledName",
    "shortName",
    "gridX",
    "gridY",
    "gridZ",
    "blockX",
    "blockY",
    "blockZ",
    "registersPerThread",
    "staticSharedMemory",
    "dynamicSharedMemory",
)
#: Per table, the columns (groups of alternatives) without which its rows cannot become events
#: (a sync row without deviceId may take its device from its CUDA context; an NVTX mark needs
#: no end), and the columns that name its events, with the name they get without them.
_NEEDED: dict[str, tuple[tuple[str, ...], ...]] = {
    **{table: (("start",), ("end",), ("deviceId",)) for _, table in _DEVICE_TABLES},
    "CUPTI_ACTIVITY_KIND_RUNTIME": (("start",), ("end",)),
    "NVTX_EVENTS": (("start",), ("end",), ("eventType",), ("text", "textId")),
}
_NAMING: dict[str, tuple[tuple[str, ...], str, str]] = {
    "CUPTI_ACTIVITY_KIND_KERNEL": (("demangledName", "shortName"), "kernels", "unknown kernel"),
    "CUPTI_ACTIVITY_KIND_RUNTIME": (("nameId",), "CUDA calls", "unknown CUDA call"),
}
_NVTX_RANGES = (59, 60)  # NvtxPushPopRange, NvtxStartEndRange
_NVTX_MARK = 34
_NVTX_DOMAIN_CREATE = 75


def _pid(g: object) -> int:
    return (g >> 24) & 0xFFFFFF if isinstance(g, int) else 0


def _tid(g: object) -> int:
    return g & 0xFFFFFF if isinstance(g, int) else 0


_encode = msgspec.json.Encoder().encode


def _args(values: dict[str, Any]) -> str | None:
    kept = {k: v for k, v in values.items() if v is not None}
    return _encode(kept).decode() if kept else None


class _Rows:
    """The events of one process, column by column."""

    def __init__(self) -> None:
        self.cols: dict[str, list[Any]] = empty_columns()

    def add(self, **row: Any) -> None:
        for f in EVENT_FIELDS:
            self.cols[f].append(row.get(f))

    def __len__(self) -> int:
        return len(self.cols["ts"])


class _Reader:
    """One pass over the export's tables into per-process rows."""

    def __init__(self, export: Export, step: re.Pattern[str]) -> None:
        self.x = export
        self.step = step
        self.strings = _strings(export)
        self.offset = export.epoch_offset_ns()
        self.by_pid: dict[int, _Rows] = defaultdict(_Rows)
        self.skipped: Counter[str] = Counter()
        self.devices: dict[int, set[int]] = defaultdict(set)
        #: per pid: correlation -> external id of the CUDA call with it
        self.call_ext: dict[int, dict[int, int]] = defaultdict(dict)
        #: per table: the rows read, those that became events, and those left out for want of
        #: a column the table lacks alone (not one ending before it starts, or with a NULL value)
        self.read: Counter[str] = Counter()
        self.kept: Counter[str] = Counter()
        self.lost: Counter[str] = Counter()

    def column_notes(self) -> list[str]:
        """What the tables' missing columns cost: rows left out, events left unnamed."""
        notes = []
        for table, groups in _NEEDED.items():
            lacks = self.x.lacks(table, *groups)
            lost = self.lost[table]
            if lacks and lost:
                notes.append(
                    f"{table} has no {', '.join(lacks)} column: {lost:,} of its {self.read[table]:,} "
                    "rows are left out"
                )
        for table, (group, what, placeholder) in _NAMING.items():
            if self.x.lacks(table, group) and self.kept[table]:
                notes.append(
                    f"{table} has no {'/'.join(group)} column: its {self.kept[table]:,} {what} are "
                    f"named {placeholder!r}"
                )
        return notes

    def _times(self, row: dict[str, Any], what: str, table: str) -> tuple[int, int] | None:
        start, end = row["start"], row["end"]
        if not isinstance(start, int) or not isinstance(end, int):
            self.skipped[f"{what} without {'an end' if isinstance(start, int) else 'a start'}"] += 1
            # for want of the column alone: every time it misses is in a column the table lacks
            have = self.x.columns(table)
            if all(c not in have for c, v in (("start", start), ("end", end)) if not isinstance(v, int)):
                self.lost[table] += 1
            return None
        if end < start:
            self.skipped[f"{what} ending before it starts"] += 1
            return None
        return start + self.offset, end - start

    def _text(self, text: object, text_id: object) -> str | None:
        if isinstance(text, str):
            return text
        return self.strings.get(text_id) if isinstance(text_id, int) else None

    def device_rows(self) -> None:
        copy_kinds = self.x.enum("ENUM_CUDA_MEMCPY_OPER")
        mem_kinds = self.x.enum("ENUM_CUDA_MEM_KIND")
        sync_kinds = self.x.enum("ENUM_CUPTI_SYNC_TYPE")
        extra = {
            "kernel": _KERNEL_COLUMNS,
            "memcpy": ("bytes", "copyKind", "srcKind", "dstKind"),
            "memset": ("bytes", "memKind", "value"),
            "sync": ("syncType",),
        }
        context_device: dict[tuple[int, object], int] = {}
        for kind, table in _DEVICE_TABLES:  # sync last: it takes its device from the others
            for r in self.x.select(table, _DEVICE_COLUMNS + extra[kind]):
                self.read[table] += 1
                times = self._times(r, kind, table)
                pid = _pid(r["globalPid"])
                device = r["deviceId"]
                if kind == "sync":
                    device = context_device.get((pid, r["contextId"]), device)
                elif isinstance(device, int):
                    context_device[(pid, r["contextId"])] = device
                if times is None or not isinstance(device, int) or not 0 <= device < 1 << 31:
                    if times is not None:
                        self.skipped[f"{kind} without a device"] += 1
                        if "deviceId" not in self.x.columns(table):
                            self.lost[table] += 1
                    continue
                stream = r["streamId"]
                if not isinstance(stream, int) or not 0 <= stream < 1 << 31:
                    stream = -1  # a context-wide sync has no stream (CUPTI writes 0xFFFFFFFF)
                row: dict[str, Any] = {"kind": kind, "device": device, "stream": stream, "tid": stream}
                if kind == "kernel":
                    name = self._text(None, r["demangledName"]) or self._text(None, r["shortName"])
                    row["name"] = name or "unknown kernel"
                    row["args"] = _args(
                        {
                            "grid": _dims(r, "grid"),
                            "block": _dims(r, "block"),
                            "registers per thread": r["registersPerThread"],
                            "shared memory": _sum(r["staticSharedMemory"], r["dynamicSharedMemory"]),
                        }
                    )
                elif kind == "memcpy":
                    mkind = copy_kind(copy_kinds, r["copyKind"])
                    src, dst = (
                        mem_kind(mem_kinds, r["srcKind"]),
                        mem_kind(mem_kinds, r["dstKind"]),
                    )
                    row.update(name=copy_name(mkind, src, dst), memcpy_kind=mkind, bytes=r["bytes"])
                elif kind == "memset":
                    row.update(name=f"Memset ({mem_kind(mem_kinds, r['memKind'])})", bytes=r["bytes"])
                else:
                    row["name"] = sync_name(sync_kinds, r["syncType"])
                self.devices[pid].add(device)
                self.kept[table] += 1
                self.by_pid[pid].add(
                    ts=times[0], dur=times[1], pid=pid, correlation=r["correlationId"], **row
                )

    def cuda_calls(self) -> dict[int, dict[int, list[tuple[int, int]]]]:
        """Runtime and driver calls; returns, per pid and tid, (ts, row index) of each call."""
        calls: dict[int, dict[int, list[tuple[int, int]]]] = defaultdict(lambda: defaultdict(list))
        cols = ("start", "end", "globalTid", "correlationId", "nameId", "returnValue")
        for r in self.x.select("CUPTI_ACTIVITY_KIND_RUNTIME", cols):
            self.read["CUPTI_ACTIVITY_KIND_RUNTIME"] += 1
            times = self._times(r, "CUDA call", "CUPTI_ACTIVITY_KIND_RUNTIME")
            if times is None:
                continue
            self.kept["CUPTI_ACTIVITY_KIND_RUNTIME"] += 1
            raw = self._text(None, r["nameId"]) or "unknown CUDA call"
            name, kind = runtime_name(raw)
            pid, tid = _pid(r["globalTid"]), _tid(r["globalTid"])
            rows = self.by_pid[pid]
            ret = r["returnValue"]
            args = _args({"nsys name": raw if raw != name else None, "return": ret if ret else None})
            calls[pid][tid].append((times[0], len(rows)))
            rows.add(
                ts=times[0],
                dur=times[1],
                kind=kind,
                name=name,
                pid=pid,
                tid=tid,
                device=-1,
                stream=-1,
                correlation=r["correlationId"],
                args=args,
            )
        return calls

    def nvtx(self) -> dict[int, dict[int, list[tuple[int, int, int]]]]:
        """NVTX ranges and marks; returns, per pid and tid, (ts, end, op id) of each op range."""
        ops: dict[int, dict[int, list[tuple[int, int, int]]]] = defaultdict(lambda: defaultdict(list))
        cols = ("start", "end", "eventType", "text", "textId", "globalTid", "domainId")
        domains: dict[int, str] = {}
        if "eventType" not in self.x.columns("NVTX_EVENTS"):  # no range told from a mark
            self.read["NVTX_EVENTS"] = self.lost["NVTX_EVENTS"] = self.x.count("NVTX_EVENTS")
            return ops
        for r in self.x.select("NVTX_EVENTS", cols, where=f"eventType = {_NVTX_DOMAIN_CREATE}"):
            text = self._text(r["text"], r["textId"])
            if isinstance(r["domainId"], int) and text:
                domains[r["domainId"]] = text
        kinds = ", ".join(str(k) for k in (*_NVTX_RANGES, _NVTX_MARK))
        for r in self.x.select("NVTX_EVENTS", cols, where=f"eventType IN ({kinds})"):
            self.read["NVTX_EVENTS"] += 1
            text = self._text(r["text"], r["textId"])
            if text is None:
                self.skipped["NVTX range without text"] += 1
                if self.x.lacks("NVTX_EVENTS", ("text", "textId")):
                    self.lost["NVTX_EVENTS"] += 1
                continue
            pid, tid = _pid(r["globalTid"]), _tid(r["globalTid"])
            domain = domains.get(r["domainId"]) if isinstance(r["domainId"], int) else None
            if r["eventType"] == _NVTX_MARK:
                if not isinstance(r["start"], int):
                    self.skipped["NVTX mark without a time"] += 1
                    if self.x.lacks("NVTX_EVENTS", ("start",)):
                        self.lost["NVTX_EVENTS"] += 1
                    continue
                kind, name, args, dur = "instant", text, {}, 0
                ts = r["start"] + self.offset
            else:
                times = self._times(r, "NVTX range", "NVTX_EVENTS")
                if times is None:
                    continue
                ts, dur = times
                kind, name, args = nvtx_range(text, self.step)
            if domain:
                args["domain"] = domain
            ext = args.get("op_id") if kind == "cpu_op" else None
            if isinstance(ext, int):
                ops[pid][tid].append((ts, ts + dur, ext))
            self.kept["NVTX_EVENTS"] += 1
            self.by_pid[pid].add(
                ts=ts, dur=dur, kind=kind, name=name, pid=pid, tid=tid, device=-1, stream=-1,
                external_id=ext, args=_args(args),
            )  # fmt: skip
        return ops

    def link(self, calls: dict, ops: dict) -> None:
        """Give each CUDA call the op id of its innermost enclosing op range, and the device work
        it launched (same correlation) the same."""
        for pid, threads in calls.items():
            rows = self.by_pid[pid].cols
            by_corr = self.call_ext[pid]
            for tid, tcalls in threads.items():
                for (_ts, index), ext in zip(
                    tcalls, _enclosing(ops.get(pid, {}).get(tid, []), tcalls), strict=True
                ):
                    if ext is None:
                        continue
                    rows["external_id"][index] = ext
                    corr = rows["correlation"][index]
                    if isinstance(corr, int):
                        by_corr[corr] = ext
        for pid, rows in self.by_pid.items():
            by_corr = self.call_ext.get(pid, {})
            cols = rows.cols
            for i in range(len(rows)):
                if cols["device"][i] >= 0 and cols["external_id"][i] is None:
                    cols["external_id"][i] = by_corr.get(cols["correlation"][i])


def _dims(r: dict[str, Any], prefix: str) -> list[int] | None:
    dims = [r[f"{prefix}{a}"] for a in "XYZ"]
    return dims if all(isinstance(d, int) for d in dims) else None


def _sum(*values: object) -> int | None:
    ints = [v for v in values if isinstance(v, int)]
    return sum(ints) if ints else None


def _enclosing(ops: list[tuple[int, int, int]], calls: list[tuple[int, int]]) -> list[int | None]:
    """For each call (by start, in ``calls`` order), the id of the innermost op range around it.

    NVTX push/pop ranges on one thread nest, so a stack swept along time finds it.
    """
    order = sorted(range(len(calls)), key=lambda i: calls[i][0])
    spans = sorted(ops, key=lambda o: (o[0], -o[1]))
    out: list[int | None] = [None] * len(calls)
    stack: list[tuple[int, int, int]] = []
    j = 0
    for i in order:
        ts = calls[i][0]
        while j < len(spans) and spans[j][0] <= ts:
            while stack and stack[-1][1] <= spans[j][0]:
                stack.pop()
            stack.append(spans[j])
            j += 1
        while stack and stack[-1][1] <= ts:
            stack.pop()
        out[i] = stack[-1][2] if stack else None
    return out


def _gpus(export: Export, node: str, devices: set[int]) -> list[dict[str, Any]]:
    """The GPUs as Kineto's ``deviceProperties`` name them, where the export has
    ``TARGET_INFO_GPU`` (joined to CUDA device ids by ``TARGET_INFO_CUDA_DEVICE``)."""
    found: dict[int, dict[str, Any]] = {}
    gpu_cols = ("id", "name", "totalMemory", "smCount", "computeMajor", "computeMinor", "busLocation")
    by_gpu = {r["id"]: r for r in export.select("TARGET_INFO_GPU", gpu_cols)}
    for r in export.select("TARGET_INFO_CUDA_DEVICE", ("gpuId", "cudaId")):
        g = by_gpu.get(r["gpuId"])
        if g is not None and isinstance(r["cudaId"], int) and r["cudaId"] in devices:
            props = {
                "id": r["cudaId"],
                "name": g["name"],
                "totalGlobalMem": g["totalMemory"],
                "numSms": g["smCount"],
                "computeMajor": g["computeMajor"],
                "computeMinor": g["computeMinor"],
                "busLocation": g["busLocation"],
            }
            found[r["cudaId"]] = {"node": node, **{k: v for k, v in props.items() if v is not None}}
    return [found.get(d, {"node": node, "id": d}) for d in sorted(devices)]


def _rank_order(reader: _Reader) -> list[int]:
    pids = [p for p, rows in reader.by_pid.items() if len(rows)]
    return sorted(pids, key=lambda p: (0, min(reader.devices[p]), p) if reader.devices[p] else (1, 0, p))


def convert_nsys_file(
    src: Path,
    trace_dir: Path,
    *,
    node: str | None = None,
    rank: int | None = None,
    step_pattern: str | None = None,
    progress: Progress | None = None,
) -> list[ConvertResult]:
    """Convert the Nsight Systems SQLite export ``src`` into ``trace_dir``: one events file per
    process, ``node=<node>/rank=<r>/events-<seq>.parquet``, ranks numbered from ``rank`` (0).

    ``step_pattern`` (a regex, default ``ProfilerStep#N``) names the NVTX ranges that are
    training steps. ``progress(done, total)`` gets the fraction done in bytes of ``src``. Raises
    :class:`~profui.capture.nsys.tables.NsysFormatError` naming the file when it is not an export
    or holds nothing to import. Writes only the events files: the caller owns the manifest.
    """
    src = Path(src)
    size = max(src.stat().st_size, 1) if src.exists() else 1
    try:
        step = re.compile(step_pattern or DEFAULT_STEP_PATTERN)
    except re.error as exc:
        raise NsysFormatError(src, f"bad step pattern {step_pattern!r} ({exc})") from None

    def report(fraction: float) -> None:
        if progress is not None:
            progress(int(size * fraction), size)

    try:
        with open_export(src) as export:
            return _convert(export, src, trace_dir, step, node, rank, report)
    except sqlite3.DatabaseError as exc:  # a page the header promised is missing or malformed
        raise NsysFormatError(src, f"corrupt or truncated SQLite export ({exc})") from None


def _convert(
    export: Export,
    src: Path,
    trace_dir: Path,
    step: re.Pattern[str],
    node: str | None,
    rank: int | None,
    report: Callable[[float], None],
) -> list[ConvertResult]:
    reader = _Reader(export, step)
    reader.device_rows()
    report(0.3)
    calls = reader.cuda_calls()
    report(0.45)
    ops = reader.nvtx()
    report(0.65)
    reader.link(calls, ops)
    meta = export.key_values("META_DATA_EXPORT")
    env = export.key_values("TARGET_INFO_SYSTEM_ENV", "name", "value")
    processes = {_pid(r["globalPid"]): r["name"] for r in export.select("PROCESSES", ("globalPid", "name"))}
    threads = {
        r["globalTid"]: reader.strings.get(r["nameId"])
        for r in export.select("ThreadNames", ("globalTid", "nameId"))
    }
    order = _rank_order(reader)
    notes = reader.column_notes()
    if not order:
        raise NsysFormatError(
            src,
            "Nsight Systems export with no kernel, copy, CUDA call or NVTX range in it"
            + "".join(f"; {n}" for n in notes),
        )
    host = env.get("Hostname") or meta.get("EXPORT_HOST")
    node_value = detect_node({"hostname": host} if host else {}, src, node)
    results = []
    for i, pid in enumerate(order):
        rows = reader.by_pid[pid]
        table = events_table(src, rows.cols, NsysFormatError)
        rows.cols.clear()
        rank_value = (rank or 0) + i
        tids = {g & 0xFFFFFF: n for g, n in threads.items() if _pid(g) == pid and n}
        source = {
            "file": str(src),
            "format": "nsys",
            "rank_from": "process order (GPU processes by lowest device, then by pid)",
            "metadata": {
                "pid": pid,
                "process_name": processes.get(pid),
                "hostname": host,
                "nsys_version": meta.get("EXPORT_PRODUCT_VERSION"),
                "export_schema": meta.get("EXPORT_SCHEMA_VERSION"),
                "time_offset_ns": reader.offset,
            },
            "processes": {str(pid): processes.get(pid)},
            "threads": {str(t): n for t, n in sorted(tids.items())},
        }
        if reader.skipped:
            source["skipped"] = dict(sorted(reader.skipped.items()))
        if notes:
            source["notes"] = [f"{src.name}: {n}" for n in notes]
        devices = set(reader.devices[pid])
        results.append(
            write_rank(trace_dir, node_value, rank_value, table, source, _gpus(export, node_value, devices))
        )
        report(0.65 + 0.35 * (i + 1) / len(order))
    return results
