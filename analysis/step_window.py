"""One rank's time window (a step, a span, the whole trace) and what happened in it: the top
kernels, ops or annotations by total time, and the events themselves as compact rows.

A step's work follows the steps stage's rules (:mod:`profui.analysis.steps`): its host events are
those starting in its host window (``cpu_start_ns``..``cpu_end_ns``); its device work is what its
launches started (:func:`~profui.analysis.steps.step_device_events`, by correlation), so a step
whose device work runs late, past the next step's launches, still counts each kernel once, in the
step that launched it. Annotations are measured as the annotations stage measures them
(:func:`~profui.analysis.annotations.side_windows`): host ranges in the host window, device ranges
(``gpu_annotation``) in the device window (``start_ns``..``end_ns``), each range cut to it.
Instants are ns since the epoch, as every ``*_ns`` of profui's outputs.
"""

from __future__ import annotations

from dataclasses import dataclass

import polars as pl

from .annotations import annotation_events, side_windows
from .busy import RANK_BY
from .intervals import clip_to_windows
from .schemas import Column, Table
from .steps import step_device_events

#: What :func:`top` ranks, and the event kinds each means.
TOP_KINDS: dict[str, tuple[str, ...]] = {
    "kernels": ("kernel",),
    "ops": ("cpu_op",),
    "annotations": ("annotation", "gpu_annotation"),
}

#: The rows :func:`top` returns.
TOP_ROWS = Table(
    (
        Column(
            "side", pl.String(), "text", "cpu: host events, measured in the host window; gpu: device ones"
        ),
        Column("name", pl.String(), "text", "kernel, op or annotation name"),
        Column("count", pl.Int64(), "count", "events of that side and name in the window"),
        Column("total_ns", pl.Int64(), "ns", "their summed durations, each cut to the window"),
        Column("mean_ns", pl.Float64(), "ns_float", "their mean duration (cut to the window)"),
        Column("max_ns", pl.Int64(), "ns", "the longest (cut to the window)"),
        Column(
            "share",
            pl.Float64(),
            "fraction",
            "total_ns over the time of its side's window summed over the ranks: at most 1 for a "
            "name that never overlaps itself; the rows together can add up to more than 1 (nested "
            "ops, concurrent threads and streams); null when that window has no length",
            nullable=True,
        ),
    ),
    "names by total time in a window, then by side and name",
)

#: Columns of :func:`window_events`' rows, in order.
EVENT_COLUMNS = ("ts_ns", "dur_ns", "kind", "name", "tid", "device", "stream", "correlation")

#: A window's frame: per rank, its host window and its device window (``[lo, hi)``, epoch ns).
_WINDOW_COLUMNS = ("node", "rank", "step", "cpu_start_ns", "cpu_end_ns", "start_ns", "end_ns", "mapped")


class WindowError(ValueError):
    """A step, rank or window the trace does not have; ``str()`` is one line saying which exist."""


@dataclass(frozen=True)
class Window:
    """The window asked for: ``frame`` holds, per rank, its host window (``cpu_start_ns``..
    ``cpu_end_ns``) and device window (``start_ns``..``end_ns``), ``[lo, hi)`` in epoch ns;
    ``steps`` every step window of the trace (the steps stage's), which a step's device work is
    found against (a launch belongs to the step whose host window holds it)."""

    frame: pl.DataFrame
    step: int | None
    steps: pl.DataFrame

    @property
    def ranks(self) -> list[int]:
        """The ranks the window covers."""
        return self.frame["rank"].to_list()


def numbers(values: list[int]) -> str:
    """Step or rank numbers for a message: all of them up to 8, else ``FIRST to LAST``."""
    if not values:
        return "none"
    return ", ".join(map(str, values)) if len(values) <= 8 else f"{values[0]} to {values[-1]}"


def step_listing(values: list[int]) -> str:
    """The steps a trace has, for a message refusing a step it lacks."""
    return "steps: " + numbers(values) if values else "the trace has no steps"


