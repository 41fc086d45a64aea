"""One takeaway per answer, computed from the typed result (the stages' declared tables).

Each ``*_takeaway`` function reads the tables its answer is about — by the column names their
schemas declare (:mod:`profui.analysis.schemas`) — and returns one short sentence that describes
its numbers ("GPU idle 76% across 2 GPUs; largest idle category host_wait (98%): ..."), or ``""``
when there is nothing to say. A takeaway never judges (no "launch-bound", "well fed", cause or
advice): what to change, and what it would save, is the findings' answer
(:mod:`profui.analysis.findings`), ranked on the critical path. :data:`CHARTS` says
which tables each takeaway reads; the ``takeaways`` stage of the pipeline computes them all, once,
and every surface (``profui summary``, the dashboard, the notebook) shows that stage's output.

The thresholds that decide the wording are module constants, documented where defined, and each
phrase is used only when its numbers say it.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, cast

import polars as pl

from .comm import DEVICE_KERNEL, HOST_OP, usual_straggler
from .devices import CPU, GPU_WORDS, NONE, DeviceWords, does_not_apply
from .formatting import (
    fmt_bytes,
    fmt_count,
    fmt_flops,
    fmt_gbps,
    fmt_memory_device,
    fmt_ns,
    fmt_pct,
    fmt_tflops,
    plural,
    short_name,
)
from .idle import KERNEL_WAIT_NS
from .steps import WHOLE_TRACE
from .top_n import OTHER

if TYPE_CHECKING:
    from .result_tables import StageAccessors

#: GPU idle share (of its active span) below which the takeaway gives the busy share instead.
IDLE_LOW_SHARE = 0.10
#: An idle category (or a kernel, collective, precision ...) "dominates" (is "mostly") from
#: this share on: more than all the others together.
DOMINANT_SHARE = 0.5
#: Utilization buckets below this busy fraction count as "low".
LOW_UTIL = 0.2
#: A spread (p90 − p10) or a peak needs at least this many samples to be spoken of.
MIN_SAMPLES_FOR_SHAPE = 3
#: Utilization is "steady" when p90 − p10 of the bucket values is below this.
STEADY_SPREAD = 0.15
#: Kernels shorter than this are counted as short in the kernel takeaway.
SHORT_KERNEL_NS = 10_000
#: A step this much slower than the median step is an outlier.
STEP_OUTLIER_FRACTION = 0.10
#: GPUs whose busy shares differ by this much are worth naming.
GPU_SPREAD_SHARE = 0.10
#: A per-step memory trend is spoken of from this many steps on.
MEMORY_TREND_MIN_STEPS = 3
#: "The floor rises every step" only when each step's floor is above the one before and the rise
#: from the first to the last is at least this share of the device's peak; "steady" when the
#: floors stay within this share of the peak.
MEMORY_TREND_SHARE = 0.01

_IDLE_PHRASE = {
    "host_wait": "{launches} arrive after their stream ran dry",
    "kernel_wait": "gaps under {kernel_wait} between back-to-back {work}s",
    "other": "gaps of {kernel_wait} or more that follow no late {launch}",
}


def _idle_phrase(category: str, words: DeviceWords) -> str:
    return _IDLE_PHRASE.get(category, category).format(
        device=words.device,
        work=words.work,
        launches=words.launches,
        launch=words.launch,
        kernel_wait=fmt_ns(KERNEL_WAIT_NS),
    )


def _no_device() -> str:
    """What a takeaway about device work says of a run without any."""
    return does_not_apply("host work is in the CPU and step charts")


def _df(value: Any) -> pl.DataFrame:
    if isinstance(value, pl.LazyFrame):
        return value.collect()
    return value if isinstance(value, pl.DataFrame) else pl.DataFrame()


# -- one function per answer ------------------------------------------------------------------


def idle_cause(idle: pl.DataFrame) -> tuple[str, float] | None:
    """The dominant idle category over all streams and its share, from an idle breakdown."""
    if idle.is_empty():
        return None
    tot = (
        idle.group_by("category")
        .agg(pl.col("idle_ns").clip(lower_bound=0).sum())
        .sort("idle_ns", descending=True)
    )
    total = cast(float, tot["idle_ns"].sum())
    if not total:
        return None
    return str(tot["category"][0]), float(tot["idle_ns"][0]) / total


def gpu_active_takeaway(busy: pl.DataFrame, idle: pl.DataFrame, words: DeviceWords = GPU_WORDS) -> str:
    """Device busy vs idle over the devices' active span (device-time weighted), and the idle
    category with the most time when it has more than half of the streams' idle time (summed
    over streams: not a share of the device's idle time); the devices named by ``words`` (GPUs,
    or XLA's CPU devices)."""
    if busy.is_empty() or not busy["span_ns"].sum():
        return _no_device() if words.kind == NONE else f"No {words.device} activity recorded."
    span = cast(float, busy["span_ns"].sum())
    busy_share = cast(float, busy["busy_ns"].sum()) / span
    idle_share = 1.0 - busy_share
    n = busy.height
    dev = words.device
    where = f" across {words.devices(n)}" if n > 1 else ""
    if idle_share < IDLE_LOW_SHARE:
        return f"{dev} busy {fmt_pct(busy_share, 0)}{where}."
    cause = idle_cause(idle)
    text = f"{dev} idle {fmt_pct(idle_share, 0)}{where}"
    if cause and cause[1] >= DOMINANT_SHARE:
        # the share is of the streams' idle time summed (a device idle on two streams at once
        # counts twice there), not of the device's idle time said before it
        text += f"; {fmt_pct(cause[1], 0)} of {_stream_idle(words)} is {cause[0]} ({_idle_phrase(cause[0], words)})"
    if n > 1:
        lo, hi = (
            cast("float | None", busy["busy_share"].min()),
            cast("float | None", busy["busy_share"].max()),
        )
        if hi is not None and lo is not None and hi - lo >= GPU_SPREAD_SHARE:
            text += f"; busiest {dev} {fmt_pct(hi, 0)}, least {fmt_pct(lo, 0)}"
    return text + "."


