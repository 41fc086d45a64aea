"""What a trace holds (``profui info``): manifest, ranks, devices, time span, counts by kind.

Plain JSON-ready data; the command line only renders it. Each events file is counted once
(:func:`count_file`: numpy over four columns read by pyarrow, quick on big traces) and its tally
kept in the trace's record (:mod:`.inventory_record`), so a later ``info`` of an unchanged trace
reads no events and loads neither pyarrow nor numpy: most of a small trace's ``info`` was their
start-up.
"""

from __future__ import annotations

import functools
from collections import Counter
from pathlib import Path
from typing import Any

from profui.capture.format import TraceFormatError, open_trace_dir
from profui.capture.format.code_version import code_version
from profui.capture.format.opener import TraceDir, TraceFile

from . import inventory_record
from .inventory_record import FileTally

#: The version of ``profui info --json``: raised when a key changes meaning or goes.
VERSION = 1
#: Its top-level keys, in order.
KEYS = (
    "version",
    "path",
    "manifest",
    "span",
    "num_events",
    "num_event_files",
    "num_metric_rows",
    "counts",
    "ranks",
    "devices",
)
#: Its ``manifest``'s keys.
MANIFEST_KEYS = (
    "name",
    "status",
    "source",
    "synthetic",
    "command",
    "exit_code",
    "start_ns",
    "end_ns",
    "hosts",
    "ranks",
    "gpus",
    "versions",
    "sources",
    "notes",
    "source_notes",
)
#: The keys of a ``manifest.gpus`` item profui's writers know, each with its JSON type and
#: meaning: NVML's (profcap), the synthetic sample's, Kineto's ``deviceProperties`` (imports;
#: Nsight's exports say theirs in the same words). A trace's GPU names each key its source told.
GPU_KEYS: dict[str, tuple[str, str]] = {
    "node": ("string", "host name of the GPU's node (imports, the synthetic sample)"),
    "index": ("integer", "device number as NVML counts (profcap, the synthetic sample)"),
    "id": ("integer", "device number as CUDA counts (Kineto's deviceProperties, Nsight)"),
    "name": ("string", "the GPU's model"),
    "uuid": ("string", "NVML's GPU UUID"),
    "memory_total_bytes": ("integer", "NVML's total memory [bytes]"),
    "memory_bytes": ("integer", "total memory [bytes] (the synthetic sample)"),
    "totalGlobalMem": ("integer", "total memory [bytes] (Kineto)"),
    "computeMajor": ("integer", "compute capability, major (Kineto)"),
    "computeMinor": ("integer", "compute capability, minor (Kineto)"),
    "numSms": ("integer", "streaming multiprocessors (Kineto)"),
    "warpSize": ("integer", "threads per warp (Kineto)"),
    "maxThreadsPerBlock": ("integer", "(Kineto)"),
    "maxThreadsPerMultiprocessor": ("integer", "(Kineto)"),
    "regsPerBlock": ("integer", "(Kineto)"),
    "regsPerMultiprocessor": ("integer", "(Kineto)"),
    "sharedMemPerBlock": ("integer", "[bytes] (Kineto)"),
    "sharedMemPerBlockOptin": ("integer", "[bytes] (Kineto)"),
    "sharedMemPerMultiprocessor": ("integer", "[bytes] (Kineto)"),
    "maxSharedMemoryPerMultiProcessor": ("integer", "[bytes] (Kineto on ROCm)"),
    "busLocation": ("string", "PCI bus location (Nsight)"),
    "runtimeMajorVersion": ("integer", "(Kineto on MTIA)"),
    "runtimeMinorVersion": ("integer", "(Kineto on MTIA)"),
    "maxGridHeight": ("integer", "(Kineto on MTIA)"),
    "maxGridWidth": ("integer", "(Kineto on MTIA)"),
}
#: The key that holds what else a trace's file said of a GPU (keys not in :data:`GPU_KEYS`, or
#: a known key whose value is not of its type), as it said it.
GPU_MORE = "more"
_PY_TYPES: dict[str, tuple[type, ...]] = {"string": (str,), "integer": (int,)}


