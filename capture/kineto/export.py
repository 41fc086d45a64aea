"""Writing events as Chrome-trace JSON (Kineto's dialect) that Perfetto UI and chrome://tracing open.

The file is what PyTorch Profiler would have written for the same events, so profui (and HTA)
import it back: kinds as Kineto's categories (:data:`~.mapping.CANONICAL_CAT`, or the source's
own category kept in args), ``External id``/``correlation``/``device``/``stream``/``bytes`` in
args, launch -> device-work flows (``ac2g``, one id per arrow), process and thread names, and the sampled metrics
as counters. Exact ns are kept: times are written relative to ``baseTimeNanoseconds`` as µs with
three decimals, text that the Kineto importer reads back to the ns.

Host events keep their pids (unless two ranks share one); each GPU gets a pid of its own
(``1e9 + rank * 1000 + device``: a host pid may be any small number), every process named
``<node> rank <r> ...`` so Perfetto shows one group per rank. A file of several ranks is for
viewing: the importer refuses it (export one rank per file to import again).
"""

from __future__ import annotations

import gzip
import json
import os
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import IO, Any

import msgspec
import pyarrow as pa

from profui.capture.format import TraceFormatError
from profui.capture.format.regular import not_regular

from .mapping import CANONICAL_CAT, STEP_MARK, STEP_PREFIX

Progress = Callable[[int, int], None]

_HOST_CALLS = ("runtime", "driver")
_DEVICE_KINDS = ("kernel", "memcpy", "memset", "sync", "gpu_annotation")
_DEVICE_PID_BASE = 1_000_000_000  # several ranks: a device's pid is base + rank * 1000 + device
_METRICS_PID_BASE = 3_000_000_000
_BATCH = 65_536


def _us(ns: int) -> str:
    """``ns`` as µs text with three decimals, exact (``1234567`` -> ``1234.567``)."""
    q, r = divmod(ns, 1000)
    return f"{q}.{r:03d}"


_encode = msgspec.json.Encoder().encode


def _text(value: object) -> str:
    return _encode(value).decode()


class _Pids:
    """The pid each (node, rank, host pid) and (node, rank, device) is written with."""

    def __init__(self, single: bool) -> None:
        self.single = single
        self.host: dict[tuple[str, int, int], int] = {}
        self.used: set[int] = set()
        self.names: dict[int, str] = {}
        self.sort: dict[int, int] = {}

    def host_pid(self, node: str, rank: int, pid: int) -> int:
        key = (node, rank, pid)
        if key not in self.host:
            out = pid
            while out in self.used:  # another rank has the same OS pid
                out += 1 << 32
            self.host[key] = out
            self.used.add(out)
            self.names[out] = f"{node} rank {rank} · pid {pid}"
            self.sort[out] = rank * 2
        return self.host[key]

    def device_pid(self, node: str, rank: int, device: int) -> int:
        # a pid of its own, never the device number: host pids 0-7 exist (pid 1 in containers)
        out = _DEVICE_PID_BASE + rank * 1000 + device
        if out not in self.names:
            self.names[out] = f"{node} rank {rank} · GPU {device}"
            self.sort[out] = rank * 2 + 1
            self.used.add(out)
        return out


def _rows(table: pa.Table) -> Iterator[dict[str, Any]]:
    for batch in table.to_batches(_BATCH):
        yield from batch.to_pylist()


def check_output(out: Path, force: bool) -> None:
    """Raise :class:`TraceFormatError` unless ``out`` may be written: it is new, or a regular file
    and ``force`` says to replace it. A FIFO, a device or a socket is never replaced, even with
    ``force``: the rename would destroy the node it names."""
    problem = not_regular(out)
    if problem is not None:
        raise TraceFormatError(out, f"output {problem}; give the name of a file to write")
    if out.is_dir():
        raise TraceFormatError(out, "output is a folder; give a file name such as trace.json.gz")
    if out.exists() and not force:
        raise TraceFormatError(out, "output file exists; use --force to replace it")