def gpu_util_takeaway(util: pl.DataFrame, sampled: pl.DataFrame, words: DeviceWords = GPU_WORDS) -> str:
    """Busy fraction over time — over the whole job from NVML samples where capture took them,
    else over the traced window from device events: average, spread, share of low buckets."""
    src = sampled if not sampled.is_empty() else util
    v = src["util"].drop_nulls() if not src.is_empty() else pl.Series([], dtype=pl.Float64)
    if v.is_empty():
        return ""
    what = "GPU utilization (NVML, whole job)" if src is sampled else f"{words.device} utilization"
    mean = cast("float | None", v.mean())
    if v.len() < MIN_SAMPLES_FOR_SHAPE:
        return f"{what} {fmt_pct(mean, 0)} ({plural(v.len(), 'sample')}: too few for a shape)."
    # v is non-empty and null-free: each quantile is a float
    p10, p90 = cast(float, v.quantile(0.1)), cast(float, v.quantile(0.9))
    low = cast(float, (v < LOW_UTIL).mean())
    if p90 - p10 < STEADY_SPREAD:
        return f"{what} steady around {fmt_pct(mean, 0)} over time."
    text = f"{what} averages {fmt_pct(mean, 0)}, from {fmt_pct(p10, 0)} (p10) to {fmt_pct(p90, 0)} (p90)"
    if low >= 0.25:
        text += f"; below {fmt_pct(LOW_UTIL, 0)} in {fmt_pct(low, 0)} of the time"
    return text + "."


