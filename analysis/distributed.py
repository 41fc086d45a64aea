"""The job's result from its ranks, each analysed as a task on Dask distributed.

A job of many ranks is never loaded into one process: every rank is one task
(:func:`profui.analysis.ranks.rank_result`) that reads that rank's events on a worker and sends
back its per-rank tables; the client concatenates them and reduces the job's tables
(:mod:`profui.analysis.jobreduce`). The tasks run where :mod:`profui.analysis.cluster` says (an
existing scheduler, else a local cluster of one worker per core, at most one per rank); a rank
that keeps killing workers ends the run with :class:`RankFailed` naming it. A rank whose files cannot be read fails the run with the one-line
:class:`TraceFormatError` naming the rank and the file, unless ``skip_bad_ranks``: then it is
left out and named in the summary's notes.

Dask is imported here, inside the functions, only when a run over ranks is asked for: a user who
analyses one machine's trace never loads it.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

from profui.capture.format import TraceFormatError

from .cluster import TaskFailed, dask_client, run_tasks, scheduler_address
from .jobreduce import concat_ranks, job_json, job_overview, job_tables, whole_trace_only
from .pipeline.result import Result
from .ranks import RankPart, RankResult, path_shares, rank_parts, rank_result

#: Up to this many bytes of events files a trace is summarised whole, in this process; beyond,
#: by ranks on a local cluster (one process holding every event would need several times this).
IN_PROCESS_BYTES = 512 * 1024 * 1024


class RankFailed(TaskFailed):
    """A rank's task could not finish (its workers kept dying); the message names the rank."""


def wants_ranks(path: str | Path, scheduler: str | None = None, workers: int | None = None) -> bool:
    """Whether ``profui summary`` should run by ranks: a scheduler or a worker count was given,
    or the trace's events files exceed :data:`IN_PROCESS_BYTES`."""
    if scheduler_address(scheduler) or workers:
        return True
    from profui.capture.format import open_trace_layout

    layout = open_trace_layout(path)
    return sum(f.path.stat().st_size for f in layout.events) > IN_PROCESS_BYTES


def rank_results(
    client: Any,
    parts: list[RankPart],
    params: Mapping[str, Any],
    on_rank: Callable[[int, int, RankResult], None] | None = None,
) -> list[RankResult]:
    """Every rank of ``parts`` run as one task on ``client``'s cluster; the results in ``parts``'
    order. ``on_rank(done, total, result)`` as each finishes."""
    results: list[RankResult | None] = [None] * len(parts)
    labels = [f"{p.path}: rank {p.label}" for p in parts]
    task = functools.partial(rank_result, params=dict(params))
    for done, (i, result) in enumerate(run_tasks(client, task, parts, labels, RankFailed), 1):
        results[i] = result
        if on_rank is not None:
            on_rank(done, len(parts), result)
    return [r for r in results if r is not None]


def run_by_ranks(
    path: str | Path,
    stages: Sequence[str],
    params: Mapping[str, Any] | None = None,
    *,
    scheduler: str | None = None,
    workers: int | None = None,
    skip_bad_ranks: bool = False,
    on_rank: Callable[[int, int, RankResult], None] | None = None,
) -> Result:
    """The job's outputs of ``stages`` from its ranks, each a Dask task (:func:`job_result`).

    Raises :class:`TraceFormatError` (one line, naming the rank) for a rank that cannot be read
    unless ``skip_bad_ranks``, :class:`RankFailed` for a rank whose workers kept dying, and
    :class:`~profui.analysis.pipeline.errors.PipelineError` for a stage a run by ranks does not
    give (before any rank runs).
    """
    from .pipeline.params import typed_params
    from .pipeline.registry import REGISTRY

    values = typed_params(REGISTRY.params, params)
    check_stages(stages)
    layout, parts = rank_parts(path)
    with dask_client(scheduler, workers, len(parts)) as client:
        results = path_shares(
            client, parts, rank_results(client, parts, values, on_rank), values, skip_bad_ranks
        )
    return job_result(layout, results, values, skip_bad_ranks, stages)


def ranks_stages() -> list[str]:
    """The stages of the graph a run by ranks gives outputs of, in the graph's order: those of
    its per-rank and job tables, the critical path and findings the job builds from its ranks'
    shares, and the summary assembled from them."""
    from .jobreduce import JOB_TABLES, PATH_TABLES, PER_RANK_TABLES
    from .pipeline.registry import REGISTRY

    given = {s for s, _ in (*PER_RANK_TABLES, *JOB_TABLES, *PATH_TABLES)} | {"summary"}
    return [s for s in REGISTRY.order if s in given]