def write_chrome_trace(
    out: Path,
    events: pa.Table,
    metrics: pa.Table | None = None,
    *,
    name: str,
    gpus: list[dict[str, Any]] | None = None,
    world_size: int | None = None,
    notes: list[str] | None = None,
    force: bool = False,
    progress: Progress | None = None,
) -> dict[str, int]:
    """Write ``events`` (the trace format's columns plus ``node``, ``rank``; sorted by rank and
    time) as Chrome-trace JSON at ``out`` (gzip when it ends in ``.gz``), atomically.

    ``metrics`` (``node, ts, source, device, metric, value``) become counter events; ``gpus``
    (the manifest's) become ``deviceProperties``; ``notes`` (what the source's importer said)
    go under ``profui.notes``, which the Kineto importer reads back. Refuses an existing ``out`` unless ``force``.
    Returns counts: ``events``, ``flows``, ``counters``.
    """
    out = Path(out)
    check_output(out, force)
    if events.num_rows == 0:
        raise TraceFormatError(out, "nothing to export: the selection holds no events")
    ranks = sorted(set(zip(events["node"].to_pylist(), events["rank"].to_pylist(), strict=True)))
    base = min(events["ts"].to_pylist())
    tmp = out.with_name(f".{out.name}.writing-{os.getpid()}")
    try:
        gz = out.name.endswith(".gz")
        with (
            gzip.open(tmp, "wt", encoding="utf-8", compresslevel=6)
            if gz
            else open(tmp, "w", encoding="utf-8")
        ) as fh:
            meta = {"name": name, "gpus": gpus or [], "world_size": world_size, "notes": notes or []}
            counts = _write(fh, events, metrics, ranks, base, meta, progress)
        os.replace(tmp, out)
    except OSError as exc:
        raise TraceFormatError(out, f"cannot write the export ({exc.strerror or exc})") from None
    finally:
        if tmp.exists():
            tmp.unlink()
    return counts