def cpu_takeaway(cpu: pl.DataFrame) -> str:
    """CPU utilization over time: average and peak (the source says what was measured)."""
    v = cpu["util"].drop_nulls() if not cpu.is_empty() else pl.Series([], dtype=pl.Float64)
    if v.is_empty():
        return ""
    sampled = bool((cpu["source"] == "metrics").all())
    mean, peak = cast("float | None", v.mean()), cast("float | None", v.max())
    few = v.len() < MIN_SAMPLES_FOR_SHAPE
    if sampled:  # the machine's cores over the whole job
        head = f"Machine CPU (all cores) averages {fmt_pct(mean, 0)}"
        tail = "" if few else f" over the job ({plural(v.len(), 'sample')}), peak {fmt_pct(peak, 0)}"
    else:
        # only the traced threads, in the traced window: not the machine's CPU utilization; busy
        # in ops or calls (Python's, the CUDA API's: the chart's line), not the annotations the
        # chart's header counts as active too
        head = f"Host threads busy in ops or calls {fmt_pct(mean, 0)} of the time on average"
        tail = "" if few else f", peak {fmt_pct(peak, 0)}"
    if few:
        tail = f" ({plural(v.len(), 'sample')}: too few for a shape)"
    return f"{head}{tail}."


def kernel_total_takeaway(stats: pl.DataFrame, words: DeviceWords = GPU_WORDS) -> str:
    """Kernel (XLA op) count, total device time, mean length, and the share of them shorter than
    :data:`SHORT_KERNEL_NS` when it is most of them."""
    n = int(stats["count"].sum()) if not stats.is_empty() else 0
    if not n:
        return f"No {words.work}s."
    total = cast(float, stats["total_ns"].sum())
    short = float(stats.filter(pl.col("mean_ns") < SHORT_KERNEL_NS)["count"].sum()) / n
    text = f"{plural(n, words.work)}, {fmt_ns(total)} of {words.time}, {fmt_ns(total / n)} on average"
    if short >= DOMINANT_SHARE:
        text += f"; {fmt_pct(short, 0)} of the {words.launches} are of {words.work}s averaging under {fmt_ns(SHORT_KERNEL_NS)}"
    return text + "."


def top_time_takeaway(top: pl.DataFrame, words: DeviceWords = GPU_WORDS) -> str:
    """The kernel with the most GPU time, and how concentrated the top is."""
    rows = top.filter(pl.col("name") != OTHER) if not top.is_empty() else top
    if rows.is_empty():
        return ""
    first = rows.row(0, named=True)
    all_ns = cast(float, top["total_ns"].sum())  # the top rows plus the "(other)" row: every kernel
    if not all_ns:
        return f"Longest total: {short_name(first['name'])}."
    text = f"{short_name(first['name'])} takes {fmt_pct(first['total_ns'] / all_ns, 0)} of {words.work_time}"
    if rows.height > 1:
        top5 = cast(float, rows.head(5)["total_ns"].sum()) / all_ns
        text += f"; the top {min(5, rows.height)} take {fmt_pct(top5, 0)}"
    return text + "."


def top_count_takeaway(top: pl.DataFrame, stats: pl.DataFrame, words: DeviceWords = GPU_WORDS) -> str:
    """The most launched kernel and its share of all launches."""
    rows = top.filter(pl.col("name") != OTHER) if not top.is_empty() else top
    if rows.is_empty():
        return ""
    first = rows.row(0, named=True)
    all_n = stats["count"].sum()
    share = first["count"] / all_n if all_n else 0.0
    return (
        f"Most {words.launched}: {short_name(first['name'])}, {fmt_count(first['count'])}× "
        f"({fmt_pct(share, 0)} of {words.launches}), {fmt_ns(first['mean_ns'])} each."
    )


def steps_takeaway(windows: pl.DataFrame, job: pl.DataFrame, job_stats: pl.DataFrame) -> str:
    """Step count, the job's median step time (its ``job_stats`` p50: per step the rank whose step
    is longest, when there are several; not the straggler rule's late rank) and the slowest step against it."""
    if windows.is_empty() or (windows["name"] == WHOLE_TRACE).all():
        return "No step markers: the trace is analysed as one window."
    med = float(job_stats["p50_ns"][0]) if job_stats.height else None
    ranks = windows.select("node", "rank").n_unique()
    who = " (longest rank per step)" if ranks > 1 else ""
    text = f"{plural(job.height, 'step')}, median {fmt_ns(med)}{who}"
    if job.height > 1 and med:
        worst = job.sort(["dur_ns", "step"], descending=[True, False]).row(0, named=True)
        slow = worst["dur_ns"] / med - 1
        where = f" (rank {worst['rank']})" if ranks > 1 else ""
        if slow >= STEP_OUTLIER_FRACTION:
            if slow >= 1:  # "51238% slower" reads worse than "takes 513× the median"
                text += f"; step {worst['step']}{where} takes {slow + 1:,.1f}× the median"
            else:
                text += f"; step {worst['step']}{where} is {fmt_pct(slow, 0)} slower"
        else:
            low = 1 - float(job_stats["min_ns"][0]) / med
            text += f", all within ±{fmt_pct(max(slow, low), 0)} of it"
    return text + "."


