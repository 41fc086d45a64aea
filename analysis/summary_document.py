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
from pathlib import Path
from typing import TYPE_CHECKING, Any

import polars as pl

from profui.capture.format.errors import TraceFormatError

from . import schemas
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

    @property
    def top_n(self) -> int:
        """The rows its top-N tables keep (its ``top_n`` parameter; 0: all)."""
        return int(self.params["top_n"])

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
                s: {name: json_rows(df) for name, df in tables.items()} for s, tables in self.sections.items()
            },
        }

    @classmethod
    def from_json_dict(cls, doc: Any, source: str | Path = "summary.json") -> Summary:
        """The Summary that :meth:`to_json_dict` wrote as ``doc`` (``summary.json``, ``profui
        summary --json``): each table rebuilt to its declared schema (:func:`schemas.conform`),
        so its dtypes and values are the written ones, floats exactly.

        What JSON cannot hold does not come back: a NaN or an infinity (written as null) is a
        null. A table without rows has its declared columns of the run's variant
        (:meth:`schemas.Table.empty`, for ``params``' ``hta_compat``). Sections come in
        :data:`SECTIONS` order and a section's tables in their schemas' declaration order (the
        file's keys are sorted). A document of another :data:`VERSION`, without one of
        :data:`JSON_KEYS`, or with a table no schema declares or unlike its schema raises
        :class:`TraceFormatError` naming ``source``.
        """
        if not isinstance(doc, dict):
            raise TraceFormatError(
                source, f"not a summary document (a JSON object expected, got {_kind(doc)})"
            )
        missing = [k for k in JSON_KEYS if k not in doc]
        if missing:
            raise TraceFormatError(source, f"not a summary document: no {', '.join(missing)}")
        if doc["version"] != VERSION:
            raise TraceFormatError(
                source,
                f"summary version {doc['version']!r}; this profui reads version {VERSION} (analyse again)",
            )
        for key, want in (
            ("trace", dict),
            ("params", dict),
            ("takeaways", dict),
            ("notes", list),
            ("sections", dict),
        ):
            if not isinstance(doc[key], want):
                raise TraceFormatError(
                    source, f"summary {key}: a JSON {_kind(want())} expected, got {_kind(doc[key])}"
                )
        unknown = sorted(set(doc["sections"]) - set(SECTIONS))
        if unknown:
            raise TraceFormatError(source, f"summary sections {unknown} are not among {list(SECTIONS)}")
        hta_compat = doc["params"].get("hta_compat")
        if not isinstance(hta_compat, bool):  # it says which variant of the tables the summary holds
            raise TraceFormatError(
                source, f"summary params: hta_compat true or false expected, got {_kind(hta_compat)}"
            )
        sections = {
            s: _tables(s, doc["sections"][s], hta_compat, source) for s in SECTIONS if s in doc["sections"]
        }
        return cls(
            trace=_ordered(doc["trace"], schemas.OVERVIEW_KEYS),
            params=_ordered(doc["params"], PARAM_KEYS),
            sections=sections,
            takeaways=dict(doc["takeaways"]),
            notes=list(doc["notes"]),
        )


def _kind(value: Any) -> str:
    names = {dict: "object", list: "array", str: "string", bool: "boolean", int: "number", float: "number"}
    return "null" if value is None else names.get(type(value), type(value).__name__)


def _ordered(values: dict[str, Any], order: tuple[str, ...]) -> dict[str, Any]:
    """``values`` with the keys of ``order`` first, in that order (the file's keys are sorted)."""
    return {**{k: values[k] for k in order if k in values}, **values}


def _tables(stage: str, tables: Any, hta_compat: bool, source: str | Path) -> dict[str, pl.DataFrame]:
    """A section's tables, from their rows, in the schemas' declaration order."""
    if not isinstance(tables, dict):
        raise TraceFormatError(
            source, f"summary section {stage}: a JSON object expected, got {_kind(tables)}"
        )
    declared = [f.removesuffix(".parquet") for s, f in schemas.TABLES if s == stage]
    unknown = sorted(set(tables) - set(declared))
    if unknown:
        raise TraceFormatError(source, f"summary section {stage}: no schema declared for table(s) {unknown}")
    return {
        name: _table(stage, name, tables[name], hta_compat, source) for name in declared if name in tables
    }


def _table(stage: str, name: str, rows: Any, hta_compat: bool, source: str | Path) -> pl.DataFrame:
    """One table from its rows (``DataFrame.to_dicts``), of its declared schema (without rows,
    its columns of the ``hta_compat`` variant)."""
    decl = schemas.table(stage, name)
    if not isinstance(rows, list) or not all(isinstance(r, dict) for r in rows):
        raise TraceFormatError(source, f"summary table {stage}/{name}: a JSON array of objects expected")
    if not rows:
        return decl.empty(hta_compat)
    dtypes = {c.name: c.dtype for c in decl.columns}
    extra = sorted(set(rows[0]) - set(dtypes))
    if extra:
        raise TraceFormatError(source, f"summary table {stage}/{name}: columns {extra} are not in its schema")
    try:
        # built in declaration order and dtypes: conform then only checks it (the file's keys are sorted)
        frame = pl.DataFrame(rows, schema={c: t for c, t in dtypes.items() if c in rows[0]}, orient="row")
        return schemas.conform(stage, f"{name}.parquet", frame)
    except (schemas.SchemaError, pl.exceptions.PolarsError, TypeError, ValueError) as exc:
        first = (str(exc).strip().splitlines() or [type(exc).__name__])[0]
        raise TraceFormatError(source, f"summary table {stage}/{name}: {first}") from None


def json_rows(df: pl.DataFrame) -> list[dict[str, Any]]:
    """A table's rows as JSON-ready dicts, NaN and infinities null (:func:`_clean`'s rule). A
    table of numbers, text, booleans and nulls only, as summary tables are, is cleaned by Polars
    (a float that is not finite made null) before its rows are made: the rule value by value
    cost a 5M-event trace's ``summary --json`` ~0.4 s."""
    if not all(dt.is_integer() or dt.is_float() or dt in _PLAIN for dt in df.dtypes):
        rows: list[dict[str, Any]] = _clean(df.to_dicts())
        return rows
    floats = [name for name, dt in df.schema.items() if dt.is_float()]
    if floats:
        df = df.with_columns(pl.when(pl.col(c).is_finite()).then(pl.col(c)).alias(c) for c in floats)
    return df.to_dicts()


#: Column types whose Python values JSON holds as they are (besides integers and floats).
_PLAIN = (pl.String, pl.Boolean, pl.Null)


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

    ``devices`` counts the (node, rank, device) lanes that ran device work (kernels, copies,
    memsets: not a device-side annotation alone, CUPTI's profiler ranges); ``device_type``
    says what they are (:mod:`profui.analysis.devices`: ``gpu``, ``cpu`` for XLA on CPU, ``none``
    without device work) and ``gpus`` counts them only when they are GPUs."""
    from .busy import is_device_work
    from .devices import GPU, NONE, manifest_device_type

    m = trace.manifest
    o = (
        events.select(
            pl.len().alias("events"),
            pl.col("ts").min().alias("start_ns"),
            (pl.col("ts") + pl.col("dur")).max().alias("end_ns"),
            pl.struct("node", "rank", "device").filter(is_device_work()).n_unique().alias("gpus"),
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
