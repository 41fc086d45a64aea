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
from profui.analysis.json_schema import array_schema as _array
from profui.analysis.json_schema import document, rows_schema
from profui.analysis.json_schema import object_schema as _obj
from profui.analysis.json_schema import type_schema as _t
from profui.analysis.step_window import EVENT_COLUMNS, TOP_ROWS

STR, INT, BOOL = _t("string"), _t("integer"), _t("boolean")
STR_OR_NULL, INT_OR_NULL = _t("string", null=True), _t("integer", null=True)


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
                "created_ns": INT_OR_NULL,
                "duration_ns": INT_OR_NULL,
                "nodes": INT,
                "gpus": INT,
                "size_bytes": INT,
                "problem": STR_OR_NULL,
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
                "step": INT_OR_NULL,
                "rank": INT_OR_NULL,
                "ranks": _array(INT),
                "window_ns": _t(
                    "integer",
                    description="ns: the time of the window's main side (the device's for kernels, "
                    "the host's otherwise) summed over its ranks",
                ),
                "names": _t("integer", description="count: (side, name) pairs in the window (rows cut at n)"),
                "note": _t("string", null=True, description="why there are no rows, when there are none"),
                "rows": rows_schema(TOP_ROWS),
            }
        )
    if name == "events":
        cell = _t(["integer", "string"], null=True)
        return _obj(
            {
                "trace": STR,
                "rank": INT,
                "step": INT_OR_NULL,
                "window": _obj({"start_ns": INT, "end_ns": INT, "clipped": BOOL}),
                "columns": _array({"enum": list(EVENT_COLUMNS)}),
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
                "rank": INT_OR_NULL,
                "has_memory_events": BOOL,
                "note": STR_OR_NULL,
                "peak": {"anyOf": [device, {"type": "null"}]},
                "devices": _array(device),
                "live_at_peak": _array(_memory_row("live_at_peak.parquet")),
            }
        )
    raise KeyError(name)