_LOW_PRECISION = ("FP16", "BF16", "FP8", "INT8")


def precision_takeaway(shares: pl.DataFrame, words: DeviceWords = GPU_WORDS) -> str:
    """The precision with the most kernel time, and the reduced precisions' share beside a
    32-bit one.

    Shares are of compute-kernel time: the communication and memory kernels the precision
    stage lists with ``in_shares`` false are named with their time, never shared.
    """
    inside = pl.col("in_shares") if "in_shares" in shares.columns else pl.lit(True)
    left_out = shares.filter(~inside, pl.col("time_ns") > 0)
    note = " and ".join(f"{fmt_ns(r['time_ns'])} {r['precision']}" for r in left_out.iter_rows(named=True))
    note = f", excluding {note} kernels" if note else ""
    s = shares.filter(inside).sort("share", descending=True)
    if s.is_empty() or not s["share"].sum():
        return f"No compute-{words.work_time} to classify{note}."
    top = s.row(0, named=True)
    low = float(s.filter(pl.col("precision").str.to_uppercase().is_in(list(_LOW_PRECISION)))["share"].sum())
    verb = "dominates" if top["share"] >= DOMINANT_SHARE else "has the most"
    text = f"{top['precision']} {verb} {words.work_time} ({fmt_pct(top['share'], 0)}){note}"
    if str(top["precision"]).upper() in ("FP32", "TF32"):
        text += f"; {'/'.join(_LOW_PRECISION)} {fmt_pct(low, 0)}"
    return text + "."


def flops_takeaway(totals: pl.DataFrame, words: DeviceWords = GPU_WORDS) -> str:
    """FLOPs counted per step, the achieved throughput, the MFU against which peak (or why
    there is none), and the share of kernel time no FLOPs are known for."""
    if totals.is_empty():
        return ""
    t = totals.row(0, named=True)
    if not t["counted_ops"]:
        bad = t["ops_without_flops"] - t["ops_without_shapes"]
        if bad:
            return f"No FLOPs counted: {plural(bad, 'op')} with unreadable shapes."
        return "No FLOPs counted: no op recorded its shapes (record_shapes=True)."
    if not t["step_flops"] or not t["steps"]:
        return f"{fmt_flops(t['flops'])} counted, none inside a step."
    text = f"{fmt_flops(t['step_flops'] / t['steps'])} per step, {fmt_tflops(t['tflops'])} over the step time"
    if t.get("mfu_problem"):
        text += f"; {t['mfu_problem']}"
    elif t["mfu"] is not None:
        of = "the given" if t["peak_source"] == "--peak-tflops" else f"{t['peak_gpu']} {t['precision']} dense"
        basis = " from --model-flops" if t["definition"] == "model" else ""
        text += f"; MFU {fmt_pct(t['mfu'])}{basis} of {of} peak {fmt_tflops(t['peak_tflops'])}"
    else:
        text += "; no peak known, no MFU"
    if t["kernel_ns"]:
        text += (
            f"; {fmt_pct(t['kernel_ns_without_flops'] / t['kernel_ns'], 0)} of {words.work_time} has no FLOPs"
        )
    return text + "."