def _write(
    fh: IO[str],
    events: pa.Table,
    metrics: pa.Table | None,
    ranks: list[tuple[str, int]],
    base: int,
    meta: dict[str, Any],
    progress: Progress | None,
) -> dict[str, int]:
    single = len(ranks) == 1
    gpus, world_size = meta["gpus"], meta["world_size"]
    head: dict[str, Any] = {"schemaVersion": 1, "traceName": meta["name"], "baseTimeNanoseconds": base}
    nodes = {n for n, _ in ranks}
    props = [{k: v for k, v in g.items() if k != "node"} for g in gpus if g.get("node") in nodes]
    if props:
        head["deviceProperties"] = props
    if single:
        head["distributedInfo"] = {"rank": ranks[0][1], "world_size": world_size or 1}
        head["hostname"] = ranks[0][0]
    head["profui"] = {"ranks": [{"node": n, "rank": r} for n, r in ranks], "notes": meta["notes"]}
    fh.write(json.dumps(head, ensure_ascii=False)[:-1] + ',"traceEvents":[\n')
    pids = _Pids(single)
    threads: dict[tuple[int, int], str] = {}
    launches: dict[tuple[str, int, int], tuple[int, int, int]] = {}
    device_work: list[tuple[str, int, int, int, int, int]] = []
    n = 0
    total = events.num_rows
    pending: list[str] = []
    written = [False]
    names: dict[str, str] = {}

    def flush() -> None:
        if pending:
            fh.write(("" if not written[0] else ",\n") + ",\n".join(pending))
            written[0] = True
            pending.clear()

    def emit(text: str) -> None:
        pending.append(text)
        if len(pending) >= 4096:
            flush()

    def named(s: str) -> str:
        out = names.get(s)
        if out is None:
            out = names[s] = _text(s)
        return out

    for row in _rows(events):
        node, rank, kind = row["node"], row["rank"], row["kind"]
        args = json.loads(row["args"]) if row["args"] else {}
        if kind in ("memcpy", "memset"):
            # a copy's kind decides how it is read back, not a source category (MTIA's DMA
            # transfers are mtia_ccp_events): written as Kineto's, the source's kept in args
            cat = CANONICAL_CAT[kind]
            if row["memcpy_kind"] is not None and not row["name"].startswith(f"Memcpy {row['memcpy_kind']}"):
                args["kind"] = row["memcpy_kind"]
        else:
            cat = args.pop("cat", None) or CANONICAL_CAT.get(kind, "user_annotation")
        named_pid, named_tid = args.pop("pid", None), args.pop("tid", None)
        on_device = kind in _DEVICE_KINDS and row["device"] >= 0
        if on_device:
            pid = pids.device_pid(node, rank, row["device"])
            tid = row["stream"]
            args["device"], args["stream"] = row["device"], row["stream"]
            # a context-wide sync names no stream (CUPTI writes 0xFFFFFFFF, kept as -1)
            threads.setdefault((pid, tid), f"stream {tid}" if tid >= 0 else "no stream")
        else:
            pid = pids.host_pid(node, rank, row["pid"])
            tid = row["tid"]
            threads.setdefault((pid, tid), f"thread {tid}")
        if row["external_id"] is not None:
            args["External id"] = row["external_id"]
        if row["correlation"] is not None:
            args["correlation"] = row["correlation"]
            if kind in _HOST_CALLS:
                launches[(node, rank, row["correlation"])] = (pid, tid, row["ts"])
            elif on_device:
                device_work.append((node, rank, row["correlation"], pid, tid, row["ts"]))
        if row["bytes"] is not None:
            args["bytes"] = row["bytes"]
        if kind == "step" and not row["name"].startswith(STEP_PREFIX):
            args[STEP_MARK] = True
        # a source's named pid/tid (Kineto keeps them in args) is written back as the name
        pid_text = _text(named_pid) if named_pid is not None else str(pid)
        tid_text = _text(named_tid) if named_tid is not None else str(tid)
        ts = _us(row["ts"] - base)
        fields = f'"cat":{named(cat)},"name":{named(row["name"])},"pid":{pid_text},"tid":{tid_text},"ts":{ts}'
        extra = f',"args":{_text(args)}' if args else ""
        if kind == "instant":
            emit(f'{{"ph":"i","s":"t",{fields}{extra}}}')
        else:
            emit(f'{{"ph":"X",{fields},"dur":{_us(row["dur"])}{extra}}}')
        n += 1
        if progress is not None and n % _BATCH == 0:
            progress(n, total)
    flows = 0
    for node, rank, corr, pid, tid, work_ts in device_work:
        launch = launches.get((node, rank, corr))
        if launch is None:
            continue
        # one id per arrow: viewers pair a flow's start and end by id, and one launch (a CUDA
        # graph's) may start hundreds of kernels under one correlation; the correlation itself
        # is in both events' args, which is what the importer reads back
        flow_id = flows + 1
        lpid, ltid, lts = launch
        emit(
            f'{{"ph":"s","id":{flow_id},"pid":{lpid},"tid":{ltid},"ts":{_us(lts - base)},"cat":"ac2g","name":"ac2g"}}'
        )
        emit(
            f'{{"ph":"f","id":{flow_id},"pid":{pid},"tid":{tid},"ts":{_us(work_ts - base)},'
            '"cat":"ac2g","name":"ac2g","bp":"e"}'
        )
        flows += 1
    counters = _counters(emit, metrics, sorted({n for n, _ in ranks}), base, pids)
    for pid, label in sorted(pids.names.items()):
        emit(f'{{"ph":"M","name":"process_name","pid":{pid},"tid":0,"args":{{"name":{_text(label)}}}}}')
        sort = pids.sort.get(pid, 0)
        emit(f'{{"ph":"M","name":"process_sort_index","pid":{pid},"tid":0,"args":{{"sort_index":{sort}}}}}')
    for (pid, tid), label in sorted(threads.items()):
        emit(f'{{"ph":"M","name":"thread_name","pid":{pid},"tid":{tid},"args":{{"name":{_text(label)}}}}}')
    flush()
    fh.write("\n]}\n")
    if progress is not None:
        progress(total, total)
    return {"events": n, "flows": flows, "counters": counters}


def _counters(
    emit: Callable[[str], None], metrics: pa.Table | None, nodes: list[str], base: int, pids: _Pids
) -> int:
    if metrics is None or metrics.num_rows == 0:
        return 0
    n = 0
    node_pid = {node: _METRICS_PID_BASE + i for i, node in enumerate(nodes)}
    for node, pid in node_pid.items():
        pids.names[pid] = f"{node} · sampled metrics"
        pids.sort[pid] = -1
    for row in _rows(metrics):
        metric_pid = node_pid.get(row["node"])
        if metric_pid is None or row["ts"] < base:
            continue
        label = row["metric"] if row["device"] < 0 else f"{row['metric']} (GPU {row['device']})"
        value = row["value"]
        if value != value or value in (float("inf"), float("-inf")):  # NaN/inf are not JSON
            continue
        emit(
            f'{{"ph":"C","name":{_text(label)},"pid":{metric_pid},"tid":0,"ts":{_us(row["ts"] - base)},'
            f'"args":{{"value":{value!r}}}}}'
        )
        n += 1
    return n