def gpu_item(gpu: dict[str, Any]) -> dict[str, Any]:
    """A ``manifest.gpus`` item as ``profui info --json`` gives it: the keys of :data:`GPU_KEYS`
    it has (in that order), the rest under :data:`GPU_MORE` (left out when there is none)."""
    known: dict[str, Any] = {}
    more: dict[str, Any] = {}
    for key, value in gpu.items():
        kind = GPU_KEYS.get(key, ("", ""))[0]
        ok = kind and isinstance(value, _PY_TYPES[kind]) and not isinstance(value, bool)
        (known if ok else more)[key] = value
    out = {k: known[k] for k in GPU_KEYS if k in known}
    return {**out, GPU_MORE: more} if more else out


def trace_info(path: str | Path) -> dict[str, Any]:
    """Summary of the trace at ``path`` as plain JSON-ready data.

    Each events file's counts come from the trace's record (:mod:`.inventory_record`) while the
    file is as it was counted, else from :func:`count_file`. Raises :class:`TraceFormatError`
    for anything that is not a readable trace.
    """
    trace = open_trace_dir(path)
    counts: Counter[str] = Counter()
    per_rank: dict[tuple[str, int | None], dict[str, Any]] = {}
    per_device: dict[tuple[str, int], Counter[str]] = {}
    start = end = None
    for f, tally in zip(trace.events, file_tallies(trace), strict=True):
        entry = per_rank.setdefault(
            (f.node, f.rank), {"node": f.node, "rank": f.rank, "files": 0, "events": 0, "counts": Counter()}
        )
        entry["files"] += 1
        entry["events"] += tally.rows
        entry["counts"].update(tally.kinds)
        counts.update(tally.kinds)
        for dev, by_kind in tally.devices.items():
            per_device.setdefault((f.node, dev), Counter()).update(by_kind)
        if tally.span is not None:
            start = tally.span[0] if start is None else min(start, tally.span[0])
            end = tally.span[1] if end is None else max(end, tally.span[1])
    m = trace.manifest
    return {
        "version": VERSION,
        "path": str(trace.path),
        "manifest": {
            "name": m.name,
            "status": m.status,
            "source": m.source,
            "synthetic": m.synthetic,
            "command": m.command,
            "exit_code": m.exit_code,
            "start_ns": m.start_ns,
            "end_ns": m.end_ns,
            "hosts": m.hosts,
            "ranks": m.ranks,
            "gpus": [gpu_item(g) for g in m.gpus],
            "versions": m.versions,
            "sources": [s.get("file") for s in m.sources],
            "notes": m.notes,
            "source_notes": m.source_notes(),
        },
        "span": {
            "start_ns": start,
            "end_ns": end,
            "duration_ns": None if start is None or end is None else end - start,
        },
        "num_events": sum(counts.values()),
        "num_event_files": len(trace.events),
        "num_metric_rows": sum(f.num_rows for f in trace.metrics),
        "counts": dict(sorted(counts.items())),
        "ranks": [{**e, "counts": dict(sorted(e["counts"].items()))} for _, e in sorted(per_rank.items())],
        "devices": [
            {"node": node, "device": dev, "events": sum(c.values()), "counts": dict(sorted(c.items()))}
            for (node, dev), c in sorted(per_device.items())
        ],
    }


#: The most events a trace may hold for :func:`keep_tallies` to count it at once.
KEEP_AT_ONCE_MAX_EVENTS = 1_000_000


def keep_tallies(path: str | Path) -> None:
    """Count the events files of the trace at ``path`` into its record now, when it holds at most
    :data:`KEEP_AT_ONCE_MAX_EVENTS` events (a trace just imported: its first ``info`` then reads
    no events). A small trace's ``info`` is mostly start-up, which the record removes; a large
    one's count is a share of its import (0.3 of 5 CPU-s at 3M events), and its first ``info``
    keeps the record instead. Never raises for the trace: a file that cannot be counted is said
    by ``info``, as before; the import that wrote it stands."""
    try:
        trace = open_trace_dir(path)
        if trace.num_events <= KEEP_AT_ONCE_MAX_EVENTS:
            file_tallies(trace)
    except (TraceFormatError, OSError):
        pass


