"""One rank's time window (a step, a span, the whole trace) and what happened in it: the top
kernels, ops or annotations by total time, and the events themselves as compact rows.

A step's window on a rank comes from the steps stage (``steps/windows.parquet``): its host window
(``cpu_start_ns``..``cpu_end_ns``) for host events, its device window (``start_ns``..``end_ns``:
from its first launch call to the end of the last device event it launched, as HTA takes it) for
kernels, the host window for kernels of a step without device work. An event is in a window when it
starts in it (``lo <= ts < hi``); :func:`top` counts its time up to the window's end only (an
annotation on a worker thread running past the step counts what fell inside).
Instants are ns since the epoch, as every ``*_ns`` of profui's outputs.
"""

from __future__ import annotations

from dataclasses import dataclass

import polars as pl

from .schemas import Column, Table

#: What :func:`top` ranks, and the event kinds each means.
TOP_KINDS: dict[str, tuple[str, ...]] = {
    "kernels": ("kernel",),
    "ops": ("cpu_op",),
    "annotations": ("annotation", "gpu_annotation"),
}

#: The rows :func:`top` returns.
TOP_ROWS = Table(
    (
        Column("name", pl.String(), "text", "kernel, op or annotation name"),
        Column("count", pl.Int64(), "count", "events of that name starting in the window"),
        Column("total_ns", pl.Int64(), "ns", "their summed durations, each cut at the window's end"),
        Column("mean_ns", pl.Float64(), "ns_float", "their mean duration (cut at the window's end)"),
        Column("max_ns", pl.Int64(), "ns", "the longest (cut at the window's end)"),
        Column(
            "share",
            pl.Float64(),
            "fraction",
            "total_ns over the window's time summed over its ranks: at most 1 for a name that "
            "never overlaps itself; the rows together can add up to more than 1 (nested ops, "
            "concurrent threads and streams)",
        ),
    ),
    "names by total time in a window, then by name",
)

#: Columns of :func:`window_events`' rows, in order.
EVENT_COLUMNS = ("ts_ns", "dur_ns", "kind", "name", "tid", "device", "stream", "correlation")


class WindowError(ValueError):
    """A step, rank or window the trace does not have; ``str()`` is one line saying which exist."""


@dataclass(frozen=True)
class Window:
    """Per rank, the host and device bounds of the window asked for (``[lo, hi)``, epoch ns)."""

    #: rank, host_lo, host_hi, device_lo, device_hi (device bounds null: the host's are used)
    bounds: pl.DataFrame
    step: int | None

    @property
    def ranks(self) -> list[int]:
        """The ranks the window covers."""
        return self.bounds["rank"].to_list()


