"""One-line takeaway per dashboard chart, computed from the analysis frames.

Each ``*_takeaway`` function reads the frame(s) its chart draws and returns one short sentence
("GPU idle 76% — mostly waiting on the host"), or ``""`` when there is nothing to say.
:func:`takeaway_for` picks the frames from the analysis outputs (``{stage: {file: frame}}``,
the layout of the pipeline's stage outputs and of :class:`profui.analysis.summary.Summary`).

The thresholds that decide the wording are module constants, documented where defined. Frames
are read by column name with a few accepted spellings, so a takeaway degrades to ``""`` rather
than failing when a frame lacks what it needs.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Mapping
from typing import Any

import polars as pl

Outputs = Mapping[str, Mapping[str, Any]]

#: GPU idle share (of its active span) below which the GPU is "kept busy", and above which
#: idle is the headline.
IDLE_LOW_PCT = 10.0
IDLE_HIGH_PCT = 30.0
#: An idle category (or a kernel, collective, precision ...) "dominates" from this share on.
DOMINANT_SHARE = 0.5
#: Utilization buckets below this busy fraction count as "low".
LOW_UTIL = 0.2
#: Utilization is "steady" when p90 − p10 of the bucket values is below this.
STEADY_SPREAD = 0.15
#: CPU utilization (percent) from which a peak is called saturated.
CPU_SATURATED_PCT = 90.0
#: Kernels shorter than this are launch-overhead territory.
SHORT_KERNEL_NS = 10_000
#: A step this much slower than the median step is an outlier.
STEP_OUTLIER_FRACTION = 0.10
#: Reduced precision (FP16/BF16/FP8/INT8) below this share of kernel time suggests AMP.
LOW_PRECISION_HINT_SHARE = 0.10
#: Host blocked in synchronize calls from this share of its time on is worth a warning.
SYNC_HIGH_SHARE = 0.05
#: Communication overlapped with compute below this percentage is "mostly exposed".
OVERLAP_LOW_PCT = 30.0

_IDLE_PHRASE = {
    "host_wait": "waiting on the host (launches arrive after the GPU ran dry)",
    "kernel_wait": "short gaps between back-to-back kernels (launch overhead)",
    "other": "waiting on other streams, events or collectives",
}


# -- formatting -------------------------------------------------------------------------------


def format_ns(ns: float | int | None) -> str:
    """A duration in ns as ``850 ns`` / ``12.3 µs`` / ``4.56 ms`` / ``1.23 s`` (``—`` for None)."""
    if ns is None or (isinstance(ns, float) and math.isnan(ns)):
        return "—"
    v = float(ns)
    sign = "-" if v < 0 else ""
    v = abs(v)
    for unit, scale in (("s", 1e9), ("ms", 1e6), ("µs", 1e3)):
        if v >= scale:
            x = v / scale
            return f"{sign}{x:.3g} {unit}" if x < 100 else f"{sign}{x:.0f} {unit}"
    return f"{sign}{v:.0f} ns"


def format_pct(pct: float | None, digits: int = 0) -> str:
    """A percentage (0–100) as ``24%``; ``—`` for None."""
    if pct is None or (isinstance(pct, float) and math.isnan(pct)):
        return "—"
    if 0 < abs(pct) < 0.1 and digits == 0:
        return "<0.1%"
    if 0 < abs(pct) < 1 and digits == 0:
        return f"{pct:.1f}%"
    if 99.5 <= pct < 100 and digits == 0:
        return ">99%"
    return f"{pct:.{digits}f}%"


def format_count(n: int | float | None) -> str:
    """``12,345``."""
    return "—" if n is None else f"{int(n):,}"


def plural(n: int | float, word: str) -> str:
    """``1 kernel`` / ``2,700 kernels`` (adds ``s``, or ``es`` after ``ch``)."""
    suffix = "" if int(n) == 1 else ("es" if word.endswith("ch") else "s")
    return f"{format_count(n)} {word}{suffix}"


def format_bytes(n: float | None) -> str:
    """``1.5 GB`` style (powers of 1000)."""
    if n is None:
        return "—"
    v = float(n)
    for unit, scale in (("GB", 1e9), ("MB", 1e6), ("kB", 1e3)):
        if abs(v) >= scale:
            return f"{v / scale:.3g} {unit}"
    return f"{v:.0f} B"


def short_name(name: str, width: int = 40) -> str:
    """A kernel name without ``void``, argument list and template arguments, cut to ``width``."""
    s = re.sub(r"^void\s+", "", name.strip()).replace("->", "→")
    depth, out = 0, []
    for ch in s:  # drop (...) and <...> nests
        if ch in "(<":
            depth += 1
        elif ch in ")>":
            depth = max(0, depth - 1)
        elif depth == 0:
            out.append(ch)
    s = re.sub(r"(::)+", "::", re.sub(r"\s+", " ", "".join(out))).strip() or name
    s = s.split("::")[-1] if len(s) > width and "::" in s else s
    return s if len(s) <= width else s[: width - 1] + "…"


# -- helpers ----------------------------------------------------------------------------------


def _df(value: Any) -> pl.DataFrame:
    if isinstance(value, pl.LazyFrame):
        return value.collect()
    return value if isinstance(value, pl.DataFrame) else pl.DataFrame()


def _col(df: pl.DataFrame, *names: str) -> str | None:
    return next((n for n in names if n in df.columns), None)


def _frac(df: pl.DataFrame, col: str) -> pl.Series:
    """A share column as fractions 0..1 whatever its unit (percent columns end in ``pct``)."""
    s = df[col].cast(pl.Float64)
    return s / 100.0 if col.endswith("pct") else s


# -- one function per chart --------------------------------------------------------------------


def idle_cause(idle: pl.DataFrame) -> tuple[str, float] | None:
    """The dominant idle category over all streams and its share, from an idle breakdown."""
    idle = _df(idle)
    if idle.is_empty() or "category" not in idle.columns:
        return None
    tot = (
        idle.group_by("category")
        .agg(pl.col("idle_ns").clip(lower_bound=0).sum())
        .sort("idle_ns", descending=True)
    )
    total = tot["idle_ns"].sum()
    if not total:
        return None
    return str(tot["category"][0]), float(tot["idle_ns"][0]) / total


def gpu_active_takeaway(busy: pl.DataFrame, idle: pl.DataFrame | None = None) -> str:
    """GPU busy vs idle over the GPUs' active span (GPU-time weighted), and the main idle cause."""
    busy = _df(busy)
    if busy.is_empty() or not {"busy_ns", "span_ns"} <= set(busy.columns):
        return ""
    span = busy["span_ns"].sum()
    if not span:
        return "No GPU activity recorded."
    busy_pct = 100.0 * busy["busy_ns"].sum() / span
    idle_pct = 100.0 - busy_pct
    n = busy.height
    where = f" across {n} GPUs" if n > 1 else ""
    if idle_pct < IDLE_LOW_PCT:
        return f"GPU busy {format_pct(busy_pct)}{where} — kept well fed."
    cause = idle_cause(idle) if idle is not None else None
    text = f"GPU idle {format_pct(idle_pct)}{where}"
    if cause and cause[1] >= DOMINANT_SHARE:
        text += f" — mostly {_IDLE_PHRASE.get(cause[0], cause[0])}"
    elif idle_pct >= IDLE_HIGH_PCT:
        text += " — the GPU waits more than it works"
    if n > 1 and "busy_pct" in busy.columns:
        lo, hi = busy["busy_pct"].min(), busy["busy_pct"].max()
        if hi is not None and lo is not None and hi - lo >= 10:
            text += f"; busiest GPU {format_pct(hi)}, least {format_pct(lo)}"
    return text + "."


