"""The two whole-trace runs of the stage graph, each returning a :class:`~.result.Result`.

:func:`in_memory` runs the stages on an opened trace and writes nothing (the in-memory store,
:func:`.store.compute`); :func:`recorded` runs them as a ``profui analyze`` run of the trace
folder (:func:`.engine.analyze`), its outputs recorded under ``trace/.profui/`` and read back.
Both run the stages through the one loop (:func:`.schedule.run_stages`). Surfaces call
:func:`profui.analysis.run.run`, which picks one of them or the run by ranks (which lives above
the pipeline, beside the Dask code); the dashboard's cache rule (:func:`.answers.answers`) calls
them here.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from profui.capture.format import private_dir_for

from .artifacts import ArtifactMeta, read_outputs, verify
from .context import StageProgress
from .errors import PipelineError
from .result import Result, Store
from .store import compute, registry_or_default

if TYPE_CHECKING:
    from profui.analysis.trace import Trace

    from .dag import Registry

#: Where a run computes: in this process writing nothing, as a recorded ``profui analyze`` run,
#: or rank by rank on Dask.
Where = Literal["memory", "records", "ranks"]
WHERE: tuple[Where, ...] = ("memory", "records", "ranks")

OnStage = Callable[[str, dict[str, Any]], None]
Say = Callable[[str], None]


def check_where(where: str) -> Where:
    """``where`` when it is one of :data:`WHERE`; else ValueError naming the choices."""
    for w in WHERE:
        if where == w:
            return w
    raise ValueError(f"where={where!r}: a run is computed in one of {', '.join(WHERE)}")


def load_stages(found: Mapping[str, tuple[Path, ArtifactMeta]]) -> Store:
    """``{stage: {output file: value}}`` of ``{stage: (artifact folder, its meta)}``, read in one
    go (:func:`.artifacts.read_outputs`: a files stage's outputs are their paths, not read)."""
    return read_outputs(found)


def in_memory(
    trace: Trace,
    stages: Iterable[str],
    params: Mapping[str, Any] | None = None,
    *,
    registry: Registry | None = None,
    store: Store | None = None,
    on_stage: OnStage | None = None,
    on_progress: StageProgress | None = None,
) -> Result:
    """``stages`` and everything upstream of them run on ``trace`` in memory (nothing written):
    :func:`.store.compute`, whose arguments these are."""
    outputs = compute(
        trace, stages, params, registry=registry, store=store, on_stage=on_stage, on_progress=on_progress
    )
    return Result(outputs, "computed in memory")


def recorded(
    path: str | Path,
    stages: Iterable[str],
    params: Mapping[str, Any] | None = None,
    *,
    wait: bool = False,
    on_stage: OnStage | None = None,
    say: Say | None = None,
    on_progress: StageProgress | None = None,
) -> Result:
    """``stages`` and everything upstream of them as a recorded ``profui analyze`` run of the
    trace folder ``path`` (stages whose outputs an earlier run holds for the same parameters and
    code are taken from it); the outputs of every stage it ran or reused, read back once it is
    over, or as each stage succeeds when the caller follows them (``on_stage(name, outputs)``
    then, for the stages asked for; ``say``: progress lines; ``on_progress(stage, fraction,
    message)``: how far a long stage is). ``params``: typed values of the parameters to set (unset ones as ``profui analyze``
    takes them). A file no stage can read raises its :class:`TraceFormatError`; a failed stage is
    said, and its outputs and its readers' are missing from the result. ``wait=False`` refuses
    (:class:`PipelineError`) while another analysis holds the trace."""
    from .engine import StageEvent, analyze
    from .outputs import load_run
    from .records import RunRecord

    path = Path(path)
    registry = registry_or_default(None)
    stages = tuple(stages)
    got: Store = {}

    def outputs_of(rec: RunRecord, stage: str) -> tuple[Path, ArtifactMeta]:
        artifact = rec.stages[stage].artifact
        if artifact is None:  # a record damaged between its writing and this read
            raise PipelineError(f"{path}: run {rec.id} names no output of stage {stage}")
        folder = private_dir_for(path) / artifact
        meta = verify(folder)
        if meta is None:  # damaged between its writing and this read: never served
            raise PipelineError(f"{folder}: stage output damaged as it was read")
        return folder, meta

    def progress(ev: StageEvent) -> None:
        if ev.status == "running" and say is not None:
            say(f"[{ev.index}/{ev.total}] {ev.stage} …")
        elif ev.status == "progress" and on_progress is not None:
            on_progress(ev.stage, ev.fraction or 0.0, ev.message or "")
        elif ev.status == "succeeded":
            got.update(load_stages({ev.stage: outputs_of(load_run(path, ev.run_id), ev.stage)}))
            if on_stage is not None and ev.stage in stages:
                on_stage(ev.stage, got[ev.stage])

    needed = registry.with_ancestors(stages)
    # typed values as ``--set`` texts: str() of a bool, int, float (its repr) or str parses back
    # to the same value (:meth:`.params.Param.parse`)
    overrides = {name: str(value) for name, value in (params or {}).items()}
    # a caller that follows the stages reads each one's outputs as it succeeds; else they are
    # read once the run is over, all in one go, and the loop never calls back here
    follow = on_stage is not None or say is not None or on_progress is not None
    rec = analyze(
        path,
        stages=needed,
        overrides=overrides,
        wait=wait,
        progress=progress if follow else None,
    )
    bad = rec.bad_input()
    if bad is not None:  # a file no stage can read: the surface says so, as for all bad input
        raise bad
    succeeded = [s for s in needed if rec.stages[s].status == "succeeded"]
    if not follow:
        got = load_stages({s: outputs_of(rec, s) for s in succeeded})
    failed = [s for s in needed if s not in succeeded]
    if failed and say is not None:
        error = (rec.stages[failed[0]].error or "").strip().splitlines()
        say(f"stage {failed[0]} failed: {error[0] if error else 'see profui runs'}")
    return Result(got, f"computed ({rec.id})")
