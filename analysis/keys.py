"""The key columns that tell rows' groups apart: a column of one and the same value in every
row (a one-rank trace's node and rank) splits nothing, and a sort, join or group-by by it too,
a string among the keys, is work spent on nothing. One rule, for every analysis that leaves such
columns out of its keys and writes them back."""

from __future__ import annotations

from collections.abc import Sequence

import polars as pl

from .engine import ENGINE
from .intervals import Frame, _lazy


def constants(frames: Sequence[Frame], columns: Sequence[str]) -> dict[str, object]:
    """Those of ``columns`` that hold one and the same value in every row of ``frames`` (a null is
    a value like any other; a frame without rows holds none), each with that value: one query a
    frame (a lazy one is computed for it)."""
    values: dict[str, set[object]] = {c: set() for c in columns}
    split: set[str] = set()
    for frame in frames:
        if not columns:
            break
        row = (
            _lazy(frame)
            .select(
                pl.len().alias("_rows"),
                *(pl.col(c).eq_missing(pl.col(c).first()).all().alias(f"same_{c}") for c in columns),
                *(pl.col(c).first().alias(f"first_{c}") for c in columns),
            )
            .collect(engine=ENGINE)
            .row(0, named=True)
        )
        if not row["_rows"]:
            continue
        for c in columns:
            if row[f"same_{c}"]:
                values[c].add(row[f"first_{c}"])
            else:
                split.add(c)
    return {c: next(iter(values[c]), None) for c in columns if c not in split and len(values[c]) <= 1}


def varying(frames: Sequence[Frame], columns: Sequence[str]) -> list[str]:
    """Those of ``columns`` whose value is not one and the same in every row of ``frames``
    (:func:`constants`): the only ones that tell the rows' groups apart. A trace of one rank has
    one node and rank: a sort or a join by them too, by several columns and a string among
    them, is work that splits nothing."""
    same = constants(frames, columns)
    return [c for c in columns if c not in same]
