"""``convert_nsys_file``: one Nsight Systems SQLite export into the trace format, a rank per process.

What each table becomes (names as :mod:`.names` spells them):

- ``CUPTI_ACTIVITY_KIND_KERNEL`` -> ``kernel`` (demangled name, device, stream, correlation;
  grid, block, registers and shared memory in args);
- ``..._MEMCPY`` -> ``memcpy`` (``copyKind`` -> ``memcpy_kind``, bytes), ``..._MEMSET`` ->
  ``memset``, ``..._SYNCHRONIZATION`` -> ``sync`` on the device of its CUDA context (CUPTI's
  sync records carry no device: Nsight writes ``deviceId`` 0 for every one, on every GPU);
- ``..._RUNTIME`` -> ``runtime`` (``cuda*``) or ``driver`` (``cu*``) on its host thread; its
  ``correlationId`` links it to the device work it launched;
- ``NVTX_EVENTS`` push/pop and start/end ranges -> ``step`` (the step pattern), ``cpu_op``
  (PyTorch's ``--pytorch=autograd-nvtx`` op ranges) or ``annotation`` (the user's, with their
  domain); marks -> ``instant``.

A CUDA call gets as ``external_id`` the op id of the innermost op range around it on its thread,
and the device work it launched the same, as Kineto links ops to kernels. ``globalPid`` /
``globalTid`` pack ``pid = (g >> 24) & 0xFFFFFF`` and ``tid = g & 0xFFFFFF``. Each process with
events is one rank: those that used a GPU first, by their lowest device, then the others by pid.

How: SQL reads each table (:mod:`.queries`: values typed, rows left out said why, a sync row's
device found from its CUDA context), Arrow names the rows and writes their args (:mod:`.names`,
:mod:`.arrays`), numpy links calls to ops (:mod:`.link`). sqlite3 hands a query's rows over as
Python tuples (it has no columnar API): :meth:`.Export.fetch` turns them into columns, and from
there each column is an Arrow array, not a Python object per row.
"""

from __future__ import annotations

import re
import sqlite3
from collections import Counter
from collections.abc import Callable, Sequence
from itertools import compress
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from profui.capture.conversion.converted import EVENT_FIELDS, events_table, write_rank
from profui.capture.conversion.result import ConvertResult, detect_node

from . import names, queries
from .arrays import (
    blank_null,
    exact,
    int_scalar,
    json_numbers,
    json_objects,
    json_strings,
    lookup,
    strings,
    text_scalar,
)
from .arrays import cells as text_cells
from .link import enclosing_ops, launched_by
from .tables import Export, NsysFormatError, open_export

Progress = Callable[[int, int], None]

#: Per table, the columns (groups of alternatives) without which its rows cannot become events
#: (a sync row without deviceId may take its device from its CUDA context; an NVTX mark needs
#: no end), and the columns that name its events, with the name they get without them.
_NEEDED: dict[str, tuple[tuple[str, ...], ...]] = {
    **{table: (("start",), ("end",), ("deviceId",)) for _, table, _ in queries.DEVICE_TABLES},
    "CUPTI_ACTIVITY_KIND_RUNTIME": (("start",), ("end",)),
    "NVTX_EVENTS": (("start",), ("end",), ("eventType",), ("text", "textId")),
}
_NAMING: dict[str, tuple[tuple[str, ...], str, str]] = {
    "CUPTI_ACTIVITY_KIND_KERNEL": (("demangledName", "shortName"), "kernels", "unknown kernel"),
    "CUPTI_ACTIVITY_KIND_RUNTIME": (("nameId",), "CUDA calls", "unknown CUDA call"),
}
_TYPES = {"kind": pa.string(), "name": pa.string(), "memcpy_kind": pa.string(), "args": pa.string()}
_INT = pa.int64()
_NO_INT = int_scalar(None)
_INT32_MAX = int_scalar(queries.INT32_MAX)