def step_window(
    windows: pl.DataFrame,
    ranks: list[int],
    start_ns: int,
    end_ns: int,
    step: int | None = None,
    rank: int | None = None,
) -> Window:
    """The window of ``step`` (every rank that ran it, or ``rank`` alone) from the steps stage's
    ``windows``; without a step, the trace's span ``start_ns``..``end_ns`` on each of ``ranks``
    (or ``rank``), host and device alike. Raises :class:`WindowError` naming the steps or ranks
    there are."""
    if rank is not None and rank not in ranks:
        raise WindowError(f"rank {rank}: no such rank (ranks: {numbers(sorted(ranks))})")
    if step is None:
        mine = [rank] if rank is not None else sorted(ranks)
        nodes = dict(windows.select("rank", "node").unique(subset="rank").iter_rows())
        end = end_ns + 1  # the last event's end is in the span
        frame = pl.DataFrame(
            {
                "node": [nodes.get(r) for r in mine],
                "rank": mine,
                "step": [None] * len(mine),
                "cpu_start_ns": [start_ns] * len(mine),
                "cpu_end_ns": [end] * len(mine),
                "start_ns": [start_ns] * len(mine),
                "end_ns": [end] * len(mine),
                "mapped": [False] * len(mine),
            },
            schema={**windows.select(_WINDOW_COLUMNS).schema, "node": pl.String},
        )
        return Window(frame, None, windows)
    rows = windows.filter(pl.col("step") == step)
    if rows.is_empty():
        raise WindowError(f"step {step}: no such step ({step_listing(sorted(set(windows['step'])))})")
    if rank is not None:
        rows = rows.filter(pl.col("rank") == rank)
        if rows.is_empty():
            have = sorted(set(windows.filter(pl.col("step") == step)["rank"].to_list()))
            raise WindowError(f"step {step}: not on rank {rank} (ranks: {numbers(have)})")
    return Window(rows.sort("rank").select(_WINDOW_COLUMNS), step, windows)


def _launched(events: pl.LazyFrame, window: Window, kinds: tuple[str, ...]) -> pl.LazyFrame:
    """The device events of ``kinds`` that the window's step launched on its ranks (the steps
    stage's rule: by correlation to the launches in the step's host window), with
    ``start, end``."""
    mine = window.frame.select(*RANK_BY).lazy()
    return (
        step_device_events(events, window.steps.lazy(), kinds=kinds)
        .filter(pl.col("step") == window.step)
        .join(mine, on=RANK_BY, how="semi")
    )


def _cut(rows: pl.LazyFrame, w: pl.LazyFrame, by: list[str]) -> pl.LazyFrame:
    """``rows`` (``by``, ``ts``, ``dur``, ``side``, ``name``) starting in their window ``w``
    (``by``, ``lo``, ``hi``), each cut at the window's end."""
    return (
        rows.join(w, on=by)
        .filter(pl.col("ts") >= pl.col("lo"), pl.col("ts") < pl.col("hi"))
        .with_columns(dur=(pl.col("ts") + pl.col("dur")).clip(upper_bound=pl.col("hi")) - pl.col("ts"))
    )


def top(events: pl.LazyFrame, window: Window, what: str, n: int) -> tuple[pl.DataFrame, int, int]:
    """The ``n`` (side, name) pairs of kind ``what`` (a key of :data:`TOP_KINDS`) with the most
    total time in ``window``, as :data:`TOP_ROWS`, by total time then side and name; also how
    many pairs there were and the time of the window's main side summed over its ranks (the
    device window's for kernels, the host window's otherwise), in ns.

    Ops: those starting in the host window, cut at its end. Kernels of a step: those the step
    launched (whole, as they end in its device window by its definition); of the whole trace:
    those starting in it. Annotations: each range meeting its side's window, cut to it."""
    frame = window.frame.lazy()
    if window.step is None:  # the ranks' nodes, where the steps stage did not name them
        frame = frame.drop("node").join(events.select(*RANK_BY).unique(), on="rank")
    sides = side_windows(frame.with_columns(pl.col("step").fill_null(0)))
    side_totals = (
        sides.group_by("side").agg((pl.col("w_end") - pl.col("w_start")).sum().alias("ns")).collect()
    )
    ns = dict(side_totals.iter_rows())
    cols = [*RANK_BY, "side", "name", "ts", "dur"]
    if what == "annotations":
        ranges = annotation_events(events).select(
            *RANK_BY, "side", pl.col("name").cast(pl.String), pl.col("ts").alias("start"),
            (pl.col("ts") + pl.col("dur")).alias("end"),
        )  # fmt: skip
        picked = clip_to_windows(ranges, sides, [*RANK_BY, "side"]).select(
            *RANK_BY,
            "side",
            "name",
            pl.col("start").alias("ts"),
            (pl.col("end") - pl.col("start")).alias("dur"),
        )
    elif what == "kernels" and window.step is not None:
        picked = _launched(events, window, TOP_KINDS["kernels"]).select(
            *RANK_BY, pl.lit("gpu").alias("side"), pl.col("name").cast(pl.String), "ts", "dur"
        )
    else:
        side = "gpu" if what == "kernels" else "cpu"
        w = sides.filter(pl.col("side") == side).select(
            *RANK_BY, pl.col("w_start").alias("lo"), pl.col("w_end").alias("hi")
        )
        rows = events.filter(pl.col("kind").cast(pl.String).is_in(TOP_KINDS[what])).select(
            *RANK_BY, pl.lit(side).alias("side"), pl.col("name").cast(pl.String), "ts", "dur"
        )
        picked = _cut(rows, w, list(RANK_BY))
    grouped = (
        picked.select(cols)
        .group_by("side", "name")
        .agg(
            count=pl.len().cast(pl.Int64),
            total_ns=pl.col("dur").sum(),
            mean_ns=pl.col("dur").mean(),
            max_ns=pl.col("dur").max(),
        )
        .collect()
    )
    window_ns = int(ns.get("gpu" if what == "kernels" else "cpu") or 0)
    side_ns = pl.col("side").replace_strict(ns, default=None, return_dtype=pl.Int64)
    share = pl.when(side_ns > 0).then(pl.col("total_ns") / side_ns)
    top_rows = grouped.sort(["total_ns", "side", "name"], descending=[True, False, False]).head(n)
    top_rows = top_rows.with_columns(share=share)
    return top_rows.select(pl.col(c.name).cast(c.dtype) for c in TOP_ROWS.columns), grouped.height, window_ns


