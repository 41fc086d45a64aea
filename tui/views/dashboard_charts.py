"""From the typed result of the analysis pipeline (its stages' outputs) to what each dashboard chart draws.

Only selection and formatting happen here: which frame, which columns, which label. Every
number comes from analysis (the stage result) and every takeaway from
``profui.analysis.takeaways``.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, cast

from rich.text import Text

from profui.analysis.devices import GPU_WORDS, NONE, DeviceWords, does_not_apply, manifest_words, words_for
from profui.analysis.formatting import (
    fmt_bytes,
    fmt_count,
    fmt_flops,
    fmt_gbps,
    fmt_memory_device,
    fmt_ns,
    fmt_pct,
    fmt_tflops,
    plural,
)
from profui.analysis.top_n import OTHER

from ..widgets.bars import Bar
from ..widgets.charts import ChartData, Series

if TYPE_CHECKING:
    import polars as pl

    from profui.analysis.pipeline.result import Result


MAX_STEP_BARS = 20
STEP_STATS = ("min_ns", "p50_ns", "mean_ns", "p95_ns", "max_ns")
#: The columns that name one step of one rank.
STEP_KEYS = ["node", "rank", "step"]

ACTIVITY_STYLE = {"kernel": "green", "memcpy": "cyan", "memset": "blue", "sync": "yellow", "idle": "red"}


@dataclass(frozen=True)
class Chart:
    """A dashboard chart: id, title, the stages it reads, how to build it, and its table view.

    ``title`` names the devices and their work by placeholders (``{Device}``, ``{work}`` ...,
    the fields of :class:`~profui.analysis.devices.DeviceWords`): :func:`chart_title` fills them.
    """

    id: str
    title: str
    stages: tuple[str, ...]
    build: Callable[[Result, Any], ChartData]
    hint: str = ""
    view: str | None = None
    lines: bool = False  # drawn as a line chart (plotext)


def takeaway(chart_id: str, result: Result) -> str:
    """The summary stage's takeaway for ``chart_id`` ("" when it has nothing to say, or the
    summary is not there yet: the charts are drawn as their stages finish)."""
    return result.summary.takeaways.get(chart_id, "") if result.ran("summary") else ""


def chart_title(chart: Chart, words: DeviceWords) -> str:
    """``chart``'s title naming the trace's devices ("GPU active vs idle", "CPU device active
    vs idle")."""
    return chart.title.format(
        Device=words.Device, device=words.device, work=words.work, Work=words.Work, launch=words.launch
    )


def device_words(result: Result, view: Any = None) -> DeviceWords:
    """The words for the trace's devices: from analysis' overview of it (the session's, or the
    ingest or summary stage's among ``result``), else what its manifest lists."""
    session = getattr(view, "session", None)
    overview = getattr(session, "overview", None) or (
        result.ingest.trace["overview"] if result.ran("ingest") else None
    )
    if not overview and result.ran("summary"):
        overview = result.summary.summary.trace
    if overview:
        return words_for(overview)
    try:
        return manifest_words(session.manifest) if session is not None else GPU_WORDS
    except Exception:  # a trace that cannot be opened now: the normal path says why
        return GPU_WORDS


#: The charts of device work: not drawn for a run without any (a CPU-only run).
DEVICE_CHARTS = frozenset(
    {"gpu_active", "gpu_util", "kernel_total", "top_time", "top_count", "precision", "activity", "memory"}
)
#: The charts only a run without device work has.
HOST_CHARTS = frozenset({"host_steps"})


def applies(chart: Chart, words: DeviceWords) -> bool:
    """Whether ``chart`` is drawn for a trace whose devices ``words`` name: the device charts
    where device work ran, the host-steps chart where none did."""
    if words.kind == NONE:
        return chart.id not in DEVICE_CHARTS
    return chart.id not in HOST_CHARTS


def no_device_text(words: DeviceWords, what: str) -> str:
    """The one line of a chart of device work on a run that has none or has no such work."""
    if words.kind == NONE:
        return does_not_apply()
    return f"no {what} in this trace"


def gpu_label(row: dict[str, Any], multi_node: bool, lane: str = "gpu") -> str:
    """``node-0 r1 gpu1`` style label of a per-device row (``cpu0`` for XLA's CPU devices)."""
    parts = []
    if multi_node and row.get("node") is not None:
        parts.append(str(row["node"]))
    if row.get("rank") is not None:
        parts.append(f"r{row['rank']}")
    if row.get("device") is not None:
        parts.append(f"{lane}{row['device']}")
    return " ".join(parts) or "all"


# -- charts ---------------------------------------------------------------------------------


def build_gpu_active(result: Result, view: Any) -> ChartData:
    busy = result.utilization.busy
    words = device_words(result, view)
    if busy.height == 0:
        return ChartData(
            kind="text",
            text=no_device_text(words, f"{words.device} activity"),
            takeaway=takeaway("gpu_active", result),
        )
    multi_node = "node" in busy.columns and busy["node"].n_unique() > 1
    rows = []
    if busy.height > 1:
        overall = result.utilization.total.row(0, named=True)
        rows.append((f"all {words.devices(overall['n_gpus'])}", overall))
    rows += [(gpu_label(r, multi_node, words.lane), r) for r in busy.iter_rows(named=True)]
    bars = []
    for label, r in rows:
        share = float(r["busy_share"] or 0.0)
        text = f"{fmt_pct(share)} active · {fmt_pct(1 - share)} idle ({fmt_ns(r['idle_ns'])})"
        bars.append(Bar(label, share, text, "green"))
    note = (
        f"active = {'an' if words.work[0] in 'AEIOUX' else 'a'} {words.work}, memcpy or memset runs; "
        f"over each {words.device}'s span "
        "(first to last device activity)"
    )
    return ChartData(
        kind="bars",
        bars=bars,
        scale=1.0,
        note=Text(note, style="dim"),
        label_width=14,
        takeaway=takeaway("gpu_active", result),
    )


def _time_series(
    df: pl.DataFrame, value: str, group: str | None, scale: float, origin: int | None = None
) -> tuple[list[Series], str]:
    ts = "bucket_start_ns"
    if origin is None:
        origin = cast(int, df[ts].min()) if df.height else 0
    span = (cast(int, df[ts].max()) - origin) if df.height else 0
    unit, div = ("ms", 1e6) if span < 2e9 else ("s", 1e9)
    out = []
    groups = df.partition_by(group, maintain_order=True) if group else [df]
    for g in groups:
        g = g.sort(ts)
        label = str(g[group][0]) if group else value
        xs = [(t - origin) / div for t in g[ts].to_list()]
        ys = [float(v or 0.0) * scale for v in g[value].to_list()]
        out.append(Series(label, xs, ys))
    return out, unit


def build_gpu_util(result: Result, view: Any) -> ChartData:
    import polars as pl

    sampled = result.utilization.gpu_sampled
    if sampled.height:  # capture sampled the GPUs: the whole job, the traced windows marked
        origin = job_origin(result, sampled)
        series, unit = _time_series(sampled, "util", "node", 100.0, origin)
        marks, traced = traced_marks(result, origin, 1e6 if unit == "ms" else 1e9)
        n_gpus = sampled.group_by("node").agg(pl.col("n_gpus").max()).sort("node").rows()
        note = " · ".join(f"{node}: mean of {n} GPU{'s' if n != 1 else ''}" for node, n in n_gpus)
        note += " · NVML samples over the whole job" + (f" · {traced}" if traced else "")
        return ChartData(
            kind="lines",
            series=series,
            x_label=f"time ({unit})",
            y_label="% busy (NVML)",
            y_max=100.0,
            note=Text(note, style="dim"),
            takeaway=takeaway("gpu_util", result),
            marks=marks,
        )
    gpu = result.utilization.gpu
    words = device_words(result, view)
    if gpu.height == 0:
        return ChartData(
            kind="text",
            text=no_device_text(words, f"{words.device} activity"),
            takeaway=takeaway("gpu_util", result),
        )
    per_node = result.utilization.node
    series, unit = _time_series(per_node, "util", "node", 100.0)
    n_gpus = per_node.group_by("node").agg(pl.col("n_gpus").max()).sort("node").rows()
    note = " · ".join(f"{node}: mean of {words.devices(n)}" for node, n in n_gpus)
    note += " · from traced device events (the traced window)"
    return ChartData(
        kind="lines",
        series=series,
        x_label=f"time ({unit})",
        y_label="% busy",
        y_max=100.0,
        note=Text(note, style="dim"),
        takeaway=takeaway("gpu_util", result),
    )


def job_origin(result: Result, sampled: pl.DataFrame) -> int:
    """Time 0 of a whole-job chart: its first sample or the first traced window's start, the
    earlier (a trace may start before the first sample: the axis began at -1 ms)."""
    traced = result.utilization.traced
    first = int(cast(int, sampled["bucket_start_ns"].min()))
    return min(first, int(cast(int, traced["start_ns"].min()))) if traced.height else first


def traced_marks(result: Result, origin: int, div: float) -> tuple[list[float], str]:
    """Where the traced windows start and end on a time axis starting at ``origin`` (ns, in
    units of ``div``), and a line saying what was traced."""
    import polars as pl

    traced = result.utilization.traced
    if traced.height == 0:
        return [], ""
    spans = traced.group_by("start_ns", "end_ns").agg(pl.col("first_step").min(), pl.col("last_step").max())
    marks = sorted({(t - origin) / div for t in (*spans["start_ns"], *spans["end_ns"])})
    parts = []
    for r in spans.sort("start_ns").head(3).iter_rows(named=True):
        steps = f" (steps {r['first_step']}–{r['last_step']})" if r["first_step"] is not None else ""
        parts.append(f"{fmt_ns(r['end_ns'] - r['start_ns'])} at {fmt_ns(r['start_ns'] - origin)}{steps}")
    more = f" and {spans.height - 3} more" if spans.height > 3 else ""
    return marks, f"traced (│): {', '.join(parts)}{more}"


def build_cpu(result: Result, _view: Any) -> ChartData:
    cpu = result.utilization.cpu
    if cpu.height == 0:
        return ChartData(kind="text", text="no CPU samples or host events", takeaway=takeaway("cpu", result))
    sampled = bool((cpu["source"] == "metrics").all())
    origin = job_origin(result, cpu) if sampled else None
    series, unit = _time_series(cpu, "util", "node", 100.0, origin)
    how = (
        "the machine's cores, sampled over the whole job"
        if sampled
        else "traced host threads busy in ops or calls (Python, CUDA API), in the traced window (no CPU samples: not the machine's CPU)"
    )
    marks: list[float] = []
    if origin is not None:  # sampled
        div = 1e6 if unit == "ms" else 1e9
        marks, traced = traced_marks(result, origin, div)
        how += f" · {traced}" if traced else ""
    return ChartData(
        kind="lines",
        series=series,
        x_label=f"time ({unit})",
        y_label="% CPU (all cores)" if sampled else "% of threads busy (ops, calls)",
        y_max=100.0,
        text=cpu_active_line(result.utilization.cpu_active),
        note=Text(how, style="dim"),
        takeaway=takeaway("cpu", result),
        marks=marks,
    )


def cpu_active_line(active: pl.DataFrame) -> Text:
    """The CPU chart's header: CPU active time from analysis, summed over nodes (or ranks).

    Sampled CPU metrics win where capture recorded them (the machine's cores over the job);
    else the union of traced host-thread activity, said as such — it is not CPU utilization.
    """
    import polars as pl

    text = Text()
    if active.height == 0:
        return text
    sampled = bool((active["source"] == "metrics").any())
    rows = active.filter(pl.col("source") == ("metrics" if sampled else "host_events"))
    act, window = int(rows["active_ns"].sum()), int(rows["window_ns"].sum())
    # cpu_active's union counts annotations too: "active", where the line below is "busy"
    text.append("CPU active " if sampled else "Host threads active (ops, calls or annotations) ")
    text.append(fmt_ns(act), style="bold")
    text.append(f" of {fmt_ns(window)} ({fmt_pct(act / window)})" if window else "")
    who = "nodes" if sampled else "ranks"
    text.append(f" · summed over {rows.height} {who}" if rows.height > 1 else "")
    if sampled:  # host events: the note under the chart says it is the traced window
        text.append(" · all cores, whole job", style="dim")
    return text


def build_kernel_total(result: Result, view: Any) -> ChartData:
    types = result.kernels.types
    stats = result.kernels.stats
    words = device_words(result, view)
    if stats.height == 0 and words.kind == NONE:
        return ChartData(
            kind="text", text=no_device_text(words, "kernels"), takeaway=takeaway("kernel_total", result)
        )
    total = cast(int, stats["total_ns"].sum()) if stats.height else 0
    text = Text()
    if types.height:
        # The bars are time by kind with overlaps counted once (memory copies included): the
        # header leads with what they add up to, so a reader can add them up to it.
        text.append(fmt_ns(cast(int, types["time_ns"].sum())), style="bold")
        text.append(" in the bars below · ")
        text.append(f"{fmt_ns(total)} summed {words.work} durations · ")
    else:
        text.append(fmt_ns(total), style="bold")
        text.append(f" summed {words.work} durations · ")
    text.append(
        f"{fmt_count(cast(int, stats['count'].sum()) if stats.height else 0)} {words.work} {words.launches} · "
        f"{fmt_count(stats.height)} distinct {words.work}s"
    )
    bars = []
    if types.height:
        for row in types.iter_rows(named=True):
            label = str(row["kernel_type"]).replace(" overlapping ", " ∩ ")
            value = f"{fmt_ns(row['time_ns'])} ({fmt_pct(row['share'])})"
            bars.append(Bar(label, float(row["time_ns"] or 0), value, "magenta"))
    return ChartData(
        kind="bars" if bars else "text",
        bars=bars,
        text=text,
        label_width=30,
        takeaway=takeaway("kernel_total", result),
    )


def _top(result: Result, top: pl.DataFrame, by_count: bool, chart_id: str, view: Any) -> ChartData:
    words = device_words(result, view)
    if top.height == 0:
        return ChartData(
            kind="text", text=no_device_text(words, f"{words.work}s"), takeaway=takeaway(chart_id, result)
        )
    bars = []
    note = Text()
    for row in top.iter_rows(named=True):
        value = f"{fmt_count(row['count'])}×" if by_count else fmt_ns(row["total_ns"])
        if row["name"] == OTHER:  # analysis folds the rest into one row; a note, not a bar
            note.append(f"all other {words.work}s: {value}", style="dim")
            continue
        label = kernel_label(str(row["name"]))
        bars.append(
            Bar(
                label,
                float(row["count"] if by_count else row["total_ns"]),
                value,
                "cyan" if by_count else "magenta",
            )
        )
    return ChartData(kind="bars", bars=bars, note=note, label_width=60, takeaway=takeaway(chart_id, result))


def kernel_label(name: str) -> str:
    """A kernel name as a chart label: without the ``void `` of demangled CUDA signatures."""
    return name[5:] if name.startswith("void ") else name


def build_top_time(result: Result, view: Any) -> ChartData:
    return _top(result, result.kernels.top_by_time, False, "top_time", view)


def build_top_count(result: Result, view: Any) -> ChartData:
    return _top(result, result.kernels.top_by_count, True, "top_count", view)


def mark_outliers(windows: pl.DataFrame, outliers: pl.DataFrame) -> pl.DataFrame:
    """``windows`` with ``outlier`` (the step is among analysis' outlier steps) and, for those,
    analysis' ``vs_rank_median`` (the step chart and the Steps view)."""
    import polars as pl

    if windows.height == 0 or "outlier" in windows.columns:
        return windows
    keys = [k for k in STEP_KEYS if k in windows.columns and k in outliers.columns]
    if not keys or outliers.height == 0:
        return windows.with_columns(pl.lit(False).alias("outlier"))
    if "outlier" in outliers.columns:
        outliers = outliers.filter(pl.col("outlier"))
    extra = [c for c in ("vs_rank_median",) if c in outliers.columns and c not in windows.columns]
    flagged = outliers.select(*keys, *extra).unique(keys).with_columns(pl.lit(True).alias("outlier"))
    return windows.join(flagged, on=keys, how="left").with_columns(pl.col("outlier").fill_null(False))


def build_steps(result: Result, view: Any) -> ChartData:
    import polars as pl

    steps = mark_outliers(result.steps.windows, result.steps.outliers)
    stats = result.steps.stats
    if steps.height == 0:
        return ChartData(kind="text", text="no steps in this trace", takeaway=takeaway("steps", result))
    ranks = steps.select("node", "rank").unique(maintain_order=True).sort("node", "rank").rows()
    node, rank = ranks[getattr(view, "rank_index", 0) % len(ranks)]
    mine = steps.filter((pl.col("node") == node) & (pl.col("rank") == rank))
    shown = mine.sort("step")
    if shown.height > MAX_STEP_BARS:  # many steps: the slowest ones, in step order
        shown = mine.sort("dur_ns", descending=True).head(MAX_STEP_BARS).sort("step")
    flagged = "outlier" in mine.columns
    bars: list[Bar] = []
    label_width = 12
    hist = result.steps.histogram
    if hist.height:
        hist = hist.filter((pl.col("node") == node) & (pl.col("rank") == rank))
    # up to MAX_STEP_BARS steps each get a bar; more get analysis' histogram (the slowest
    # steps are named in the note beneath)
    if hist.height and mine.height > MAX_STEP_BARS:
        bars, label_width = histogram_bars(hist, mine, flagged)
        shown = shown.head(0)
    for r in shown.iter_rows(named=True):
        out = flagged and r["outlier"]
        bar_text = fmt_ns(r["dur_ns"]) + (
            f" ×{r['vs_rank_median']:.2f} rank median" if r.get("vs_rank_median") is not None else ""
        )
        bars.append(
            Bar(
                f"{'●' if out else ' '} step {r['step']}",
                float(r["dur_ns"]),
                bar_text,
                "red" if out else "green",
            )
        )
    text = Text()
    text.append(f"{node} rank {rank}", style="bold")
    text.append(
        f" · {plural(mine.height, 'step')}" + (f" · n: next of {len(ranks)} ranks" if len(ranks) > 1 else "")
    )
    if 0 < shown.height < mine.height:
        text.append(f" · the {shown.height} slowest shown")
    elif hist.height and not shown.height:
        text.append(f" · {hist.height} bucket{'s' if hist.height != 1 else ''}")
    note = Text()
    st = stats.filter((pl.col("node") == node) & (pl.col("rank") == rank)) if stats.height else stats
    if st.height:
        r = st.row(0, named=True)
        label = {"p50_ns": "median"}
        note.append(
            f"rank {rank}: "
            + " · ".join(
                f"{label.get(k, k.removesuffix('_ns'))} {fmt_ns(r[k])}"
                for k in STEP_STATS
                if r.get(k) is not None
            )
        )
    job = result.steps.job_stats
    if len(ranks) > 1 and job.height:
        note.append(f"\njob median {fmt_ns(job['p50_ns'][0])} (longest rank per step)")
    slowest = mine.sort("dur_ns", descending=True).head(3)
    line = "slowest: " + ", ".join(
        f"step {r[0]} ({fmt_ns(r[1])})" for r in slowest.select("step", "dur_ns").rows()
    )
    if flagged:
        slow = mine.filter(pl.col("outlier")).sort("dur_ns", descending=True).head(5)
        line = (
            (
                f"outliers ●: {', '.join(f'step {r[0]} ({fmt_ns(r[1])})' for r in slow.select('step', 'dur_ns').rows())}"
                if slow.height
                else "no outliers"
            )
            + " · "
            + line
        )
    note.append(("\n" if note else "") + line)
    return ChartData(
        kind="bars",
        bars=bars,
        text=text,
        note=note,
        label_width=label_width,
        takeaway=takeaway("steps", result),
    )


#: The host's share of a step in the host-steps chart: (column, label, glyph, style); the glyphs
#: tell the parts apart without colour.
HOST_PARTS = (
    ("computation_ns", "compute", "█", "green"),
    ("communication_ns", "communication", "▓", "yellow"),
    ("data_loading_ns", "data loading", "▒", "cyan"),
    ("idle_ns", "outside any op", "·", "red"),
)


def build_host_steps(result: Result, view: Any) -> ChartData:
    """Each step of a rank without device work as one bar, as long as the step: its host's
    compute, communication, data loading and time outside any op (the steps stage's host rows)."""
    import polars as pl

    bd = result.steps.breakdown
    host = bd.filter(pl.col("work_on") == "host") if "work_on" in bd.columns else bd.head(0)
    words = takeaway("host_steps", result)
    if host.height == 0:
        return ChartData(
            kind="text", text=does_not_apply(why="the steps' work runs on a device"), takeaway=words
        )
    ranks = host.select("node", "rank").unique().sort("node", "rank").rows()
    node, rank = ranks[getattr(view, "rank_index", 0) % len(ranks)]
    mine = host.filter((pl.col("node") == node) & (pl.col("rank") == rank))
    shown = mine.sort("dur_ns", descending=True).head(MAX_STEP_BARS).sort("step")
    longest = float(cast(int, shown["dur_ns"].max()) or 1)
    bars = []
    for r in shown.iter_rows(named=True):
        segments = tuple((float(r[col] or 0) / longest, glyph, style) for col, _, glyph, style in HOST_PARTS)
        bar_text = f"{fmt_ns(r['dur_ns'])} · comm {fmt_ns(r['communication_ns'])} · outside ops {fmt_ns(r['idle_ns'])}"
        bars.append(Bar(f"step {r['step']}", float(r["dur_ns"]), bar_text, segments=segments))
    text = Text()
    text.append(f"{node} rank {rank}", style="bold")
    text.append(
        f" · {plural(mine.height, 'step')}" + (f" · n: next of {len(ranks)} ranks" if len(ranks) > 1 else "")
    )
    if shown.height < mine.height:
        text.append(f" · the {shown.height} longest shown")
    legend = Text()
    for _, label, glyph, style in HOST_PARTS:
        legend.append(glyph * 2, style=style)
        legend.append(f" {label}  ")
    legend.append("(no device work: the host's time in each step)", style="dim")
    return ChartData(kind="bars", bars=bars, text=text, note=legend, label_width=10, takeaway=words)


def fmt_range(lo: int, hi: int) -> str:
    """``218–221 ms``: a bucket's edges in the unit of its upper edge."""
    unit = fmt_ns(hi).rpartition(" ")[2]
    div = {"ns": 1, "µs": 1e3, "ms": 1e6, "s": 1e9}.get(unit)
    if div is None:  # minutes and hours: each edge on its own
        return f"{fmt_ns(lo)}–{fmt_ns(hi)}"
    # as many decimals as tell neighbouring buckets apart (width 0.05 ms -> 2), at most 3
    width = (hi - lo) / div
    decimals = min(3, max(0, math.ceil(-math.log10(width)))) if width > 0 else 0
    return f"{lo / div:.{decimals}f}–{hi / div:.{decimals}f} {unit}"


def histogram_bars(hist: pl.DataFrame, steps: pl.DataFrame, flagged: bool) -> tuple[list[Bar], int]:
    """One bar per histogram bucket (analysis' counts); a bucket holding an outlier step is red and
    a bucket of one or two steps names them."""
    import polars as pl

    last = hist["bucket"].max()
    bars = []
    for r in hist.sort("bucket").iter_rows(named=True):
        upper = (pl.col("dur_ns") <= r["end_ns"]) if r["bucket"] == last else (pl.col("dur_ns") < r["end_ns"])
        inside = steps.filter((pl.col("dur_ns") >= r["start_ns"]) & upper)
        out = flagged and inside.height > 0 and bool(inside["outlier"].any())
        n = int(r["count"])
        text = f"{n} step{'s' if n != 1 else ''}"
        if 0 < inside.height <= 2:
            text += " (" + ", ".join(str(x) for x in inside.sort("step")["step"].to_list()) + ")"
        bars.append(
            Bar(
                ("● " if out else "  ") + fmt_range(r["start_ns"], r["end_ns"]),
                float(n),
                text,
                "red" if out else "green",
            )
        )
    return bars, max(12, max(len(b.label) for b in bars))


def build_precision(result: Result, view: Any) -> ChartData:
    df = result.precision.shares
    bars = [
        Bar(
            str(r["precision"]),
            float(r["share"] or 0),
            f"{fmt_pct(r['share'])} · {fmt_ns(r['time_ns'])}",
            "cyan",
        )
        for r in df.iter_rows(named=True)
        # not a precision that no kernel has, nor the byte movers, which have no share
        if r["count"] and r.get("in_shares", True)
    ]
    if not bars:
        some = "count" in df.columns and df["count"].sum() > 0  # only communication/memory kernels
        words = device_words(result, view)
        text = f"no compute {words.work}s in this trace" if some else no_device_text(words, f"{words.work}s")
        return ChartData(kind="text", text=text, takeaway=takeaway("precision", result))
    return ChartData(kind="bars", bars=bars, scale=1.0, takeaway=takeaway("precision", result))


def build_flops(result: Result, _view: Any) -> ChartData:
    """FLOPs by op type (share of the counted FLOPs, achieved TFLOP/s); the MFU is the takeaway."""
    by_type = result.flops.op_types
    words = takeaway("flops", result)
    if by_type.height == 0:
        return ChartData(kind="text", text="no FLOPs counted (record_shapes=True)", takeaway=words)
    bars = [
        Bar(
            str(r["op_type"]),
            float(r["share"]),
            f"{fmt_pct(r['share'])} · {fmt_flops(r['flops'])} · {fmt_tflops(r['tflops'])}",
            "magenta",
        )
        for r in by_type.iter_rows(named=True)
    ]
    return ChartData(
        kind="bars",
        bars=bars,
        scale=1.0,
        label_width=18,
        note=Text("share of counted FLOPs · FLOPs · achieved (their compute time)", style="dim"),
        takeaway=words,
    )


ACTIVITY_GLYPH = {"kernel": "█", "memcpy": "▓", "memset": "▒", "sync": "░", "idle": "·"}


def build_activity(result: Result, view: Any) -> ChartData:
    df = result.activity.shares
    words = device_words(result, view)
    if df.height == 0:
        return ChartData(
            kind="text",
            text=no_device_text(words, f"{words.device} activity"),
            takeaway=takeaway("activity", result),
        )
    keys = ["node", "rank", "device"]
    multi_node = df["node"].n_unique() > 1
    parts = [
        (gpu_label(p.row(0, named=True), multi_node, words.lane), p)
        for p in (df.partition_by(keys, maintain_order=True) if keys else [df])
    ]
    if len(parts) > 1:  # all GPUs together first, as analysis totals them
        parts.insert(0, (f"all {words.devices(len(parts))}", result.activity.total))
    bars = []
    for label, part in parts:
        shares = dict(zip(part["activity"].to_list(), part["share"].to_list(), strict=True))
        segments = tuple(
            (float(shares.get(a) or 0.0), ACTIVITY_GLYPH[a], ACTIVITY_STYLE[a]) for a in ACTIVITY_GLYPH
        )
        text = " ".join(f"{a[0]}{fmt_pct(shares.get(a) or 0.0, 0)}" for a in ("kernel", "memcpy", "idle"))
        bars.append(Bar(label, 1.0, text, segments=segments))
    legend = Text()
    for a, glyph in ACTIVITY_GLYPH.items():
        legend.append(glyph * 2, style=ACTIVITY_STYLE[a])
        legend.append(f" {words.work if a == 'kernel' else a}  ")
    legend.append(f"(k {words.work}, m memcpy, i idle; memset and sync in the bar)", style="dim")
    return ChartData(
        kind="bars", bars=bars, note=legend, label_width=14, takeaway=takeaway("activity", result)
    )


def build_memory(result: Result, view: Any) -> ChartData:
    ops = result.memory.ops
    if ops.height == 0:
        words = device_words(result, view)
        text = (
            no_device_text(words, "") if words.kind == NONE else f"no memcpy or memset on the {words.device}s"
        )
        return ChartData(kind="text", text=text, takeaway=takeaway("memory", result))
    bars = []
    for row in ops.iter_rows(named=True):
        text = f"{fmt_pct(row['time_share'])} · {fmt_ns(row['time_ns'])} · {fmt_bytes(row['bytes'])}"
        if row["achieved_gbps"] is not None:
            gbps = row["achieved_gbps"]
            text += f" · {fmt_gbps(gbps)}"
        bars.append(Bar(str(row["direction"]), float(row["time_share"] or 0), text, "cyan"))
    return ChartData(
        kind="bars",
        bars=bars,
        scale=1.0,
        label_width=8,
        note=Text("share of memory-operation time · total time · bytes · achieved bandwidth", style="dim"),
        takeaway=takeaway("memory", result),
    )


def build_allocations(result: Result, _view: Any) -> ChartData:
    """Allocated memory over time, one line per device (analysis' time buckets: each bucket's
    highest level); out-of-memory events are vertical marks; Enter opens the timeline at the peak."""
    devices = result.allocations.devices
    if devices.height == 0:
        return ChartData(
            kind="text",
            # why, as the stage words it for the trace's source (an Nsight export brings none)
            text=result.allocations.allocations["note"] or "no memory events in this trace",
            takeaway=takeaway("allocations", result),
        )
    over = result.allocations.over_time
    origin = int(cast(int, over["bucket_start_ns"].min()))
    span = int(cast(int, over["bucket_start_ns"].max())) - origin
    unit, div = ("ms", 1e6) if span < 2e9 else ("s", 1e9)
    peak_all = int(cast("int | None", devices["peak_allocated_bytes"].max()) or 0)
    scale, y_unit = next(
        ((d, u) for d, u in ((1e9, "GB"), (1e6, "MB"), (1e3, "kB")) if peak_all >= d), (1, "B")
    )
    multi_rank = devices.select("node", "rank").n_unique() > 1
    series = []
    for part in over.partition_by(["node", "rank", "device_type", "device"], maintain_order=True):
        r = part.row(0, named=True)
        label = fmt_memory_device(r["device_type"], r["device"]) + (f" r{r['rank']}" if multi_rank else "")
        part = part.sort("bucket")
        xs = [(t - origin) / div for t in part["bucket_start_ns"].to_list()]
        ys = [v / scale for v in part["max_allocated_bytes"].to_list()]
        series.append(Series(label, xs, ys))
    oom = result.allocations.oom
    marks = sorted({(t - origin) / div for t in oom["ts_ns"].to_list()}) if oom.height else []
    top = devices.sort(["peak_allocated_bytes", "first_ns"], descending=[True, False]).row(0, named=True)
    text = Text()
    text.append(f"peak {fmt_bytes(top['peak_allocated_bytes'])}", style="bold")
    text.append(f" on {fmt_memory_device(top['device_type'], top['device'])}")
    if top["peak_op"]:
        text.append(f" in {top['peak_op']}")
    if top["peak_step"] is not None:
        text.append(f" (step {top['peak_step']})")
    text.append(f" · reserved peak {fmt_bytes(top['peak_reserved_bytes'])}")
    note = "highest allocated level per time bucket, from the first memory event"
    note += f" · OOM (│): {oom.height}" if oom.height else " · no out-of-memory events"
    return ChartData(
        kind="lines",
        series=series,
        x_label=f"time ({unit})",
        y_label=f"allocated ({y_unit})",
        text=text,
        note=Text(note, style="dim"),
        takeaway=takeaway("allocations", result),
        marks=marks,
    )


def annotation_choices(result: Result) -> list[tuple[str, str]]:
    """``(side:name, label)`` of every annotation, in analysis' order (the user's own ranges
    before PyTorch's, each longest total time first)."""
    names = result.annotations.names
    return [
        (
            f"{r['side']}:{r['name']}",
            f"{r['name']} ({r['side']}{', PyTorch' if r['origin'] == 'framework' else ''}, "
            f"{fmt_count(r['count'])}×, {fmt_ns(r['total_ns'])})",
        )
        for r in names.iter_rows(named=True)
    ]


def build_annotation(result: Result, view: Any) -> ChartData:
    import polars as pl

    from profui.analysis import takeaways as tk

    per_step = result.annotations.per_step
    choices = annotation_choices(result)
    if per_step.height == 0 or not choices:
        return ChartData(
            kind="text",
            text="no annotations in this trace (record_function / profui annotate)",
            takeaway=takeaway("annotation", result),
        )
    chosen = getattr(view, "annotation", None) or choices[0][0]
    side, _, name = chosen.partition(":")
    # the takeaway of the annotation shown: the summary's for the default one, the same
    # sentence from the same tables for one the user picked
    names = result.annotations.names
    words = (
        takeaway("annotation", result)
        if chosen == choices[0][0]
        else tk.annotation_sentence(side, name, names, result.annotations.step_means)
    )
    rows = per_step.filter((pl.col("side") == side) & (pl.col("name") == name))
    ranks = rows.select("node", "rank").unique(maintain_order=True).sort("node", "rank").rows()
    if not ranks:
        return ChartData(kind="text", text=f"{name}: not inside any step", takeaway=words)
    node, rank = ranks[getattr(view, "rank_index", 0) % len(ranks)]
    mine = rows.filter((pl.col("node") == node) & (pl.col("rank") == rank)).sort("step")
    bars = [
        Bar(
            f"step {r['step']}",
            float(r["time_ns"]),
            f"{fmt_ns(r['time_ns'])} ({fmt_pct(r['share'])})",
            "yellow",
        )
        for r in mine.iter_rows(named=True)
    ]
    text = Text()
    text.append(f"{name}", style="bold")
    text.append(
        f" ({side}) · time per step on {node} rank {rank}"
        + (f" · n: next of {len(ranks)} ranks" if len(ranks) > 1 else "")
    )
    return ChartData(kind="bars", bars=bars, text=text, takeaway=words)


CHARTS: list[Chart] = [
    Chart("gpu_active", "{Device} active vs idle", ("utilization",), build_gpu_active),
    # no source in the title: the chart's note names it (NVML samples, or the traced device events)
    Chart(
        "gpu_util", "{Device} utilization over time, per node", ("utilization",), build_gpu_util, lines=True
    ),
    Chart("cpu", "CPU active time and utilization over time", ("utilization",), build_cpu, lines=True),
    Chart(
        "kernel_total",
        "Total {work} time, by {work} type",
        ("kernels",),
        build_kernel_total,
        view="kernels",
    ),
    Chart("top_time", "Top {work}s by time", ("kernels",), build_top_time, "Enter: Kernels view", "kernels"),
    Chart(
        "top_count",
        "Top {work}s by {launch} count",
        ("kernels",),
        build_top_count,
        "Enter: Kernels view",
        "kernels",
    ),
    Chart(
        "host_steps",
        "Host time per step: compute, communication, data loading, outside ops",
        ("steps",),
        build_host_steps,
        "Enter: Steps view",
        "steps",
    ),
    Chart("steps", "Step time distribution", ("steps",), build_steps, "Enter: Steps view", "steps"),
    Chart("precision", "{Work} precision", ("precision",), build_precision),
    Chart("flops", "FLOPs by op type, achieved throughput, MFU", ("flops",), build_flops),
    Chart("activity", "{Device} activity distribution", ("activity",), build_activity),
    Chart("memory", "Memory operations", ("memory",), build_memory),
    Chart(
        "allocations",
        "Memory over time (allocated, per device)",
        ("allocations",),
        build_allocations,
        "Enter: timeline at the peak",
        "timeline",
        lines=True,
    ),
    Chart(
        "annotation",
        "Custom: annotation time per step",
        ("annotations", "steps"),
        build_annotation,
        "a: pick",
    ),
]


#: The key the dashboard's headline is kept under beside the charts (no chart has this id).
HEADLINE = "headline"


def build_headline(result: Result, _view: Any = None) -> ChartData:
    """The dashboard's headline (:func:`headline_line`) as a text panel's data, so that a warm
    open keeps and draws it like the charts."""
    return ChartData(kind="text", text=Text(headline_line(result), style="bold"))


def headline_line(result: Result) -> str:
    """The top finding, in the words ``profui summary``'s first line says it
    (:func:`profui.analysis.headline.headline`)."""
    import polars as pl

    from profui.analysis.headline import headline

    # each of the three may not be there yet (the headline is drawn as stages finish)
    return headline(
        result.findings.findings if result.ran("findings") else pl.DataFrame(),
        result.steps.windows if result.ran("steps") else None,
        # the stage wrote its table (with no row when no step was analysed): the reason can be said
        result.critical_path.steps if result.ran("critical_path") else None,
    )


def chart_by_id(chart_id: str) -> Chart:
    """The chart with id ``chart_id``."""
    return next(c for c in CHARTS if c.id == chart_id)


#: Stages whose tables the analysis views show (Communication, Launches, Idle, Sync, Findings:
#: the findings, with the critical path's analysed steps, also make the dashboard's headline).
VIEW_STAGES: tuple[str, ...] = ("comm", "launch", "idle", "sync", "critical_path", "findings")

#: Pipeline stages the trace screen asks for, once for all its views: those the charts draw,
#: those the analysis views show, and the summary stage whose takeaways they show (which
#: brings in every stage the takeaways read).
STAGES: tuple[str, ...] = (
    *dict.fromkeys([*(s for chart in CHARTS for s in chart.stages), *VIEW_STAGES]),
    "summary",
)