#: The events of one table, column by column (kept rows only): the trace's columns and, named
#: with a leading underscore, what linking needs.
Part = dict[str, pa.Array]


def _shared_memory(static: pa.Array, dynamic: pa.Array) -> pa.Array:
    """The kernel's shared memory as JSON numbers: static + dynamic, either missing read as 0,
    null where both are; exact beyond int64 (the JSON number is as long as it needs)."""
    total = exact("add", pc.fill_null(static, int_scalar(0)), pc.fill_null(dynamic, int_scalar(0)))
    text = (
        total.cast(pa.string())
        if isinstance(total, pa.Array)
        else pa.array([str(v) for v in total], pa.string())
    )
    return pc.if_else(pc.and_(pc.is_null(static), pc.is_null(dynamic)), text_scalar(None), text)


class _Reader:
    """The export's tables as events, column by column, and what was left out of them."""

    def __init__(self, export: Export, src: Path, step: re.Pattern[str]) -> None:
        self.x = export
        self.src = src
        self.step = step
        self.string_ids = export.string_ids()
        self.offset = export.epoch_offset_ns()
        self.skipped: Counter[str] = Counter()
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

    def _keep(self, table: str, reason: pa.Array, lost: pa.Array) -> pa.Array:
        """Count the rows of ``table`` and why those with a ``reason`` are left out; the mask
        of the others."""
        keep = pc.is_null(reason)
        self.read[table] += len(reason)
        self.kept[table] += pc.sum(keep).as_py() or 0
        self.lost[table] += pc.sum(pc.if_else(keep, int_scalar(0), pc.cast(lost, _INT))).as_py() or 0
        for counted in pc.value_counts(pc.drop_null(reason)).to_pylist():
            self.skipped[counted["values"]] += counted["counts"]
        return keep

    def _ints(self, cells: Sequence[Any], keep: pa.Array) -> pa.Array:
        """The kept cells of an integer column the trace copies as they are."""
        cells = text_cells(cells)
        try:
            return pc.filter(pa.array(cells, _INT), keep)
        except (OverflowError, pa.ArrowInvalid, pa.ArrowTypeError):
            kept = [c for c, k in zip(cells, keep.to_pylist(), strict=True) if k]
            try:
                return pa.array(kept, _INT)
            except (OverflowError, pa.ArrowInvalid) as exc:
                raise NsysFormatError(self.src, f"a value no trace can hold ({exc})") from None

    def _times(self, start: pa.Array, end: pa.Array) -> tuple[pa.Array, pa.Array]:
        """``ts`` (ns since the epoch) and ``dur`` of rows with integer times."""
        ts, dur = exact("add", start, self.offset), exact("subtract", end, start)
        try:  # a value beyond int64 on the way (a list) must come back within it
            return pa.array(ts, _INT), pa.array(dur, _INT)
        except OverflowError as exc:
            raise NsysFormatError(self.src, f"a value no trace can hold ({exc})") from None

    def _names(self, ids: pa.Array) -> pa.Array:
        return lookup(ids, *self.string_ids)

    def device_rows(self) -> list[Part]:
        """Kernels, copies, memsets and syncs, a part per table."""
        copy_kinds = self.x.enum("ENUM_CUDA_MEMCPY_OPER")
        mem_kinds = self.x.enum("ENUM_CUDA_MEM_KIND")
        sync_kinds = self.x.enum("ENUM_CUPTI_SYNC_TYPE")
        #: (pid, context) -> the device of its last kernel, copy or memset with an integer one:
        #: a sync row's device (CUPTI's carry none). Python compares the contexts, as before.
        contexts: dict[tuple[object, object], int] = {}
        parts = []
        for kind, table, _ in queries.DEVICE_TABLES:  # sync last: it takes its device from the others
            sql = queries.device_rows(self.x, kind, table)
            if sql is None:
                continue
            cols = self.x.fetch(sql)
            keys = zip(cols["pid"], text_cells(cols["context"]), strict=True)
            if kind == "sync":
                device = pa.array(
                    [contexts.get(k, d) for k, d in zip(keys, cols["device"], strict=True)], _INT
                )
            else:
                if "CUPTI_ACTIVITY_KIND_SYNCHRONIZATION" in self.x.tables:
                    contexts.update(
                        compress(
                            zip(keys, cols["device"], strict=True), [d is not None for d in cols["device"]]
                        )
                    )
                device = pa.array(cols["device"], _INT)
            valid = pc.fill_null(
                pc.and_(pc.greater_equal(device, int_scalar(0)), pc.less_equal(device, _INT32_MAX)), False
            )
            reason = pc.coalesce(
                strings(cols["reason"]),
                pc.if_else(valid, text_scalar(None), text_scalar(f"{kind} without a device")),
            )
            keep = self._keep(table, reason, pa.array(cols["lost"], _INT))

            def kept(
                name: str, type: pa.DataType = _INT, cols: dict = cols, keep: pa.Array = keep
            ) -> pa.Array:
                return pc.filter(pa.array(cols[name], type), keep)

            ts, dur = self._times(kept("s"), kept("e"))
            stream = kept("stream")
            part: Part = {
                "ts": ts,
                "dur": dur,
                "kind": pa.repeat(text_scalar(kind), len(ts)),
                "pid": kept("pid"),
                "tid": stream,
                "device": pc.filter(device, keep),
                "stream": stream,
                "correlation": self._ints(cols["correlation"], keep),
                "_corr": kept("corr"),
            }
            if kind == "kernel":
                name = pc.coalesce(
                    blank_null(self._names(kept("demangled"))),
                    blank_null(self._names(kept("short"))),
                    text_scalar("unknown kernel"),
                )
                registers = pc.filter(json_numbers(cols["registers"]), keep)
                part["name"] = name
                part["args"] = json_objects(
                    [
                        ("grid", kept("grid", pa.string())),
                        ("block", kept("block", pa.string())),
                        ("registers per thread", registers),
                        ("shared memory", _shared_memory(kept("static_shared"), kept("dynamic_shared"))),
                    ],
                    len(ts),
                )
            elif kind == "memcpy":
                part["name"], part["memcpy_kind"] = names.copy_names(
                    copy_kinds, mem_kinds, kept("copy_kind"), kept("src_kind"), kept("dst_kind")
                )
                part["bytes"] = self._ints(cols["bytes"], keep)
            elif kind == "memset":
                part["name"] = names.memset_names(mem_kinds, kept("mem_kind"))
                part["bytes"] = self._ints(cols["bytes"], keep)
            else:
                part["name"] = names.sync_names(sync_kinds, kept("sync_type"))
            parts.append(part)
        return parts

    def cuda_calls(self) -> Part | None:
        """Runtime and driver calls."""
        sql = queries.cuda_calls(self.x)
        if sql is None:
            return None
        table = "CUPTI_ACTIVITY_KIND_RUNTIME"
        cols = self.x.fetch(sql)
        keep = self._keep(table, strings(cols["reason"]), pa.array(cols["lost"], _INT))

        def kept(name: str) -> pa.Array:
            return pc.filter(pa.array(cols[name], _INT), keep)

        start = kept("s")
        ts, dur = self._times(start, kept("e"))
        raw = pc.fill_null(blank_null(self._names(kept("name_id"))), text_scalar("unknown CUDA call"))
        name, kind = names.runtime_names(raw)
        renamed = pc.if_else(pc.not_equal(raw, name), raw, text_scalar(None))
        returned = pc.filter(json_numbers(cols["ret"], drop_falsy=True), keep)
        n = len(ts)
        return {
            "ts": ts,
            "dur": dur,
            "kind": kind,
            "name": name,
            "pid": kept("pid"),
            "tid": kept("tid"),
            "device": pa.repeat(int_scalar(-1), n),
            "stream": pa.repeat(int_scalar(-1), n),
            "correlation": self._ints(cols["correlation"], keep),
            "args": json_objects([("nsys name", json_strings(renamed)), ("return", returned)], n),
            "_corr": kept("corr"),
            "_start": start,
        }

    def _domains(self) -> tuple[pa.Array, pa.Array]:
        """The NVTX domains' names: (domain ids, names)."""
        found: dict[int, str] = {}
        sql = queries.nvtx_domains(self.x)
        if sql is not None:
            cols = self.x.fetch(sql)
            texts = pc.coalesce(strings(cols["text"]), self._names(pa.array(cols["text_id"], _INT)))
            for domain, text in zip(cols["domain"], texts.to_pylist(), strict=True):
                if domain is not None and text:
                    found[domain] = text
        return pa.array(list(found), _INT), pa.array(list(found.values()), pa.string())

    def nvtx(self) -> Part | None:
        """NVTX ranges and marks."""
        table = "NVTX_EVENTS"
        sql = queries.nvtx_events(self.x)
        if sql is None:  # no range told from a mark
            self.read[table] = self.lost[table] = self.x.count(table)
            return None
        domains = self._domains()
        cols = self.x.fetch(sql)
        texts = pc.coalesce(strings(cols["text"]), self._names(pa.array(cols["text_id"], _INT)))
        no_text = pc.is_null(texts)
        lacks_text = 1 if self.x.lacks(table, ("text", "textId")) else 0
        keep = self._keep(
            table,
            pc.if_else(no_text, text_scalar("NVTX range without text"), strings(cols["reason"])),
            pc.if_else(no_text, int_scalar(lacks_text), pa.array(cols["lost"], _INT)),
        )

        def kept(name: str) -> pa.Array:
            return pc.filter(pa.array(cols[name], _INT), keep)

        start, end = kept("s"), kept("e")
        mark = pc.cast(kept("mark"), pa.bool_())
        text = pc.filter(texts, keep)
        ts, dur = self._times(start, pc.if_else(mark, start, end))
        ranges = names.nvtx_ranges(text, self.step)
        op_id = pc.if_else(mark, _NO_INT, ranges["op_id"])
        seq = pc.if_else(mark, _NO_INT, ranges["seq"])
        rest = pc.if_else(mark, text_scalar(None), ranges["rest"])
        domain = lookup(kept("domain"), *domains)
        n = len(ts)
        return {
            "ts": ts,
            "dur": dur,
            "kind": pc.if_else(mark, text_scalar("instant"), ranges["kind"]),
            "name": pc.if_else(mark, text, ranges["name"]),
            "pid": kept("pid"),
            "tid": kept("tid"),
            "device": pa.repeat(int_scalar(-1), n),
            "stream": pa.repeat(int_scalar(-1), n),
            "external_id": op_id,
            "args": json_objects(
                [
                    ("op_id", op_id.cast(pa.string())),
                    ("Sequence number", seq.cast(pa.string())),
                    ("nvtx", json_strings(rest)),
                    ("domain", json_strings(domain)),
                ],
                n,
            ),
            "_start": start,
            "_end": end,
        }


