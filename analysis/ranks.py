"""One rank of a trace on its own: the view a cluster's worker analyses.

A :class:`RankPart` names one ``node=<host>/rank=<r>/`` partition of a trace folder (its events
files, and its node's metrics files); :func:`rank_trace` opens it as a :class:`Trace` holding that
rank alone, its files' footers checked there, so a corrupt file fails the rank that holds it and
names it. :func:`rank_result` runs the stage graph (:func:`profui.analysis.pipeline.store.compute`,
the same bodies as a whole-trace run) on the view and keeps what the job needs: the per-rank
tables of :mod:`profui.analysis.jobreduce` and the rank's overview. It never raises on bad input:
the rank's result carries the one-line error instead, so the client decides (fail naming the
rank, or skip it with ``--skip-bad-ranks``).

The critical path is built across ranks (collectives join them), from the steps the job
chooses: once every rank's tables are back, :func:`path_shares` runs a second task per rank,
:func:`rank_path_share`, which reads that rank's events of the job's analysed steps and sends
back its share of the graph's inputs (:class:`~profui.analysis.critical_path.PathShare`); the
job builds the graph from them with the whole-trace stage's own function
(:mod:`profui.analysis.jobreduce`).
"""

from __future__ import annotations

import functools
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from profui.capture.format import (
    Manifest,
    TraceDir,
    TraceFile,
    TraceFormatError,
    check_file,
    open_trace_layout,
)


@dataclass(frozen=True)
class RankPart:
    """One rank's partition of a trace folder: where it is and which files hold it."""

    path: Path
    manifest: Manifest
    node: str
    rank: int
    events: tuple[TraceFile, ...]
    metrics: tuple[TraceFile, ...] = ()

    @property
    def label(self) -> str:
        """``node=<host>/rank=<r>``, as the folder is named."""
        return f"node={self.node}/rank={self.rank}"


@dataclass
class RankResult:
    """What one rank sends back: its per-rank tables and overview, or the error that stopped it."""

    node: str
    rank: int
    tables: dict[tuple[str, str], Any] = field(default_factory=dict)
    overview: dict[str, Any] = field(default_factory=dict)
    #: The problem that stopped the rank (one line) and the file it is about.
    error: str | None = None
    error_path: str | None = None


def rank_parts(path: str | Path) -> tuple[TraceDir, list[RankPart]]:
    """The trace folder's layout (footers not read) and one :class:`RankPart` per (node, rank),
    in (node, rank) order. Raises :class:`TraceFormatError` for a folder that is not a trace."""
    layout = open_trace_layout(path)
    keys = sorted({(f.node, f.rank) for f in layout.events if f.rank is not None})
    # a worker runs in a working directory of its own (an external scheduler's): it gets the
    # client's paths resolved, never a path relative to where the client runs
    events = [replace(f, path=f.path.resolve()) for f in layout.events]
    metrics = [replace(f, path=f.path.resolve()) for f in layout.metrics]
    parts = [
        RankPart(
            layout.path.resolve(),
            layout.manifest,
            node,
            rank,
            tuple(f for f in events if (f.node, f.rank) == (node, rank)),
            tuple(f for f in metrics if f.node == node),
        )
        for node, rank in keys
    ]
    if not parts:
        raise TraceFormatError(
            layout.path, "no rank=<r> folders with events files: nothing to analyse per rank"
        )
    return layout, parts


def rank_trace(part: RankPart) -> Any:
    """The :class:`~profui.analysis.trace.Trace` of ``part`` alone, its files' footers checked."""
    from profui.analysis.trace import Trace

    events = [replace(f, num_rows=check_file(f.path, f.table)) for f in part.events]
    metrics = [replace(f, num_rows=check_file(f.path, f.table)) for f in part.metrics]
    return Trace(TraceDir(part.path, part.manifest, events, metrics))


def rank_result(part: RankPart, params: Mapping[str, Any]) -> RankResult:
    """The stage graph run on ``part`` alone; its per-rank tables and overview, or its error.

    The task a cluster's worker runs per rank: its inputs and result are small (file names in,
    summary tables out), the rank's events are read on the worker and dropped there.
    """
    from profui.analysis import jobreduce
    from profui.analysis.pipeline.store import compute
    from profui.analysis.summary_document import trace_overview

    try:
        trace = rank_trace(part)
        store = compute(trace, jobreduce.stages_needed(params), params)
        overview = trace_overview(trace, trace.cached_events())
    except TraceFormatError as exc:
        return RankResult(part.node, part.rank, error=exc.problem, error_path=str(exc.path))
    return RankResult(
        part.node,
        part.rank,
        jobreduce.rank_outputs(store, trace.cached_events(), params, trace.metrics()),
        overview,
    )


