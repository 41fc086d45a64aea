"""From the analysis pipeline's stage outputs to what each dashboard chart draws.

Only selection and formatting happen here: which frame, which columns, which label. Every
number comes from analysis (the stage outputs) and every takeaway from
``profui.analysis.takeaways``.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import polars as pl
from rich.text import Text

from ..widgets.bars import Bar
from ..widgets.charts import ChartData, Series
from ..widgets.fmt import fmt_bytes, fmt_count, fmt_ns, fmt_pct

Outputs = dict[str, dict[str, Any]]

#: Pipeline stages the dashboard reads.
STAGES: tuple[str, ...] = ("steps", "kernels", "activity", "memory", "precision", "utilization", "annotations")

ACTIVITY_STYLE = {"kernel": "green", "memcpy": "cyan", "memset": "blue", "sync": "yellow", "idle": "red"}


@dataclass(frozen=True)
class Chart:
    """A dashboard chart: id, title, the stages it reads, how to build it, and its table view."""

    id: str
    title: str
    stages: tuple[str, ...]
    build: Callable[[Outputs, Any], ChartData]
    hint: str = ""
    view: str | None = None


def pick(df: pl.DataFrame, *names: str) -> str | None:
    """The first of ``names`` that is a column of ``df``."""
    return next((n for n in names if n in df.columns), None)


def need(df: pl.DataFrame, *names: str) -> str:
    """Like :func:`pick` but an error naming the candidates when none is there."""
    col = pick(df, *names)
    if col is None:
        raise KeyError(f"none of the columns {', '.join(names)} in {df.columns}")
    return col


def frame(outputs: Outputs, stage: str, file: str) -> pl.DataFrame:
    """One output frame (empty when the stage wrote none)."""
    value = outputs.get(stage, {}).get(file)
    return value if isinstance(value, pl.DataFrame) else pl.DataFrame()


def takeaway(chart_id: str, outputs: Outputs) -> str:
    """The analysis' one-line takeaway for ``chart_id`` ("" when analysis has none)."""
    try:
        from profui.analysis import takeaways as tk
    except ImportError:
        return ""
    fn = getattr(tk, "takeaway_for", None) or getattr(tk, "takeaway", None)
    if fn is None:
        return ""
    try:
        return str(fn(chart_id, outputs) or "")
    except Exception:
        return ""


def gpu_label(row: dict[str, Any], multi_node: bool) -> str:
    """``node-0 r1 gpu1`` style label of a per-GPU row."""
    parts = []
    if multi_node and row.get("node") is not None:
        parts.append(str(row["node"]))
    if row.get("rank") is not None:
        parts.append(f"r{row['rank']}")
    if row.get("device") is not None:
        parts.append(f"gpu{row['device']}")
    return " ".join(parts) or "all"


# -- charts ---------------------------------------------------------------------------------


def build_gpu_active(outputs: Outputs, _view: Any) -> ChartData:
    busy = frame(outputs, "utilization", "busy.parquet")
    share = need(busy, "busy_share", "active_share", "busy_frac", "busy_fraction", "utilization")
    busy_ns = pick(busy, "busy_ns", "active_ns")
    idle_ns = pick(busy, "idle_ns")
    multi_node = "node" in busy.columns and busy["node"].n_unique() > 1
    bars = []
    for row in busy.iter_rows(named=True):
        value = float(row[share] or 0.0)
        text = f"{fmt_pct(value)} active"
        if busy_ns and idle_ns:
            text += f" · idle {fmt_ns(row[idle_ns])}"
        bars.append(Bar(gpu_label(row, multi_node), value, text, "green"))
    return ChartData(kind="bars", bars=bars, scale=1.0, takeaway=takeaway("gpu_active", outputs))


