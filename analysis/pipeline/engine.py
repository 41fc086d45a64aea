"""Planning and executing one ``profui analyze`` run.

A run executes the selected stages in topological order. Before computing a stage it looks its
cache key up among earlier computations; stages upstream of a selection are taken from the
reference run instead of running. The run record is rewritten (atomically) at every change so
``profui runs`` and a concurrent reader always see a consistent state.
"""

from __future__ import annotations

import os
import time
import traceback
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from profui.capture.format import TraceDir, open_trace_dir

from . import records
from .artifacts import (
    artifact_dir,
    artifact_key,
    digest,
    remove_temporaries,
    trace_fingerprint,
    verify,
    write_artifact,
)
from .context import RunShared, StageContext
from .dag import TRACE, Registry
from .errors import PipelineError
from .lock import TraceLock
from .params import resolve_params
from .records import RunRecord, StageRecord, now_iso


@dataclass(frozen=True)
class StageEvent:
    """A progress report: stage ``stage`` of the run changed to ``status``."""

    run_id: str
    stage: str
    status: str  # running | succeeded | failed | stopped | skipped
    provenance: str | None
    index: int  # 1-based position among the stages this run executes
    total: int
    seconds: float | None = None
    message: str | None = None


Progress = Callable[[StageEvent], None]


@dataclass
class Plan:
    """What a run will do, decided before anything executes."""

    params: dict[str, Any]
    selection: list[str]  # stages to execute, topological order
    reused: dict[str, StageRecord] = field(default_factory=dict)  # upstream stages from the reference
    reference: RunRecord | None = None
    resume_of: str | None = None
    unavailable: dict[str, str] = field(default_factory=dict)
    selective: bool = False


def _pid_alive(pid: int) -> bool:
    if pid <= 0:
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def is_live(record: RunRecord, lock_held_by_us: bool) -> bool:
    """Whether an ``executing`` record belongs to a process still running it."""
    if record.status != "executing":
        return False
    if lock_held_by_us:
        return False  # the executing process would hold the lock
    return _pid_alive(record.pid)


def repair_stale(private_dir: Path) -> list[str]:
    """Mark runs left ``executing`` by a killed process as ``failed``; call holding the lock."""
    fixed = []
    for rec in records.list_runs(private_dir):
        if rec.status != "executing":
            continue
        msg = f"process {rec.pid} ended without recording an outcome (killed?)"
        for s in rec.stages.values():
            if s.status == "running":
                s.status, s.error, s.end = "failed", msg, s.end or now_iso()
        rec.status, rec.error, rec.ended = "failed", msg, rec.ended or now_iso()
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
    unavailable = registry.unavailable()
    available = [s for s in registry.order if s not in unavailable]
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
        todo = [n for n in available if ref.stages.get(n) is None or ref.stages[n].status != "succeeded"]
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
        bad = [s for s in selection if s in unavailable]
        if bad:
            raise PipelineError(
                "stage(s) cannot run here: " + "; ".join(f"{s} ({unavailable[s]})" for s in bad)
            )
    else:
        selection = available

    selected = set(selection)
    # Unselected stages not downstream of the selection keep their outputs from the reference:
    # the ones upstream are needed, the unrelated ones make the run a complete picture.
    downstream = registry.descendants(selected) - selected
    upstream = [s for s in registry.order if s not in selected | downstream and s not in unavailable]
    needed_any = [s for s in upstream if s in registry.ancestors(selected)]
    needed = {
        i
        for s in selection
        for i in registry.stages[s].inputs
        if i != TRACE and i not in selected and i not in unavailable
    }
    if needed_any and ref is None:
        candidates = [r for r in runs if not is_live(r, lock_held)]
        if not candidates:
            raise PipelineError(
                f"{trace}: the selection needs the outputs of {', '.join(s for s in upstream if s in needed)}"
                " but there is no earlier run to reuse them from; run `profui analyze` without --stages first"
            )
        ref = candidates[-1]

    reused: dict[str, StageRecord] = {}
    for name in upstream:
        rs = ref.stages.get(name) if ref else None
        ok = (
            rs is not None
            and rs.status == "succeeded"
            and rs.artifact is not None
            and verify(private / rs.artifact) is not None
        )
        if ok:
            reused[name] = rs  # type: ignore[assignment]
        elif name in needed:
            why = "its output files are missing or damaged" if rs is not None and rs.status == "succeeded" else (
                f"it is {rs.status}" if rs is not None else "it was not part of that run"
            )
            raise PipelineError(
                f"{trace}: reference run {ref.id} lacks the output of stage {name} ({why}), "  # type: ignore[union-attr]
                f"which the selection needs; select {name} too or pick another --reference"
            )

    params = resolve_params(registry.params, ref.params if ref else None, overrides)
    return Plan(
        params=params,
        selection=selection,
        reused=reused,
        reference=ref,
        resume_of=resume_of,
        unavailable=unavailable,
        selective=stages is not None,
    )