def activity_takeaway(shares: pl.DataFrame, words: DeviceWords = GPU_WORDS) -> str:
    """Kernel (XLA op) / memcpy / memset / sync / idle shares in one line (those of 1% or more)."""
    if shares.is_empty():
        return ""
    s = shares.group_by("activity").agg(pl.col("share").mean()).sort("share", descending=True)
    named = {"kernel": f"{words.work}s" if words.work != "kernel" else "kernel"}
    parts = [
        f"{named.get(r['activity'], r['activity'])} {fmt_pct(r['share'], 0)}"
        for r in s.iter_rows(named=True)
        if r["share"] >= 0.01
    ]
    gpus = shares.select(pl.exclude("activity", "time_ns", "share", "overlap_ns", "span_ns")).n_unique()
    many = f" (mean over {words.device}s)" if gpus > 1 else ""
    return (f"{words.time}{many}: " + ", ".join(parts) + ".") if parts else ""


def memory_takeaway(ops: pl.DataFrame, words: DeviceWords = GPU_WORDS) -> str:
    """Memory operations: count, time, the direction with most time and its bandwidth."""
    if ops.is_empty():
        return (
            "No memcpy or memset: no device work was traced."
            if words.kind == NONE
            else f"No memcpy or memset on the {words.device}s."
        )
    n, t = int(ops["count"].sum()), cast(float, ops["time_ns"].sum())
    top = ops.sort("time_ns", descending=True).row(0, named=True)
    share = top["time_ns"] / t if t else 0.0
    text = f"{plural(n, 'memory op')}, {fmt_ns(t)}; {top['direction']} has {fmt_pct(share, 0)} of it"
    bw = top["achieved_gbps"]
    if bw is not None and not math.isnan(bw):
        text += f" at {fmt_gbps(bw)}"
    return text + "."


def memory_trend(per_step: pl.DataFrame, peak: int) -> str:
    """What the per-step floor of one device does, in words true of its numbers: "rises every
    step" (each floor above the last, by :data:`MEMORY_TREND_SHARE` of the peak in all), "steady"
    (all floors within that share of the peak), else ""."""
    if not per_step.height:
        return ""
    floors = per_step.sort("step")["min_allocated_bytes"].drop_nulls()
    if len(floors) < MEMORY_TREND_MIN_STEPS or not peak:
        return ""
    f = floors.to_list()
    rise = f[-1] - f[0]
    if all(b > a for a, b in zip(f[:-1], f[1:], strict=True)) and rise >= MEMORY_TREND_SHARE * peak:
        per = rise / (len(f) - 1)
        return f"the per-step floor rises every step, {fmt_bytes(f[0])} to {fmt_bytes(f[-1])} (+{fmt_bytes(per)} a step)"
    if max(f) - min(f) <= MEMORY_TREND_SHARE * peak:
        return f"the per-step floor is steady over {len(f)} steps ({fmt_bytes(min(f))})"
    return ""


def allocations_takeaway(devices: pl.DataFrame, per_step: pl.DataFrame) -> str:
    """Memory over time: the highest allocated peak, on which device, in which op, annotation
    and step; the reserved peak; out-of-memory events; the per-step floor's trend. Without
    memory events, only that: why depends on the trace's source, and the allocations stage's
    note says it (the summary's notes, the dashboard's chart)."""
    if devices.is_empty():
        return "No memory events in this trace."
    top = devices.sort(["peak_allocated_bytes", "first_ns"], descending=[True, False]).row(0, named=True)
    where = fmt_memory_device(top["device_type"], top["device"])
    if devices.select("node", "rank").n_unique() > 1:
        where += f" (rank {top['rank']})"
    text = f"Peak allocated {fmt_bytes(top['peak_allocated_bytes'])} on {where}"
    if top["peak_op"]:
        text += f" in {short_name(top['peak_op'])}"
    if top["peak_annotation"]:
        text += f" under '{top['peak_annotation']}'"
    if top["peak_step"] is not None:
        text += f", step {top['peak_step']}"
    if top["peak_reserved_bytes"]:
        text += f"; reserved peak {fmt_bytes(top['peak_reserved_bytes'])}"
    if devices.height > 1:
        text += f" (highest of {devices.height} devices)"
    oom = int(devices["oom_events"].sum())
    if oom:
        text += f"; {plural(oom, 'out-of-memory event')}"
    mine = (
        per_step.filter(
            (pl.col("node") == top["node"])
            & (pl.col("rank") == top["rank"])
            & (pl.col("device_type") == top["device_type"])
            & (pl.col("device") == top["device"])
        )
        if per_step.height
        else per_step
    )
    trend = memory_trend(mine, top["peak_allocated_bytes"])
    return text + (f"; {trend}" if trend else "") + "."