def gpu_util_takeaway(util: pl.DataFrame) -> str:
    """Busy fraction over time: average, spread, share of low buckets."""
    util = _df(util)
    col = _col(
        util, "busy_frac", "busy_share", "utilization", "util", "busy_fraction", "busy_pct", "util_pct"
    )
    if util.is_empty() or col is None:
        return ""
    v = _frac(util, col).drop_nulls()
    if v.is_empty():
        return ""
    mean, p10, p90 = v.mean(), v.quantile(0.1), v.quantile(0.9)
    low = float((v < LOW_UTIL).mean())
    if p90 - p10 < STEADY_SPREAD:
        return f"GPU utilization steady around {format_pct(100 * mean)} over time."
    text = f"GPU utilization averages {format_pct(100 * mean)}, from {format_pct(100 * p10)} (p10) to {format_pct(100 * p90)} (p90)"
    if low >= 0.25:
        text += f"; below {format_pct(100 * LOW_UTIL)} in {format_pct(100 * low)} of the time"
    return text + "."


def cpu_takeaway(cpu: pl.DataFrame) -> str:
    """CPU utilization over time: average and peak."""
    cpu = _df(cpu)
    col = _col(cpu, "util_pct", "cpu_pct", "busy_pct", "utilization", "busy_frac", "util", "value")
    if cpu.is_empty() or col is None:
        return ""
    v = cpu[col].cast(pl.Float64).drop_nulls()
    if v.is_empty():
        return ""
    if not col.endswith("pct") and col != "value" and v.max() <= 1.0:
        v = v * 100
    mean, peak = v.mean(), v.max()
    if peak >= CPU_SATURATED_PCT:
        return f"CPU averages {format_pct(mean)} and saturates at times (peak {format_pct(peak)})."
    return f"CPU averages {format_pct(mean)}, peak {format_pct(peak)}."


