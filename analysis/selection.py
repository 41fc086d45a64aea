"""Choosing part of a trace by ranks and steps: what ``profui export`` writes out.

A step selection keeps, per rank, every event that overlaps the union of the chosen steps'
windows (the CPU window of the step marker and the device window of the work it launched), so
a step's kernels that run after its marker ends are kept with it.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import TYPE_CHECKING

import polars as pl

from .busy import RANK_BY
from .steps import step_windows

if TYPE_CHECKING:
    from .trace import Trace

_STEP_SPEC = re.compile(r"^\s*(\d+)\s*(?:-\s*(\d+)\s*)?$")


class SelectionError(ValueError):
    """What the user asked for does not exist in the trace; ``str()`` is one line."""


Ranges = list[tuple[int, int]]


def parse_steps(spec: str) -> Ranges:
    """``"41"`` -> [(41, 41)]; ``"40-42"`` -> [(40, 42)]; ``"3,7-8"`` -> [(3, 3), (7, 8)]
    (inclusive ranges, never expanded: ``0-999999999`` costs nothing)."""
    out: Ranges = []
    for part in spec.split(","):
        m = _STEP_SPEC.match(part)
        if not m:
            raise SelectionError(f"bad step selection {spec!r}: give steps as 41, 40-42 or 3,7-8")
        lo, hi = int(m[1]), int(m[2] or m[1])
        if hi < lo:
            raise SelectionError(f"bad step range {part.strip()!r}: the end comes before the start")
        out.append((lo, hi))
    return out


def _within(col: str, ranges: Ranges) -> pl.Expr:
    expr = pl.lit(False)
    for lo, hi in ranges:
        expr = expr | pl.col(col).is_between(lo, hi)
    return expr


def _missing(have: set[int], ranges: Ranges) -> str | None:
    """The first range holding none of ``have``, as the user wrote it."""
    for lo, hi in ranges:
        if not any(lo <= v <= hi for v in have):
            return str(lo) if lo == hi else f"{lo}-{hi}"
    return None


def parse_ranks(spec: str) -> Ranges:
    """``"0,3"`` -> [(0, 0), (3, 3)] (ranges as in :func:`parse_steps`)."""
    try:
        return parse_steps(spec)
    except SelectionError:
        raise SelectionError(f"bad rank selection {spec!r}: give ranks as 0,3 or 0-7") from None


@dataclass
class Selection:
    """The chosen events (all columns, with ``node`` and ``rank``) and sampled metrics."""

    events: pl.DataFrame
    metrics: pl.DataFrame
    ranks: list[tuple[str, int]]


def select(trace: Trace, ranks: Ranges | None = None, steps: Ranges | None = None) -> Selection:
    """The events of ``trace`` (a :class:`profui.analysis.trace.Trace`) of ``ranks`` (default all)
    within ``steps`` (default the whole trace), sorted by rank and time; metrics over the same span.

    Raises :class:`SelectionError` naming a rank or step the trace does not have.
    """
    events = trace.cached_events()
    have = events.select(RANK_BY).unique().sort(RANK_BY).collect()
    if ranks is not None:
        missing = _missing(set(have["rank"].to_list()), ranks)
        if missing:
            raise SelectionError(
                f"no rank {missing} in the trace (ranks: {', '.join(map(str, sorted(set(have['rank']))))})"
            )
        events = events.filter(_within("rank", ranks))
    if steps is not None:
        windows = step_windows(trace.cached_events()).windows
        if ranks is not None:
            windows = windows.filter(_within("rank", ranks))
        known = sorted(set(windows["step"].to_list()))
        missing = _missing(set(known), steps)
        if missing:
            shown = f"{known[0]}-{known[-1]}" if known else "none"
            raise SelectionError(f"no step {missing} in the trace (steps: {shown})")
        chosen = windows.filter(_within("step", steps))
        span = chosen.group_by(RANK_BY).agg(
            pl.min_horizontal("cpu_start_ns", "start_ns").min().alias("_lo"),
            pl.max_horizontal("cpu_end_ns", "end_ns").max().alias("_hi"),
        )
        events = events.join(span.lazy(), on=RANK_BY).filter(
            (pl.col("ts") < pl.col("_hi")) & (pl.col("ts") + pl.col("dur") >= pl.col("_lo"))
        )
        events = events.drop("_lo", "_hi")
    chosen_events = events.sort([*RANK_BY, "ts"]).collect()
    metrics = trace.metrics()  # type: ignore[attr-defined]
    if chosen_events.height and (ranks is not None or steps is not None):
        lo, hi = chosen_events["ts"].min(), (chosen_events["ts"] + chosen_events["dur"]).max()
        nodes = chosen_events["node"].unique().to_list()
        metrics = metrics.filter(pl.col("ts").is_between(lo, hi), pl.col("node").is_in(nodes))
    nodes_ranks = chosen_events.select(RANK_BY).unique().sort(RANK_BY).rows()
    if ranks is None and steps is None:
        nodes_ranks = have.rows()
    return Selection(chosen_events, metrics.collect(), [(str(n), int(r)) for n, r in nodes_ranks])