def _time_series(df: pl.DataFrame, value: str, group: str | None, scale: float) -> list[Series]:
    ts = need(df, "bucket_start", "ts", "start", "bucket")
    origin = df[ts].min() if df.height else 0
    out = []
    groups = df.partition_by(group, maintain_order=True) if group else [df]
    for g in groups:
        g = g.sort(ts)
        label = str(g[group][0]) if group else value
        xs = [(t - origin) / 1e9 for t in g[ts].to_list()]
        ys = [float(v or 0.0) * scale for v in g[value].to_list()]
        out.append(Series(label, xs, ys))
    return out


def build_gpu_util(outputs: Outputs, _view: Any) -> ChartData:
    util = frame(outputs, "utilization", "gpu.parquet")
    value = need(util, "util", "utilization", "busy_share", "busy_frac", "util_pct")
    scale = 1.0 if "pct" in value else 100.0
    series = _time_series(util, value, "node" if "node" in util.columns else None, scale)
    return ChartData(kind="lines", series=series, x_label="s", y_label="% busy", y_max=100.0,
                     takeaway=takeaway("gpu_util", outputs))


def build_cpu(outputs: Outputs, _view: Any) -> ChartData:
    cpu = frame(outputs, "utilization", "cpu.parquet")
    value = need(cpu, "util", "utilization", "util_pct", "busy_share", "active_share")
    scale = 1.0 if "pct" in value else 100.0
    series = _time_series(cpu, value, "node" if "node" in cpu.columns else None, scale)
    src = pick(cpu, "source")
    note = f"source: {cpu[src][0]}" if src and cpu.height else ""
    return ChartData(kind="lines", series=series, x_label="s", y_label="% CPU", y_max=100.0, note=note,
                     takeaway=takeaway("cpu", outputs))


def build_kernel_total(outputs: Outputs, _view: Any) -> ChartData:
    types = frame(outputs, "kernels", "types.parquet")
    stats = frame(outputs, "kernels", "stats.parquet")
    tcol = need(stats, "total_ns", "sum_ns", "time_ns")
    ccol = need(stats, "count", "calls", "launches")
    total = stats[tcol].sum() if stats.height else 0
    text = Text()
    text.append(fmt_ns(total), style="bold")
    text.append(f" in all kernels · {fmt_count(stats[ccol].sum() if stats.height else 0)} launches · "
                f"{fmt_count(stats.height)} distinct kernels")
    bars = []
    if types.height:
        name = need(types, "type", "kernel_type", "category", "name")
        t = need(types, "total_ns", "sum_ns", "time_ns")
        sh = pick(types, "share", "time_share", "fraction")
        pct = pick(types, "pct")
        for row in types.iter_rows(named=True):
            suffix = f" ({fmt_pct(row[sh])})" if sh else (f" ({row[pct]:.1f}%)" if pct else "")
            label = str(row[name]).replace(" overlapping ", " ∩ ")
            bars.append(Bar(label, float(row[t] or 0), fmt_ns(row[t]) + suffix, "magenta"))
    return ChartData(kind="bars" if bars else "text", bars=bars, text=text, label_width=30,
                     takeaway=takeaway("kernel_total", outputs))


def _top(outputs: Outputs, file: str, by_count: bool, chart_id: str) -> ChartData:
    top = frame(outputs, "kernels", file)
    tcol = need(top, "total_ns", "sum_ns", "time_ns")
    ccol = need(top, "count", "calls", "launches")
    bars = []
    for row in top.iter_rows(named=True):
        label = kernel_label(str(row["name"]))
        if by_count:
            bars.append(Bar(label, float(row[ccol]), f"{fmt_count(row[ccol])}×", "cyan"))
        else:
            bars.append(Bar(label, float(row[tcol]), fmt_ns(row[tcol]), "magenta"))
    return ChartData(kind="bars", bars=bars, label_width=40, takeaway=takeaway(chart_id, outputs))


def kernel_label(name: str) -> str:
    """A kernel name as a chart label: without the ``void `` of demangled CUDA signatures."""
    return name[5:] if name.startswith("void ") else name


def build_top_time(outputs: Outputs, view: Any) -> ChartData:
    return _top(outputs, "top_by_time.parquet", False, "top_time")


