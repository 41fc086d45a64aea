"""Executing one ``profui analyze`` run (planning is in :mod:`.planning`).

A run executes the selected stages in topological order. Before computing a stage it looks its
cache key up among earlier computations; stages upstream of a selection are taken from the
reference run instead of running. The run record is rewritten (atomically) at every change so
``profui runs`` and a concurrent reader always see a consistent state.
"""

from __future__ import annotations

import os
import shutil
import time
import traceback
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from profui.capture.format import TraceDir, TraceFormatError, open_trace_dir
from profui.capture.format.liveness import this_host

from . import records
from .artifacts import artifact_dir, artifact_key, scratch_dir, trace_key, verify, write_artifact
from .conform import conform_outputs
from .context import RunShared, StageContext
from .dag import TRACE, Registry
from .errors import PipelineError
from .lock import TraceLock
from .planning import Plan, plan_run, repair_stale
from .records import RunRecord, StageRecord, now_iso
from .schedule import run_stages
from .store import registry_or_default


@dataclass(frozen=True)
class StageEvent:
    """A progress report: stage ``stage`` of the run changed to ``status``."""

    run_id: str
    stage: str
    status: str  # running | progress | succeeded | failed | stopped | skipped
    provenance: str | None
    index: int  # 1-based position among the stages this run executes
    total: int
    seconds: float | None = None
    message: str | None = None
    #: ``progress``: how far the running stage is (0 to 1); ``message`` says what it is doing
    fraction: float | None = None


Progress = Callable[[StageEvent], None]


class _StageFailed(Exception):
    """A stage's failure, already recorded: tells the loop to start no stage after it."""


def _stage_params(registry: Registry, name: str, params: Mapping[str, Any]) -> dict[str, Any]:
    """The output-affecting parameters a stage declares, with this run's values."""
    st = registry.stages[name]
    return {p: params[p] for p in st.params if registry.params[p].affects_output}


