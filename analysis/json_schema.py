"""JSON Schema (draft 2020-12) of every ``--json`` output, generated from what the outputs declare.

``profui schema NAME`` prints :func:`document`; a client validates ``profui NAME --json`` against
it. The tables' rows come from the declared table schemas (:mod:`.schemas`: each column a
property typed by its Polars dtype, described by its doc and unit); the documents' keys from the
key lists each output declares (:data:`.summary.JSON_KEYS`, :data:`.findings_doc.KEYS`,
:data:`.diff.JSON_DOC`, :data:`.inventory.KEYS`, :data:`.gate.KEYS`), so a key an output grows
without declaring it fails validation: every object is closed (``additionalProperties: false``)
except maps whose keys are data (takeaways, time by kind, counts by kind, a diff's metrics),
whose names are constrained where a vocabulary exists.

A column admits null only where its declaration says it may (:attr:`.schemas.Column.nullable`,
which :func:`.schemas.conform` holds every stage's output to); a nullable float column's NaN and
infinities print as null too, and a non-nullable one holds none. A summary requires the sections
and tables its run always writes: all of them, but for those a note says were left out (``--sections``
names others; a run over ranks leaves out those its note names, each needing every rank's events).
"""

from __future__ import annotations

from typing import Any

import polars as pl
from polars.datatypes import DataTypeClass

from . import diff, findings_doc, gate, inventory, summary
from .findings_base import VERSION as EXPLAIN_VERSION
from .schemas import OVERVIEW_KEYS, TABLES, Column, Table, table

DIALECT = "https://json-schema.org/draft/2020-12/schema"
#: The outputs that have a schema, in the order ``profui schema`` lists them.
NAMES = ("summary", "explain", "diff", "info", "gate")
#: The version each output carries (its ``version`` key).
VERSIONS: dict[str, int] = {
    "summary": summary.VERSION,
    "explain": EXPLAIN_VERSION,
    "diff": diff.VERSION,
    "info": inventory.VERSION,
    "gate": gate.VERSION,
}
#: One line on each output.
DESCRIPTIONS: dict[str, str] = {
    "summary": "profui summary --json: every table of every analysis, the takeaways and notes",
    "explain": "profui explain --json: the findings with evidence and next step, one step's critical path",
    "diff": "profui diff --json: what changed between two runs, and the --fail-if gate's verdict",
    "info": "profui info --json: manifest, ranks, devices, time span and event counts of a trace",
    "gate": "the --fail-if verdict inside profui diff --json: each condition, its change, broken or not",
}

_INT, _NUM, _STR, _BOOL = "integer", "number", "string", "boolean"


def schema_id(name: str) -> str:
    """The ``$id`` of output ``name``'s schema: ``urn:profui:schema:NAME:VERSION``."""
    return f"urn:profui:schema:{name}:{VERSIONS[name]}"


def _t(kind: str | list[str], null: bool = False, description: str = "", **more: Any) -> dict[str, Any]:
    """``{"type": kind}``, with null allowed and a description when given."""
    types = [kind] if isinstance(kind, str) else list(kind)
    out: dict[str, Any] = {"type": [*types, "null"] if null else (types[0] if len(types) == 1 else types)}
    if description:
        out["description"] = description
    return {**out, **more}


def _obj(
    props: dict[str, Any], required: tuple[str, ...] | list[str] | None = None, description: str = ""
) -> dict[str, Any]:
    """A closed object of ``props`` (all required unless ``required`` says which)."""
    out: dict[str, Any] = {"type": "object"}
    if description:
        out["description"] = description
    out["properties"] = props
    out["required"] = list(props if required is None else required)
    out["additionalProperties"] = False
    return out


def _array(items: dict[str, Any], description: str = "", null: bool = False) -> dict[str, Any]:
    out = _t("array", null, description)
    out["items"] = items
    return out


