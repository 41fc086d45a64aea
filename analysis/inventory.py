"""What a trace holds (``profui info``): manifest, ranks, devices, time span, counts by kind.

Plain JSON-ready data, computed with pyarrow over four columns so it stays quick on big traces;
the command line only renders it.
"""

from __future__ import annotations

from collections import Counter
from pathlib import Path
from typing import Any

from profui.capture.format import TraceFormatError, open_trace_dir


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
        try:  # corrupt pages fail the read, a column of the wrong type the compute: name the file
            span = _count_file(f, per_rank, per_device, counts)
        except (OSError, pa.ArrowException) as exc:
            raise unreadable([f]) or TraceFormatError(f.path, f"cannot read events ({exc})") from None
        if span is not None:
            start = span[0] if start is None else min(start, span[0])
            end = span[1] if end is None else max(end, span[1])
    m = trace.manifest
    return {
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
            "gpus": m.gpus,
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
    """Add one events file's counts to the tallies; its first start and last end (None if empty)."""
    import pyarrow as pa
    import pyarrow.compute as pc
    import pyarrow.parquet as pq

    from profui.capture.format.readcheck import wrong_column

    table = pq.read_table(f.path, columns=["ts", "dur", "kind", "device"])
    wrong = wrong_column(f, table.schema)
    if wrong is not None:
        raise wrong
    entry = per_rank.setdefault(
        (f.node, f.rank), {"node": f.node, "rank": f.rank, "files": 0, "events": 0, "counts": Counter()}
    )
    entry["files"] += 1
    entry["events"] += table.num_rows
    if table.num_rows == 0:
        return None
    kinds = table["kind"].combine_chunks()
    if pa.types.is_dictionary(kinds.type):  # plain strings are the format's too (readcheck)
        kinds = kinds.dictionary_decode()
    by_kind = _value_counts(kinds)
    entry["counts"].update(by_kind)
    counts.update(by_kind)
    on_device = pc.greater_equal(table["device"], 0)
    dev_table = table.filter(on_device)
    if dev_table.num_rows:
        grouped = (
            dev_table.select(["device", "kind"]).group_by(["device", "kind"]).aggregate([([], "count_all")])
        )
        for row in grouped.to_pylist():
            dev_kind = row["kind"] if isinstance(row["kind"], str) else str(row["kind"])
            per_device.setdefault((f.node, row["device"]), Counter())[dev_kind] += row["count_all"]
    lo = pc.min(table["ts"]).as_py()
    try:  # checked: a wrapped sum made `info` print a negative duration
        hi = pc.max(pc.add_checked(table["ts"], table["dur"])).as_py()
    except pa.ArrowInvalid:
        raise TraceFormatError(f.path, "an event ends beyond the int64 nanosecond range") from None
    return lo, hi


def _value_counts(arr) -> dict[str, int]:
    import pyarrow.compute as pc

    out: dict[str, int] = {}
    for item in pc.value_counts(arr).to_pylist():
        out[item["values"]] = item["counts"]
    return out
