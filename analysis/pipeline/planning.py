"""Planning a run: which stages execute, which outputs come from which reference run, with
which parameters; and the refusals of everything the rules of selective execution forbid.

Planning only reads run records and artifact metadata, so it is safe without the trace's lock
(it is repeated under the lock before anything executes).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from profui.capture.format import TraceDir

from . import records
from .artifacts import remove_temporaries, verify
from .dag import TRACE, Registry
from .errors import PipelineError
from .params import resolve_params
from .records import RunRecord, StageRecord


@dataclass
class Plan:
    """What a run will do, decided before anything executes."""

    params: dict[str, Any]
    selection: list[str]  # stages to execute, topological order
    reused: dict[str, StageRecord] = field(default_factory=dict)  # upstream stages from the reference
    reference: RunRecord | None = None
    resume_of: str | None = None
    selective: bool = False


_STATUS_WORDS = {
    "failed": "it failed in that run",
    "stopped": "it was stopped in that run",
    "skipped": "it did not run in that run",
    "running": "it was still running",
    "pending": "it had not started",
}


def is_live(record: RunRecord, lock_held_by_us: bool) -> bool:
    """Whether an ``executing`` record belongs to a process still running it (records read by
    :func:`records.list_runs` are settled: one whose process is gone reads ``interrupted``)."""
    # the executing process would hold the lock
    return record.status == "executing" and not lock_held_by_us


def repair_stale(private_dir: Path) -> list[str]:
    """Rewrite the runs left ``executing`` by a killed process as ``interrupted``; call holding
    the lock (so every ``executing`` record is stale, whatever became of its pid)."""
    fixed = []
    for rec in records.scan(private_dir)[0]:
        if rec.status != "executing":
            continue
        records.interrupt(rec)
        records.save(private_dir, rec)
        fixed.append(rec.id)
    remove_temporaries(private_dir)
    return fixed


def _find(runs: list[RunRecord], spec: str, trace: Path) -> RunRecord:
    rid = records.normalise_id(spec)
    if rid == "latest":
        if not runs:
            raise PipelineError(f"{trace}: no runs yet")
        return runs[-1]
    for r in runs:
        if r.id == rid:
            return r
    known = ", ".join(r.id for r in runs[-5:]) or "none yet"
    raise PipelineError(f"{trace}: no run {rid} (latest runs: {known})")


def _holds(run: RunRecord, stage: str, private: Path) -> bool:
    """Whether ``run`` holds ``stage``'s succeeded output, with its files intact."""
    rs = run.stages.get(stage)
    return (
        rs is not None
        and rs.status == "succeeded"
        and rs.artifact is not None
        and verify(private / rs.artifact) is not None
    )


def plan_run(
    trace_dir: TraceDir,
    registry: Registry,
    *,
    stages: Iterable[str] | None = None,
    reference: str | None = None,
    resume: str | None = None,
    overrides: Mapping[str, str] | None = None,
    lock_held: bool = False,
) -> Plan:
    """Decide selection, reference, reused outputs and parameters; refuse what the rules forbid."""
    private = trace_dir.private_dir
    trace = trace_dir.path
    runs = records.list_runs(private)
    overrides = dict(overrides or {})

    ref: RunRecord | None = None
    resume_of = None
    if resume is not None:
        if stages is not None:
            raise PipelineError("--resume picks the stages itself; do not combine it with --stages")
        if reference is not None:
            raise PipelineError("--resume RUN is its own reference; do not combine it with --reference")
        ref = _find(runs, resume, trace)
        if is_live(ref, lock_held):
            raise PipelineError(f"{trace}: run {ref.id} is still executing; it cannot be resumed yet")
        # an on-demand stage is the run's to finish only when the run asked for it
        scope = [n for n in registry.order if n in registry.default_order or n in (ref.selection or ())]
        todo = [n for n in scope if ref.stages.get(n) is None or ref.stages[n].status != "succeeded"]
        if not todo:
            raise PipelineError(f"{trace}: run {ref.id} has every stage succeeded; nothing to resume")
        stages = todo
        resume_of = ref.id
    elif reference is not None:
        ref = _find(runs, reference, trace)
        if is_live(ref, lock_held):
            raise PipelineError(
                f"{trace}: reference run {ref.id} is still executing; wait for it or pick another --reference"
            )

    if stages is not None:
        selection = registry.check_selection(list(stages))
    else:
        selection = registry.default_order

    selected = set(selection)
    # Unselected stages not downstream of the selection keep their outputs from the reference:
    # the ones upstream are needed, the unrelated ones make the run a complete picture.
    downstream = registry.descendants(selected) - selected
    upstream = [s for s in registry.order if s not in selected | downstream]
    needed_any = [s for s in upstream if s in registry.ancestors(selected)]
    needed = {i for s in selection for i in registry.stages[s].inputs if i != TRACE and i not in selected}
    if needed_any and ref is None:
        candidates = [r for r in runs if not is_live(r, lock_held)]
        if not candidates:
            raise PipelineError(
                f"{trace}: the selection needs the outputs of {', '.join(s for s in upstream if s in needed)}"
                " but there is no earlier run to reuse them from; run `profui analyze` without --stages first"
            )
        # the latest run that holds every output the selection reads: a later partial run
        # (e.g. `--stages steps`, which leaves its downstream stages out) must not shadow it
        holding = (r for r in reversed(candidates) if all(_holds(r, name, private) for name in needed))
        ref = next(holding, None)
        if ref is None:
            # no run holds them all (a diff runs only the stages it compares): this run computes
            # the missing ones too, rather than refuse a selection no earlier run can complete
            latest = candidates[-1]
            missing = [s for s in registry.order if s in needed and not _holds(latest, s, private)]
            return plan_run(
                trace_dir, registry, stages=[*selection, *missing], overrides=overrides, lock_held=lock_held
            )

    reused: dict[str, StageRecord] = {}
    for name in upstream:
        rs = ref.stages.get(name) if ref else None
        if ref is not None and _holds(ref, name, private):
            reused[name] = rs  # type: ignore[assignment]
        elif name in needed:
            why = (
                "its output files are missing or damaged"
                if rs is not None and rs.status == "succeeded"
                else (
                    _STATUS_WORDS.get(rs.status, rs.status)
                    if rs is not None
                    else "it was not part of that run"
                )
            )
            raise PipelineError(
                f"{trace}: reference run {ref.id} lacks the output of stage {name} ({why}), "  # type: ignore[union-attr]
                f"which the selection needs; select {name} too or pick another --reference"
            )

    params = resolve_params(registry.params, ref.params if ref else None, overrides)
    if ref is not None and reused and resume is None:
        # a stage reused from the reference ran with the reference's parameters: one whose
        # parameter changed is computed again, with every stage between it and the selection
        # (a summary labelled bucket_ms=2 never shows tables bucketed by 5 ms)
        was = resolve_params(registry.params, ref.params, {})
        changed = {k for k in params if params[k] != was.get(k)}
        stale = {n for n in reused if changed & set(registry.stages[n].params)}
        if stale:
            between = (registry.descendants(stale) & registry.ancestors(selected)) | stale
            more = [n for n in registry.order if n in between and n not in selected]
            return plan_run(
                trace_dir,
                registry,
                stages=[*selection, *more],
                reference=ref.id,
                overrides=overrides,
                lock_held=lock_held,
            )
    return Plan(
        params=params,
        selection=selection,
        reused=reused,
        reference=ref,
        resume_of=resume_of,
        selective=stages is not None,
    )