def _map(
    values: dict[str, Any], names: dict[str, Any] | None = None, description: str = ""
) -> dict[str, Any]:
    """An object whose keys are data: each value ``values``, each key ``names`` when given."""
    out: dict[str, Any] = {"type": "object"}
    if description:
        out["description"] = description
    if names is not None:
        out["propertyNames"] = names
    out["additionalProperties"] = values
    return out


def _enum(values: tuple[str, ...] | list[str], null: bool = False, description: str = "") -> dict[str, Any]:
    out = _t(_STR, null, description)
    out["enum"] = [*values, None] if null else list(values)
    return out


#: The builders, public for the schemas built beside these (the MCP tools' outputs): a type
#: (``null=True`` adds null), a closed object, an array.
type_schema, object_schema, array_schema = _t, _obj, _array


def dtype_schema(dtype: pl.DataType | DataTypeClass, null: bool = False) -> dict[str, Any]:
    """The JSON type of a Polars dtype's values, null allowed when ``null`` (a float's NaN and
    infinities are null in JSON): integers, numbers, strings, booleans, lists of these (their
    items never null: :func:`.schemas.conform` refuses a null item where the column is not
    nullable, and no nullable column is a list). A list's item dtype may be the class itself
    (``pl.List(pl.Int64).inner`` is ``pl.Int64``)."""
    if dtype.is_integer():
        return _t(_INT, null)
    if dtype.is_float():
        return _t(_NUM, null)
    if dtype == pl.String:
        return _t(_STR, null)
    if dtype == pl.Boolean:
        return _t(_BOOL, null)
    if isinstance(dtype, (pl.List, pl.Array)):
        return _array(dtype_schema(dtype.inner), null=null)
    raise TypeError(f"no JSON type for the Polars dtype {dtype}")


def column_schema(col: Column) -> dict[str, Any]:
    """One declared column's property: its dtype's JSON type (null only where the column is
    :attr:`~.schemas.Column.nullable`), its doc and unit as description."""
    unit = "" if col.unit in ("text", "id", "flag") else f" [{col.unit}]"
    described = (col.doc + unit).strip() or col.name
    return {**dtype_schema(col.dtype, col.nullable), "description": described}


def row_schema(tbl: Table, keys: tuple[str, ...] | None = None) -> dict[str, Any]:
    """A row of ``tbl`` as a closed object: its columns (or those named ``keys``, in that order);
    the optional ones not required."""
    cols = {c.name: c for c in tbl.columns}
    chosen = [cols[k] for k in keys] if keys is not None else list(tbl.columns)
    return _obj(
        {c.name: column_schema(c) for c in chosen},
        [c.name for c in chosen if not c.optional],
    )


def rows_schema(tbl: Table) -> dict[str, Any]:
    """A table as JSON: an array of row objects, each declared column a property typed from its
    Polars dtype (integers, numbers, strings, booleans, lists), null allowed where the column is
    nullable, described by its doc and unit; optional columns not required; no other key."""
    return _array(row_schema(tbl), tbl.doc)


# -- the shared parts -------------------------------------------------------------------------

_OVERVIEW_TYPES: dict[str, dict[str, Any]] = {
    "path": _t(_STR, description="the trace folder"),
    "name": _t(_STR, True, "the manifest's name"),
    "status": _t(_STR, description="running, completed, failed, stopped, imported or interrupted"),
    "source": _t(_STR, True, "profcap, kineto-import, nsys-import, import, synthetic ..."),
    "nodes": _array(_t(_STR), "host names"),
    "ranks": _array(_t(_INT), "distributed ranks"),
    "gpus": _t(_INT, description="GPUs that ran device work (0 when the devices are not GPUs)"),
    "gpus_listed": _t(_INT, description="GPUs the manifest lists"),
    "devices": _t(_INT, description="(node, rank, device) lanes that ran device work"),
    "device_type": _enum(("gpu", "cpu", "none"), description="what the devices are"),
    "events": _t(_INT, description="events in the trace"),
    "start_ns": _t(_INT, True, "first event's start [epoch_ns]"),
    "end_ns": _t(_INT, True, "last event's end [epoch_ns]"),
    "duration_ns": _t(_INT, True, "end_ns - start_ns [ns]"),
}