def annotation_sentence(side: str, name: str, names: pl.DataFrame, step_means: pl.DataFrame) -> str:
    """What one annotation costs: its mean share of a step where it runs inside steps (from
    ``step_means``), else its ranges and total time (from ``names``)."""
    where = " on the GPU" if side == "gpu" else ""
    m = step_means.filter((pl.col("side") == side) & (pl.col("name") == name)).drop_nulls("share")
    if m.height:
        r = m.row(0, named=True)
        return (
            f"'{name}'{where} takes {fmt_pct(r['share'], 0)} of a step on average ({fmt_ns(r['time_ns'])})."
        )
    n = names.filter((pl.col("side") == side) & (pl.col("name") == name))
    if n.height:
        r = n.row(0, named=True)
        return f"'{name}'{where}: {plural(r['count'], 'range')}, {fmt_ns(r['total_ns'])} in total, outside any step."
    return f"'{name}'{where}: not in this trace."


def annotation_takeaway(names: pl.DataFrame, step_means: pl.DataFrame) -> str:
    """:func:`annotation_sentence` of the annotation the custom chart shows first: the first of
    ``names`` (the user's own ranges before PyTorch's, longest first)."""
    if names.is_empty():
        return "No custom annotations in this trace."
    first = names.row(0, named=True)
    return annotation_sentence(first["side"], first["name"], names, step_means)


def launch_takeaway(overall: pl.DataFrame) -> str:
    """Launch → start delay (the median over every launch of the trace, the launch stage's
    ``overall`` table, as the Launch view's table shows it), and how many launches ran shorter on
    the device than their launch call took (:func:`launch.launch_stats`)."""
    n = int(overall["launches"].sum()) if not overall.is_empty() else 0
    if not n:
        return "No launches matched to device work."
    row = overall.row(0, named=True)
    text = f"{plural(n, 'launch')} (kernel, memcpy and memset), median launch→start delay "
    text += f"{fmt_ns(row['delay_p50_ns'])}; {fmt_pct(row['launch_bound'] / n, 0)} ran shorter on the device "
    return text + "than their launch call."


def sync_takeaway(totals: pl.DataFrame) -> str:
    """Host time blocked in synchronize calls (from :func:`sync.sync_totals`)."""
    if totals.is_empty():
        return "No synchronize calls."
    blocked = cast(float, totals["blocked_ns"].sum())
    window = cast(float, totals["window_ns"].sum())
    share = blocked / window if window else 0.0
    calls = plural(cast(int, totals["calls"].sum()), "synchronize call")
    return f"Host blocked {fmt_ns(blocked)} in {calls} ({fmt_pct(share, 0)} of host time)."


def idle_takeaway(breakdown: pl.DataFrame, words: DeviceWords = GPU_WORDS) -> str:
    """The idle category (HTA's) with the most stream idle time, its share and what the category
    counts (from :func:`idle.idle_breakdown`); on XLA's CPU devices a stream is a thread that
    executes XLA ops."""
    cause = idle_cause(breakdown)
    if cause is None:
        return ""
    lead = "mostly " if cause[1] >= DOMINANT_SHARE else "largest share "
    what = _stream_idle(words)
    return f"{what[:1].upper()}{what[1:]} is {lead}{cause[0]} ({fmt_pct(cause[1], 0)}): {_idle_phrase(cause[0], words)}."


def _stream_idle(words: DeviceWords) -> str:
    """What the idle breakdown's shares are of: the streams' idle time, summed (on XLA's CPU
    devices a stream is a thread that executes XLA ops)."""
    return "idle time of the XLA-op threads" if words.kind == CPU else "stream idle time"


#: What a straggler's ``cause`` class is, in a takeaway's words.
_CAUSE_WORDS = {
    "input": "data loading",
    "host": "time outside any traced op",
    "compute": "compute",
    "transfer": "memory copies",
}