def _stage_params(registry: Registry, name: str, params: Mapping[str, Any]) -> dict[str, Any]:
    """The output-affecting parameters a stage declares, with this run's values."""
    st = registry.stages[name]
    return {p: params[p] for p in st.params if registry.params[p].affects_output}


def _debug_hooks(name: str, params: Mapping[str, Any]) -> None:
    """Test knobs (documented in the registry): sleep in / fail a named stage."""
    sleep_stage = params.get("debug_sleep_stage") or ""
    if params.get("debug_sleep_s", 0) and name in sleep_stage.split(","):
        time.sleep(float(params["debug_sleep_s"]))
    if name in (params.get("debug_fail") or "").split(","):
        raise RuntimeError(f"stage {name} made to fail by debug_fail")


def execute(
    trace_dir: TraceDir,
    registry: Registry,
    plan: Plan,
    *,
    use_cache: bool = True,
    progress: Progress | None = None,
    lock: TraceLock | None = None,
) -> RunRecord:
    """Execute ``plan``; the caller holds the trace lock. Returns the final run record.

    KeyboardInterrupt marks the run and its running stage ``stopped`` and is re-raised; any
    other exception in a stage marks both ``failed`` with the error, and the stages not run yet
    ``skipped``.
    """
    private = trace_dir.private_dir
    private.mkdir(parents=True, exist_ok=True)
    rec = RunRecord(
        id=records.next_id(private),
        created=now_iso(),
        params=dict(plan.params),
        selection=list(plan.selection) if plan.selective else None,
        reference=plan.reference.id if plan.reference else None,
        resume_of=plan.resume_of,
        pid=os.getpid(),
    )
    for name in registry.order:
        rec.stages[name] = StageRecord(name=name, params=_stage_params(registry, name, plan.params))
    records.save(private, rec)
    if lock is not None:
        lock.set_holder(run=rec.id)

    shared = RunShared(trace_dir.path)
    selected = plan.selection
    downstream = registry.descendants(selected)
    total = len(selected)
    say = progress or (lambda ev: None)
    trace_hash: str | None = None
    failed_stage: str | None = None
    current: StageRecord | None = None
    try:
        for name in registry.order:
            srec = rec.stages[name]
            if name in plan.reused:
                src = plan.reused[name]
                srec.status, srec.provenance = "succeeded", "reused"
                srec.source_run = plan.reference.id  # type: ignore[union-attr]
                srec.origin_run = src.origin_run or plan.reference.id  # type: ignore[union-attr]
                for attr in ("params", "code_version", "inputs", "key", "artifact", "output_hash", "attempt"):
                    setattr(srec, attr, getattr(src, attr))
                srec.start = srec.end = now_iso()
                continue
            if name not in selected:
                srec.status = "skipped"
                if name in plan.unavailable:
                    srec.error = f"unavailable: {plan.unavailable[name]}"
                elif name in downstream:
                    srec.error = "not selected (downstream of the selection)"
                elif plan.reference is not None:
                    srec.error = f"not selected; {plan.reference.id} has no output for it"
                else:
                    srec.error = "not selected"
                continue
            idx = selected.index(name) + 1
            if failed_stage is not None:
                srec.status, srec.error = "skipped", f"not run: stage {failed_stage} failed"
                continue
            stage = registry.stages[name]
            prev = plan.reference.stages.get(name) if plan.reference else None
            srec.attempt = prev.attempt + 1 if prev and prev.status in ("failed", "stopped") else 1
            srec.status, srec.start = "running", now_iso()
            current = srec
            records.save(private, rec)
            say(StageEvent(rec.id, name, "running", None, idx, total))
            t0 = time.perf_counter()
            try:
                _debug_hooks(name, plan.params)
                inputs: dict[str, str] = {}
                input_dirs: dict[str, Path] = {}
                for i in stage.inputs:
                    if i == TRACE:
                        if trace_hash is None:
                            trace_hash = digest(trace_fingerprint(trace_dir))
                        inputs[TRACE] = trace_hash
                    elif i in plan.unavailable:
                        inputs[i] = "unavailable"
                    else:
                        up = rec.stages[i]
                        inputs[i] = up.output_hash  # type: ignore[assignment]
                        input_dirs[i] = private / up.artifact  # type: ignore[operator]
                srec.inputs = inputs
                srec.code_version = stage.code_version
                key = artifact_key(name, stage.code_version, srec.params, inputs)
                srec.key = key
                folder = artifact_dir(private, name, key)
                meta = verify(folder) if use_cache else None
                if meta is not None:
                    srec.provenance, srec.origin_run = "cache", meta.get("run")
                else:
                    files = {i: registry.stages[i].outputs for i in input_dirs}
                    ctx = StageContext(name, shared, plan.params, input_dirs, rec.id, files)
                    outputs = stage.run(ctx)
                    meta = write_artifact(
                        private,
                        name,
                        key,
                        outputs,
                        stage.outputs,
                        {
                            "run": rec.id,
                            "created": now_iso(),
                            "code_version": stage.code_version,
                            "params": srec.params,
                            "inputs": inputs,
                        },
                        replace=not use_cache,
                    )
                    srec.provenance, srec.origin_run = "computed", rec.id
                srec.artifact = str(folder.relative_to(private))
                srec.output_hash = meta["output_hash"]
                srec.status, srec.end = "succeeded", now_iso()
            except Exception as exc:  # a stage's failure is recorded, not raised
                srec.status, srec.end = "failed", now_iso()
                srec.error = f"{type(exc).__name__}: {exc}"
                srec.traceback = traceback.format_exc(limit=8)
                failed_stage = name
                rec.error = f"stage {name} failed: {srec.error}"
            current = None
            records.save(private, rec)
            say(StageEvent(rec.id, name, srec.status, srec.provenance, idx, total,
                           time.perf_counter() - t0, srec.error))
        rec.status = "failed" if failed_stage else "succeeded"
        rec.ended = now_iso()
        records.save(private, rec)
        return rec
    except BaseException as exc:
        stopped = isinstance(exc, KeyboardInterrupt)
        status = "stopped" if stopped else "failed"
        err = "interrupted (SIGINT)" if stopped else f"{type(exc).__name__}: {exc}"
        if current is not None:
            current.status, current.end, current.error = status, now_iso(), err
        for s in rec.stages.values():
            if s.status in ("pending", "running"):
                s.status = "skipped"
                s.error = s.error or f"not run: run {status}"
        rec.status, rec.ended, rec.error = status, now_iso(), err
        records.save(private, rec)
        if current is not None:
            say(StageEvent(rec.id, current.name, status, None, 0, total, None, err))
        raise


