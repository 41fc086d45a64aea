"""The findings as one JSON document (``profui explain --json``; the TUI's Findings view reads
the same): the stage outputs rearranged, nothing recomputed.

Keys (``version`` :data:`profui.analysis.findings.VERSION`):

- ``version``: int; ``trace``: the trace's overview (``ingest/trace.json``);
- ``headline``: the top finding's line, or why there is none (:func:`.headline.headline`: the
  words ``profui summary`` and the dashboard say);
- ``step``, ``rank``: the step and rank whose critical path is shown (null without one; with
  ``annotation``, ``step`` is the instance, under ``--hta-compat`` HTA's number for its window);
- ``annotation``: ``{name, instance}`` when the path shown is an annotation's instance, else null;
- ``critical_path``: ``length_ns``, ``by_kind`` (``{kind: ns}``, ``critical_path.KINDS``; HTA's
  kinds under ``--hta-compat``), ``events`` (the path stretch by stretch: ``seq, kind, lane,
  tid, device, stream, name, start_ns, end_ns``; with ``--path-events N`` the N longest
  stretches, still in path order), ``events_total`` (the path's stretches in all) and
  ``events_truncated`` (whether ``events`` holds fewer) — ``critical_path``'s tables' rows;
- ``findings``: in rank order, each ``category, title, severity, recoverable_ns_per_step,
  recoverable_share, ranks, steps, evidence`` (``[{label, value, unit, source}]``: ``unit`` one
  of ``schemas.UNITS``, ``source`` the stage/table), ``look_at``, ``timeline`` (``{rank, step,
  ts_ns}``: the worst instance), ``next_step`` — ``findings.parquet`` and ``evidence.parquet``;
- ``notes``: sentences about what was and was not analysed.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import polars as pl

from .result_tables import CriticalPathOutputs, FindingsOutputs

#: The document's top-level keys, in order.
KEYS = ("version", "trace", "headline", "step", "rank", "annotation", "critical_path", "findings", "notes")
#: A finding's keys, in order.
FINDING_KEYS = (
    "category",
    "title",
    "severity",
    "recoverable_ns_per_step",
    "recoverable_share",
    "ranks",
    "steps",
    "evidence",
    "look_at",
    "timeline",
    "next_step",
)
#: A critical-path event's keys.
EVENT_KEYS = ("seq", "kind", "lane", "tid", "device", "stream", "name", "start_ns", "end_ns")
#: ``critical_path``'s keys, in order.
PATH_KEYS = ("length_ns", "by_kind", "events", "events_total", "events_truncated")


def findings_json(
    findings: pl.DataFrame, evidence: pl.DataFrame, top: int | None = None
) -> list[dict[str, Any]]:
    """``findings.parquet``'s rows (the first ``top``) with their ``evidence.parquet`` rows."""
    rows = findings.sort("position").head(top) if top is not None else findings.sort("position")
    ev: dict[int, list[dict[str, Any]]] = {}
    for e in evidence.iter_rows(named=True):
        ev.setdefault(e["position"], []).append({k: e[k] for k in ("label", "value", "unit", "source")})
    return [
        {
            "category": r["category"],
            "title": r["title"],
            "severity": r["severity"],
            "recoverable_ns_per_step": r["recoverable_ns_per_step"],
            "recoverable_share": r["recoverable_share"],
            "ranks": r["ranks"],
            "steps": r["steps"],
            "evidence": ev.get(r["position"], []),
            "look_at": r["look_at"],
            "timeline": {"rank": r["at_rank"], "step": r["at_step"], "ts_ns": r["at_ns"]},
            "next_step": r["next_step"],
        }
        for r in rows.iter_rows(named=True)
    ]


def median_step(cp_steps: pl.DataFrame) -> tuple[int | None, int | None]:
    """The job's median analysed step (by its slowest rank's path; of two middle ones the
    shorter) and that step's slowest rank; ``(None, None)`` without analysed steps."""
    if not cp_steps.height:
        return None, None
    jobs = (
        cp_steps.sort("step", pl.col("length_ns"), "rank", descending=[False, True, False])
        .group_by("step", maintain_order=True)
        .first()
        .sort("length_ns", "step")
    )
    row = jobs.row((jobs.height - 1) // 2, named=True)
    return row["step"], row["rank"]


def slowest_rank(cp_steps: pl.DataFrame, step: int) -> int | None:
    """The rank with the longest path in ``step`` (ties: the lowest)."""
    rows = cp_steps.filter(pl.col("step") == step).sort("length_ns", "rank", descending=[True, False])
    return rows["rank"][0] if rows.height else None


def critical_path_json(
    cp: CriticalPathOutputs, step: int | None, rank: int | None, path_events: int | None = None
) -> dict[str, Any]:
    """The critical path of ``step`` on ``rank``: its length, time by kind and stretches (the
    ``path_events`` longest, in path order; None: all), with how many there are in all."""
    if step is None or rank is None:
        return {"length_ns": None, "by_kind": {}, "events": [], "events_total": 0, "events_truncated": False}

    def mine(df: pl.DataFrame) -> pl.DataFrame:
        return df.filter(pl.col("step") == step, pl.col("rank") == rank)

    steps = mine(cp.steps)
    by_kind = mine(cp.by_kind)
    events = mine(cp.events).sort("seq")
    total = events.height
    if path_events is not None and path_events < total:
        # the longest stretches (ties: the earlier), shown in path order
        longest = events.with_columns(_ns=pl.col("end_ns") - pl.col("start_ns")).sort(
            ["_ns", "seq"], descending=[True, False]
        )
        events = longest.head(path_events).sort("seq")
    return {
        "length_ns": steps["length_ns"][0] if steps.height else None,
        "by_kind": dict(zip(by_kind["kind"].to_list(), by_kind["ns"].to_list(), strict=True)),
        "events": events.select(EVENT_KEYS).to_dicts(),
        "events_total": total,
        "events_truncated": events.height < total,
    }


def document(
    overview: Mapping[str, Any],
    cp: CriticalPathOutputs,
    found: FindingsOutputs,
    step: int | None,
    rank: int | None,
    notes: list[str],
    top: int | None = None,
    headline: str = "",
    annotation: Mapping[str, Any] | None = None,
    path_events: int | None = None,
) -> dict[str, Any]:
    """``profui explain --json``'s document (keys in the module docstring); ``headline`` is
    :func:`.headline.headline` of the same outputs, ``annotation`` the ``{name, instance}`` whose
    path ``cp`` holds (None: a step's), ``path_events`` the most path stretches kept (None: all)."""
    from .findings import VERSION

    return {
        "version": VERSION,
        "trace": dict(overview),
        "headline": headline,
        "step": step,
        "rank": rank,
        "annotation": dict(annotation) if annotation is not None else None,
        "critical_path": critical_path_json(cp, step, rank, path_events),
        "findings": findings_json(found.findings, found.evidence, top),
        "notes": notes,
    }
