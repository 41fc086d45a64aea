"""Job-level answers reduced from per-rank tables: what a cluster run of many ranks builds on
the client without ever loading a rank's events.

A run over ranks (:mod:`profui.analysis.distributed`) computes the stage graph on each rank
alone (:mod:`profui.analysis.ranks`). Two kinds of table come back:

- :data:`PER_RANK_TABLES`: tables keyed by node and rank whose rows for a rank depend on that
  rank's events only. The job's table is the ranks' tables one after another, in (node, rank)
  order, the order the whole-trace stage writes them in (``sort``: the columns a table is sorted
  by where the stage orders its rows otherwise).
- :data:`JOB_TABLES`: tables across ranks (the job's step is its slowest rank's, stragglers,
  the job's GPU time). Each is the *same function* the whole-trace stage body calls on its own
  per-rank table (``stp.job_steps(windows)`` in :func:`profui.analysis.pipeline.bodies.steps`),
  applied here to the concatenated per-rank tables; ``tests/analysis/test_distributed.py`` holds
  the two equal on every table, so the rule lives in its analysis module once.

Tables that are neither (kernel statistics over every rank's launches, percentiles over all
launches, time buckets sized from the whole trace's span) need every event in one place and are
left out of a run over ranks; :func:`whole_trace_only` says so in the summary's notes.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any

import polars as pl

from profui.analysis import busy as bz
from profui.analysis import comm as cm
from profui.analysis import idle as il
from profui.analysis import steps as stp
from profui.analysis.devices import CPU, GPU, NONE, DeviceWords
from profui.analysis.engine import ENGINE
from profui.analysis.schemas import conform

Key = tuple[str, str]  # (stage, table) without ".parquet"


@dataclass(frozen=True)
class PerRank:
    """A table whose job rows are the ranks' rows; ``sort``: the order the stage gives them."""

    sort: tuple[str, ...] = ()


@dataclass(frozen=True)
class JobTable:
    """A job table reduced by ``fn`` from the (already reduced) tables ``inputs``."""

    fn: Callable[..., Any]
    inputs: tuple[Key, ...]


PER_RANK_TABLES: dict[Key, PerRank] = {
    ("utilization", "busy"): PerRank(),
    ("utilization", "cpu_active"): PerRank(),
    ("utilization", "traced"): PerRank(),
    ("memory", "bandwidth"): PerRank(),
    ("flops", "steps"): PerRank(),
    ("steps", "windows"): PerRank(),
    ("steps", "stats"): PerRank(),
    ("steps", "outliers"): PerRank(),
    ("steps", "breakdown"): PerRank(),
    ("launch", "stats"): PerRank(),
    ("idle", "breakdown"): PerRank(),
    ("idle", "queue"): PerRank(),
    ("comm", "overlap"): PerRank(),
    ("comm", "per_rank"): PerRank(),
    ("comm", "per_step"): PerRank(sort=("step", "node", "rank")),
    ("comm", "arrivals"): PerRank(),
    ("annotations", "breakdown"): PerRank(),
    ("annotations", "per_step"): PerRank(),
}

JOB_TABLES: dict[Key, JobTable] = {
    ("steps", "job"): JobTable(stp.job_steps, (("steps", "windows"),)),
    ("steps", "job_stats"): JobTable(lambda job: stp.step_stats(job, by=()), (("steps", "job"),)),
    ("steps", "rank_ratios"): JobTable(stp.rank_step_ratios, (("steps", "windows"),)),
    ("comm", "stragglers"): JobTable(cm.stragglers, (("comm", "arrivals"),)),
    ("utilization", "total"): JobTable(bz.total_busy, (("utilization", "busy"),)),
    ("idle", "totals"): JobTable(il.totals_of_breakdown, (("idle", "breakdown"),)),
}