def comm_takeaway(by_collective: pl.DataFrame, overlap: pl.DataFrame, stragglers: pl.DataFrame) -> str:
    """Communication time (named by its source: NCCL kernels, host collectives, or both), the
    main collective, overlap with compute, and the rank that most often arrives last at the
    step's collectives (``comm/stragglers.parquet``): in how many steps, the others' median wait
    for it and the class its extra time before arriving is in (its cause)."""
    if by_collective.is_empty():
        return "No communication: no NCCL kernels and no host collectives (gloo:*, nccl:*, c10d::*)."
    total = cast(float, by_collective["total_ns"].sum())
    by_name = by_collective.group_by("collective").agg(pl.col("total_ns").sum())
    top = by_name.sort(["total_ns", "collective"], descending=[True, False]).row(0, named=True)
    sources = set(by_collective["source"].to_list()) if "source" in by_collective.columns else {DEVICE_KERNEL}
    label = {frozenset({DEVICE_KERNEL}): "NCCL", frozenset({HOST_OP}): "Host collectives"}.get(
        frozenset(sources), "Communication"
    )
    text = f"{label} {fmt_ns(total)} ({top['collective']} {fmt_pct(top['total_ns'] / total, 0)})"
    if not overlap.is_empty() and overlap["comm_ns"].sum():
        share = cast(float, overlap["overlap_ns"].sum()) / cast(float, overlap["comm_ns"].sum())
        text += f"; {fmt_pct(share, 0)} overlapped with compute"
    late = usual_straggler(stragglers)
    if late is not None:
        rank = late.rank
        mine = stragglers.filter(
            pl.col("straggler_node").eq_missing(late.node), pl.col("straggler_rank") == rank
        )
        text += (
            f"; rank {rank} arrives last at the collectives in {late.steps} of {plural(late.of, 'step')}"
            f" (the others wait {fmt_ns(cast('float | None', mine['wait_ns'].median()))} for it per step"
        )
        causes = mine["cause"].drop_nulls()
        if causes.len():
            cause = causes.mode().sort()[0]
            extra = cast("float | None", mine.filter(pl.col("cause") == cause)["cause_ns"].median())
            text += f"; before arriving it spends {fmt_ns(extra)} more than they do in {_CAUSE_WORDS[cause]}"
        text += ")"
    return text + "."


def host_steps_takeaway(breakdown: pl.DataFrame) -> str:
    """What the host of a run without device work does in a step (the steps stage's host rows,
    ``work_on`` host): the median step's compute, communication, data loading and time outside any
    traced op, and that time's share of all step time; "" where the steps' work runs on a device."""
    host = (
        breakdown.filter(pl.col("work_on") == "host") if "work_on" in breakdown.columns else breakdown.head(0)
    )
    if host.is_empty():
        return ""
    parts = [
        f"{what} {fmt_ns(cast('float | None', host[col].median()))}"
        for what, col in (
            ("compute", "computation_ns"),
            ("communication", "communication_ns"),
            ("data loading", "data_loading_ns"),
            ("outside any op", "idle_ns"),
        )
        if col == "computation_ns" or host[col].sum()
    ]
    dur = cast(float, host["dur_ns"].sum())
    stalls = (
        f" ({fmt_pct(cast(float, host['idle_ns'].sum()) / dur, 0)} of all steps' time outside any op)"
        if dur
        else ""
    )
    ranks = host.select("node", "rank").n_unique()
    steps = plural(host["step"].n_unique(), "step") + (f" on {ranks} ranks" if ranks > 1 else "")
    return f"Host, median of {steps}: " + ", ".join(parts) + stalls + "."


# -- dispatch ----------------------------------------------------------------------------------

#: A table a takeaway reads, from the typed result.
Read = Callable[["StageAccessors"], pl.DataFrame]