def overview_schema() -> dict[str, Any]:
    """What was analysed (:data:`.schemas.OVERVIEW_KEYS`): the summary's ``trace``, explain's."""
    return _obj({k: _OVERVIEW_TYPES[k] for k in OVERVIEW_KEYS}, description="what was analysed")


def _header(name: str) -> dict[str, Any]:
    return {
        "$schema": DIALECT,
        "$id": schema_id(name),
        "title": f"profui {name} (version {VERSIONS[name]})",
        "description": DESCRIPTIONS[name],
    }


def _version(name: str) -> dict[str, Any]:
    return {"const": VERSIONS[name], "description": "the schema version this document follows"}


# -- the documents ----------------------------------------------------------------------------


#: How the note of a summary that left sections out begins (``--sections``: only those named).
SECTIONS_NOTE = "sections left out"
#: How the note of a summary run over ranks begins (:func:`.jobreduce.whole_trace_only`).
BY_RANKS_NOTE = "a run over ranks"


def summary_tables(by_ranks: bool = False) -> dict[str, list[str]]:
    """``{section: its tables}`` a summary always holds, in order: every table of every section
    but the detail tables; ``by_ranks``: those a run over ranks gives whatever its parameters
    (:func:`.jobreduce.always_given`), their sections only."""
    from .jobreduce import always_given
    from .pipeline.bodies import DETAIL_TABLES
    from .pipeline.registry import REGISTRY

    given = always_given() if by_ranks else set()
    out: dict[str, list[str]] = {}
    for stage in summary.SECTIONS:  # each stage's tables in the order it declares its outputs
        files = REGISTRY.stages[stage].outputs
        names = [f.removesuffix(".parquet") for f in files if (stage, f) in TABLES]
        names = [
            n for n in names if (stage, n) not in DETAIL_TABLES and (not by_ranks or (stage, n) in given)
        ]
        if names:
            out[stage] = names
    return out


def _note(prefix: str) -> dict[str, Any]:
    """Matches a document whose notes hold one beginning with ``prefix``."""
    return {"required": ["notes"], "properties": {"notes": {"contains": {"pattern": f"^{prefix}"}}}}


def _sections_required(tables: dict[str, list[str]]) -> dict[str, Any]:
    """``sections`` holding every one of ``tables``' sections, each with all its tables."""
    return {"properties": {"sections": {"required": list(tables)}}}


def _tables_required(tables: dict[str, list[str]]) -> dict[str, Any]:
    """Each section of ``tables`` that is there holds all its tables."""
    props = {stage: {"required": names} for stage, names in tables.items()}
    return {"properties": {"sections": {"properties": props}}}


def _summary_requires() -> list[dict[str, Any]]:
    """What a summary always holds, by what its notes say of the run: a section that is there
    has all its tables (a run over ranks: the tables it computes); every section is there
    unless a note says which were left out (``--sections``)."""
    whole, ranks = summary_tables(), summary_tables(by_ranks=True)
    return [
        {"if": _note(BY_RANKS_NOTE), "then": _tables_required(ranks), "else": _tables_required(whole)},
        {
            "if": {"not": _note(SECTIONS_NOTE)},
            "then": {
                "if": _note(BY_RANKS_NOTE),
                "then": _sections_required(ranks),
                "else": _sections_required(whole),
            },
        },
    ]