def whole_trace_only(words: DeviceWords) -> str:
    """What a run over ranks leaves out, said in its notes, in the words of the job's devices
    (no "GPU" for a CPU-only run)."""
    return (
        f"a run over ranks computes per-rank tables and the job's steps, stragglers, {words.time} "
        f"and idle totals; {words.work}, launch-latency, precision, memory-op and annotation "
        "statistics over all ranks and the utilization time series need the whole trace in one "
        "process (profui summary without --scheduler/--workers)"
    )


def _lazy(frame: pl.DataFrame | pl.LazyFrame) -> pl.LazyFrame:
    return frame.lazy() if isinstance(frame, pl.DataFrame) else frame


def stages_needed() -> list[str]:
    """The stages a rank must run for :data:`PER_RANK_TABLES` (the job tables read those)."""
    return list(dict.fromkeys(stage for stage, _ in PER_RANK_TABLES))


def rank_outputs(store: Mapping[str, Mapping[str, Any]]) -> dict[Key, pl.DataFrame]:
    """The :data:`PER_RANK_TABLES` of one rank's in-memory store (``store.compute``'s)."""
    return {(s, t): store[s][f"{t}.parquet"] for s, t in PER_RANK_TABLES}


def concat_ranks(per_rank: Iterable[Mapping[Key, pl.DataFrame]]) -> dict[Key, pl.DataFrame]:
    """The job's :data:`PER_RANK_TABLES` from each rank's (given in (node, rank) order)."""
    ranks = list(per_rank)
    out: dict[Key, pl.DataFrame] = {}
    for key, rule in PER_RANK_TABLES.items():
        frames = [r[key] for r in ranks]
        frame = pl.concat(frames, how="vertical") if frames else pl.DataFrame()
        out[key] = frame.sort(list(rule.sort), maintain_order=True) if rule.sort and frame.height else frame
    return out


def job_tables(tables: Mapping[Key, pl.DataFrame]) -> dict[Key, pl.DataFrame]:
    """``tables`` (the job's per-rank tables) with every :data:`JOB_TABLES` entry reduced from them."""
    out = dict(tables)
    for key, rule in JOB_TABLES.items():
        got = rule.fn(*(out[i] for i in rule.inputs))
        frame = got.collect(engine=ENGINE) if isinstance(got, pl.LazyFrame) else got
        out[key] = conform(key[0], f"{key[1]}.parquet", frame)  # as the stage's own output is
    return out


def _device_type(kinds: list[str]) -> str:
    """The job's ``device_type`` from its ranks' (:mod:`profui.analysis.devices`)."""
    used = {k for k in kinds if k != NONE}
    if not used:
        return NONE
    return CPU if used == {CPU} else GPU


def job_overview(
    path: str, manifest: Any, nodes: list[str], ranks: list[tuple[str, int]], parts: list[dict[str, Any]]
) -> dict[str, Any]:
    """The summary's ``trace`` block of a job from its ranks' overviews
    (:func:`profui.analysis.summary.trace_overview` of each rank): events and GPUs summed, the
    span from the first start to the last end."""
    starts = [p["start_ns"] for p in parts if p["start_ns"] is not None]
    ends = [p["end_ns"] for p in parts if p["end_ns"] is not None]
    start, end = (min(starts), max(ends)) if starts and ends else (None, None)
    return {
        "path": path,
        "name": manifest.name,
        "status": manifest.status,
        "source": manifest.source,
        "nodes": sorted(nodes),
        "ranks": sorted({r for _, r in ranks}),
        "gpus": sum(int(p["gpus"]) for p in parts),
        "gpus_listed": len(manifest.gpus),
        "devices": sum(int(p.get("devices", p["gpus"])) for p in parts),
        # the job's devices are of one kind when its ranks' are; GPUs where any rank has them
        "device_type": _device_type([p.get("device_type", GPU) for p in parts]),
        "events": sum(int(p["events"]) for p in parts),
        "start_ns": start,
        "end_ns": end,
        "duration_ns": (end - start) if start is not None and end is not None else None,
    }