#: answer id -> (function, the tables it reads, passed positionally in that order).
CHARTS: dict[str, tuple[Callable[..., str], tuple[Read, ...]]] = {
    "gpu_active": (gpu_active_takeaway, (lambda r: r.utilization.busy, lambda r: r.idle.breakdown)),
    "gpu_util": (gpu_util_takeaway, (lambda r: r.utilization.gpu, lambda r: r.utilization.gpu_sampled)),
    "cpu": (cpu_takeaway, (lambda r: r.utilization.cpu,)),
    "kernel_total": (kernel_total_takeaway, (lambda r: r.kernels.stats,)),
    "top_time": (top_time_takeaway, (lambda r: r.kernels.top_by_time,)),
    "top_count": (top_count_takeaway, (lambda r: r.kernels.top_by_count, lambda r: r.kernels.stats)),
    "steps": (
        steps_takeaway,
        (lambda r: r.steps.windows, lambda r: r.steps.job, lambda r: r.steps.job_stats),
    ),
    "precision": (precision_takeaway, (lambda r: r.precision.shares,)),
    "flops": (flops_takeaway, (lambda r: r.flops.totals,)),
    "activity": (activity_takeaway, (lambda r: r.activity.shares,)),
    "memory": (memory_takeaway, (lambda r: r.memory.ops,)),
    "allocations": (
        allocations_takeaway,
        (lambda r: r.allocations.devices, lambda r: r.allocations.per_step),
    ),
    "annotation": (annotation_takeaway, (lambda r: r.annotations.names, lambda r: r.annotations.step_means)),
    "host_steps": (host_steps_takeaway, (lambda r: r.steps.breakdown,)),
    "launch": (launch_takeaway, (lambda r: r.launch.overall,)),
    "sync": (sync_takeaway, (lambda r: r.sync.totals,)),
    "idle": (idle_takeaway, (lambda r: r.idle.breakdown,)),
    "comm": (
        comm_takeaway,
        (lambda r: r.comm.by_collective, lambda r: r.comm.overlap, lambda r: r.comm.stragglers),
    ),
}

#: The answers whose words name the devices: they take the trace's :class:`DeviceWords`.
WORDED = frozenset(
    {
        "gpu_active",
        "gpu_util",
        "kernel_total",
        "top_time",
        "top_count",
        "precision",
        "flops",
        "activity",
        "memory",
        "idle",
    }
)


class _Noting(dict[str, Any]):
    """Outputs that hold every stage and file (each None) and note the stages read."""

    def __init__(self) -> None:
        super().__init__()
        self.read: dict[str, None] = {}

    def __missing__(self, key: str) -> Any:
        self.read[key] = None
        return _NoneFor()


class _NoneFor(dict[str, Any]):
    def __missing__(self, key: str) -> None:
        return None


def _stages_read() -> tuple[str, ...]:
    """The stages :data:`CHARTS`' readers read, in first-use order (each reader run on outputs
    that note what is asked of them)."""
    from .result_tables import StageAccessors

    probe = StageAccessors()
    probe.outputs = noting = _Noting()
    for _, inputs in CHARTS.values():
        for read in inputs:
            read(probe)
    return tuple(noting.read)


#: The stages the takeaways read (the ``takeaways`` stage's inputs), in first-use order.
NEEDS: tuple[str, ...] = _stages_read()


def takeaway_for(chart_id: str, result: StageAccessors, words: DeviceWords = GPU_WORDS) -> str:
    """The takeaway ``chart_id`` from a result holding every table it reads, naming the devices
    by ``words`` (:func:`profui.analysis.devices.words_for`).

    Raises :class:`~.result_tables.OutputMissing` naming the table when one is missing: a
    takeaway is never silently computed from less than its inputs.
    """
    from .result_tables import OutputMissing

    fn, inputs = CHARTS[chart_id]
    try:
        frames = [_df(read(result)) for read in inputs]
    except OutputMissing as exc:
        raise OutputMissing(f"takeaway {chart_id}: {exc}") from None
    return fn(*frames, words=words) if chart_id in WORDED else fn(*frames)


def all_takeaways(result: StageAccessors, words: DeviceWords = GPU_WORDS) -> dict[str, str]:
    """Every answer's takeaway (those with nothing to say are left out), in :data:`CHARTS`
    order, naming the devices by ``words``."""
    out = {}
    for chart in CHARTS:
        text = takeaway_for(chart, result, words)
        if text:
            out[chart] = text
    return out