def build_top_count(outputs: Outputs, view: Any) -> ChartData:
    return _top(outputs, "top_by_count.parquet", True, "top_count")


def build_steps(outputs: Outputs, _view: Any) -> ChartData:
    windows = frame(outputs, "steps", "windows.parquet")
    outliers = frame(outputs, "steps", "outliers.parquet")
    stats = frame(outputs, "steps", "stats.parquet")
    hist = outputs.get("steps", {}).get("histogram.parquet")
    bars: list[Bar] = []
    if isinstance(hist, pl.DataFrame) and hist.height:
        lo, hi = need(hist, "lo_ns", "bin_start", "start_ns"), need(hist, "hi_ns", "bin_end", "end_ns")
        cnt = need(hist, "count", "steps")
        for row in hist.iter_rows(named=True):
            bars.append(Bar(f"{fmt_ns(row[lo])}–{fmt_ns(row[hi])}", float(row[cnt]), f"{row[cnt]} steps", "green"))
    elif windows.height:
        dur = pick(windows, "dur_ns", "duration_ns", "dur")
        for row in windows.sort("step").iter_rows(named=True):
            d = row[dur] if dur else row["end"] - row["start"]
            label = f"step {row['step']}" + (f" r{row['rank']}" if "rank" in row and windows["rank"].n_unique() > 1 else "")
            bars.append(Bar(label, float(d), fmt_ns(d), "green"))
    if not bars:
        return ChartData(kind="text", text="no step markers in this trace", takeaway=takeaway("steps", outputs))
    note = Text()
    if stats.height:
        row = stats.row(0, named=True)
        parts = [f"{k.removesuffix('_ns')} {fmt_ns(v)}" for k, v in row.items()
                 if k.endswith("_ns") and isinstance(v, (int, float))]
        note.append(" · ".join(parts[:5]))
    if outliers.height:
        step = need(outliers, "step")
        dur = pick(outliers, "dur_ns", "duration_ns", "step_ns")
        slow = outliers.sort(dur, descending=True).head(5) if dur else outliers.head(5)
        names = ", ".join(f"step {r[step]}" + (f" ({fmt_ns(r[dur])})" if dur else "") for r in slow.iter_rows(named=True))
        note.append(("\n" if note else "") + "slowest: " + names, style="bold")
    return ChartData(kind="bars", bars=bars, note=note, takeaway=takeaway("steps", outputs))


def _shares(outputs: Outputs, stage: str, file: str, chart_id: str, styles: dict[str, str] | None = None) -> ChartData:
    df = frame(outputs, stage, file)
    name = need(df, "precision", "activity", "category", "kind", "name", "direction")
    share = pick(df, "share", "time_share", "fraction")
    tcol = pick(df, "time_ns", "total_ns", "sum_ns", "dur_ns")
    bars = []
    for row in df.iter_rows(named=True):
        value = float(row[share] if share else row[tcol] or 0)
        text = fmt_pct(row[share]) if share else ""
        if tcol:
            text = (text + " · " if text else "") + fmt_ns(row[tcol])
        label = str(row[name])
        bars.append(Bar(label, value, text, (styles or {}).get(label, "cyan")))
    return ChartData(kind="bars", bars=bars, scale=1.0 if share else None, takeaway=takeaway(chart_id, outputs))


def build_precision(outputs: Outputs, _view: Any) -> ChartData:
    return _shares(outputs, "precision", "shares.parquet", "precision")


def build_activity(outputs: Outputs, _view: Any) -> ChartData:
    return _shares(outputs, "activity", "shares.parquet", "activity", ACTIVITY_STYLE)