def _numbers(values: list[int]) -> str:
    if not values:
        return "none"
    return ", ".join(map(str, values)) if len(values) <= 8 else f"{values[0]} to {values[-1]}"


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
    (or ``rank``). Raises :class:`WindowError` naming the steps or ranks there are."""
    if rank is not None and rank not in ranks:
        raise WindowError(f"rank {rank}: no such rank (ranks: {_numbers(sorted(ranks))})")
    if step is None:
        mine = [rank] if rank is not None else sorted(ranks)
        bounds = pl.DataFrame(
            {
                "rank": mine,
                "host_lo": [start_ns] * len(mine),
                "host_hi": [end_ns + 1] * len(mine),  # the last event's end is in the span
                "device_lo": [None] * len(mine),
                "device_hi": [None] * len(mine),
            },
            schema={c: pl.Int64 for c in ("rank", "host_lo", "host_hi", "device_lo", "device_hi")},
        )
        return Window(bounds, None)
    rows = windows.filter(pl.col("step") == step)
    if rows.is_empty():
        have = sorted(set(windows["step"].to_list()))
        listing = f"steps: {_numbers(have)}" if have else "the trace has no steps"
        raise WindowError(f"step {step}: no such step ({listing})")
    if rank is not None:
        rows = rows.filter(pl.col("rank") == rank)
        if rows.is_empty():
            have = sorted(set(windows.filter(pl.col("step") == step)["rank"].to_list()))
            raise WindowError(f"step {step}: not on rank {rank} (ranks: {_numbers(have)})")
    bounds = rows.sort("rank").select(
        "rank",
        pl.col("cpu_start_ns").alias("host_lo"),
        pl.col("cpu_end_ns").alias("host_hi"),
        pl.col("start_ns").alias("device_lo"),
        pl.col("end_ns").alias("device_hi"),
    )
    return Window(bounds, step)


def top(events: pl.LazyFrame, window: Window, what: str, n: int) -> tuple[pl.DataFrame, int, int]:
    """The ``n`` names of kind ``what`` (a key of :data:`TOP_KINDS`) with the most total time in
    ``window``: rows ``name, count, total_ns, mean_ns, max_ns, share`` (each event's time cut
    at its rank's window end; ``share``: of the window's time summed over its ranks; the rows
    of nested ops and concurrent streams can add up to more than 1), by total time then name. Also returns how many names there were and the window's
    time in ns. Kernels are counted in each rank's device window where the step has one."""
    kinds = TOP_KINDS[what]
    device = what == "kernels"
    b = window.bounds.with_columns(
        lo=pl.coalesce("device_lo", "host_lo") if device else pl.col("host_lo"),
        hi=pl.coalesce("device_hi", "host_hi") if device else pl.col("host_hi"),
    ).select("rank", "lo", "hi")
    window_ns = int((b["hi"] - b["lo"]).sum() or 0)
    picked = (
        events.filter(pl.col("kind").cast(pl.String).is_in(kinds), pl.col("rank").is_in(window.ranks))
        .select("rank", "ts", "dur", pl.col("name").cast(pl.String))
        .join(b.lazy(), on="rank")
        .filter(pl.col("ts") >= pl.col("lo"), pl.col("ts") < pl.col("hi"))
        .with_columns(dur=(pl.col("ts") + pl.col("dur")).clip(upper_bound=pl.col("hi")) - pl.col("ts"))
        .group_by("name")
        .agg(
            count=pl.len().cast(pl.Int64),
            total_ns=pl.col("dur").sum(),
            mean_ns=pl.col("dur").mean(),
            max_ns=pl.col("dur").max(),
        )
        .collect()
    )
    rows = picked.sort(["total_ns", "name"], descending=[True, False]).head(n)
    rows = rows.with_columns(share=pl.col("total_ns") / window_ns if window_ns else pl.lit(None, pl.Float64))
    return rows.select(pl.col(c.name).cast(c.dtype) for c in TOP_ROWS.columns), picked.height, window_ns


def window_events(events: pl.LazyFrame, rank: int, lo: int, hi: int, limit: int) -> tuple[pl.DataFrame, int]:
    """The events of ``rank`` that start in ``[lo, hi)`` by start time (then kind, name), the
    first ``limit`` of them as :data:`EVENT_COLUMNS`, and how many there are in all."""
    mine = events.filter(pl.col("rank") == rank, pl.col("ts") >= lo, pl.col("ts") < hi)
    total = int(mine.select(pl.len()).collect().item())
    rows = (
        mine.select(
            pl.col("ts").alias("ts_ns"),
            pl.col("dur").alias("dur_ns"),
            pl.col("kind").cast(pl.String),
            pl.col("name").cast(pl.String),
            "tid",
            "device",
            "stream",
            "correlation",
        )
        .sort(["ts_ns", "kind", "name", "tid"], nulls_last=True)
        .head(limit)
        .collect()
    )
    return rows, total


def rank_span(events: pl.LazyFrame, rank: int) -> tuple[int, int] | None:
    """The first event start and the last event end of ``rank`` (epoch ns), None without events."""
    got = (
        events.filter(pl.col("rank") == rank)
        .select(lo=pl.col("ts").min(), hi=(pl.col("ts") + pl.col("dur").fill_null(0)).max())
        .collect()
    )
    lo, hi = got.row(0)
    return None if lo is None else (int(lo), int(hi))
