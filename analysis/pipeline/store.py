"""The in-memory store: the stage graph run without writing anything.

``profui summary``, the notebook facade and the dashboard of a trace whose folder cannot hold
analysis outputs (a running capture, a read-only folder) ask :func:`compute` for the stages whose
answers they show; it runs those stages and everything upstream of them with the same bodies,
parameters and schema checks as ``profui analyze``, keeping the outputs in a dict.
"""

from __future__ import annotations

import functools
import os
from collections.abc import Callable, Collection, Iterable, Mapping
from typing import TYPE_CHECKING, Any

from .conform import conform_outputs
from .context import RunShared, StageContext, StageProgress
from .dag import TRACE, Registry
from .params import typed_params
from .result import Store
from .schedule import run_stages
from .scratch import process_scratch

if TYPE_CHECKING:
    from profui.analysis.trace import Trace


def registry_or_default(registry: Registry | None) -> Registry:
    """``registry``, else the stage graph of :mod:`.registry` (imported here, on first use: it
    imports every stage body, which reading run records does not need)."""
    if registry is not None:
        return registry
    from .registry import REGISTRY

    return REGISTRY


def compute(
    trace: Trace,
    targets: Iterable[str],
    params: Mapping[str, Any] | None = None,
    *,
    registry: Registry | None = None,
    store: Store | None = None,
    on_stage: Callable[[str, dict[str, Any]], None] | None = None,
    on_progress: StageProgress | None = None,
) -> Store:
    """Run ``targets`` and every stage upstream of them on ``trace`` (an opened Trace), in memory.

    ``params`` are typed parameter values (unset ones take their defaults). Stages already in
    ``store`` (from an earlier call with the same parameters) are not run again. Returns the
    store: ``{stage: {output file: frame or value}}``; a files stage's values are the paths of
    the files it wrote, in a scratch folder of this process (:func:`.scratch.process_scratch`).
    ``on_stage(name, outputs)`` is called as each stage finishes, ``on_progress(name, fraction,
    message)`` within a long one.
    """
    registry = registry_or_default(registry)
    values = typed_params(registry.params, params)
    targets = list(targets)
    shared = RunShared(trace.path, trace, on_progress)
    store = {} if store is None else store
    todo = [name for name in registry.with_ancestors(targets) if name not in store]
    if not todo:
        return store

    def run(name: str) -> None:
        stage = registry.stages[name]
        inputs = {i: store[i] for i in stage.inputs if i != TRACE}
        files = {i: registry.stages[i].outputs for i in inputs}
        scratch = process_scratch(trace.dir.private_dir, name) if stage.files else None
        context = StageContext(name, shared, values, inputs, "memory", files, scratch)
        store[name] = conform_outputs(stage, stage.run(context), scratch)

    # Each stage runs in a thread of its own once its inputs are there: Polars releases the GIL
    # while it computes, so one stage's queries (and the eager reads inside a body) overlap
    # another's (:func:`.schedule.run_stages`, the costliest chains first).
    # On a huge trace the stages reading the events' args run first (with what they read), and
    # the column is let go once they are done: the stages after them run in that much less memory
    # (but a light one that ran beside the critical path, a reader, and held it that long)
    readers = _args_readers(todo, values, trace.dir.num_events)
    dropped = False

    def let_go(waiting: bool) -> None:
        nonlocal dropped
        if readers and not dropped and waiting and readers <= store.keys():
            trace.without_cached_columns(["args"])
            dropped = True

    def done(name: str, report: Callable[[str, dict[str, Any]], None]) -> None:
        report(name, store[name])

    try:
        failed = run_stages(
            registry,
            todo,
            run,
            threads=_workers(len(todo), trace.dir.num_events),
            first=readers | registry.ancestors(readers),
            available=store.__contains__,
            # only the callbacks that do something: each is a call back into this module
            on_done=None if on_stage is None else functools.partial(done, report=on_stage),
            between=let_go if readers else None,
            together=_together(trace.dir.num_events, values),
        )
    finally:
        if dropped:  # the trace's next reader gets its events whole, read again
            trace.forget_cached_events()
    if failed:
        raise failed[min(failed, key=todo.index)] from None
    return store