def kernel_total_takeaway(stats: pl.DataFrame) -> str:
    """Kernel count, total GPU time, typical length; many tiny kernels flagged."""
    stats = _df(stats)
    if stats.is_empty() or not {"count", "total_ns"} <= set(stats.columns):
        return ""
    n = int(stats["count"].sum())
    total = stats["total_ns"].sum()
    if not n:
        return "No kernels."
    mean_col = _col(stats, "mean_ns")
    means = stats[mean_col] if mean_col else stats["total_ns"] / stats["count"]
    short = float(stats.filter(means < SHORT_KERNEL_NS)["count"].sum()) / n
    text = f"{plural(n, 'kernel')}, {format_ns(total)} of GPU time, {format_ns(total / n)} on average"
    if short >= DOMINANT_SHARE:
        text += (
            f" — {format_pct(100 * short)} are under {format_ns(SHORT_KERNEL_NS)} (launch overhead matters)"
        )
    return text + "."


def top_time_takeaway(top: pl.DataFrame) -> str:
    """The kernel with the most GPU time, and how concentrated the top is."""
    top = _df(top)
    if top.is_empty() or "name" not in top.columns:
        return ""
    rows = top.filter(~pl.col("name").is_in(["(other)", "others"]))
    if rows.is_empty():
        return ""
    first = rows.row(0, named=True)
    if "total_ns" not in top.columns or not top["total_ns"].sum():
        return f"Longest total: {short_name(first['name'])}."
    all_ns = top["total_ns"].sum()  # the top rows plus the "(other)" row: every kernel
    top5 = rows.head(5)["total_ns"].sum() / all_ns
    text = f"{short_name(first['name'])} takes {format_pct(100 * first['total_ns'] / all_ns)} of kernel time"
    if rows.height > 1:
        text += f"; the top {min(5, rows.height)} take {format_pct(100 * top5)}"
    return text + "."


def top_count_takeaway(top: pl.DataFrame, stats: pl.DataFrame | None = None) -> str:
    """The most launched kernel and its share of all launches."""
    top = _df(top)
    if top.is_empty() or not {"name", "count"} <= set(top.columns):
        return ""
    rows = top.filter(~pl.col("name").is_in(["(other)", "others"]))
    if rows.is_empty():
        return ""
    first = rows.row(0, named=True)
    all_n = (
        _df(stats)["count"].sum()
        if stats is not None and "count" in _df(stats).columns
        else top["count"].sum()
    )
    share = first["count"] / all_n if all_n else 0.0
    return (
        f"Most launched: {short_name(first['name'])}, {format_count(first['count'])}× "
        f"({format_pct(100 * share)} of launches), {format_ns(first.get('mean_ns'))} each."
    )