def _numpy(part: Part, columns: dict[str, str], where: pa.Array | None = None) -> dict[str, np.ndarray]:
    """``columns`` (new name -> the part's) of ``part``'s rows (those ``where`` holds) as numpy."""
    return {
        k: (part[c] if where is None else pc.filter(part[c], where)).to_numpy(zero_copy_only=False)
        for k, c in columns.items()
    }


def _link(devices: list[Part], calls: Part | None, nvtx: Part | None) -> None:
    """Give each CUDA call the op id of its innermost enclosing op range, and the device work
    it launched (same correlation) the same (:mod:`.link`)."""
    if calls is None:
        return
    thread = {"pid": "pid", "tid": "tid", "start": "_start"}
    if nvtx is None:
        ops = {k: np.zeros(0, np.int64) for k in ("pid", "tid", "start", "end", "ext")}
    else:
        ops = _numpy(nvtx, {**thread, "end": "_end", "ext": "external_id"}, pc.is_valid(nvtx["external_id"]))
    ext, found = enclosing_ops(_numpy(calls, thread), ops)
    calls["external_id"] = pa.array(ext, _INT, mask=~found)
    linked = pc.and_(pa.array(found), pc.is_valid(calls["_corr"]))
    launchers = _numpy(calls, {"pid": "pid", "tid": "tid", "corr": "_corr", "ext": "external_id"}, linked)
    for part in devices:
        ext, found = launched_by(launchers, {"pid": part["pid"], "corr": part["_corr"]})
        part["external_id"] = pa.array(ext, _INT, mask=~found)