#: Stages that read the events' ``args`` column (each event's arguments as JSON text, a quarter
#: of the events' memory at df_index x33), with ``hta_compat`` off; HTA's variants read it in
#: most stages. ``tests/analysis/test_memory_args.py`` finds them by running every stage without it.
ARGS_READERS = frozenset({"precision", "comm", "flops", "allocations", "critical_path"})


def _args_readers(todo: list[str], values: Mapping[str, Any], events: int) -> frozenset[str]:
    """The stages of ``todo`` that read ``args``, where the column is to be let go after them:
    on a trace of :data:`HUGE_TRACE_EVENTS` events or more (the stages run one at a time there,
    or the critical path beside a light stage, in an order chosen for memory), without
    ``hta_compat``. Else none."""
    if events < HUGE_TRACE_EVENTS or values.get("hta_compat"):
        return frozenset()
    return ARGS_READERS & set(todo)


#: Events from which at most :data:`LARGE_TRACE_STAGES` stages run at once.
LARGE_TRACE_EVENTS = 1_000_000
LARGE_TRACE_STAGES = 2
#: Events from which the stages run one at a time, but that a stage of :data:`PYTHON_STAGES` may
#: run beside one of :data:`LIGHT_STAGES`.
HUGE_TRACE_EVENTS = 4_000_000
#: Stages whose time is mostly Python holding the GIL (the critical path walks each step's graph
#: node by node), which leaves a core idle that a stage of Polars queries beside it fills.
PYTHON_STAGES = frozenset({"critical_path"})
#: Stages whose working memory on a huge trace is small beside the others' (at most ~160 MB at
#: df_index x33, where kernels, launch, steps, correlate, utilization and allocations each take
#: 200-570 MB): one may run beside a :data:`PYTHON_STAGES` stage without raising the run's peak.
LIGHT_STAGES = frozenset({"precision", "flops", "idle", "activity", "memory", "annotations", "sync"})


def _together(events: int, values: Mapping[str, Any]) -> Callable[[str, Collection[str]], bool] | None:
    """Which stages may run at once on a trace of ``events`` events (``run_stages``' ``together``):
    on a huge trace only the critical path beside a light stage, and with ``hta_compat`` none
    (the light stages' memory was measured without it, their HTA variants' not); else any."""
    if events < HUGE_TRACE_EVENTS:
        return None
    return _alone if values.get("hta_compat") else _beside_the_python_stage


def _alone(stage: str, running: Collection[str]) -> bool:
    """No stage beside another."""
    return False


def _beside_the_python_stage(stage: str, running: Collection[str]) -> bool:
    """On a huge trace, whether ``stage`` may start beside ``running``: only as a pair of a
    :data:`PYTHON_STAGES` stage and a :data:`LIGHT_STAGES` one."""
    pair = {stage, *running}
    return len(pair) == 2 and bool(pair & PYTHON_STAGES) and bool(pair & LIGHT_STAGES)


def _workers(stages: int, events: int = 0) -> int:
    """Threads for ``stages`` stages of a trace of ``events`` events: one more than the cores (a
    thread waiting on its inputs or building a plan leaves its core to another), never more than
    the stages; on a large trace two, whatever the cores: there Polars' own threads fill the
    cores within each query, and every further stage at once only adds its working memory (3M
    events on 2 cores: three stages at once peaked ~150 MB above two, in no less time).

    From 4M events two, but only as a Python-bound stage beside a light one
    (:func:`_beside_the_python_stage`); every other stage runs alone. Any two stages at once
    there (the large traces' rule) took ~1.3 s less of a 5M-event summary's ~9.7 s but peaked
    over 2 GB in every run measured; one at a time left a core idle through the critical path's walk.
    The cut at 4M is placed between the sizes measured (3M, 5M), not measured."""
    if events >= LARGE_TRACE_EVENTS:  # and huge: which of the two may meet is _together's
        return max(1, min(stages, LARGE_TRACE_STAGES))
    return max(1, min(stages, (os.cpu_count() or 1) + 1, 8))