def _summary() -> dict[str, Any]:
    from .takeaways import CHARTS

    sections: dict[str, Any] = {}
    for stage, names in summary_tables().items():
        tables = {n: rows_schema(table(stage, n)) for n in names}
        sections[stage] = _obj(
            tables, [], f"the {stage} stage's tables (which are required: the summary's allOf)"
        )
    params = {
        "top_n": _t(_INT, description="rows kept in the top-N tables"),
        "bucket_ns": _t(_INT, True, "utilization bucket [ns]"),
        "hta_compat": _t(_BOOL, description="Holistic Trace Analysis semantics"),
    }
    props = {
        "version": _version("summary"),
        "trace": overview_schema(),
        "params": _obj({k: params[k] for k in summary.PARAM_KEYS}),
        "takeaways": _map(_t(_STR), _enum(tuple(CHARTS)), "one sentence per dashboard chart"),
        "notes": _array(_t(_STR), "what the reader should know"),
        "sections": _obj(
            sections,
            [],
            "{stage: {table: rows}}, the stages in profui's order: every one, each with all its "
            f"tables, unless a note says otherwise ('{SECTIONS_NOTE}': --sections named others; "
            f"'{BY_RANKS_NOTE} leaves out ...': all but the tables it names)",
        ),
    }
    return {
        **_header("summary"),
        **_obj({k: props[k] for k in summary.JSON_KEYS}),
        "allOf": _summary_requires(),
    }


def _explain() -> dict[str, Any]:
    from .critical_path import KINDS
    from .critical_path_hta import HTA_KINDS
    from .findings_base import CATEGORIES, SEVERITIES

    found = table("findings", "findings")
    cols = {c.name: c for c in found.columns}
    evidence = table("findings", "evidence")
    finding = {
        **{k: column_schema(cols[k]) for k in findings_doc.FINDING_KEYS if k in cols},
        "category": _enum(CATEGORIES, description=cols["category"].doc),
        "severity": _enum(SEVERITIES, description=cols["severity"].doc),
        "evidence": _array(row_schema(evidence, ("label", "value", "unit", "source")), evidence.doc),
        "timeline": _obj(
            {
                "rank": column_schema(cols["at_rank"]),
                "step": column_schema(cols["at_step"]),
                "ts_ns": column_schema(cols["at_ns"]),
            },
            description="its worst instance",
        ),
    }
    events = table("critical_path", "events")
    by_kind = table("critical_path", "by_kind")
    path_props = {
        "length_ns": _t(_INT, True, "the path's length [ns]; null without a step"),
        "by_kind": _map(
            _t(_INT, description="[ns]"),
            _enum((*KINDS, *HTA_KINDS)),
            by_kind.doc + " (HTA's kinds under --hta-compat)",
        ),
        "events": _array(
            row_schema(events, findings_doc.EVENT_KEYS),
            events.doc + "; with --path-events N the N longest, in path order",
        ),
        "events_total": _t(_INT, description="the path's stretches in all"),
        "events_truncated": _t(_BOOL, description="events holds fewer than events_total"),
    }
    path = _obj(
        {k: path_props[k] for k in findings_doc.PATH_KEYS},
        description="the critical path of the step and rank shown",
    )
    props = {
        "version": _version("explain"),
        "trace": overview_schema(),
        "headline": _t(_STR, description="the top finding's line, or why there is none"),
        "step": _t(_INT, True, "the step whose path is shown (an annotation's instance with annotation)"),
        "rank": _t(_INT, True, "the rank whose path is shown"),
        "annotation": {
            **_obj({"name": _t(_STR), "instance": _t(_INT)}),
            "type": ["object", "null"],
            "description": "the annotation instance whose path is shown; null: a step's",
        },
        "critical_path": path,
        "findings": _array(_obj({k: finding[k] for k in findings_doc.FINDING_KEYS}), found.doc),
        "notes": _array(_t(_STR), "what was and was not analysed"),
    }
    return {**_header("explain"), **_obj({k: props[k] for k in findings_doc.KEYS})}


#: The metric names a diff's numbers can have (:func:`.diff.profile`, :func:`.diff.metric_meta`).
_METRIC_NAMES = (
    "^(step_p50|step_p90|step_mean|gpu_busy|idle_pct|kernel_time|kernel_count|comm_exposed|launch_p50"
    "|flops_per_step|achieved_tflops|mfu|(share|precision|copy|peak_mem|peak_reserved)_.+)$"
)


