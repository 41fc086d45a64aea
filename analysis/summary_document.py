"""The summary document: a :class:`Summary` holds every answer of a trace.

A Summary is the ``summary`` stage's output: what ``profui summary`` prints, what ``profui
summary --json`` writes and what ``t.summary()`` returns. Its ``sections`` use the pipeline's
layout — ``{stage: {table: frame}}`` with the stage and table names of the stage outputs (without
``.parquet``), each table of its declared schema (:mod:`profui.analysis.schemas`) — and its
takeaways are the ``takeaways`` stage's. The stage bodies assemble it;
:func:`profui.analysis.summary.summarize` runs the stage graph in memory for it.

``hta_compat=True`` computes the numbers Holistic Trace Analysis computes the HTA way (µs
rounding, last step dropped, HTA's GPU-event notion; see :mod:`profui.analysis.hta`); the
sections HTA has no counterpart for are computed exactly either way.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import polars as pl

from .engine import SCAN_ENGINE

if TYPE_CHECKING:
    from profui.capture.format import Manifest

    from .trace import Trace

#: Order of the sections (and of the CLI's tables).
SECTIONS: tuple[str, ...] = (
    "utilization",
    "kernels",
    "activity",
    "memory",
    "allocations",
    "precision",
    "flops",
    "steps",
    "launch",
    "sync",
    "idle",
    "comm",
    "annotations",
    "critical_path",
    "findings",
)


#: The version of ``profui summary --json`` (:meth:`Summary.to_json_dict`): raised when a key
#: changes meaning or goes.
VERSION = 1
#: ``profui summary --json``'s top-level keys, in order.
JSON_KEYS = ("version", "trace", "params", "takeaways", "notes", "sections")
#: Its ``params``' keys.
PARAM_KEYS = ("top_n", "bucket_ns", "hta_compat")


@dataclass
class Summary:
    """All analyses of one trace.

    ``trace``: what was analysed (path, name, status, nodes, ranks, GPUs, events, time span).
    ``params``: ``top_n``, ``bucket_ns``, ``hta_compat``. ``sections``: ``{section: {table:
    DataFrame}}`` in :data:`SECTIONS` order. ``takeaways``: one line per dashboard chart.
    ``notes``: things the reader should know (e.g. "no step markers").
    """

    trace: dict[str, Any]
    params: dict[str, Any]
    sections: dict[str, dict[str, pl.DataFrame]] = field(default_factory=dict)
    takeaways: dict[str, str] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)

    def table(self, section: str, name: str) -> pl.DataFrame:
        """One table (an empty frame when absent)."""
        return self.sections.get(section, {}).get(name, pl.DataFrame())

    def to_json_dict(self) -> dict[str, Any]:
        """A JSON-ready dict: tables as lists of row dicts; NaN and infinities become null."""
        return {
            "version": VERSION,
            "trace": _clean(self.trace),
            "params": _clean(self.params),
            "takeaways": dict(self.takeaways),
            "notes": list(self.notes),
            "sections": {
                s: {name: _clean(df.to_dicts()) for name, df in tables.items()}
                for s, tables in self.sections.items()
            },
        }


def _clean(value: Any) -> Any:
    if isinstance(value, float):
        return None if math.isnan(value) or math.isinf(value) else value
    if isinstance(value, dict):
        return {str(k): _clean(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_clean(v) for v in value]
    if isinstance(value, (int, str, bool)) or value is None:
        return value
    return str(value)


def trace_overview(trace: Trace, events: pl.LazyFrame) -> dict[str, Any]:
    """What was analysed: path, name, status, nodes, ranks, devices, event count and time span.

    ``devices`` counts the (node, rank, device) lanes that ran device work; ``device_type``
    says what they are (:mod:`profui.analysis.devices`: ``gpu``, ``cpu`` for XLA on CPU, ``none``
    without device work) and ``gpus`` counts them only when they are GPUs."""
    from .devices import GPU, NONE, manifest_device_type

    m = trace.manifest
    o = (
        events.select(
            pl.len().alias("events"),
            pl.col("ts").min().alias("start_ns"),
            (pl.col("ts") + pl.col("dur")).max().alias("end_ns"),
            pl.struct("node", "rank", "device").filter(pl.col("device") >= 0).n_unique().alias("gpus"),
        )
        .collect(engine=SCAN_ENGINE)
        .row(0, named=True)
    )
    start, end = o["start_ns"], o["end_ns"]
    devices = int(o["gpus"])
    kind = manifest_device_type(m) if devices else NONE
    return {
        "path": str(trace.path),
        "name": m.name,
        "status": m.status,
        "source": m.source,
        "nodes": sorted(trace.dir.nodes),
        "ranks": sorted({r for _, r in trace.dir.ranks}),
        "gpus": devices if kind == GPU else 0,
        "gpus_listed": len(m.gpus),
        "devices": devices,
        "device_type": kind,
        "events": int(o["events"]),
        "start_ns": start,
        "end_ns": end,
        "duration_ns": (end - start) if start is not None and end is not None else None,
    }


def source_notes(manifest: Manifest) -> list[str]:
    """What the importers say the reader should know (:meth:`Manifest.source_notes`)."""
    return manifest.source_notes()
