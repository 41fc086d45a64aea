"""Training steps: windows from step markers, mapped to the device, and their statistics.

A step marker is a ``step`` event (Kineto's ``ProfilerStep#N`` user annotation, or profui's
own step events); its number is the trailing integer of the name. Each step has

- a **CPU window**: the marker's ``[ts, ts + dur)``;
- a **device window**: from the first kernel launch (runtime/driver call) made inside the CPU
  window to the end of the last device activity those launches caused (matched by
  ``correlation``, per node and rank). A step that launched nothing keeps its CPU window
  (``mapped = False``).

A trace without step markers still analyses: :func:`step_windows` returns one window per
rank spanning the whole rank and ``has_markers = False``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import cast

import polars as pl

from .busy import RANK_BY, WORK_KINDS, device_work, is_device_work
from .engine import ENGINE, SCAN_ENGINE
from .intervals import Frame, _lazy, clip_to_windows, merge_intervals, union_length
from .stats import int_std

#: The name of the one window per rank of a trace without step markers.
WHOLE_TRACE = "(whole trace)"

_STEP_NUMBER_RE = r"(\d+)\s*$"


@dataclass
class Steps:
    """Step windows of a trace.

    ``windows`` columns: node, rank, step, name, cpu_start_ns, cpu_end_ns, cpu_dur_ns,
    start_ns, end_ns, dur_ns (device window), n_launches, n_device_events, mapped.
    ``has_markers`` is False when the trace had no step events (then one window per rank);
    ``renumbered`` is True when step numbers repeated on a rank and the steps were numbered in
    time order instead (:func:`number_in_order_if_repeated`); ``note`` says either in words.
    """

    windows: pl.DataFrame
    has_markers: bool
    note: str
    renumbered: bool = False
    #: The device work (and sync events) each step launched, as :func:`step_device_events`
    #: finds it while mapping the windows (kept so the per-step breakdown need not redo it).
    work: pl.DataFrame | None = None

    def to_json_dict(self) -> dict:
        """Plain JSON-ready dict."""
        return {
            "has_markers": self.has_markers,
            "renumbered": self.renumbered,
            "note": self.note,
            "windows": self.windows.to_dicts(),
        }


def step_markers(events: Frame) -> pl.LazyFrame:
    """The step events with ``step`` (number from the name, else the rank-local ordinal)."""
    ev = _lazy(events).filter(pl.col("kind") == "step")
    ordinal = pl.int_range(pl.len()).over(RANK_BY)
    return (
        ev.sort("node", "rank", "ts")
        .with_columns(
            pl.coalesce(
                pl.col("name").str.extract(_STEP_NUMBER_RE, 1).cast(pl.Int64, strict=False), ordinal
            ).alias("step")
        )
        .select(
            *RANK_BY,
            "step",
            "name",
            pl.col("ts").alias("cpu_start_ns"),
            (pl.col("ts") + pl.col("dur")).alias("cpu_end_ns"),
        )
    )


def number_in_order_if_repeated(markers: pl.DataFrame) -> tuple[pl.DataFrame, str]:
    """Markers whose step numbers repeat on a rank (a profiler restarted in one process writes
    ``ProfilerStep#0`` again) renumbered on that rank in time order, from its first number, so
    that a step names one window per rank; and which ranks repeated (``""`` when none did and
    the markers are returned as they are). Each rank by itself: a rank's steps are the same
    analysed alone (a run by ranks) or with the job. ``markers`` is sorted by node, rank, ts."""
    dup = (pl.len() > pl.col("step").n_unique()).over(RANK_BY)
    flagged = markers.with_columns(dup.alias("_dup"))
    repeated = flagged.filter(pl.col("_dup")).select(RANK_BY).unique(maintain_order=True)
    if repeated.height == 0:
        return markers, ""
    shown = ranks_shown(repeated["rank"].to_list())
    in_order = pl.col("step").first().over(RANK_BY) + pl.int_range(pl.len()).over(RANK_BY)
    renumbered = flagged.with_columns(
        pl.when(pl.col("_dup")).then(in_order).otherwise(pl.col("step")).alias("step")
    ).drop("_dup")
    return renumbered, shown


def _whole_rank_windows(ev: pl.LazyFrame) -> pl.LazyFrame:
    host = ev.filter(pl.col("kind") != "instant")
    return host.group_by(RANK_BY).agg(
        pl.lit(0, pl.Int64).alias("step"),
        pl.lit(WHOLE_TRACE).alias("name"),
        pl.col("ts").min().alias("cpu_start_ns"),
        (pl.col("ts") + pl.col("dur")).max().alias("cpu_end_ns"),
    )


def in_step(rows: Frame, markers: Frame, ts: str = "ts", keep_outside: bool = False) -> pl.LazyFrame:
    """``rows`` (with ``node, rank`` and ``ts``) with ``step``: the step whose CPU window
    (``cpu_start_ns`` ≤ ts < ``cpu_end_ns``) holds ``ts`` — of steps overlapping on a rank, the
    one started last. Rows outside every step are dropped, or kept with a null step when
    ``keep_outside``. One as-of join: never a row per event and window."""
    m = (
        _lazy(markers)
        .select(*RANK_BY, "step", pl.col("cpu_start_ns").alias("_ws"), pl.col("cpu_end_ns").alias("_we"))
        .sort("_ws")
    )
    found = (
        _lazy(rows)
        .sort(ts)
        .join_asof(m, left_on=ts, right_on="_ws", by=RANK_BY, strategy="backward", check_sortedness=False)
    )
    inside = pl.col(ts) < pl.col("_we")
    if keep_outside:
        found = found.with_columns(pl.when(inside).then(pl.col("step")).alias("step"))
    else:
        found = found.filter(inside)
    return found.drop("_ws", "_we")


def assign_launches(events: Frame, markers: pl.LazyFrame) -> pl.LazyFrame:
    """Runtime/driver launches with the ``step`` whose CPU window contains their start."""
    launches = (
        _lazy(events)
        .filter(pl.col("kind").is_in(["runtime", "driver"]), pl.col("correlation").is_not_null())
        .select(*RANK_BY, "ts", "correlation")
    )
    return in_step(launches, markers).select(*RANK_BY, "step", pl.col("ts").alias("launch_ts"), "correlation")


def step_device_events(
    events: Frame,
    markers: pl.LazyFrame,
    kinds: tuple[str, ...] = WORK_KINDS,
    launches: pl.LazyFrame | None = None,
) -> pl.LazyFrame:
    """Device work (``device_work`` columns) tagged with the ``step`` that launched it;
    ``launches``: :func:`assign_launches`' frame, where the caller has it."""
    if launches is None:
        launches = assign_launches(events, markers)
    launches = launches.unique(subset=[*RANK_BY, "correlation"], keep="first")
    return device_work(events, kinds=kinds).join(
        launches.select(*RANK_BY, "correlation", "step", "launch_ts"),
        on=[*RANK_BY, "correlation"],
        how="inner",
    )


def step_windows(events: Frame) -> Steps:
    """Step windows mapped to the device (see the module docstring)."""
    ev = _lazy(events)
    markers, renumbered = number_in_order_if_repeated(step_markers(ev).collect(engine=ENGINE))
    has_markers = markers.height > 0
    if not has_markers:
        markers = _whole_rank_windows(ev).collect(engine=SCAN_ENGINE)
    m = markers.lazy()
    # every launch call's step, found once for the launch counts and the device work's steps
    launches = assign_launches(ev, m).collect(engine=ENGINE).lazy()
    per_launch = launches.group_by(*RANK_BY, "step").agg(pl.col("launch_ts").min().alias("_first_launch"))
    # in time order (a join's order otherwise): the breakdown's unions sort it by step and start,
    # which on rows already in time order costs a twentieth of the sort of joined rows
    work = (
        step_device_events(ev, m, kinds=(*WORK_KINDS, "sync"), launches=launches)
        .sort("start")
        .collect(engine=ENGINE)
    )
    dev = (
        work.lazy()
        .group_by(*RANK_BY, "step")
        .agg(
            pl.len().alias("n_device_events"),
            # a launch is a call whose kernel, copy or memset is traced (the launch stage's rule),
            # not every runtime call with a correlation id (a synchronize, an event record)
            pl.col("correlation").filter(pl.col("kind").is_in(WORK_KINDS)).n_unique().alias("n_launches"),
            pl.col("end").max().alias("_last_end"),
        )
    )
    windows = (
        m.join(per_launch, on=[*RANK_BY, "step"], how="left")
        .join(dev, on=[*RANK_BY, "step"], how="left")
        .with_columns(
            pl.col("n_launches").fill_null(0).cast(pl.Int64),
            pl.col("n_device_events").fill_null(0).cast(pl.Int64),
            (pl.col("cpu_end_ns") - pl.col("cpu_start_ns")).alias("cpu_dur_ns"),
            pl.col("_last_end").is_not_null().alias("mapped"),
        )
        .with_columns(
            pl.when(pl.col("mapped"))
            .then(pl.col("_first_launch"))
            .otherwise(pl.col("cpu_start_ns"))
            .alias("start_ns"),
            pl.when(pl.col("mapped"))
            .then(pl.col("_last_end"))
            .otherwise(pl.col("cpu_end_ns"))
            .alias("end_ns"),
        )
        .with_columns((pl.col("end_ns") - pl.col("start_ns")).alias("dur_ns"))
        .select(
            *RANK_BY,
            "step",
            "name",
            "cpu_start_ns",
            "cpu_end_ns",
            "cpu_dur_ns",
            "start_ns",
            "end_ns",
            "dur_ns",
            "n_launches",
            "n_device_events",
            "mapped",
        )
        .sort(*RANK_BY, "cpu_start_ns")
        .collect(engine=ENGINE)
    )
    note = steps_note(windows.height, has_markers, renumbered)
    return Steps(windows=windows, has_markers=has_markers, note=note, renumbered=bool(renumbered), work=work)


def ranks_shown(ranks: list[int]) -> str:
    """The ranks whose step numbers repeated, as the steps note names them (three at most)."""
    shown = ", ".join(f"rank {r}" for r in ranks[:3])
    return shown + (f" and {len(ranks) - 3} more" if len(ranks) > 3 else "")


def steps_note(windows: int, has_markers: bool, renumbered: str) -> str:
    """The steps note: how many windows, from markers or not, and which ranks were renumbered
    (:func:`ranks_shown`; ``""``: none)."""
    if renumbered:
        return (
            f"{windows} step window(s) from step markers; their numbers repeat on "
            f"{renumbered} (a profiler restarted in one process?), so steps are numbered in time order"
        )
    if has_markers:
        return f"{windows} step window(s) from step markers"
    return "no step markers in the trace: one window over the whole trace per rank"


def step_stats(windows: Frame, column: str = "dur_ns", by: tuple[str, ...] = RANK_BY) -> pl.LazyFrame:
    """Step-time distribution per ``by`` (node, rank; ``()`` for one row): count, mean, std,
    min, p50, p95, max of ``column``."""
    c = pl.col(column)
    lf = _lazy(windows)
    grouped = lf.group_by(list(by)) if by else lf.group_by(pl.lit(0).alias("_all"))
    out = grouped.agg(
        pl.len().alias("count"),
        c.mean().alias("mean_ns"),
        int_std(c).alias("std_ns"),
        c.min().alias("min_ns"),
        c.quantile(0.5, "linear").alias("p50_ns"),
        c.quantile(0.95, "linear").alias("p95_ns"),
        c.max().alias("max_ns"),
    )
    # one group over no rows would still give a row, of nulls: no windows, no statistics
    return out.sort(list(by)) if by else out.filter(pl.col("count") > 0).drop("_all")


def rank_step_ratios(windows: Frame) -> pl.LazyFrame:
    """Every rank's step time against that step's median over the ranks (``vs_step_median``;
    1.0 with one rank): the cells of a steps × ranks heatmap, where a straggler is the rank
    whose cells run above 1. Columns: node, rank, step, dur_ns, vs_step_median."""
    c = pl.col("dur_ns")
    med = c.median().over("step")
    return (
        _lazy(windows)
        .select(
            *RANK_BY,
            "step",
            "dur_ns",
            pl.when(med > 0).then(c / med).otherwise(None).alias("vs_step_median"),
        )
        .sort(*RANK_BY, "step")
    )


def job_steps(windows: Frame) -> pl.LazyFrame:
    """The job's time of each step: its slowest rank's device time (``dur_ns``), which rank
    that was, the fastest rank's time and how many ranks ran the step. With one rank it is
    that rank's step time. Columns: step, dur_ns, node, rank, fastest_ns, ranks."""
    lf = _lazy(windows)
    return (
        lf.sort("dur_ns", *RANK_BY, descending=[True, False, False])
        .group_by("step")
        .agg(
            pl.col("dur_ns").first(),
            pl.col("node").first(),
            pl.col("rank").first(),
            pl.col("dur_ns").min().alias("fastest_ns"),
            pl.len().cast(pl.Int64).alias("ranks"),
        )
        .sort("step")
    )


def step_outliers(
    windows: Frame, k: float = 1.5, min_rel: float = 0.1, column: str = "dur_ns"
) -> pl.LazyFrame:
    """``windows`` with ``outlier`` and ``vs_rank_median`` (duration over the rank's median step).

    An outlier lies outside Tukey's fences ``[q1 − k·IQR, q3 + k·IQR]`` of its rank's steps
    AND differs from the median by more than ``min_rel`` (so near-identical steps are not
    flagged for tiny jitter). Needs at least 4 steps per rank to flag anything.
    """
    c = pl.col(column)
    q1 = c.quantile(0.25, "linear").over(RANK_BY)
    q3 = c.quantile(0.75, "linear").over(RANK_BY)
    iqr = q3 - q1
    enough = pl.len().over(RANK_BY) >= 4
    return _lazy(windows).with_columns(
        (
            enough
            & ((c > q3 + k * iqr) | (c < q1 - k * iqr))
            & ((c / c.median().over(RANK_BY) - 1).abs() > min_rel)
        ).alias("outlier"),
        (c / c.median().over(RANK_BY)).alias("vs_rank_median"),
    )


#: A DataLoader's fetch of a batch, as torch.profiler records it around ``next()``.
DATA_LOADING = r"^enumerate\(DataLoader\)#"
#: ``work_on`` of a breakdown row: the step's device work, or a rank without device work's host
#: work (a CPU-only run).
ON_DEVICE, ON_HOST = "device", "host"


def step_breakdown(events: Frame, windows: Frame) -> pl.LazyFrame:
    """Per step: device busy time, its split by kernel type, and idle within the device window;
    for a rank without device work, its host work (:func:`host_breakdown`).

    Columns: node, rank, step, dur_ns, busy_ns, computation_ns, communication_ns, memory_ns
    (union per type of the step's own device work; types may overlap), idle_ns = dur − busy,
    data_loading_ns (host rows only), work_on (``device`` / ``host``).
    """
    m = _lazy(windows)
    return breakdown_of(step_device_events(events, m), m, events)


def breakdown_of(work: Frame, windows: Frame, events: Frame) -> pl.LazyFrame:
    """:func:`step_breakdown` from the steps' device work already found (``work``: rows of
    :func:`step_device_events`; sync events in it are left out); ``events`` give the host
    work of the ranks without device work, and the device work of ranks whose device events
    carry no correlation id (XLA ops of a JAX trace: no launch ties them to a step), which is
    the work inside each step's window."""
    m = _lazy(windows)
    ev = _lazy(events)
    # device work, not a device-side annotation alone (CUPTI's profiler ranges): a rank with none
    # is a host rank, as the trace's overview counts it
    on_device = ev.filter(is_device_work())
    # which ranks need the host rule or the by-time rule, decided first (small frames): on a
    # GPU trace neither applies, and building their plans over every event cost 4x the breakdown
    host_ranks = (
        m.select(RANK_BY).unique().join(on_device.select(RANK_BY).unique(), on=RANK_BY, how="anti").collect()
    )
    uncorrelated = (
        on_device.group_by(RANK_BY)
        .agg(pl.col("correlation").is_not_null().any().alias("_c"))
        .filter(~pl.col("_c"))
        .select(RANK_BY)
        .collect()
    )
    cols = [*RANK_BY, "step", "start", "end", "kind", "kernel_type"]
    work = _lazy(work).select(cols)
    if uncorrelated.height:
        w = m.join(uncorrelated.lazy(), on=RANK_BY, how="semi").select(
            *RANK_BY, "step", pl.col("cpu_start_ns").alias("w_start"), pl.col("cpu_end_ns").alias("w_end")
        )
        by_time = clip_to_windows(
            device_work(ev.join(uncorrelated.lazy(), on=RANK_BY, how="semi")), w, RANK_BY
        )
        work = pl.concat([work, by_time.select(cols)], how="vertical_relaxed")
    parts = [_device_breakdown(work, m.join(host_ranks.lazy(), on=RANK_BY, how="anti"))]
    if host_ranks.height:
        parts.append(host_breakdown(events, m.join(host_ranks.lazy(), on=RANK_BY, how="semi")))
    return pl.concat(parts, how="vertical_relaxed").sort(*RANK_BY, "step")


def host_breakdown(events: Frame, windows: Frame) -> pl.LazyFrame:
    """Per step of a rank without device work (a CPU-only run), what its host did in the step's
    CPU window, as unions over the rank's threads cut to the window. The parts are a partition
    of the step, taken in this order, each the time no part before it claimed:
    ``communication_ns`` its host collectives (:func:`profui.analysis.comm.host_comm_ops`:
    ``gloo:all_reduce`` ...), ``data_loading_ns`` its DataLoader fetches (:data:`DATA_LOADING`)
    outside communication, ``computation_ns`` the rest of ``busy_ns`` (any CPU op, collective or
    fetch running), ``idle_ns`` the rest of the step: the host stalls (no traced op on any
    thread); ``memory_ns`` 0. So communication + data loading + computation + idle is the step's
    ``dur_ns`` exactly."""
    from .comm import host_comm_ops

    keys = [*RANK_BY, "step"]
    m = _lazy(windows)
    # only the windows' ranks: the host ops of a GPU trace's ranks are many, and none is asked for
    ev = _lazy(events).join(m.select(RANK_BY).unique(), on=RANK_BY, how="semi")
    w = m.select(*keys, pl.col("cpu_start_ns").alias("w_start"), pl.col("cpu_end_ns").alias("w_end"))

    def clipped(rows: pl.LazyFrame) -> pl.LazyFrame:
        iv = rows.select(*RANK_BY, pl.col("ts").alias("start"), (pl.col("ts") + pl.col("dur")).alias("end"))
        return clip_to_windows(merge_intervals(iv, RANK_BY), w, RANK_BY).select(*keys, "start", "end")

    comm = clipped(host_comm_ops(ev.filter(pl.col("device") < 0)))
    data = clipped(
        ev.filter(pl.col("kind").is_in(["cpu_op", "annotation"]), pl.col("name").str.contains(DATA_LOADING))
    )
    ops = clipped(ev.filter(pl.col("kind") == "cpu_op"))
    out = m.select(*keys, "dur_ns")
    for name, parts in (
        ("communication_ns", [comm]),
        ("data_loading_ns", [data]),
        ("_waiting", [comm, data]),
        ("busy_ns", [comm, data, ops]),
    ):
        out = out.join(union_length(pl.concat(parts), keys, name), on=keys, how="left")
    cols = ["busy_ns", "communication_ns", "data_loading_ns", "_waiting"]
    return (
        out.with_columns([pl.col(c).fill_null(0) for c in cols])
        .with_columns(
            # data loading while communicating is counted once, as communication
            (pl.col("_waiting") - pl.col("communication_ns")).alias("data_loading_ns"),
            (pl.col("busy_ns") - pl.col("_waiting")).alias("computation_ns"),
            pl.lit(0, pl.Int64).alias("memory_ns"),
            (pl.col("dur_ns") - pl.col("busy_ns")).alias("idle_ns"),
            pl.lit(ON_HOST).alias("work_on"),
        )
        .select(*keys, *_BREAKDOWN_COLUMNS)
    )


#: The breakdown's columns after its keys, in order.
_BREAKDOWN_COLUMNS = (
    "dur_ns",
    "busy_ns",
    "computation_ns",
    "communication_ns",
    "memory_ns",
    "idle_ns",
    "data_loading_ns",
    "work_on",
)


def _device_breakdown(work: Frame, windows: Frame) -> pl.LazyFrame:
    m = _lazy(windows)
    work = _lazy(work).filter(pl.col("kind") != "sync")
    keys = [*RANK_BY, "step"]
    busy = union_length(work.select(*keys, "start", "end"), keys, "busy_ns")
    out = m.select(*keys, "dur_ns").join(busy, on=keys, how="left")
    for t in ("COMPUTATION", "COMMUNICATION", "MEMORY"):
        part = union_length(
            work.filter(pl.col("kernel_type") == t).select(*keys, "start", "end"), keys, f"{t.lower()}_ns"
        )
        out = out.join(part, on=keys, how="left")
    cols = ["busy_ns", "computation_ns", "communication_ns", "memory_ns"]
    return (
        out.with_columns([pl.col(c).fill_null(0) for c in cols])
        .with_columns(
            (pl.col("dur_ns") - pl.col("busy_ns")).alias("idle_ns"),
            pl.lit(None, pl.Int64).alias("data_loading_ns"),
            pl.lit(ON_DEVICE).alias("work_on"),
        )
        .select(*keys, *_BREAKDOWN_COLUMNS)
    )


def hta_profiler_steps(hta_events: Frame) -> list[int]:
    """HTA's ``profiler_steps()``: the step numbers left on the first rank after HTA's filtering."""
    m = step_markers(hta_events).collect(engine=ENGINE)
    if m.height == 0:
        return []
    first = m.sort("rank").row(0, named=True)
    return sorted(
        set(m.filter(pl.col("node") == first["node"], pl.col("rank") == first["rank"])["step"].to_list())
    )


#: Most buckets a step-time histogram has (an 80-column chart stays readable).
MAX_HISTOGRAM_BUCKETS = 20


def histogram_buckets(values: list[int], max_buckets: int = MAX_HISTOGRAM_BUCKETS) -> int:
    """How many equal-width buckets a histogram of ``values`` gets.

    Freedman–Diaconis: bucket width ``2·IQR·n^(-1/3)``, so ``ceil(range / width)`` buckets, at
    most ``max_buckets`` and at most ``ceil(sqrt(n)) + 1`` (5 steps get 4 buckets, not 17). When the IQR is 0 (most steps equal) it falls back to Sturges'
    ``ceil(log2 n) + 1``; when every value is equal, one bucket.
    """
    n = len(values)
    if n == 0:
        return 0
    lo, hi = min(values), max(values)
    if hi == lo:
        return 1
    s = pl.Series(values, dtype=pl.Float64)
    iqr = float(cast(float, s.quantile(0.75, "linear"))) - float(cast(float, s.quantile(0.25, "linear")))
    if iqr > 0:
        k = math.ceil((hi - lo) / (2 * iqr * n ** (-1 / 3)))
    else:
        k = math.ceil(math.log2(n)) + 1
    # a histogram of a handful of steps with more buckets than about sqrt(n) shows gaps, not a shape
    return max(1, min(max_buckets, k, math.ceil(math.sqrt(n)) + 1))


def step_histogram(
    windows: Frame, column: str = "dur_ns", max_buckets: int = MAX_HISTOGRAM_BUCKETS
) -> pl.DataFrame:
    """Step-time histogram per (node, rank): equal-width buckets of ``column`` from its min to its max.

    The bucket count is :func:`histogram_buckets`. Bucket ``i`` of ``k`` spans
    ``[start_ns, end_ns)`` with ``start_ns = min + floor(i·(max − min)/k)``; the last bucket
    also holds the maximum. Empty buckets are kept (count 0), so the buckets tile the range.
    Columns: node, rank, bucket, start_ns, end_ns, count.
    """
    df = _lazy(windows).select(*RANK_BY, column).collect(engine=ENGINE)
    rows: list[tuple] = []
    for (node, rank), part in df.group_by(RANK_BY, maintain_order=True):
        values = [int(v) for v in part[column].drop_nulls().to_list()]
        k = histogram_buckets(values, max_buckets)
        if k == 0:
            continue
        lo, hi = min(values), max(values)
        edges = [lo + (i * (hi - lo)) // k for i in range(k)] + [hi]
        counts = [0] * k
        for v in values:
            i = min(k - 1, ((v - lo) * k) // (hi - lo)) if hi > lo else 0
            # integer edges are floored: step back or forward into the bucket that holds v
            while i > 0 and v < edges[i]:
                i -= 1
            while i < k - 1 and v >= edges[i + 1]:
                i += 1
            counts[i] += 1
        rows += [(node, rank, i, edges[i], edges[i + 1], counts[i]) for i in range(k)]
    schema = {
        "node": pl.String,
        "rank": pl.Int64,
        "bucket": pl.Int64,
        "start_ns": pl.Int64,
        "end_ns": pl.Int64,
        "count": pl.Int64,
    }
    return pl.DataFrame(rows, schema=schema, orient="row").sort(*RANK_BY, "bucket")