class _Run:
    """The state of one executing run: its record, plan, and what the stages share."""

    def __init__(self, trace_dir: TraceDir, registry: Registry, plan: Plan, use_cache: bool) -> None:
        self.trace_dir = trace_dir
        self.private = trace_dir.private_dir
        self.registry = registry
        self.plan = plan
        self.use_cache = use_cache
        self.shared = RunShared(trace_dir.path)
        self._trace_hash: str | None = None
        self.rec = RunRecord(
            id=records.next_id(self.private),
            created=now_iso(),
            params=dict(plan.params),
            selection=list(plan.selection) if plan.selective else None,
            reference=plan.reference.id if plan.reference else None,
            resume_of=plan.resume_of,
            pid=os.getpid(),
            host=this_host(),
        )
        for name in registry.order:
            self.rec.stages[name] = StageRecord(name=name, params=_stage_params(registry, name, plan.params))

    def save(self) -> None:
        records.save(self.private, self.rec)

    def reuse(self, name: str) -> None:
        """Take stage ``name``'s output from the reference run."""
        src, ref = self.plan.reused[name], self.plan.reference
        assert ref is not None
        srec = self.rec.stages[name]
        srec.status, srec.provenance = "succeeded", "reused"
        srec.source_run, srec.origin_run = ref.id, src.origin_run or ref.id
        for attr in ("params", "code_version", "inputs", "key", "artifact", "output_hash", "attempt"):
            setattr(srec, attr, getattr(src, attr))
        srec.start = srec.end = now_iso()

    def skip_reason(self, name: str) -> str:
        """Why an unselected stage does not run."""
        if self.registry.stages[name].on_demand and not self.plan.selective:
            return f"on demand: run when drawn, or named (--stages {name})"
        if name in self.registry.descendants(self.plan.selection):
            return "not selected (downstream of the selection)"
        if self.plan.reference is not None:
            return f"not selected; {self.plan.reference.id} has no output for it"
        return "not selected"

    def _inputs(self, name: str) -> tuple[dict[str, str], dict[str, Path]]:
        """Hashes of the stage's inputs (for its key) and the folders of its input stages."""
        hashes: dict[str, str] = {}
        dirs: dict[str, Path] = {}
        for i in self.registry.stages[name].inputs:
            if i == TRACE:
                if self._trace_hash is None:
                    self._trace_hash = trace_key(self.trace_dir)
                hashes[TRACE] = self._trace_hash
            else:
                up = self.rec.stages[i]
                hashes[i] = up.output_hash  # type: ignore[assignment]
                dirs[i] = self.private / up.artifact  # type: ignore[operator]
        return hashes, dirs

    def produce(self, name: str) -> None:
        """Find stage ``name``'s output in the cache, or compute and store it; fill its record."""
        stage, srec = self.registry.stages[name], self.rec.stages[name]
        srec.inputs, input_dirs = self._inputs(name)
        srec.code_version = stage.code_version
        srec.key = artifact_key(name, stage.code_version, srec.params, srec.inputs)
        folder = artifact_dir(self.private, name, srec.key)
        meta = verify(folder) if self.use_cache else None
        if meta is not None:
            srec.provenance, srec.origin_run = "cache", meta.run
        else:
            files = {i: self.registry.stages[i].outputs for i in input_dirs}
            # a files stage writes beside its artifact folder, whose files are then moved in; a
            # killed run's scratch is a temporary like any other (:func:`.artifacts.remove_temporaries`)
            scratch = scratch_dir(folder.parent, srec.key) if stage.files else None
            try:
                ctx = StageContext(
                    name, self.shared, self.plan.params, input_dirs, self.rec.id, files, scratch
                )
                outputs = conform_outputs(stage, stage.run(ctx), scratch)
                about = {
                    "files": stage.files,
                    "run": self.rec.id,
                    "created": now_iso(),
                    "code_version": stage.code_version,
                    "params": srec.params,
                    "inputs": srec.inputs,
                }
                meta = write_artifact(
                    self.private, name, srec.key, outputs, stage.outputs, about, replace=not self.use_cache
                )
            finally:
                if scratch is not None:
                    shutil.rmtree(scratch, ignore_errors=True)
            srec.provenance, srec.origin_run = "computed", self.rec.id
        srec.artifact = str(folder.relative_to(self.private))
        srec.output_hash = meta.output_hash


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

    KeyboardInterrupt (Ctrl-C; the CLI turns SIGTERM into one too) marks the run and its running
    stage ``stopped`` and is re-raised. An exception in a stage marks the stage and the run
    ``failed`` with the error, and the stages not run yet ``skipped``; it is not raised.
    """
    trace_dir.private_dir.mkdir(parents=True, exist_ok=True)
    run = _Run(trace_dir, registry, plan, use_cache)
    rec = run.rec
    run.save()
    if lock is not None:
        lock.set_holder(run=rec.id)
    say = progress or (lambda ev: None)
    selected = plan.selection
    total = len(selected)
    if progress is not None:
        run.shared.progress = lambda stage, fraction, message: say(
            StageEvent(
                rec.id, stage, "progress", None, selected.index(stage) + 1, total, None, message, fraction
            )
        )
    order = registry.order
    failed_stage: str | None = None
    current: StageRecord | None = None
    settled = 0  # the stages of ``order`` before this one are reused, skipped or run

    def settle(upto: int) -> None:
        """Record the stages before position ``upto`` of the graph's order that this run does not
        execute: taken from the reference run, or skipped (with why)."""
        nonlocal settled
        for name in order[settled:upto]:
            srec = rec.stages[name]
            if name in plan.reused:
                run.reuse(name)
            elif name not in selected:
                srec.status, srec.error = "skipped", run.skip_reason(name)
            elif srec.status == "pending":  # selected, not started: an earlier stage failed
                srec.status, srec.error = "skipped", f"not run: stage {failed_stage} failed"
        settled = max(settled, upto)

    def execute_stage(name: str) -> None:
        """Run stage ``name`` (its record and progress events around it); a failure is recorded,
        then raised to the loop, which starts no stage after it."""
        nonlocal failed_stage, current
        settle(order.index(name))
        srec = rec.stages[name]
        idx = selected.index(name) + 1
        prev = plan.reference.stages.get(name) if plan.reference else None
        srec.attempt = prev.attempt + 1 if prev and prev.status in ("failed", "stopped") else 1
        srec.status, srec.start = "running", now_iso()
        current = srec
        run.save()
        say(StageEvent(rec.id, name, "running", None, idx, total))
        t0 = time.perf_counter()
        try:
            run.produce(name)
            srec.status = "succeeded"
        except Exception as exc:  # a stage's failure is recorded, not raised by execute
            srec.status = "failed"
            srec.error = f"{type(exc).__name__}: {exc}"
            srec.traceback = traceback.format_exc(limit=8)
            if isinstance(exc, TraceFormatError):
                srec.bad_input = {"path": str(exc.path), "problem": exc.problem}
            failed_stage = name
            rec.error = f"stage {name} failed: {srec.error}"
        srec.end = now_iso()
        current = None
        run.save()
        say(
            StageEvent(
                rec.id, name, srec.status, srec.provenance, idx, total, time.perf_counter() - t0, srec.error
            )
        )
        if srec.status == "failed":
            raise _StageFailed(name)

    try:
        # one stage at a time, in the graph's order and in this thread: Ctrl-C stops the stage
        failed = run_stages(registry, [n for n in order if n in selected], execute_stage, by_cost=False)
        for exc in failed.values():
            if not isinstance(exc, _StageFailed):  # a progress callback's: it ends the run
                raise exc
        settle(len(order))
        rec.status = "failed" if failed_stage else "succeeded"
        rec.ended = now_iso()
        run.save()
        return rec
    except BaseException as exc:
        stopped = isinstance(exc, KeyboardInterrupt)
        status: Literal["stopped", "failed"] = "stopped" if stopped else "failed"
        err = "interrupted" if stopped else f"{type(exc).__name__}: {exc}"
        if current is not None:
            current.status, current.end, current.error = status, now_iso(), err
        for s in rec.stages.values():
            if s.status in ("pending", "running"):
                s.status = "skipped"
                s.error = s.error or f"not run: run {status}"
        rec.status, rec.ended, rec.error = status, now_iso(), err
        run.save()
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
    registry = registry_or_default(registry)
    trace_dir = open_trace_dir(path)
    private = trace_dir.private_dir
    try:
        private.mkdir(parents=True, exist_ok=True)
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
