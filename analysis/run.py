"""One entry point for every analysis: :func:`run` gives the :class:`Result` of the stages asked for.

Where the stages run is a choice of :func:`run`'s caller, never of the surface reading the result:

- ``memory``: in this process on an opened trace, nothing written
  (:func:`profui.analysis.pipeline.run.in_memory`);
- ``records``: as a recorded ``profui analyze`` run of the trace folder, its outputs kept under
  ``trace/.profui/`` for the next reader (:func:`profui.analysis.pipeline.run.recorded`);
- ``ranks``: rank by rank on Dask, the job's outputs assembled from the ranks' by
  :func:`profui.analysis.distributed.job_result` (per-rank tables concatenated, job tables reduced).

Every way gives outputs of one shape, ``{stage: {file: value}}``, and a ``summary`` stage's
``summary.json`` assembled by one function (:func:`profui.analysis.pipeline.bodies.summary_doc`).
This module sits above the pipeline and the runs by ranks: the pipeline never imports the Dask
code, which imports the pipeline.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .pipeline.result import Result, Store
from .pipeline.run import WHERE, OnStage, Say, Where, check_where

if TYPE_CHECKING:
    from .trace import Trace

__all__ = ["WHERE", "Result", "Where", "run"]


def run(
    trace: Trace | str | Path,
    stages: Iterable[str],
    params: Mapping[str, Any] | None = None,
    *,
    where: Where = "memory",
    store: Store | None = None,
    on_stage: OnStage | None = None,
    say: Say | None = None,
    scheduler: str | None = None,
    workers: int | None = None,
    skip_bad_ranks: bool = False,
    on_rank: Callable[[int, int, Any], None] | None = None,
) -> Result:
    """The outputs of ``stages`` (and of every stage upstream of them) on ``trace``, computed
    ``where`` says (see the module docstring); ``params``: typed parameter values by name, the
    others at their defaults.

    ``trace`` is an opened :class:`~profui.analysis.trace.Trace` or a trace folder (opened here
    for ``memory``; ``records`` and ``ranks`` need only its path). ``store``: the in-memory
    outputs of an earlier call with the same parameters, not computed again (``memory`` only).
    ``on_stage(name, outputs)`` follows each stage computed (``memory``, ``records``); ``say``
    receives a recorded run's progress lines. ``scheduler``, ``workers``, ``skip_bad_ranks`` and
    ``on_rank(done, total, rank_result)`` are the run by ranks' (:mod:`profui.analysis.cluster`).
    A ``where`` that is none of :data:`WHERE` is a ValueError naming them.
    """
    where = check_where(where)
    stages = list(stages)
    if where != "memory" and (store is not None):
        raise ValueError(f"where={where!r}: a store of earlier outputs is the in-memory run's only")
    if where != "ranks" and (scheduler or workers or skip_bad_ranks or on_rank):
        raise ValueError(
            f"where={where!r}: scheduler, workers, skip_bad_ranks and on_rank are a run by ranks'"
        )
    if where == "memory":
        from .pipeline.run import in_memory

        return in_memory(_opened(trace), stages, params, store=store, on_stage=on_stage)
    path = trace if isinstance(trace, (str, Path)) else trace.path
    if where == "records":
        from .pipeline.run import recorded

        return recorded(path, stages, params, on_stage=on_stage, say=say)
    from .distributed import run_by_ranks

    return run_by_ranks(
        path,
        stages,
        params,
        scheduler=scheduler,
        workers=workers,
        skip_bad_ranks=skip_bad_ranks,
        on_rank=on_rank,
    )


def _opened(trace: Trace | str | Path) -> Trace:
    """``trace``, opened when it is a folder's path."""
    if not isinstance(trace, (str, Path)):
        return trace
    from profui.capture.format import open_trace_dir

    from .trace import Trace

    return Trace(open_trace_dir(trace))