def analyze(
    path: str | Path,
    *,
    registry: Registry | None = None,
    stages: Iterable[str] | None = None,
    reference: str | None = None,
    resume: str | None = None,
    overrides: Mapping[str, str] | None = None,
    use_cache: bool = True,
    wait: bool = True,
    progress: Progress | None = None,
    on_wait: Callable[[dict[str, Any]], None] | None = None,
) -> RunRecord:
    """Run the analysis pipeline on trace directory ``path`` and return the run record.

    ``stages`` selects stages (selective execution); ``reference`` names the run whose outputs
    and parameters a selective run starts from (default: the latest run not executing);
    ``resume`` re-runs a failed or stopped run's unfinished stages; ``overrides`` are
    ``--set name=value`` texts. Refusals raise :class:`PipelineError` before anything runs. While
    another analysis holds the trace's lock, ``wait=True`` blocks (calling ``on_wait`` first)
    and ``wait=False`` refuses.
    """
    if registry is None:
        from .registry import REGISTRY as registry  # noqa: N811
    trace_dir = open_trace_dir(path)
    private = trace_dir.private_dir
    try:
        private.mkdir(exist_ok=True)
    except OSError as exc:
        raise PipelineError(f"{private}: cannot write analysis outputs ({exc.strerror})") from None
    lock = TraceLock(private)
    kwargs: dict[str, Any] = dict(stages=stages, reference=reference, resume=resume, overrides=overrides)
    got = lock.try_acquire()
    try:
        if got:
            repair_stale(private)
        plan = plan_run(trace_dir, registry, lock_held=got, **kwargs)
        if not got:
            lock.acquire(wait, on_wait)
            repair_stale(private)
            # Runs may have ended while we waited: plan again against what is there now.
            plan = plan_run(trace_dir, registry, lock_held=True, **kwargs)
        return execute(trace_dir, registry, plan, use_cache=use_cache, progress=progress, lock=lock)
    finally:
        lock.release()