def rank_path_share(
    item: tuple[RankPart, Any], spans: list[tuple[int, int]], params: Mapping[str, Any]
) -> Any:
    """The second task of a rank (``item``: the rank and its rows of the job's
    ``comm/arrivals``): its :class:`~profui.analysis.critical_path.PathShare` of the job's
    analysed steps (``spans``: :attr:`~profui.analysis.critical_path.PathPlan.spans`), read
    from its events and its own launches as the whole-trace stage reads them; or the one-line
    :class:`TraceFormatError` that stopped it (its files changed since its first task)."""
    from profui.analysis.critical_path import path_share
    from profui.analysis.engine import ENGINE
    from profui.analysis.launch import kernel_launches
    from profui.analysis.pipeline.bodies import stage_events

    part, arrivals = item
    try:
        trace = rank_trace(part)
        events = stage_events(trace, params)
        # the correlate stage's launches (never HTA's: no second task runs under hta_compat),
        # without the stage graph's ingest, which reads every event once more for its inventory
        launches = kernel_launches(events).collect(engine=ENGINE)
        return path_share(events, launches, arrivals, spans)
    except TraceFormatError as exc:
        return exc


def path_shares(
    client: Any,
    parts: list[RankPart],
    results: list[RankResult],
    params: Mapping[str, Any],
    skip_bad_ranks: bool = False,
) -> list[RankResult]:
    """``results`` (each rank's first task, in ``parts``' order) with each rank's share of the
    critical path's inputs added (:data:`~profui.analysis.jobreduce.PATH_SHARE`), its second
    task run on ``client``'s cluster (``None``: here, in turn). The job is the ranks whose first
    task succeeded (with ``skip_bad_ranks``; without it a bad rank fails the run, and nothing
    is run here). Under ``hta_compat`` no task runs: HTA's path is per rank, in the first
    tasks' tables; only the ranks' overviews are added (the findings' words). A rank that fails
    its second task gets that error, and no rank a share."""
    from profui.analysis import jobreduce

    bad = [r.error is not None for r in results]
    if all(bad) or (any(bad) and not skip_bad_ranks):
        return results
    good = [(p, r) for p, r in zip(parts, results, strict=True) if r.error is None]
    if params["hta_compat"]:  # HTA's path is per rank, in the first tasks' tables
        done = [replace(r, tables={**r.tables, **jobreduce.with_share(None, r.overview)}) for _, r in good]
    else:
        done = _path_shares(client, [p for p, _ in good], [r for _, r in good], params)
    back = iter(done)
    return [r if r.error is not None else next(back) for r in results]


def _path_shares(
    client: Any, parts: list[RankPart], results: list[RankResult], params: Mapping[str, Any]
) -> list[RankResult]:
    from profui.analysis import jobreduce
    from profui.analysis.critical_path import PathShare

    from .cluster import run_tasks

    plan = jobreduce.path_plan([r.tables for r in results])
    shares: list[Any]  # each a PathShare, or the TraceFormatError that stopped its task
    if plan is None:  # no step windows: the stage's empty tables, no task
        shares = [PathShare({}, {}) for _ in results]
    else:
        items = [(p, r.tables[("comm", "arrivals")]) for p, r in zip(parts, results, strict=True)]
        task = functools.partial(rank_path_share, spans=plan.spans, params=dict(params))
        if client is None:
            shares = [task(item) for item in items]
        else:
            labels = [f"{p.path}: rank {p.label} (critical path)" for p in parts]
            shares = [None] * len(items)
            for i, share in run_tasks(client, task, items, labels):
                shares[i] = share
    if any(isinstance(s, TraceFormatError) for s in shares):
        # the graph joins every rank: without one rank's share, no rank's is of use
        return [
            replace(r, error=s.problem, error_path=str(s.path)) if isinstance(s, TraceFormatError) else r
            for r, s in zip(results, shares, strict=True)
        ]
    return [
        replace(r, tables={**r.tables, **jobreduce.with_share(s, r.overview)})
        for r, s in zip(results, shares, strict=True)
    ]