def _step_durations(windows: pl.DataFrame) -> pl.DataFrame:
    if {"start", "end"} <= set(windows.columns):
        return windows.with_columns((pl.col("end") - pl.col("start")).alias("_d"))
    col = _col(windows, "duration_ns", "dur_ns", "step_ns")
    return windows.with_columns(pl.col(col).alias("_d")) if col else pl.DataFrame()


def steps_takeaway(windows: pl.DataFrame) -> str:
    """Step count, median step time and the slowest step against the median."""
    windows = _df(windows)
    if windows.is_empty():
        return "No step markers: the trace is analysed as one window."
    w = _step_durations(windows)
    if w.is_empty():
        return ""
    if "name" in w.columns and (w["name"] == "(whole trace)").all():  # steps.step_windows without markers
        return "No step markers: the trace is analysed as one window."
    per = w.group_by("step").agg(pl.col("_d").max()) if "step" in w.columns else w.select("_d")
    d = per["_d"].cast(pl.Float64)
    med = d.median()
    text = f"{per.height} step{'s' if per.height != 1 else ''}, median {format_ns(med)}"
    if per.height > 1 and med:
        worst = per.sort("_d", descending=True).row(0, named=True)
        slow = worst["_d"] / med - 1
        if slow >= STEP_OUTLIER_FRACTION:
            label = f"step {worst['step']}" if "step" in worst else "the slowest step"
            if slow >= 1:  # "51238% slower" reads worse than "takes 513× the median"
                text += f"; {label} takes {slow + 1:,.1f}× the median"
            else:
                text += f"; {label} is {format_pct(100 * slow)} slower"
        else:
            text += f", within ±{format_pct(100 * max(slow, 1 - d.min() / med))} — steady"
    return text + "."


_LOW_PRECISION = ("FP16", "BF16", "FP8", "INT8")


def precision_takeaway(shares: pl.DataFrame) -> str:
    """The dominant precision of kernel time; a hint when reduced precision is rare."""
    shares = _df(shares)
    key = _col(shares, "precision", "dtype", "name")
    share = _col(shares, "share", "time_share", "pct", "share_pct")
    if shares.is_empty() or key is None or share is None:
        return ""
    s = shares.with_columns(_frac(shares, share).alias("_s")).sort("_s", descending=True)
    if not s["_s"].sum():
        return "No kernel time to classify."
    top = s.row(0, named=True)
    low = float(s.filter(pl.col(key).str.to_uppercase().is_in(list(_LOW_PRECISION)))["_s"].sum())
    text = f"{top[key]} dominates kernel time ({format_pct(100 * top['_s'])})"
    if str(top[key]).upper() in ("FP32", "TF32") and low < LOW_PRECISION_HINT_SHARE:
        text += f"; FP16/BF16/FP8 only {format_pct(100 * low)} — mixed precision could help"
    return text + "."


def activity_takeaway(shares: pl.DataFrame) -> str:
    """Kernel / memcpy / memset / sync / idle shares in one line (those of 1% or more)."""
    shares = _df(shares)
    key = _col(shares, "activity", "category", "kind", "name")
    share = _col(shares, "share", "time_share", "pct", "share_pct")
    if shares.is_empty() or key is None or share is None:
        return ""
    # several GPUs: the mean share per activity
    s = shares.with_columns(_frac(shares, share).alias("_s")).group_by(key).agg(pl.col("_s").mean())
    s = s.sort("_s", descending=True)
    parts = [f"{r[key]} {format_pct(100 * r['_s'])}" for r in s.iter_rows(named=True) if r["_s"] >= 0.01]
    return ("GPU time: " + ", ".join(parts) + ".") if parts else ""