def check_stages(stages: Sequence[str]) -> None:
    """Refuse (:class:`PipelineError`, one line) a stage a run by ranks gives no outputs of."""
    from .pipeline.errors import PipelineError

    given = ranks_stages()
    left = [s for s in stages if s not in given]
    if left:
        raise PipelineError(
            f"stage {left[0]}: not computed by ranks (it needs every rank's events in one process); "
            f"by ranks: {', '.join(given)}"
        )


def job_result(
    layout: Any,
    results: list[RankResult],
    params: Mapping[str, Any],
    skip_bad_ranks: bool,
    stages: Sequence[str] = ("summary",),
) -> Result:
    """The job's result from its ranks' (in (node, rank) order): the one assembly of a job.
    It holds ``stages`` and the stages upstream of them, as a whole-trace run's does.

    Its outputs have the shape of a whole-trace run's, ``{stage: {file: value}}``: the per-rank
    tables concatenated and the job tables reduced (:func:`job_outputs`), and the ``summary`` stage's ``summary.json`` and
    ``takeaways.json`` assembled by the whole-trace summary's own
    :func:`~profui.analysis.pipeline.bodies.summary_doc`; its notes say what a run by ranks
    leaves out and which ranks were skipped. A bad rank raises :class:`TraceFormatError` naming
    it unless ``skip_bad_ranks``.
    """
    from .devices import words_for
    from .pipeline.bodies import DETAIL_TABLES, summary_doc
    from .pipeline.registry import REGISTRY
    from .summary_document import SECTIONS

    bad = [r for r in results if r.error is not None]
    if bad and not skip_bad_ranks:
        r = bad[0]
        if len(bad) == len(results):
            more = f" (and every other rank: {len(bad)} of {len(results)})" if len(bad) > 1 else ""
            raise TraceFormatError(
                r.error_path or layout.path, f"rank node={r.node}/rank={r.rank}: {r.error}{more}"
            )
        more = f" ({len(bad) - 1} more bad rank(s))" if len(bad) > 1 else ""
        raise TraceFormatError(
            r.error_path or layout.path,
            f"rank node={r.node}/rank={r.rank}: {r.error}{more}; --skip-bad-ranks analyses the others",
        )
    good = [r for r in results if r.error is None]
    if not good:
        raise TraceFormatError(layout.path, "no rank could be read")
    outputs = job_outputs([r.tables for r in good], params, layout.manifest.source, layout.manifest.gpus)
    ranks = [(r.node, r.rank) for r in good]
    overview = job_overview(
        str(layout.path), layout.manifest, layout.nodes, ranks, [r.overview for r in good]
    )
    files = {stage: list(tables) for stage, tables in outputs.items()}
    doc = summary_doc(files, lambda s, f: outputs[s][f], overview, layout.manifest, params)
    missing: dict[str, list[str]] = {}
    for stage in SECTIONS:
        for file in REGISTRY.stages[stage].outputs:
            name = file.removesuffix(".parquet")
            if file.endswith(".parquet") and (stage, name) not in DETAIL_TABLES:
                if name not in doc.sections.get(stage, {}):
                    missing.setdefault(stage, []).append(name)
    if missing:
        doc.notes.append(whole_trace_only(missing, words_for(overview)))
    doc.notes += [f"skipped rank node={r.node}/rank={r.rank}: {r.error_path}: {r.error}" for r in bad]
    outputs["summary"] = {"summary.json": doc, "takeaways.json": doc.takeaways}
    wanted = set(stages) | REGISTRY.ancestors(stages)
    return Result({s: files for s, files in outputs.items() if s in wanted}, "by ranks")


def job_outputs(
    per_rank: list[Mapping[Any, Any]],
    params: Mapping[str, Any],
    source: str | None = None,
    gpus: Sequence[Any] = (),
) -> dict[str, dict[str, Any]]:
    """The job's stage outputs ``{stage: {file: table}}`` from its ranks' (in (node, rank)
    order): the per-rank tables concatenated, the job tables reduced (``gpus``: the manifest's),
    the JSON outputs joined; each stage's files in its declared order."""
    from .pipeline.registry import REGISTRY

    tables = job_tables(concat_ranks(per_rank), params, gpus)
    outputs: dict[str, dict[str, Any]] = {}
    for stage in REGISTRY.stages:
        for file in REGISTRY.stages[stage].outputs:
            key = (stage, file.removesuffix(".parquet"))
            if file.endswith(".json") and (stage, file) in tables:
                outputs.setdefault(stage, {})[file] = job_json(stage, file, tables[(stage, file)], source)
            elif key in tables:
                outputs.setdefault(stage, {})[file] = tables[key]
    return outputs