def _diff_rows(device_events: bool) -> dict[str, Any]:
    """A kernels / ops / runtime / annotations row of a diff."""
    count, ns, mean = _t(_INT, description="calls"), _t(_INT, description="[ns]"), _t(_NUM, True, "[ns]")
    props = {
        "name": _t(_STR, description="normalised name"),
        "base_example": _t(_STR, True, "the name as the base spells it"),
        "new_example": _t(_STR, True, "the name as the new trace spells it"),
        "status": _enum(("new", "gone", "both")),
        "base_total_ns": ns,
        "new_total_ns": ns,
        "delta_ns": ns,
        "base_count": count,
        "new_count": count,
        "base_mean_ns": mean,
        "new_mean_ns": mean,
    }
    if device_events:
        props |= {"base_device_events": count, "new_device_events": count}
    return _array(_obj(props, [k for k in props if "device_events" not in k]))


def _diff() -> dict[str, Any]:
    from .findings_base import CATEGORIES

    doc = diff.JSON_DOC
    num = _t(_NUM, True)
    side = _obj(
        {
            "path": _t(_STR),
            "folder": _t(_STR),
            "name": _t(_STR, True),
            "source": _t(_STR, True),
            "ranks": _array(_t(_INT)),
            "gpus": _t(_INT),
            "devices": _array(_t(_STR)),
            "world_size": _t(_INT, True),
            "precision": _t(_STR, True, "dominant precision of kernel time"),
            "mfu_basis": _t(_STR, True, "what its MFU rests on"),
        },
        ["path", "folder", "name", "source", "ranks", "gpus"],
    )
    metric = _obj(
        {
            "label": _t(_STR),
            "unit": _enum(("ns", "share", "count", "FLOP", "TFLOP/s", "bytes")),
            "better": _enum(("lower", "higher"), null=True),
            "base": num,
            "new": num,
            "delta": num,
            "rel": num,
            "changed": _t(_BOOL),
            "significant": _t(_BOOL, True),
            "ci95": {**_array(_t(_NUM), null=True), "minItems": 2, "maxItems": 2},
            "verdict": _enum(("regression", "improvement", "changed", "same")),
        }
    )
    finding = _obj(
        {
            "key": _t(_STR),
            "category": _enum(CATEGORIES),
            "rank": _t(_INT, True),
            "label": _t(_STR),
            "status": _enum(("appeared", "vanished", "grew", "shrank", "same")),
            "material": _t(_BOOL),
            "base_ns_per_step": _t(_INT, True),
            "new_ns_per_step": _t(_INT, True),
            "delta_ns_per_step": _t(_INT),
            "left_ns_per_step": _t(_INT, True),
            "noise_ns": num,
            "base_title": _t(_STR, True),
            "new_title": _t(_STR, True),
        }
    )
    props = {
        "version": _version("diff"),
        "base": side,
        "new": side,
        "verdict": _enum(("no significant change", "changed", "regression")),
        "setup": _array(
            _obj(
                {
                    "what": _enum(("devices", "precision", "world_size", "cuda_graphs")),
                    "label": _t(_STR),
                    "base": _t(_STR),
                    "new": _t(_STR),
                }
            )
        ),
        "notes": _array(_t(_STR)),
        "step_time_significant": _t(_BOOL),
        "headline": _array(_t(_STR, pattern=_METRIC_NAMES)),
        "metrics": _map(metric, _t(_STR, pattern=_METRIC_NAMES)),
        "kernels": _diff_rows(False),
        "ops": _diff_rows(False),
        "runtime": _diff_rows(True),
        "annotations": _diff_rows(False),
        "steps": _array(_obj({k: _t(_INT) for k in ("step", "base_ns", "new_ns", "delta_ns")})),
        "findings": _array(finding),
        "why": _t(_STR, True),
        "gate": {"anyOf": [{"$ref": schema_id("gate")}, {"type": "null"}]},
    }
    for key, words in doc.items():
        props[key] = {**props[key], "description": words}
    return {
        **_header("diff"),
        **_obj({k: props[k] for k in doc}),
        "$defs": {"gate": document("gate")},
    }