def file_tallies(trace: TraceDir) -> list[FileTally]:
    """The tally of each of ``trace``'s events files, in their order: kept ones from the trace's
    record, the others counted (:func:`count_file`) and the record kept anew, except while the
    trace is being recorded (its files still landing: nothing is kept of a live capture)."""
    code = _code_key()
    kept = inventory_record.load(trace.path, code)
    entries: dict[str, tuple[inventory_record.StatKey, FileTally]] = {}
    tallies, counted = [], False
    for f in trace.events:
        rel = f.path.relative_to(trace.path).as_posix()
        key: inventory_record.StatKey | None = inventory_record.stat_key(f.path)
        was_key, tally = kept.get(rel, (None, None))
        if tally is None or was_key != key:
            tally, counted = count_file(f), True
            if inventory_record.stat_key(f.path) != key:  # changed while it was read: not kept
                key = None
        tallies.append(tally)
        if key is not None:
            entries[rel] = (key, tally)
    if counted and trace.manifest.status != "running":
        inventory_record.save(trace.path, code, entries)
    return tallies


@functools.cache
def _code_key() -> str:
    """What counted a record's tallies: the code version of this module and of every module it
    loads (:func:`~profui.capture.format.code_version.code_version`; found without importing
    them: a warm ``info`` loads no pyarrow), so that an edit of the counting rule, or of a check
    it makes, makes every record a miss."""
    return code_version((__name__,))


def count_file(f: TraceFile) -> FileTally:
    """What the events file ``f`` holds: its rows by kind and by device, its first start and last
    end. Reads only the ``ts``, ``dur``, ``kind`` and ``device`` columns; a file that cannot be
    read as the format's events table raises :class:`TraceFormatError` naming it.

    Counted with numpy on the columns' buffers (numpy comes with pyarrow): pyarrow.compute would
    add ~0.04 s to every count, a start-up cost larger than the counting on small traces.
    """
    # pyarrow (and numpy under it) loaded only when a file is counted
    import numpy as np
    import pyarrow as pa

    from profui.capture.format.parquet_read import read_columns
    from profui.capture.format.readcheck import unreadable, wrong_column

    try:  # corrupt pages fail the read: name the file
        table = read_columns(f.path, ["ts", "dur", "kind", "device"])  # not pq.read_table: pyarrow.compute
    except (OSError, pa.ArrowException) as exc:
        raise unreadable([f]) or TraceFormatError(f.path, f"cannot read events ({exc})") from None
    wrong = wrong_column(f, table)  # types, and nulls in these four not-null columns
    if wrong is not None:
        raise wrong
    if table.num_rows == 0:
        return FileTally(0, {}, {}, None)
    names, codes = _kind_codes(table["kind"])
    by_kind = {names[k]: int(n) for k, n in enumerate(np.bincount(codes, minlength=len(names))) if n}
    devices: dict[int, dict[str, int]] = {}
    device = table["device"].to_numpy()
    on_device = device >= 0
    if on_device.any():  # (device, kind) pairs as one integer each, counted
        pairs, n_pairs = np.unique(
            device[on_device].astype(np.int64) * len(names) + codes[on_device], return_counts=True
        )
        for pair, n in zip(pairs.tolist(), n_pairs.tolist(), strict=True):
            dev, kind = divmod(pair, len(names))
            devices.setdefault(dev, {})[names[kind]] = n
    ts, dur = table["ts"].to_numpy(), table["dur"].to_numpy()
    end = ts + dur  # numpy wraps on overflow: a sum whose sign is neither operand's wrapped
    if (((ts ^ end) & (dur ^ end)) < 0).any():  # a wrapped sum made `info` print a negative duration
        raise TraceFormatError(f.path, "an event ends beyond the int64 nanosecond range")
    return FileTally(table.num_rows, by_kind, devices, (int(ts.min()), int(end.max())))


def _kind_codes(kinds) -> tuple[list[str], Any]:
    """The distinct kinds of a ``kind`` column and each row's index into them (numpy)."""
    import numpy as np
    import pyarrow as pa

    if not pa.types.is_dictionary(kinds.type):  # plain strings are the format's too (readcheck)
        names, codes = np.unique(kinds.to_numpy(), return_inverse=True)
        return names.tolist(), codes
    where: dict[str, int] = {}
    parts = []
    for chunk in kinds.chunks:  # each chunk its own dictionary: its codes mapped onto `names`
        to_name = [where.setdefault(v, len(where)) for v in chunk.dictionary.to_pylist()]
        parts.append(np.asarray(to_name, dtype=np.intp)[chunk.indices.to_numpy()])
    return list(where), np.concatenate(parts)
