"""A stage body's outputs made final: lazy frames collected, :class:`Derived` outputs computed,
every table cast to its declared schema. Both stores (:mod:`.store` in memory, :mod:`.engine`
recorded) pass every stage's outputs through :func:`conform_outputs`.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import polars as pl

from profui.analysis.engine import ENGINE
from profui.analysis.schemas import conform

from .dag import Stage


class Derived:
    """A stage output computed from the stage's other outputs once they are collected
    (``Derived(lambda out: top_kernels(out["stats.parquet"], 15))``), so a table that summarises
    another never recomputes it."""

    def __init__(self, fn: Callable[[dict[str, Any]], Any]) -> None:
        self.fn = fn


def _collect(outputs: list[dict[str, Any]]) -> None:
    """Replace every LazyFrame value of ``outputs`` by its frame, all in one ``pl.collect_all``."""
    lazy = [(o, f) for o in outputs for f, v in o.items() if isinstance(v, pl.LazyFrame)]
    if lazy:
        frames = pl.collect_all([o[f] for o, f in lazy], engine=ENGINE)
        for (o, f), frame in zip(lazy, frames, strict=True):
            o[f] = frame


def finish_outputs(outputs: list[dict[str, Any]]) -> None:
    """Collect the outputs of one or more stage bodies together: their lazy frames first (one
    ``pl.collect_all``, sharing common sub-plans), then their :class:`Derived` outputs from
    those frames (a second ``collect_all``). Changes the dicts in place."""
    _collect(outputs)
    derived = [(o, f) for o in outputs for f, v in o.items() if isinstance(v, Derived)]
    for o, f in derived:
        o[f] = o[f].fn(o)
    _collect([o for o, _ in derived])


def conform_outputs(stage: Stage, outputs: Mapping[str, Any], scratch: Path | None = None) -> dict[str, Any]:
    """A stage body's outputs checked against the stage's declaration and its tables' schemas.

    Lazy and :class:`Derived` outputs are computed first (:func:`finish_outputs`); every Parquet
    output is cast to its declared schema (:func:`profui.analysis.schemas.conform`). A files
    stage's outputs are the paths of the files it wrote, checked to be files in its ``scratch``
    folder (the run moves them from there).
    """
    got, want = set(outputs), set(stage.outputs)
    if got != want:
        raise ValueError(f"stage {stage.name} returned outputs {sorted(got)}, declared {sorted(want)}")
    out = dict(outputs)
    if stage.files:  # files the body wrote: each must be there, a regular file of its folder
        for file, value in out.items():
            if not isinstance(value, Path) or value.parent != scratch or not value.is_file():
                raise ValueError(
                    f"stage {stage.name}: output {file} is not a file it wrote in {scratch} ({value!r})"
                )
        return out
    finish_outputs([out])
    return {
        file: conform(stage.name, file, out[file]) if file.endswith(".parquet") else out[file]
        for file in stage.outputs
    }
