"""The output schema of each MCP tool (JSON Schema, draft 2020-12).

``summary``, ``explain`` and ``diff`` return the commands' ``--json`` documents, and
``import_trace`` holds ``info``'s: their schemas are :func:`profui.analysis.json_schema.document`'s,
the ones ``profui schema NAME`` prints. Rows are declared tables
(:func:`~profui.analysis.json_schema.rows_schema`): ``memory_peak``'s the allocations stage's,
``top``'s :data:`~profui.analysis.step_window.TOP_ROWS`; the rest is declared here.
"""

from __future__ import annotations

from typing import Any

from profui.analysis import schemas as S
from profui.analysis.json_schema import document, rows_schema
from profui.analysis.step_window import EVENT_COLUMNS, TOP_ROWS

STR = {"type": "string"}
INT = {"type": "integer"}
BOOL = {"type": "boolean"}


def _nullable(schema: dict[str, Any]) -> dict[str, Any]:
    return {"type": [schema["type"], "null"]}


def _obj(props: dict[str, Any]) -> dict[str, Any]:
    """A closed object: these keys, each required, no other."""
    return {"type": "object", "properties": props, "required": list(props), "additionalProperties": False}


def _array(items: dict[str, Any]) -> dict[str, Any]:
    return {"type": "array", "items": items}


def _memory_row(stage_file: str) -> dict[str, Any]:
    return rows_schema(S.TABLES[("allocations", stage_file)])["items"]


def tool_output(name: str) -> dict[str, Any]:
    """The output schema of MCP tool ``name``."""
    if name in ("summary", "explain", "diff"):
        return document(name)
    if name == "import_trace":
        return _obj({"source": STR, "trace": STR, "info": document("info")})
    if name == "list_traces":
        trace = _obj(
            {
                "path": STR,
                "name": STR,
                "status": STR,
                "created_ns": _nullable(INT),
                "duration_ns": _nullable(INT),
                "nodes": INT,
                "gpus": INT,
                "size_bytes": INT,
                "problem": _nullable(STR),
            }
        )
        return _obj(
            {
                "folder": STR,
                "traces": _array(trace),
                "files": _array(STR),
                "imported": _array(STR),
                "below": _array(STR),
                "skipped": _array(_obj({"path": STR, "why": STR})),
                "walk": _obj({"max_depth": INT, "entries": INT, "cut": BOOL}),
            }
        )
    if name == "top":
        return _obj(
            {
                "trace": STR,
                "what": {"enum": ["kernels", "ops", "annotations"]},
                "step": _nullable(INT),
                "rank": _nullable(INT),
                "ranks": _array(INT),
                "window_ns": {
                    "type": "integer",
                    "description": "ns: the window's time summed over its ranks",
                },
                "names": {"type": "integer", "description": "count: names in the window (rows cut at n)"},
                "note": {**_nullable(STR), "description": "why there are no rows, when there are none"},
                "rows": rows_schema(TOP_ROWS),
            }
        )
    if name == "events":
        cell = {"type": ["integer", "string", "null"]}
        return _obj(
            {
                "trace": STR,
                "rank": INT,
                "step": _nullable(INT),
                "window": _obj({"start_ns": INT, "end_ns": INT, "clipped": BOOL}),
                "columns": {"type": "array", "items": {"enum": list(EVENT_COLUMNS)}},
                "rows": _array(
                    {**_array(cell), "minItems": len(EVENT_COLUMNS), "maxItems": len(EVENT_COLUMNS)}
                ),
                "count": INT,
                "total": INT,
                "truncated": BOOL,
            }
        )
    if name == "memory_peak":
        device = _memory_row("devices.parquet")
        return _obj(
            {
                "trace": STR,
                "rank": _nullable(INT),
                "has_memory_events": BOOL,
                "note": _nullable(STR),
                "peak": {"anyOf": [device, {"type": "null"}]},
                "devices": _array(device),
                "live_at_peak": _array(_memory_row("live_at_peak.parquet")),
            }
        )
    raise KeyError(name)
