"""The in-memory store: the stage graph run without writing anything.

``profui summary``, the notebook facade and the dashboard of a trace whose folder cannot hold
analysis outputs (a running capture, a read-only folder) ask :func:`compute` for the stages whose
answers they show; it runs those stages and everything upstream of them with the same bodies,
parameters and schema checks as ``profui analyze``, keeping the outputs in a dict.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from typing import Any

import polars as pl

from profui.analysis.schemas import conform

from .context import RunShared, StageContext
from .dag import TRACE, Registry, Stage
from .params import typed_params

Store = dict[str, dict[str, Any]]


def conform_outputs(stage: Stage, outputs: Mapping[str, Any]) -> dict[str, Any]:
    """A stage body's outputs checked against the stage's declaration and its tables' schemas.

    Lazy frames are collected together (one ``pl.collect_all``, sharing common sub-plans); every
    Parquet output is cast to its declared schema (:func:`profui.analysis.schemas.conform`).
    """
    got, want = set(outputs), set(stage.outputs)
    if got != want:
        raise ValueError(f"stage {stage.name} returned outputs {sorted(got)}, declared {sorted(want)}")
    lazy = {f: v for f, v in outputs.items() if isinstance(v, pl.LazyFrame)}
    collected = dict(zip(lazy, pl.collect_all(list(lazy.values())), strict=True)) if lazy else {}
    out: dict[str, Any] = {}
    for file in stage.outputs:
        value = collected.get(file, outputs[file])
        out[file] = conform(stage.name, file, value) if file.endswith(".parquet") else value
    return out


def compute(
    trace: Any,
    targets: Iterable[str],
    params: Mapping[str, Any] | None = None,
    *,
    registry: Registry | None = None,
    store: Store | None = None,
    on_stage: Callable[[str, dict[str, Any]], None] | None = None,
) -> Store:
    """Run ``targets`` and every stage upstream of them on ``trace`` (an opened Trace), in memory.

    ``params`` are typed parameter values (unset ones take their defaults). Stages already in
    ``store`` (from an earlier call with the same parameters) are not run again. Returns the
    store: ``{stage: {output file: frame or value}}``. ``on_stage(name, outputs)`` is called as
    each stage finishes.
    """
    if registry is None:
        from .registry import REGISTRY as registry  # noqa: N811
    values = typed_params(registry.params, params)
    targets = list(targets)
    needed = set(targets) | registry.ancestors(targets)
    shared = RunShared(trace.path, trace)
    store = {} if store is None else store
    for name in registry.order:
        if name not in needed or name in store:
            continue
        stage = registry.stages[name]
        inputs = {i: store[i] for i in stage.inputs if i != TRACE}
        files = {i: registry.stages[i].outputs for i in inputs}
        ctx = StageContext(name, shared, values, inputs, "memory", files)
        store[name] = conform_outputs(stage, stage.run(ctx))
        if on_stage is not None:
            on_stage(name, store[name])
    return store
