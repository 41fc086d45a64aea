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

from . import annotations as ann
from . import comm as cm
from . import idle as il
from . import launch as la
from . import sync as sy
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
                s: {name: _clean(df.to_dicts()) for name, df in tables.items()} for s, tables in self.sections.items()
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
    o = events.select(
        pl.len().alias("events"),
        pl.col("ts").min().alias("start_ns"),
        (pl.col("ts") + pl.col("dur")).max().alias("end_ns"),
        pl.struct("node", "rank", "device").filter(pl.col("device") >= 0).n_unique().alias("gpus"),
    ).collect(engine=ENGINE).row(0, named=True)
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


def summarize(trace: Trace, top_n: int = 15, bucket_ns: int | None = None, hta_compat: bool = False) -> Summary:
    """Run every analysis over ``trace`` (an opened :class:`profui.analysis.Trace`).

    ``top_n`` bounds the top-kernel, launch-by-kernel and launch-outlier tables; ``bucket_ns``
    is the utilization bucket (None: about 200 buckets over the trace); ``hta_compat`` switches
    the HTA-comparable numbers to HTA's semantics.
    """
    from . import activity as act
    from . import busy as bz
    from . import kernels as kn
    from . import memory as mem
    from . import precision as prec
    from . import steps as stp
    from . import utilization as ut

    ev = trace.cached_events()
    hev = trace.hta_events().collect(engine=ENGINE).lazy() if hta_compat else ev
    sections: dict[str, dict[str, pl.DataFrame]] = {}
    notes: list[str] = []

    busy = bz.gpu_busy(hev, hta_compat=hta_compat).collect(engine=ENGINE)
    gpu_util = ut.gpu_utilization(hev, bucket_ns=bucket_ns, hta_compat=hta_compat).collect(engine=ENGINE)
    sections["utilization"] = {
        "busy": busy,
        "total": bz.total_busy(busy).collect(engine=ENGINE),
        "gpu": gpu_util,
        "node": ut.node_utilization(gpu_util).collect(engine=ENGINE),
        "cpu": ut.cpu_utilization(ev, trace.metrics(), bucket_ns=bucket_ns).collect(engine=ENGINE),
    }

    stats = kn.kernel_stats(hev, hta_compat=hta_compat).collect(engine=ENGINE)
    sections["kernels"] = {
        "stats": stats,
        "top_by_time": kn.top_kernels(stats, top_n, by="total_ns").collect(engine=ENGINE),
        "top_by_count": kn.top_kernels(stats, top_n, by="count").collect(engine=ENGINE),
        "types": kn.kernel_type_breakdown(hev, hta_compat=hta_compat).collect(engine=ENGINE),
    }
    sections["activity"] = {"shares": act.activity_shares(hev, hta_compat=hta_compat).collect(engine=ENGINE)}
    sections["memory"] = {"ops": mem.memory_ops(ev).collect(engine=ENGINE)}
    sections["precision"] = {"shares": prec.precision_shares(ev).collect(engine=ENGINE)}

    steps = stp.step_windows(hev)
    windows = steps.windows
    if not steps.has_markers:
        notes.append(steps.note)
    sections["steps"] = {
        "windows": windows,
        "stats": stp.step_stats(windows.lazy()).collect(engine=ENGINE),
        "outliers": stp.step_outliers(windows.lazy()).filter(pl.col("outlier")).collect(engine=ENGINE),
    }

    launches = la.kernel_launches(hev, hta_compat=hta_compat).collect(engine=ENGINE).lazy()
    sections["launch"] = {
        "stats": la.launch_stats(launches).collect(engine=ENGINE),
        "overall": la.launch_stats(launches, by=()).collect(engine=ENGINE),
        "by_kernel": _head(la.launch_stats_by_kernel(launches).collect(engine=ENGINE), top_n),
        "outliers": _head(la.launch_outliers(launches).collect(engine=ENGINE), top_n),
        "histogram": la.launch_histogram(launches).collect(engine=ENGINE),
    }
    sections["sync"] = {
        "host": sy.sync_summary(ev).collect(engine=ENGINE),
        "totals": sy.sync_totals(ev).collect(engine=ENGINE),
        "device": sy.gpu_sync_summary(ev).collect(engine=ENGINE),
    }
    idle_breakdown = il.idle_breakdown(hev, hta_compat=hta_compat).collect(engine=ENGINE)
    sections["idle"] = {
        "breakdown": idle_breakdown,
        "totals": il.totals_of_breakdown(idle_breakdown).collect(engine=ENGINE),
        "queue": il.queue_length_summary(hev, hta_compat=hta_compat).collect(engine=ENGINE),
    }
    per_step = cm.comm_per_step(hev, windows.lazy()).collect(engine=ENGINE)
    sections["comm"] = {
        "by_collective": cm.comm_by_collective(hev).collect(engine=ENGINE),
        "overlap": cm.comm_comp_overlap(hev, hta_compat=hta_compat).collect(engine=ENGINE),
        "per_rank": cm.comm_per_rank(hev).collect(engine=ENGINE),
        "per_step": per_step,
        "stragglers": cm.stragglers(per_step.lazy()).collect(engine=ENGINE),
    }
    sections["annotations"] = {
        "names": ann.annotation_names(ev).collect(engine=ENGINE),
        "breakdown": ann.annotation_breakdown(hev, hta_compat=hta_compat).collect(engine=ENGINE),
        "per_step": ann.annotation_per_step(ev, stp.step_windows(ev).windows.lazy() if hta_compat else windows.lazy())
        .collect(engine=ENGINE),
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
