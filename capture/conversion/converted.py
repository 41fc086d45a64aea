"""What every converter does with its rows: one events table, checked, written, described.

The Kineto, Nsight and JAX converters build the events of a rank as plain columns
(:data:`EVENT_FIELDS`); :func:`events_table` makes the table (a value no trace can hold is the
source file's error, named), :func:`write_rank` writes it with its ``profui.source`` note and
returns the :class:`~.result.ConvertResult` the import pipeline needs.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc

from profui.capture.format import TABLE_COLUMNS, TraceFormatError, write_events
from profui.capture.format.writer import to_table

from .result import ConvertResult

#: The events table's columns, in order: what a converter fills for each row.
EVENT_FIELDS: tuple[str, ...] = TABLE_COLUMNS["events"]


def empty_columns() -> dict[str, list[Any]]:
    """One empty list per events column."""
    return {f: [] for f in EVENT_FIELDS}


def events_table(
    src: Path, columns: dict[str, list[Any]], error: Callable[[Path, str], TraceFormatError]
) -> pa.Table:
    """The events table of ``columns``; ``error(src, problem)`` for a value beyond its column."""
    try:
        return to_table("events", columns)
    except (OverflowError, pa.ArrowInvalid) as exc:
        raise error(src, f"a value no trace can hold ({exc})") from None


def write_rank(
    trace_dir: Path,
    node: str,
    rank: int,
    table: pa.Table,
    source: dict[str, Any],
    gpus: list[dict[str, Any]] | None = None,
) -> ConvertResult:
    """Write ``table`` as rank ``rank`` of ``node`` with ``source`` as its note; the
    :class:`~.result.ConvertResult` of it (``gpus`` default: the devices it used, by id)."""
    kinds = {
        v["values"]: v["counts"]
        for v in pc.value_counts(table["kind"].combine_chunks().dictionary_decode()).to_pylist()
    }
    on_device = pc.greater_equal(table["device"], 0)
    devices = sorted(pc.unique(pc.filter(table["device"], on_device)).to_pylist())
    extra = {"profui.source": json.dumps(source, default=str, separators=(",", ":"))}
    path = write_events(trace_dir, node, rank, table, extra_metadata=extra)
    return ConvertResult(
        rank=rank,
        node=node,
        num_events=table.num_rows,
        counts=dict(sorted(kinds.items())),
        first_ts_ns=pc.min(table["ts"]).as_py(),
        last_end_ns=pc.max(pc.add(table["ts"], table["dur"])).as_py(),
        devices=devices,
        path=path,
        source=source,
        gpus=gpus if gpus is not None else [{"node": node, "id": d} for d in devices],
    )