def memory_takeaway(ops: pl.DataFrame) -> str:
    """Memory operations: count, time, the direction with most time and its bandwidth."""
    ops = _df(ops)
    if ops.is_empty() or not {"direction", "count", "time_ns"} <= set(ops.columns):
        return "No memcpy or memset on the GPUs."
    n, t = int(ops["count"].sum()), ops["time_ns"].sum()
    top = ops.sort("time_ns", descending=True).row(0, named=True)
    share = top["time_ns"] / t if t else 0.0
    text = f"{plural(n, 'memory op')}, {format_ns(t)}; {top['direction']} has {format_pct(100 * share)} of it"
    bw = top.get("achieved_gbps")
    if bw is not None:
        text += f" at {bw:.3g} GB/s"
    return text + "."


def annotation_takeaway(per_step: pl.DataFrame, breakdown: pl.DataFrame | None = None) -> str:
    """The annotation with the largest average share of a step."""
    per_step = _df(per_step)
    if not per_step.is_empty() and {"name", "share"} <= set(per_step.columns):
        keys = [c for c in ("side", "name") if c in per_step.columns]
        avg = (
            per_step.group_by(keys)
            .agg(pl.col("share").mean())
            .drop_nulls("share")
            .sort("share", descending=True)
        )
        avg = avg.filter(~pl.col("name").str.starts_with("ProfilerStep"))
        if not avg.is_empty():
            top = avg.row(0, named=True)
            side = " on the GPU" if top.get("side") == "gpu" else ""
            return f"'{top['name']}'{side} takes {format_pct(100 * top['share'])} of a step on average."
    b = _df(breakdown)
    if not b.is_empty() and {"name", "sum_ns"} <= set(b.columns):
        top = b.sort("sum_ns", descending=True).row(0, named=True)
        return f"Longest annotation: '{top['name']}', {format_ns(top['sum_ns'])} in total."
    return "No custom annotations in this trace."


def launch_takeaway(stats: pl.DataFrame) -> str:
    """Launch delay and how many kernels are launch-bound (from :func:`launch.launch_stats`)."""
    stats = _df(stats)
    if stats.is_empty() or "launches" not in stats.columns:
        return ""
    n = int(stats["launches"].sum())
    if not n:
        return "No launches matched to device work."
    bound = int(stats["launch_bound"].sum())
    w = stats["launches"].cast(pl.Float64)
    delay = float((stats["delay_p50"] * w).sum() / w.sum())
    text = f"{plural(n, 'launch')}, median launch→start delay {format_ns(delay)}"
    if bound / n >= DOMINANT_SHARE:
        text += f"; {format_pct(100 * bound / n)} launch-bound (GPU work shorter than the launch call)"
    else:
        text += f"; {format_pct(100 * bound / n)} launch-bound"
    return text + "."


def sync_takeaway(totals: pl.DataFrame) -> str:
    """Host time blocked in synchronize calls (from :func:`sync.sync_totals`)."""
    totals = _df(totals)
    if totals.is_empty() or "blocked_ns" not in totals.columns:
        return "No synchronize calls."
    blocked = totals["blocked_ns"].sum()
    window = totals["window_ns"].sum()
    share = blocked / window if window else 0.0
    calls = plural(totals["calls"].sum(), "synchronize call")
    text = f"Host blocked {format_ns(blocked)} in {calls} ({format_pct(100 * share)} of host time)"
    if share >= SYNC_HIGH_SHARE:
        text += " — frequent syncs stall the launch pipeline"
    return text + "."


def idle_takeaway(breakdown: pl.DataFrame) -> str:
    """The main cause of stream idle time (from :func:`idle.idle_breakdown`)."""
    cause = idle_cause(breakdown)
    if cause is None:
        return ""
    return f"Stream idle time is {format_pct(100 * cause[1])} {cause[0]}: {_IDLE_PHRASE.get(cause[0], cause[0])}."


