"""``convert_jax_file``: one JAX profiler trace (``<host>.trace.json.gz``) into one events file.

``jax.profiler.trace`` writes Chrome-trace JSON: float µs relative to the profile's start,
``displayTimeUnit`` "ns", only ``X`` and ``M`` events (and a trailing ``{}``); ``pid`` is
XLA's process id (``/host:CPU``, ``/device:GPU:0``), not an OS pid. What each event becomes:

- an event with ``args.hlo_op`` is an XLA op executed: a ``kernel``. On a device process its
  device is the process's; on a CPU-only run the host threads that execute ops are the device
  lanes (device ``args.device_ordinal``, one stream per thread), and the trace's notes say so
  (:data:`~profui.capture.format.columns.CPU_LANES_NOTE`, by which analysis names them; no GPU
  is listed);
- on a device process, the ``XLA Modules``/``XLA Ops``/``Steps`` lanes are ``gpu_annotation``;
  ``Memcpy*`` on a stream is a ``memcpy``; any other stream event a ``kernel``;
- an event with ``args.step_num`` (``jax.profiler.StepTraceAnnotation``) is a ``step``, named
  ``<name>#<step_num>``;
- ``$file:line fn`` events (the Python tracer) are ``python`` frames, named without the ``$``;
- XLA's and PjRt's own host scopes are ``cpu_op``: a jitted call (``PjitFunction(f)``), a C++
  scope (``A::B``), an event that names its C++ source (``args._src``), PjRt's waits
  (:data:`_RUNTIME_SCOPES`), and anything inside one;
- every other host event is the user's ``jax.profiler.TraceAnnotation``: an ``annotation``.

Times: ``ts`` ns = round(µs × 1000) plus the profile's start (the run folder's name,
``YYYY_MM_DD_HH_MM_SS`` in local time, as JAX names it; else the file's modification time less
the trace's span).
"""

from __future__ import annotations

import json
import math
import re
import time
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any

import msgspec
import pyarrow as pa

from profui.capture.conversion.converted import empty_columns, events_table, write_rank
from profui.capture.conversion.errors import INT64_MAX, INT64_MIN, BadValue, KinetoFormatError
from profui.capture.conversion.result import ConvertResult, detect_node
from profui.capture.format.columns import CPU_LANES_NOTE
from profui.capture.kineto.reader import read_bytes

Progress = Callable[[int, int], None]

_RUN_FOLDER = re.compile(r"^[0-9]{4}_[0-9]{2}_[0-9]{2}_[0-9]{2}_[0-9]{2}_[0-9]{2}$")
#: A device ordinal as XLA writes it in args (``"0"``): ASCII digits that fit a device id (int32).
_ORDINAL = re.compile(r"^[0-9]{1,9}$")
_DEVICE_PROCESS = re.compile(r"^/device:[A-Za-z_]+:([0-9]{1,9})(?![0-9])")
_DEVICE_ANNOTATION_LANES = ("XLA Modules", "XLA Ops", "Steps", "XLA TraceMe")
_COPY_KINDS = {"h2d": "HtoD", "d2h": "DtoH", "d2d": "DtoD", "htod": "HtoD", "dtoh": "DtoH", "dtod": "DtoD"}
NOTE_CPU_LANES = CPU_LANES_NOTE


def _ns(value: object) -> int | None:
    """ns of a JSON number of µs; None when not a number, :class:`BadValue` beyond int64 ns."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    ns = value * 1000
    if not (math.isfinite(ns) and INT64_MIN <= ns <= INT64_MAX):
        raise BadValue(f"event time {value} µs is beyond the int64 nanosecond range")
    return round(ns)


def _ordinal(value: object) -> int:
    """The device of an XLA op's ``args.device_ordinal`` (an int or its digits); 0 otherwise."""
    if isinstance(value, int) and not isinstance(value, bool) and 0 <= value < 1 << 31:
        return value
    return int(value) if isinstance(value, str) and _ORDINAL.match(value) else 0


#: PjRt scopes that are neither C++-qualified nor inside a jitted call: ``block_until_ready``'s
#: waits (seen in jax 0.10's CPU traces).
_RUNTIME_SCOPES = frozenset({"Wait for usage holds", "Wait for donation holds"})


def _is_runtime_scope(name: str, args: dict[str, Any]) -> bool:
    return name.startswith("PjitFunction(") or "::" in name or "_src" in args or name in _RUNTIME_SCOPES


def profile_start_ns(src: Path, span_ns: int) -> int:
    """Epoch ns of the profile's start: the run folder's name (JAX names it by local time at the
    start), else the file's modification time less the trace's span."""
    folder = src.parent.name
    if _RUN_FOLDER.match(folder):
        try:
            return int(time.mktime(time.strptime(folder, "%Y_%m_%d_%H_%M_%S"))) * 1_000_000_000
        except (ValueError, OverflowError):
            pass  # digits that are no date (month 99): not JAX's name for the run, as below
    try:
        return max(src.stat().st_mtime_ns - span_ns, 0)
    except OSError:
        return 0


