"""Everything at once: :func:`summarize` bundles every analysis of a trace into a :class:`Summary`.

A Summary is what ``profui summary`` prints, what ``profui summary --json`` writes, and what the
dashboard and the runs pipeline can read. Its ``sections`` use the pipeline's layout —
``{stage: {table: frame}}`` with the same stage and table names as the stage outputs (without
``.parquet``) — so :func:`profui.analysis.takeaways.takeaway_for` works on either.

``hta_compat=True`` computes the numbers Holistic Trace Analysis computes the HTA way (µs
rounding, last step dropped, HTA's GPU-event notion; see :mod:`profui.analysis.hta`); the
sections HTA has no counterpart for are computed exactly either way.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import polars as pl

from . import activity as act
from . import annotations as ann
from . import busy as bz
from . import comm as cm
from . import hta_variants as hv
from . import idle as il
from . import kernels as kn
from . import launch as la
from . import memory as mem
from . import precision as prec
from . import steps as stp
from . import sync as sy
from . import utilization as ut
from .engine import ENGINE
from .takeaways import all_takeaways

if TYPE_CHECKING:
    from .trace import Trace

#: Order of the sections (and of the CLI's tables).
SECTIONS: tuple[str, ...] = (
    "utilization",
    "kernels",
    "activity",
    "memory",
    "precision",
    "steps",
    "launch",
    "sync",
    "idle",
    "comm",
    "annotations",
)


@dataclass
class Summary:
    """All analyses of one trace.

    ``trace``: what was analysed (path, name, status, nodes, ranks, GPUs, events, time span).
    ``params``: ``top_n``, ``bucket_ns``, ``hta_compat``. ``sections``: ``{section: {table:
    DataFrame}}`` in :data:`SECTIONS` order. ``takeaways``: one line per dashboard chart.
    ``notes``: things the reader should know (e.g. "no step markers").
    """

    trace: dict[str, Any]
    params: dict[str, Any]
    sections: dict[str, dict[str, pl.DataFrame]] = field(default_factory=dict)
    takeaways: dict[str, str] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)

    def table(self, section: str, name: str) -> pl.DataFrame:
        """One table (an empty frame when absent)."""
        return self.sections.get(section, {}).get(name, pl.DataFrame())

    def to_json_dict(self) -> dict[str, Any]:
        """A JSON-ready dict: tables as lists of row dicts; NaN and infinities become null."""
        return {
            "trace": _clean(self.trace),
            "params": _clean(self.params),
            "takeaways": dict(self.takeaways),
            "notes": list(self.notes),
            "sections": {
                s: {name: _clean(df.to_dicts()) for name, df in tables.items()}
                for s, tables in self.sections.items()
            },
        }


def _clean(value: Any) -> Any:
    if isinstance(value, float):
        return None if math.isnan(value) or math.isinf(value) else value
    if isinstance(value, dict):
        return {str(k): _clean(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_clean(v) for v in value]
    if isinstance(value, (int, str, bool)) or value is None:
        return value
    return str(value)


def trace_overview(trace: Trace, events: pl.LazyFrame) -> dict[str, Any]:
    """What was analysed: path, name, status, nodes, ranks, GPUs, event count and time span."""
    m = trace.manifest
    o = (
        events.select(
            pl.len().alias("events"),
            pl.col("ts").min().alias("start_ns"),
            (pl.col("ts") + pl.col("dur")).max().alias("end_ns"),
            pl.struct("node", "rank", "device").filter(pl.col("device") >= 0).n_unique().alias("gpus"),
        )
        .collect(engine=ENGINE)
        .row(0, named=True)
    )
    start, end = o["start_ns"], o["end_ns"]
    return {
        "path": str(trace.path),
        "name": m.name,
        "status": m.status,
        "source": m.source,
        "nodes": sorted(trace.dir.nodes),
        "ranks": sorted({r for _, r in trace.dir.ranks}),
        "gpus": int(o["gpus"]),
        "events": int(o["events"]),
        "start_ns": start,
        "end_ns": end,
        "duration_ns": (end - start) if start is not None and end is not None else None,
    }


def _head(df: pl.DataFrame, n: int) -> pl.DataFrame:
    return df.head(n) if n > 0 else df


def _collect_all(queries: dict[str, pl.LazyFrame]) -> dict[str, pl.DataFrame]:
    frames = pl.collect_all(list(queries.values()), engine=ENGINE)
    return dict(zip(queries, frames, strict=True))


def summarize(
    trace: Trace, top_n: int = 15, bucket_ns: int | None = None, hta_compat: bool = False
) -> Summary:
    """Run every analysis over ``trace`` (an opened :class:`profui.analysis.Trace`).

    ``top_n`` bounds the top-kernel, launch-by-kernel and launch-outlier tables; ``bucket_ns``
    is the utilization bucket (None: about 200 buckets over the trace); ``hta_compat`` switches
    the HTA-comparable numbers to HTA's semantics.
    """
    ev = trace.cached_events()
    hev = trace.hta_events().collect(engine=ENGINE).lazy() if hta_compat else ev
    h = hta_compat  # HTA's variants over HTA's view of the events, else the exact analyses
    sections: dict[str, dict[str, pl.DataFrame]] = {}
    notes: list[str] = []

    steps = stp.step_windows(hev)
    windows = steps.windows
    if not steps.has_markers:
        notes.append(steps.note)
    ann_windows = stp.step_windows(ev).windows if hta_compat else windows

    aten_pairs, aten_ops = (hv.hta_aten_inputs if h else la.aten_inputs)(hev)

    # Two batches of independent queries, each run by one pl.collect_all: the ~40 small
    # queries then share the thread pool and common sub-plans (20% faster than one by one).
    first = _collect_all(
        {
            "busy": (hv.hta_gpu_busy if h else bz.gpu_busy)(hev),
            "gpu_util": (hv.hta_gpu_utilization if h else ut.gpu_utilization)(hev, bucket_ns=bucket_ns),
            "cpu_util": ut.cpu_utilization(ev, trace.metrics(), bucket_ns=bucket_ns),
            "cpu_active": ut.cpu_active(ev, trace.metrics()),
            "stats": (hv.hta_kernel_stats if h else kn.kernel_stats)(hev),
            "types": (hv.hta_kernel_type_breakdown if h else kn.kernel_type_breakdown)(hev),
            "activity": (hv.hta_activity_shares if h else act.activity_shares)(hev),
            "memory": mem.memory_ops(ev),
            "bandwidth": (hv.hta_memory_bw_summary if h else mem.bandwidth_summary)(hev),
            "precision": prec.precision_shares(ev),
            "step_stats": stp.step_stats(windows.lazy()),
            "step_outliers": stp.step_outliers(windows.lazy()).filter(pl.col("outlier")),
            "launches": (hv.hta_kernel_launches if h else la.kernel_launches)(hev),
            "sync_host": sy.sync_summary(ev),
            "sync_totals": sy.sync_totals(ev),
            "sync_device": sy.gpu_sync_summary(ev),
            "idle_breakdown": (hv.hta_idle_breakdown if h else il.idle_breakdown)(hev),
            "queue_series": (hv.hta_queue_length if h else il.queue_length)(hev),
            "per_step": cm.comm_per_step(hev, windows.lazy()),
            "by_collective": cm.comm_by_collective(hev),
            "overlap": (hv.hta_comm_comp_overlap if h else cm.comm_comp_overlap)(hev),
            "per_rank": cm.comm_per_rank(hev),
            "ann_names": ann.annotation_names(ev),
            "ann_breakdown": (hv.hta_annotation_breakdown if h else ann.annotation_breakdown)(hev),
            "ann_per_step": ann.annotation_per_step(ev, ann_windows.lazy()),
            "aten_pairs": aten_pairs,
            "aten_ops": aten_ops,
        }
    )
    launches = first["launches"].lazy()
    queue = first["queue_series"].lazy()
    blocked = hv.hta_blocked_on_full_queue if h else il.blocked_on_full_queue
    second = _collect_all(
        {
            "total": bz.total_busy(first["busy"]),
            "node": ut.node_utilization(first["gpu_util"]),
            "top_by_time": kn.top_kernels(first["stats"], top_n, by="total_ns"),
            "top_by_count": kn.top_kernels(first["stats"], top_n, by="count"),
            "launch_stats": la.launch_stats(launches),
            "launch_overall": la.launch_stats(launches, by=()),
            "launch_by_kernel": la.launch_stats_by_kernel(launches),
            "launch_outliers": la.launch_outliers(launches),
            "launch_histogram": la.launch_histogram(launches),
            "idle_totals": il.totals_of_breakdown(first["idle_breakdown"]),
            "queue": il.queue_stats(queue),
            "blocked": blocked(hev, il.MAX_QUEUE_LENGTH, queue=queue),
            "activity_total": act.activity_total(first["activity"]),
            "stragglers": cm.stragglers(first["per_step"].lazy()),
        }
    )

    sections["utilization"] = {
        "busy": first["busy"],
        "total": second["total"],
        "gpu": first["gpu_util"],
        "node": second["node"],
        "cpu": first["cpu_util"],
        "cpu_active": first["cpu_active"],
    }
    sections["kernels"] = {
        "stats": first["stats"],
        "top_by_time": second["top_by_time"],
        "top_by_count": second["top_by_count"],
        "types": first["types"],
    }
    sections["activity"] = {"shares": first["activity"], "total": second["activity_total"]}
    sections["memory"] = {"ops": first["memory"], "bandwidth": first["bandwidth"]}
    sections["precision"] = {"shares": first["precision"]}
    sections["steps"] = {
        "windows": windows,
        "stats": first["step_stats"],
        "outliers": first["step_outliers"],
        "histogram": stp.step_histogram(windows),
    }
    sections["launch"] = {
        "stats": second["launch_stats"],
        "overall": second["launch_overall"],
        "by_kernel": _head(second["launch_by_kernel"], top_n),
        "outliers": _head(second["launch_outliers"], top_n),
        "histogram": second["launch_histogram"],
        "aten_op_kernels": (hv.hta_aten_op_kernels if h else la.aten_op_kernels)(
            hev, inputs=(first["aten_pairs"].lazy(), first["aten_ops"].lazy())
        ).collect(engine=ENGINE),
    }
    sections["sync"] = {
        "host": first["sync_host"],
        "totals": first["sync_totals"],
        "device": first["sync_device"],
    }
    sections["idle"] = {
        "breakdown": first["idle_breakdown"],
        "totals": second["idle_totals"],
        "queue": second["queue"],
        "blocked_on_full_queue": second["blocked"],
    }
    sections["comm"] = {
        "by_collective": first["by_collective"],
        "overlap": first["overlap"],
        "per_rank": first["per_rank"],
        "per_step": first["per_step"],
        "stragglers": second["stragglers"],
    }
    sections["annotations"] = {
        "names": first["ann_names"],
        "breakdown": first["ann_breakdown"],
        "per_step": first["ann_per_step"],
    }
    if hta_compat:
        notes.append("hta_compat: HTA's semantics (µs rounding, last ProfilerStep dropped, HTA's GPU events)")

    return Summary(
        trace=trace_overview(trace, ev),
        params={"top_n": top_n, "bucket_ns": bucket_ns, "hta_compat": hta_compat},
        sections=sections,
        takeaways=all_takeaways(sections),
        notes=notes,
    )
