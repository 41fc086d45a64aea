"""What a trace holds (``profui info``): manifest, ranks, devices, time span, counts by kind.

Plain JSON-ready data, computed with numpy over four columns read by pyarrow, so it stays quick
on big traces and starts quickly on small ones; the command line only renders it.
"""

from __future__ import annotations

from collections import Counter
from pathlib import Path
from typing import Any

from profui.capture.format import TraceFormatError, open_trace_dir

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
    known, more = {}, {}
    for key, value in gpu.items():
        kind = GPU_KEYS.get(key, ("", ""))[0]
        ok = kind and isinstance(value, _PY_TYPES[kind]) and not isinstance(value, bool)
        (known if ok else more)[key] = value
    out = {k: known[k] for k in GPU_KEYS if k in known}
    return {**out, GPU_MORE: more} if more else out


def trace_info(path: str | Path) -> dict[str, Any]:
    """Summary of the trace at ``path`` as plain JSON-ready data.

    Reads only the ``ts``, ``dur``, ``kind`` and ``device`` columns. Raises
    :class:`TraceFormatError` for anything that is not a readable trace.
    """
    # pyarrow (and numpy under it) loaded only when an inventory is taken
    import pyarrow as pa

    from profui.capture.format.readcheck import unreadable

    trace = open_trace_dir(path)
    counts: Counter[str] = Counter()
    per_rank: dict[tuple[str, int], dict[str, Any]] = {}
    per_device: dict[tuple[str, int], Counter[str]] = {}
    start = end = None
    for f in trace.events:
        try:  # corrupt pages fail the read: name the file
            span = _count_file(f, per_rank, per_device, counts)
        except (OSError, pa.ArrowException) as exc:
            raise unreadable([f]) or TraceFormatError(f.path, f"cannot read events ({exc})") from None
        if span is not None:
            start = span[0] if start is None else min(start, span[0])
            end = span[1] if end is None else max(end, span[1])
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


def _count_file(f, per_rank: dict, per_device: dict, counts: Counter) -> tuple[int, int] | None:
    """Add one events file's counts to the tallies; its first start and last end (None if empty).

    Counted with numpy on the columns' buffers (numpy comes with pyarrow): pyarrow.compute would
    add ~0.04 s to every ``profui info``, a start-up cost larger than the counting on small traces.
    """
    import numpy as np
    import pyarrow.parquet as pq

    from profui.capture.format.readcheck import wrong_column

    with pq.ParquetFile(f.path) as events:  # not pq.read_table: its datasets load pyarrow.compute
        table = events.read(columns=["ts", "dur", "kind", "device"])
    wrong = wrong_column(f, table)  # types, and nulls in these four not-null columns
    if wrong is not None:
        raise wrong
    entry = per_rank.setdefault(
        (f.node, f.rank), {"node": f.node, "rank": f.rank, "files": 0, "events": 0, "counts": Counter()}
    )
    entry["files"] += 1
    entry["events"] += table.num_rows
    if table.num_rows == 0:
        return None
    names, codes = _kind_codes(table["kind"])
    by_kind = {names[k]: int(n) for k, n in enumerate(np.bincount(codes, minlength=len(names))) if n}
    entry["counts"].update(by_kind)
    counts.update(by_kind)
    device = table["device"].to_numpy()
    on_device = device >= 0
    if on_device.any():  # (device, kind) pairs as one integer each, counted
        pairs, n_pairs = np.unique(
            device[on_device].astype(np.int64) * len(names) + codes[on_device], return_counts=True
        )
        for pair, n in zip(pairs.tolist(), n_pairs.tolist(), strict=True):
            dev, kind = divmod(pair, len(names))
            per_device.setdefault((f.node, dev), Counter())[names[kind]] += n
    ts, dur = table["ts"].to_numpy(), table["dur"].to_numpy()
    end = ts + dur  # numpy wraps on overflow: a sum whose sign is neither operand's wrapped
    if (((ts ^ end) & (dur ^ end)) < 0).any():  # a wrapped sum made `info` print a negative duration
        raise TraceFormatError(f.path, "an event ends beyond the int64 nanosecond range")
    return int(ts.min()), int(end.max())


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
    names = list(where)
    return names, np.concatenate(parts)