def _event_rows(rows: pl.LazyFrame) -> pl.LazyFrame:
    return rows.select(
        pl.col("ts").alias("ts_ns"),
        pl.col("dur").alias("dur_ns"),
        pl.col("kind").cast(pl.String),
        pl.col("name").cast(pl.String),
        "tid",
        "device",
        "stream",
        "correlation",
    )


def _first(rows: pl.LazyFrame, limit: int) -> tuple[pl.DataFrame, int]:
    total = int(rows.select(pl.len()).collect().item())
    got = rows.sort(["ts_ns", "kind", "name", "tid"], nulls_last=True).head(limit).collect()
    return got, total


def window_events(events: pl.LazyFrame, rank: int, lo: int, hi: int, limit: int) -> tuple[pl.DataFrame, int]:
    """The events of ``rank`` that start in ``[lo, hi)`` by start time (then kind, name), the
    first ``limit`` of them as :data:`EVENT_COLUMNS`, and how many there are in all."""
    mine = events.filter(pl.col("rank") == rank, pl.col("ts") >= lo, pl.col("ts") < hi)
    return _first(_event_rows(mine), limit)


def step_events(events: pl.LazyFrame, window: Window, limit: int) -> tuple[pl.DataFrame, int]:
    """The events of a one-rank step window: its host events (no device) starting in its host
    window, the device events it launched (by correlation, the steps stage's rule) and the
    device events without a correlation id (``gpu_annotation``, XLA ops) starting in its device
    window; by start time, the first ``limit`` as :data:`EVENT_COLUMNS`, and how many in all."""
    (b,) = window.frame.iter_rows(named=True)
    mine = events.filter(pl.col("rank") == b["rank"])
    on_device = pl.col("device").fill_null(-1) >= 0
    host = mine.filter(~on_device, pl.col("ts") >= b["cpu_start_ns"], pl.col("ts") < b["cpu_end_ns"])
    loose = mine.filter(
        on_device, pl.col("correlation").is_null(), pl.col("ts") >= b["start_ns"], pl.col("ts") < b["end_ns"]
    )
    kinds = tuple(mine.filter(on_device).select(pl.col("kind").cast(pl.String).unique()).collect()["kind"])
    launched = _launched(mine, window, kinds).select(mine.collect_schema().names())
    return _first(_event_rows(pl.concat([host, loose, launched], how="vertical_relaxed")), limit)


def rank_span(events: pl.LazyFrame, rank: int) -> tuple[int, int] | None:
    """The first event start and the last event end of ``rank`` (epoch ns), None without events."""
    got = (
        events.filter(pl.col("rank") == rank)
        .select(lo=pl.col("ts").min(), hi=(pl.col("ts") + pl.col("dur").fill_null(0)).max())
        .collect()
    )
    lo, hi = got.row(0)
    return None if lo is None else (int(lo), int(hi))