def build_memory(outputs: Outputs, _view: Any) -> ChartData:
    ops = frame(outputs, "memory", "ops.parquet")
    if ops.height == 0:
        return ChartData(kind="text", text="no memcpy or memset on the GPUs", takeaway=takeaway("memory", outputs))
    name = need(ops, "direction", "memcpy_kind", "kind", "name")
    tcol = need(ops, "time_ns", "total_ns", "sum_ns", "dur_ns")
    bcol = pick(ops, "bytes", "total_bytes")
    ccol = pick(ops, "count", "ops")
    bars = []
    for row in ops.iter_rows(named=True):
        text = fmt_ns(row[tcol])
        if bcol:
            text += f" · {fmt_bytes(row[bcol])}"
        if ccol:
            text += f" · {fmt_count(row[ccol])}×"
        bars.append(Bar(str(row[name]), float(row[tcol] or 0), text, "cyan"))
    return ChartData(kind="bars", bars=bars, takeaway=takeaway("memory", outputs))


def annotation_choices(outputs: Outputs) -> list[tuple[str, str]]:
    """``(name, label)`` of every annotation, longest total time first (from the breakdown)."""
    bd = frame(outputs, "annotations", "breakdown.parquet")
    if bd.height == 0:
        return []
    rows = bd.group_by("side", "name").agg(pl.col("sum_ns").sum(), pl.col("count").sum())
    rows = rows.sort(["sum_ns", "name"], descending=[True, False])
    return [(f"{r['side']}:{r['name']}", f"{r['name']} ({r['side']}, {fmt_count(r['count'])}×, {fmt_ns(r['sum_ns'])})")
            for r in rows.iter_rows(named=True)]


def build_annotation(outputs: Outputs, view: Any) -> ChartData:
    per_step = frame(outputs, "annotations", "per_step.parquet")
    choices = annotation_choices(outputs)
    if per_step.height == 0 or not choices:
        return ChartData(kind="text", text="no annotations in this trace (record_function / profui annotate)",
                         takeaway=takeaway("annotation", outputs))
    chosen = getattr(view, "annotation", None) or choices[0][0]
    side, _, name = chosen.partition(":")
    rows = per_step.filter((pl.col("side") == side) & (pl.col("name") == name))
    ranks = rows.select("node", "rank").unique(maintain_order=True).sort("node", "rank").rows()
    if not ranks:
        return ChartData(kind="text", text=f"{name}: not inside any step")
    node, rank = ranks[getattr(view, "rank_index", 0) % len(ranks)]
    mine = rows.filter((pl.col("node") == node) & (pl.col("rank") == rank)).sort("step")
    bars = [Bar(f"step {r['step']}", float(r["time_ns"]), f"{fmt_ns(r['time_ns'])} ({fmt_pct(r['share'])})", "yellow")
            for r in mine.iter_rows(named=True)]
    text = Text()
    text.append(f"{name}", style="bold")
    text.append(f" ({side}) · time per step on {node} rank {rank}" + (f" · n: next of {len(ranks)} ranks" if len(ranks) > 1 else ""))
    return ChartData(kind="bars", bars=bars, text=text, takeaway=takeaway("annotation", outputs))


CHARTS: list[Chart] = [
    Chart("gpu_active", "GPU active vs idle", ("utilization",), build_gpu_active),
    Chart("gpu_util", "GPU utilization over time, per node", ("utilization",), build_gpu_util),
    Chart("cpu", "CPU utilization over time", ("utilization",), build_cpu),
    Chart("kernel_total", "Total kernel time, by kernel type", ("kernels",), build_kernel_total, view="kernels"),
    Chart("top_time", "Top kernels by time", ("kernels",), build_top_time, "Enter: Kernels view", "kernels"),
    Chart("top_count", "Top kernels by launch count", ("kernels",), build_top_count, "Enter: Kernels view", "kernels"),
    Chart("steps", "Step time distribution", ("steps",), build_steps, "Enter: Steps view", "steps"),
    Chart("precision", "Kernel precision", ("precision",), build_precision),
    Chart("activity", "GPU activity distribution", ("activity",), build_activity),
    Chart("memory", "Memory operations", ("memory",), build_memory),
    Chart("annotation", "Custom: annotation time per step", ("annotations", "steps"), build_annotation, "a: pick"),
]


def chart_by_id(chart_id: str) -> Chart:
    """The chart with id ``chart_id``."""
    return next(c for c in CHARTS if c.id == chart_id)