def _events(parts: list[Part]) -> dict[str, pa.Array]:
    """The parts one after another: every events column."""
    out = {}
    for f in EVENT_FIELDS:
        type = _TYPES.get(f, _INT)
        columns = [p[f].cast(type) if f in p else pa.nulls(len(p["ts"]), type) for p in parts]
        out[f] = pa.concat_arrays(columns) if columns else pa.array([], type)
    return out


def _rank_order(pids: pa.Array, devices: pa.Array) -> tuple[list[int], dict[int, set[int]]]:
    """The processes with events as ranks: those that used a GPU first, by their lowest device,
    then the others by pid; and the devices of each."""
    used: dict[int, set[int]] = {}
    for pid in pc.unique(pids).to_pylist():
        on = pc.and_(pc.equal(pids, int_scalar(pid)), pc.greater_equal(devices, int_scalar(0)))
        used[pid] = set(pc.unique(pc.filter(devices, on)).to_pylist())
    order = sorted(used, key=lambda p: (0, min(used[p]), p) if used[p] else (1, 0, p))
    return order, used


def _processes(export: Export) -> tuple[dict[int, Any], dict[int, tuple[int, int, Any]]]:
    """The processes' names (pid -> name) and the threads' (globalTid -> (pid, tid, name)); a
    thread without an integer ``globalTid`` has no name (ae71989 failed on one, with a TypeError,
    where its process had events)."""
    processes: dict[int, Any] = {}
    sql = queries.processes(export)
    if sql is not None:
        cols = export.fetch(sql)
        processes = dict(zip(cols["pid"], text_cells(cols["name"]), strict=True))
    threads: dict[int, tuple[int, int, Any]] = {}
    sql = queries.thread_names(export)
    if sql is not None:
        strings = export.strings()
        cols = export.fetch(sql)
        rows = zip(cols["g"], cols["pid"], cols["tid"], cols["name_id"], strict=True)
        threads = {g: (pid, tid, strings.get(name_id)) for g, pid, tid, name_id in rows}
    return processes, threads


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
        step = re.compile(step_pattern or names.DEFAULT_STEP_PATTERN)
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
    reader = _Reader(export, src, step)
    devices = reader.device_rows()
    report(0.3)
    calls = reader.cuda_calls()
    report(0.45)
    nvtx = reader.nvtx()
    report(0.65)
    _link(devices, calls, nvtx)
    events = _events([p for p in (*devices, calls, nvtx) if p is not None])
    meta = export.key_values("META_DATA_EXPORT")
    env = export.key_values("TARGET_INFO_SYSTEM_ENV", "name", "value")
    processes, threads = _processes(export)
    order, used = _rank_order(events["pid"], events["device"])
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
        mine = pc.equal(events["pid"], int_scalar(pid))
        table = events_table(src, {f: pc.filter(c, mine) for f, c in events.items()}, NsysFormatError)
        rank_value = (rank or 0) + i
        tids = {tid: n for p, tid, n in threads.values() if p == pid and n}
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
        results.append(
            write_rank(trace_dir, node_value, rank_value, table, source, _gpus(export, node_value, used[pid]))
        )
        report(0.65 + 0.35 * (i + 1) / len(order))
    return results