def comm_takeaway(
    by_collective: pl.DataFrame, overlap: pl.DataFrame | None = None, stragglers: pl.DataFrame | None = None
) -> str:
    """NCCL time, the main collective, overlap with compute and the usual straggler."""
    bc = _df(by_collective)
    if bc.is_empty():
        return "No NCCL communication kernels."
    total = bc["total_ns"].sum()
    top = bc.sort("total_ns", descending=True).row(0, named=True)
    text = f"NCCL {format_ns(total)} ({top['collective']} {format_pct(100 * top['total_ns'] / total)})"
    ov = _df(overlap)
    if not ov.is_empty() and {"overlap_ns", "comm_ns"} <= set(ov.columns) and ov["comm_ns"].sum():
        pct = 100.0 * ov["overlap_ns"].sum() / ov["comm_ns"].sum()
        text += f"; {format_pct(pct)} overlapped with compute"
        if pct < OVERLAP_LOW_PCT:
            text += " (mostly exposed)"
    st = _df(stragglers)
    if not st.is_empty() and "straggler_rank" in st.columns:
        r = (
            st.group_by("straggler_rank")
            .len()
            .sort(["len", "straggler_rank"], descending=[True, False])
            .row(0)
        )
        text += f"; slowest rank {r[0]} in {r[1]} of {st.height} steps"
    return text + "."


# -- dispatch ----------------------------------------------------------------------------------

#: chart id -> (function, [(stage, file), ...] passed positionally; missing frames are empty).
CHARTS: dict[str, tuple[Callable[..., str], tuple[tuple[str, str], ...]]] = {
    "gpu_active": (gpu_active_takeaway, (("utilization", "busy.parquet"), ("idle", "breakdown.parquet"))),
    "gpu_util": (gpu_util_takeaway, (("utilization", "gpu.parquet"),)),
    "cpu": (cpu_takeaway, (("utilization", "cpu.parquet"),)),
    "kernel_total": (kernel_total_takeaway, (("kernels", "stats.parquet"),)),
    "top_time": (top_time_takeaway, (("kernels", "top_by_time.parquet"),)),
    "top_count": (top_count_takeaway, (("kernels", "top_by_count.parquet"), ("kernels", "stats.parquet"))),
    "steps": (steps_takeaway, (("steps", "windows.parquet"),)),
    "precision": (precision_takeaway, (("precision", "shares.parquet"),)),
    "activity": (activity_takeaway, (("activity", "shares.parquet"),)),
    "memory": (memory_takeaway, (("memory", "ops.parquet"),)),
    "annotation": (
        annotation_takeaway,
        (("annotations", "per_step.parquet"), ("annotations", "breakdown.parquet")),
    ),
    "launch": (launch_takeaway, (("launch", "stats.parquet"),)),
    "sync": (sync_takeaway, (("sync", "totals.parquet"),)),
    "idle": (idle_takeaway, (("idle", "breakdown.parquet"),)),
    "comm": (
        comm_takeaway,
        (("comm", "by_collective.parquet"), ("comm", "overlap.parquet"), ("comm", "stragglers.parquet")),
    ),
}


def takeaway_for(chart_id: str, outputs: Outputs) -> str:
    """The takeaway of dashboard chart ``chart_id`` from ``{stage: {file: frame}}`` outputs.

    ``""`` for an unknown chart or when its stage has not produced its frame yet.
    """
    spec = CHARTS.get(chart_id)
    if spec is None:
        return ""
    fn, inputs = spec

    def get(stage: str, file: str) -> Any:  # pipeline files end in .parquet, Summary tables do not
        tables = outputs.get(stage, {})
        return tables.get(file, tables.get(file.removesuffix(".parquet")))

    if get(*inputs[0]) is None:
        return ""
    return fn(*[_df(get(stage, file)) for stage, file in inputs])


def all_takeaways(outputs: Outputs) -> dict[str, str]:
    """Every chart's takeaway (charts whose frames are missing are left out)."""
    out = {}
    for chart in CHARTS:
        text = takeaway_for(chart, outputs)
        if text:
            out[chart] = text
    return out