def _gate() -> dict[str, Any]:
    condition = {
        "condition": _t(_STR, description="as given to --fail-if"),
        "metric": _t(_STR, description="a key of the diff's metrics"),
        "op": _enum((">", ">=", "<", "<=")),
        "threshold": _t(_NUM, description="the change that breaks it, in unit"),
        "unit": _enum(("%", "pt", "ns", "us", "µs", "ms", "s", ""), description="'' for a count"),
        "change": _t(_NUM, description="the observed change, in unit"),
        "shown": _t(_STR, description="the change as text"),
        "broken": _t(_BOOL),
        "within_noise": _t(
            _BOOL, description="the change meets the condition but the step time moved within noise"
        ),
        "line": _t(_STR, description="the verdict in words"),
    }
    props = {
        "version": _version("gate"),
        "passed": _t(_BOOL, description="no condition broke"),
        "conditions": _array(_obj({k: condition[k] for k in gate.CONDITION_KEYS})),
    }
    return {**_header("gate"), **_obj({k: props[k] for k in gate.KEYS})}


def _gpu() -> dict[str, Any]:
    """A ``manifest.gpus`` item (:func:`.inventory.gpu_item`): the keys its source told, each of
    :data:`.inventory.GPU_KEYS`, and what else the trace's file said under ``more``."""
    props = {k: _t(kind, description=doc) for k, (kind, doc) in inventory.GPU_KEYS.items()}
    props[inventory.GPU_MORE] = _map({}, description="what else the trace said of the GPU, as it said it")
    return _obj(props, [], "a GPU: the keys its source told")


def _info() -> dict[str, Any]:
    from profui.capture.format.columns import EVENT_KINDS

    counts = _map(_t(_INT), _enum(EVENT_KINDS), "events by kind")
    manifest = {
        "name": _t(_STR, True),
        "status": _t(_STR),
        "source": _t(_STR, True),
        "synthetic": _t(_BOOL),
        "command": _array(_t(_STR), null=True),
        "exit_code": _t(_INT, True),
        "start_ns": _t(_INT, True, "[epoch_ns]"),
        "end_ns": _t(_INT, True, "[epoch_ns]"),
        "hosts": _array(_t(_STR)),
        "ranks": _array(_t(_INT)),
        "gpus": _array(_gpu(), "the GPUs as the manifest records them"),
        "versions": _map(_t([_STR, "null"]), description="library versions"),
        "sources": _array(_t(_STR, True), "the files it was imported from"),
        "notes": _array(_t(_STR)),
        "source_notes": _array(_t(_STR), "what the import left out or could not name"),
    }
    span = {
        k: _t(_INT, True, "[epoch_ns]" if k != "duration_ns" else "[ns]")
        for k in ("start_ns", "end_ns", "duration_ns")
    }
    props = {
        "version": _version("info"),
        "path": _t(_STR),
        "manifest": _obj({k: manifest[k] for k in inventory.MANIFEST_KEYS}),
        "span": _obj(span),
        "num_events": _t(_INT),
        "num_event_files": _t(_INT),
        "num_metric_rows": _t(_INT),
        "counts": counts,
        "ranks": _array(
            _obj(
                {
                    "node": _t(_STR),
                    "rank": _t(_INT),
                    "files": _t(_INT),
                    "events": _t(_INT),
                    "counts": counts,
                }
            )
        ),
        "devices": _array(_obj({"node": _t(_STR), "device": _t(_INT), "events": _t(_INT), "counts": counts})),
    }
    return {**_header("info"), **_obj({k: props[k] for k in inventory.KEYS})}


_BUILD = {"summary": _summary, "explain": _explain, "diff": _diff, "info": _info, "gate": _gate}


def document(name: str) -> dict[str, Any]:
    """The whole JSON Schema of output ``name`` (one of :data:`NAMES`): ``$schema``, ``$id``
    (``urn:profui:schema:NAME:VERSION``), ``title``, ``description`` and the document's shape.
    ``KeyError`` for an unknown name."""
    if name not in _BUILD:
        raise KeyError(f"no schema named {name!r} (there: {', '.join(NAMES)})")
    return _BUILD[name]()