def convert_jax_file(
    src: Path,
    trace_dir: Path,
    *,
    node: str | None = None,
    rank: int | None = None,
    progress: Progress | None = None,
) -> list[ConvertResult]:
    """Convert the JAX trace ``src`` into ``trace_dir`` as one rank (``rank``, default 0) of node
    ``node`` (default: the file's host, ``<host>.trace.json.gz``). Raises
    :class:`~profui.capture.conversion.errors.KinetoFormatError` naming the file when it cannot."""
    src = Path(src)
    data = read_bytes(src)
    try:
        doc = msgspec.json.decode(data)
    except msgspec.DecodeError as exc:
        raise KinetoFormatError(src, f"not valid JSON ({exc})") from None
    del data
    events = doc.get("traceEvents") if isinstance(doc, dict) else doc
    if not isinstance(events, list):
        raise KinetoFormatError(src, "no 'traceEvents' list: not a JAX profiler trace")
    if progress is not None:
        progress(1, 2)
    try:
        table, notes, skipped = _rows(src, events)
    except BadValue as exc:
        raise KinetoFormatError(src, str(exc)) from None
    host = src.name.split(".trace.json")[0] if ".trace.json" in src.name else None
    node_value = detect_node({"hostname": host} if host and host != "perfetto_trace" else {}, src, node)
    rank_value = rank or 0
    source: dict[str, Any] = {
        "file": str(src),
        "format": "jax",
        "rank_from": "--rank" if rank is not None else "default",
        "metadata": {k: v for k, v in doc.items() if k != "traceEvents"} if isinstance(doc, dict) else {},
    }
    cpu = NOTE_CPU_LANES in notes  # the device lanes are host threads: no GPU is listed
    if notes:
        source["notes"] = notes
    if skipped:
        source["skipped"] = dict(sorted(skipped.items()))
    result = write_rank(trace_dir, node_value, rank_value, table, source, gpus=[] if cpu else None)
    if progress is not None:
        progress(2, 2)
    return [result]


def _rows(src: Path, events: list[Any]) -> tuple[pa.Table, list[str], Counter[str]]:
    processes: dict[Any, str] = {}
    threads: dict[tuple[Any, Any], str] = {}
    spans: list[dict[str, Any]] = []
    skipped: Counter[str] = Counter()
    for e in events:
        if not isinstance(e, dict) or not e:
            continue
        ph = e.get("ph")
        if ph == "M":
            name, raw_args = e.get("name"), e.get("args")
            args = raw_args if isinstance(raw_args, dict) else {}
            if name == "process_name":
                process = args.get("name", "")
                if not isinstance(process, str):  # it decides which lanes are devices
                    raise KinetoFormatError(
                        src, f"process_name of pid {e.get('pid')!r} is not a text: {json.dumps(process)[:40]}"
                    )
                processes[e.get("pid")] = process
            elif name == "thread_name":
                threads[(e.get("pid"), e.get("tid"))] = str(args.get("name", ""))
        elif ph == "X":
            spans.append(e)
        else:
            skipped[f"ph {ph!r} events"] += 1
    if not spans:
        raise KinetoFormatError(src, "no complete ('X') events: nothing to import")
    rows = empty_columns()
    lanes: dict[tuple[Any, Any], int] = {}
    cpu_lanes = False
    times = []
    for e in spans:
        ts, dur = _ns(e.get("ts")), _ns(e.get("dur", 0))
        pid, tid = e.get("pid"), e.get("tid")
        if ts is None or dur is None or dur < 0 or not isinstance(pid, int) or not isinstance(tid, int):
            skipped["X events without a time, a duration or integer ids"] += 1
            continue
        times.append((ts, dur, e))
    if not times:
        raise KinetoFormatError(src, "no complete ('X') event with a time, a duration and integer ids")
    times.sort(key=lambda t: (t[2]["pid"], t[2]["tid"], t[0], -t[1]))
    start_ns = profile_start_ns(src, max(t + d for t, d, _ in times) - min(t for t, _, _ in times))
    stack: list[tuple[int, bool]] = []  # (end, is a runtime scope or inside one) per open event
    thread = None
    for ts, dur, e in times:
        pid, tid, name = e["pid"], e["tid"], str(e.get("name", ""))
        raw_args = e.get("args")
        args = raw_args if isinstance(raw_args, dict) else {}
        if (pid, tid) != thread:
            thread, stack = (pid, tid), []
        while stack and stack[-1][0] <= ts:
            stack.pop()
        device_process = _DEVICE_PROCESS.match(processes.get(pid, ""))
        device, stream, mkind = -1, -1, None
        if device_process:
            device = int(device_process[1])
            stream = lanes.setdefault((pid, tid), len([k for k in lanes if k[0] == pid]))
            lane_name = threads.get((pid, tid), "")
            if lane_name in _DEVICE_ANNOTATION_LANES:
                kind = "gpu_annotation"
            elif name.lower().startswith("memcpy"):
                kind = "memcpy"
                mkind = next((v for k, v in _COPY_KINDS.items() if k in name.lower()), None)
            else:
                kind = "kernel"
        elif "hlo_op" in args:
            kind, cpu_lanes = "kernel", True
            device = _ordinal(args.get("device_ordinal", 0))
            stream = lanes.setdefault((pid, tid), len(lanes))
        elif "step_num" in args:
            kind, name = "step", f"{name}#{args['step_num']}"
        elif name.startswith("$"):
            kind, name = "python", name[1:]
        elif (stack and stack[-1][1]) or _is_runtime_scope(name, args):
            kind = "cpu_op"
        else:
            kind = "annotation"
        if device < 0:
            stack.append((ts + dur, kind == "cpu_op"))
        rows["ts"].append(ts + start_ns)
        rows["dur"].append(dur)
        rows["kind"].append(kind)
        rows["name"].append(name)
        rows["pid"].append(pid)
        rows["tid"].append(tid)
        rows["device"].append(device)
        rows["stream"].append(stream)
        rows["memcpy_kind"].append(mkind)
        rows["args"].append(json.dumps(args, separators=(",", ":")) if args else None)
        for f in ("correlation", "external_id", "bytes"):
            rows[f].append(None)
    notes = [NOTE_CPU_LANES] if cpu_lanes else []
    table = events_table(src, rows, KinetoFormatError)
    return table, notes, skipped
