"""Utilization over time: GPU busy fraction per time bucket, per GPU and per node; CPU utilization.

Buckets are aligned for the whole trace (origin = first event of the trace, size
``bucket_ns``; default a round size giving about 200 buckets) so GPUs, ranks and nodes line
up. A GPU's busy ns in a bucket is the part of the bucket covered by the union of its
kernels, memcpys and memsets (sync excluded); ``util = busy_ns / bucket_len_ns`` (the last
bucket may be shorter).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import polars as pl

from .busy import GPU_BY, busy_table, device_intervals
from .engine import ENGINE, SCAN_ENGINE
from .intervals import (
    Frame,
    _lazy,
    bucket_coverage,
    bucket_grid,
    merge_intervals,
    nice_bucket_ns,
    union_length,
)
from .keys import constants
from .stats import stable_mean

TARGET_BUCKETS = 200
HOST_BUSY_KINDS = ("cpu_op", "python", "runtime", "driver")
#: Host events that count as a thread being active for :func:`cpu_active` (user annotations too).
HOST_ACTIVE_KINDS = (*HOST_BUSY_KINDS, "annotation")
#: A host thread: its node, rank, process and thread id.
THREAD = ("node", "rank", "pid", "tid")


def _host(events: Frame, kinds: Sequence[str]) -> pl.LazyFrame:
    """Host events of ``kinds`` as ``THREAD, start, end`` intervals."""
    return (
        _lazy(events)
        .filter(pl.col("kind").is_in(list(kinds)), pl.col("device") < 0)
        .select(*THREAD, pl.col("ts").alias("start"), (pl.col("ts") + pl.col("dur")).alias("end"))
    )


def _seen(events: Frame, union: pl.LazyFrame, kinds: Sequence[str], keys: Sequence[str]) -> pl.LazyFrame:
    """The distinct ``keys`` of the host events of ``kinds``, ``union`` being those events'
    union per thread: its keys and those of the events without length (left out of a union).
    Not the keys of every event: on 3M events hashing two million rows' keys cost more."""
    keys = list(keys)
    empty = _host(events, kinds).filter(pl.col("end") <= pl.col("start")).select(keys)
    return pl.concat([union.select(keys), empty]).unique()


def host_thread_busy(events: Frame) -> pl.LazyFrame:
    """Per host thread (:data:`THREAD`) the union of its busy events (:data:`HOST_BUSY_KINDS`):
    disjoint ``start, end`` intervals, what :func:`cpu_utilization` and :func:`cpu_active` both
    read (``busy=``), so a stage merges a trace's host events once.

    The columns of the thread key that hold one value (a one-rank trace's node and rank) are
    left out of the merge's sort and written back: on 5M events the sort by all four, a string
    among them, took twice the CPU (:func:`profui.analysis.keys.constants`)."""
    host = _host(events, HOST_BUSY_KINDS)
    same = constants([host], THREAD)
    split = [c for c in THREAD if c not in same]
    types = host.collect_schema()
    return merge_intervals(host.select(*split, "start", "end"), split).select(
        *(pl.lit(same[c], dtype=types[c]).alias(c) if c in same else pl.col(c) for c in THREAD),
        "start",
        "end",
    )


def trace_window(events: Frame) -> tuple[int, int]:
    """First and last ns of the trace's events (instants included); (0, 0) when empty."""
    row = (
        _lazy(events)
        .select(pl.col("ts").min().alias("a"), (pl.col("ts") + pl.col("dur")).max().alias("b"))
        .collect(engine=ENGINE)
        .row(0)
    )
    return (row[0], row[1]) if row[0] is not None else (0, 0)


def _grid(
    events: Frame | None, bucket_ns: int | None, window: tuple[int, int] | None
) -> tuple[pl.LazyFrame, int, int]:
    """The bucket grid over ``window``, else over the span of ``events`` (None: a job's
    reduction across ranks, which always gives the window)."""
    if window is None:
        if events is None:
            raise ValueError("a utilization grid needs the events or a window")
        window = trace_window(events)
    origin, end = window
    size = int(bucket_ns) if bucket_ns else nice_bucket_ns(end - origin, TARGET_BUCKETS)
    return bucket_grid(origin, max(end, origin + 1), size), origin, size


def _sampled_grid(
    events: Frame | None, samples: pl.LazyFrame, bucket_ns: int | None, window: tuple[int, int] | None = None
) -> tuple[pl.LazyFrame, int, int] | None:
    """The bucket grid over the samples' own span (the whole job, not only the traced windows;
    ``window`` overrides it), or None without samples."""
    first, last, n = (
        samples.select(pl.col("ts").min().alias("a"), pl.col("ts").max().alias("b"), pl.len())
        .collect(engine=ENGINE)
        .row(0)
    )
    if n == 0:
        return None
    return _grid(events, bucket_ns, window or (first, last + 1))


def gpu_utilization(
    events: Frame,
    bucket_ns: int | None = None,
    by: Sequence[str] = GPU_BY,
    window: tuple[int, int] | None = None,
) -> pl.LazyFrame:
    """Per GPU (``by``) and bucket: ``bucket``, ``bucket_start_ns``, ``bucket_len_ns``, ``busy_ns``, ``util``.

    Every bucket of the window appears for every GPU (zeros included), so per-GPU rows sum
    to that GPU's busy time. ``window`` overrides ``(origin, end)``. Over HTA's GPU events:
    :func:`profui.analysis.hta_variants.hta_gpu_utilization`.
    """
    return utilization_table(events, device_intervals(events), merge_intervals, bucket_ns, by, window)


def gpu_busy_and_utilization(
    events: Frame, bucket_ns: int | None = None
) -> tuple[pl.LazyFrame, pl.LazyFrame]:
    """:func:`profui.analysis.busy.gpu_busy` and :func:`gpu_utilization` per GPU from one union
    of the device work, where each would merge it (0.04 CPU-s on 446k device events)."""
    work = device_intervals(events)
    merged = merge_intervals(work, GPU_BY).collect(engine=ENGINE).lazy()

    def length(_work: pl.LazyFrame, by: Sequence[str], name: str) -> pl.LazyFrame:
        return union_length(merged, by, name, merged=True)

    busy = busy_table(events, work, GPU_BY, length)
    return busy, utilization_table(events, work, lambda _work, _by: merged, bucket_ns, GPU_BY)


def utilization_table(
    events: Frame | None,
    work: pl.LazyFrame,
    merge: Callable[..., pl.LazyFrame],
    bucket_ns: int | None = None,
    by: Sequence[str] = GPU_BY,
    window: tuple[int, int] | None = None,
) -> pl.LazyFrame:
    """:func:`gpu_utilization` from device ``work`` merged by ``merge`` (exact or HTA's)."""
    by = list(by)
    grid, origin, size = _grid(events, bucket_ns, window)
    work = work.select(*by, "start", "end")
    merged = merge(work, by).filter(pl.col("end") > pl.col("start"))
    cov = bucket_coverage(merged, size, origin, by, merged=True)
    groups = work.select(by).unique()
    return (
        groups.join(grid, how="cross")
        .join(cov, on=[*by, "bucket"], how="left")
        .with_columns(pl.col("covered_ns").fill_null(0).alias("busy_ns"))
        .with_columns((pl.col("busy_ns") / pl.col("bucket_len")).alias("util"))
        .select(*by, "bucket", "bucket_start", "bucket_len", "busy_ns", "util")
        .rename({"bucket_start": "bucket_start_ns", "bucket_len": "bucket_len_ns"})
        .sort([*by, "bucket"])
    )


def node_utilization(gpu_util: Frame) -> pl.LazyFrame:
    """Per node and bucket: GPU utilization averaged over the node's GPUs (``n_gpus``, ``util``)."""
    keys = ["node", "bucket", "bucket_start_ns", "bucket_len_ns"]
    return (
        _lazy(gpu_util)
        .group_by(keys)
        .agg(pl.len().alias("n_gpus"), pl.col("busy_ns").sum(), pl.col("util").mean())
        .sort("node", "bucket")
    )


def cpu_utilization(
    events: Frame,
    metrics: Frame | None = None,
    bucket_ns: int | None = None,
    window: tuple[int, int] | None = None,
    busy: Frame | None = None,
) -> pl.LazyFrame:
    """CPU utilization per node and bucket, with the ``source`` it came from.

    - ``metrics``: where capture sampled ``source == "cpu"``, ``metric == "util_pct"``: the
      machine-wide value (``device == -1``) or else the mean over CPUs, averaged per bucket
      (``util`` as a fraction, ``busy_threads`` null), over the whole sampled job (the
      buckets span the samples, not only the traced windows; buckets without a sample are
      left out).
    - ``host_events``: otherwise, from the trace's host events (cpu_op, python, runtime,
      driver): per thread (:data:`THREAD`) the union of its events (``busy``: that union,
      :func:`host_thread_busy`, when the caller has it), summed per node → ``busy_threads``
      (mean number of threads busy in the bucket), ``util`` = busy_threads / threads seen on
      the node.

    Columns: node, bucket, bucket_start_ns, bucket_len_ns, util, busy_threads, source.
    """
    if metrics is not None:
        m = _lazy(metrics).filter(pl.col("source") == "cpu", pl.col("metric") == "util_pct")
        job = _sampled_grid(events, m, bucket_ns, window)
        if job is not None:
            grid, origin, size = job
            whole = m.filter(pl.col("device") == -1)
            has_whole = whole.select(pl.len()).collect(engine=ENGINE).item() > 0
            per_ts = whole if has_whole else m.group_by("node", "ts").agg(pl.col("value").mean())
            sampled = (
                per_ts.with_columns(((pl.col("ts") - origin) // size).alias("bucket"))
                .group_by("node", "bucket")
                .agg((pl.col("value").mean() / 100.0).alias("util"))
            )
            nodes = per_ts.select("node").unique()
            return (
                nodes.join(grid, how="cross")
                .join(sampled, on=["node", "bucket"], how="inner")
                .select(
                    "node",
                    "bucket",
                    pl.col("bucket_start").alias("bucket_start_ns"),
                    pl.col("bucket_len").alias("bucket_len_ns"),
                    "util",
                    pl.lit(None, pl.Float64).alias("busy_threads"),
                    pl.lit("metrics").alias("source"),
                )
                .sort("node", "bucket")
            )
    grid, origin, size = _grid(events, bucket_ns, window)
    merged = host_thread_busy(events) if busy is None else _lazy(busy)
    cov = (
        bucket_coverage(merged, size, origin, THREAD, merged=True)
        .group_by("node", "bucket")
        .agg(pl.col("covered_ns").sum())
    )
    threads = _seen(events, merged, HOST_BUSY_KINDS, THREAD).group_by("node").agg(pl.len().alias("_threads"))
    return (
        threads.join(grid, how="cross")
        .join(cov, on=["node", "bucket"], how="left")
        .with_columns((pl.col("covered_ns").fill_null(0) / pl.col("bucket_len")).alias("busy_threads"))
        .with_columns((pl.col("busy_threads") / pl.col("_threads")).alias("util"))
        .select(
            "node",
            "bucket",
            pl.col("bucket_start").alias("bucket_start_ns"),
            pl.col("bucket_len").alias("bucket_len_ns"),
            "util",
            "busy_threads",
            pl.lit("host_events").alias("source"),
        )
        .sort("node", "bucket")
    )


def job_utilization(gpu_util: Frame) -> pl.LazyFrame:
    """Per bucket across every GPU of every node and rank: ``n_gpus``, summed ``busy_ns``, mean ``util``."""
    keys = ["bucket", "bucket_start_ns", "bucket_len_ns"]
    return (
        _lazy(gpu_util)
        .group_by(keys)
        .agg(pl.len().alias("n_gpus"), pl.col("busy_ns").sum(), pl.col("util").mean())
        .sort("bucket")
    )


def cpu_active(events: Frame, metrics: Frame | None = None, busy: Frame | None = None) -> pl.LazyFrame:
    """CPU active time per node and rank over the profiled window, from every source there is.

    - ``host_events`` (one row per node and rank): ``active_ns`` is the union of the rank's
      host-thread activity (cpu_op, python, annotation, runtime, driver events on the host;
      any thread of the rank active counts once); ``thread_ns`` sums each thread's own union
      (CPU time over all traced threads, may exceed the window). ``window_ns`` is the rank's
      span, first to last event of any kind. ``busy``: the threads' busy union
      (:func:`host_thread_busy`) when the caller has it; the annotations are merged into it.
    - ``metrics`` (one row per node, ``rank`` null), where capture sampled CPU utilization
      (``source == "cpu"``, ``metric == "util_pct"``; machine-wide, else the mean over CPUs):
      ``active_ns`` = mean utilization × the node's sampled span (first to last sample: the job).

    Columns: node, rank, source, active_ns, thread_ns, window_ns, active_share (0–1).
    """
    ev = _lazy(events)
    span = ev.group_by("node", "rank").agg(
        (pl.col("ts") + pl.col("dur")).max().alias("_b"), pl.col("ts").min().alias("_a")
    )
    # each thread's union first: host events nest, so the rank's union is then taken over far
    # fewer (disjoint per thread) intervals; the busy union, with the (few) annotations merged
    # in, is the union of every active kind
    # (a rank whose host events all last 0 ns still gets its row, with 0)
    # (one plan for both uses below, so that Polars computes it once)
    busy = host_thread_busy(ev) if busy is None else _lazy(busy)
    per_thread = merge_intervals(
        pl.concat([busy.select(*THREAD, "start", "end"), _host(ev, ("annotation",))]), THREAD
    ).select("node", "rank", "start", "end")
    union = (
        _host(ev, HOST_ACTIVE_KINDS)
        .select("node", "rank")
        .unique()
        .join(
            union_length(per_thread, ("node", "rank"), "active_ns"),
            on=["node", "rank"],
            how="left",
            nulls_equal=True,
        )
        .with_columns(pl.col("active_ns").fill_null(0))
    )
    threads = per_thread.group_by("node", "rank").agg(
        (pl.col("end") - pl.col("start")).sum().alias("thread_ns")
    )
    out = [
        union.join(threads, on=["node", "rank"], how="left", nulls_equal=True)
        .with_columns(pl.col("thread_ns").fill_null(0))
        .join(span, on=["node", "rank"], how="left", nulls_equal=True)
        .select(
            "node",
            pl.col("rank").cast(pl.Int64),
            pl.lit("host_events").alias("source"),
            "active_ns",
            "thread_ns",
            (pl.col("_b") - pl.col("_a")).alias("window_ns"),
        )
    ]
    if metrics is not None:
        m = _lazy(metrics).filter(pl.col("source") == "cpu", pl.col("metric") == "util_pct")
        whole = m.filter(pl.col("device") == -1).select("node", "ts", "value")
        # machine-wide samples where a node has them, else the mean over its CPUs per sample time
        per_cpu = m.filter(pl.col("device") >= 0).group_by("node", "ts").agg(pl.col("value").mean())
        per_cpu = per_cpu.join(whole.select("node").unique(), on="node", how="anti")
        samples = pl.concat([whole, per_cpu.select("node", "ts", "value")])
        # the sampled job's span per node (the samples cover the job, not only what was traced)
        node_span = samples.group_by("node").agg(
            pl.col("ts").max().alias("_b"), pl.col("ts").min().alias("_a")
        )
        out.append(
            samples.group_by("node")
            .agg((pl.col("value").mean() / 100.0).alias("_util"))
            .join(node_span, on="node", how="inner")
            .with_columns((pl.col("_b") - pl.col("_a")).alias("window_ns"))
            .select(
                "node",
                pl.lit(None, pl.Int64).alias("rank"),
                pl.lit("metrics").alias("source"),
                (pl.col("_util") * pl.col("window_ns")).round(0).cast(pl.Int64).alias("active_ns"),
                pl.lit(None, pl.Int64).alias("thread_ns"),
                "window_ns",
            )
        )
    return (
        pl.concat(out, how="vertical_relaxed")
        .with_columns(
            pl.when(pl.col("window_ns") > 0)
            .then(pl.col("active_ns") / pl.col("window_ns"))
            .otherwise(0.0)
            .alias("active_share")
        )
        .sort("node", "source", "rank", nulls_last=True)
    )


def util_over_time(util: Frame, by: Sequence[str]) -> pl.LazyFrame:
    """Per ``by`` group of a utilization-per-bucket frame: ``buckets``, ``bucket_len_ns`` (the
    longest), and the busy fraction's ``mean``, ``p10``, ``p90`` and ``max`` over the buckets;
    ``source`` too when the frame has one (CPU utilization)."""
    lf = _lazy(util)
    has_source = "source" in lf.collect_schema().names()
    u = pl.col("util")
    return (
        lf.group_by(list(by))
        .agg(
            pl.len().cast(pl.Int64).alias("buckets"),
            pl.col("bucket_len_ns").max(),
            stable_mean(u).alias("mean"),
            u.quantile(0.1, "linear").alias("p10"),
            u.quantile(0.9, "linear").alias("p90"),
            u.max().alias("max"),
            *([pl.col("source").first()] if has_source else []),
        )
        .sort(list(by))
    )


def traced_windows(events: Frame, windows: list[dict] | None = None) -> pl.LazyFrame:
    """The spans the trace holds events for, per node and rank: ``first_step``, ``last_step``
    (null without steps), ``start_ns``, ``end_ns``.

    ``windows``: the capture's own record of its profiler windows (profcap's manifest
    ``capture.windows``: ``rank``, ``first``, ``last`` step) — each becomes the span of its
    steps' markers on that rank. Without it (an imported trace) each rank's events are one
    window, first to last event.
    """
    ev = _lazy(events)
    if windows:
        w = pl.LazyFrame(
            [(int(x["rank"]), int(x["first"]), int(x["last"])) for x in windows],
            schema={"rank": pl.Int64, "first_step": pl.Int64, "last_step": pl.Int64},
            orient="row",
        )
        steps = ev.filter(pl.col("kind") == "step").select(
            "node",
            "rank",
            pl.col("name").str.extract(r"(\d+)\s*$").cast(pl.Int64).alias("_step"),
            "ts",
            (pl.col("ts") + pl.col("dur")).alias("_end"),
        )
        return (
            w.join(steps, on="rank", how="inner")
            .filter(pl.col("_step").is_between(pl.col("first_step"), pl.col("last_step")))
            .group_by("node", "rank", "first_step", "last_step")
            .agg(pl.col("ts").min().alias("start_ns"), pl.col("_end").max().alias("end_ns"))
            .sort("node", "rank", "start_ns")
        )
    return (
        ev.group_by("node", "rank")
        .agg(pl.col("ts").min().alias("start_ns"), (pl.col("ts") + pl.col("dur")).max().alias("end_ns"))
        .collect(engine=SCAN_ENGINE)
        .lazy()
        .select(
            "node",
            "rank",
            pl.lit(None, pl.Int64).alias("first_step"),
            pl.lit(None, pl.Int64).alias("last_step"),
            "start_ns",
            "end_ns",
        )
        .sort("node", "rank", "start_ns")
    )


def sampled_gpu_utilization(
    events: Frame | None, metrics: Frame | None, bucket_ns: int | None = None
) -> pl.LazyFrame:
    """GPU utilization over the whole job from capture's NVML samples (``source == "gpu"``,
    ``metric == "util_pct"``: the share of the sample period a kernel ran), per node and bucket:
    ``n_gpus`` sampled and their mean ``util`` (0–1). The buckets span the samples — the whole
    job, not only the traced windows; buckets without a sample are left out. Empty without
    samples (imported traces): then only traced device events tell GPU utilization.
    Columns: node, bucket, bucket_start_ns, bucket_len_ns, n_gpus, util.
    """
    schema = {
        "node": pl.String,
        "bucket": pl.Int64,
        "bucket_start_ns": pl.Int64,
        "bucket_len_ns": pl.Int64,
        "n_gpus": pl.UInt32,
        "util": pl.Float64,
    }
    if metrics is None:
        return pl.LazyFrame(schema=schema)
    m = _lazy(metrics).filter(
        pl.col("source") == "gpu", pl.col("metric") == "util_pct", pl.col("device") >= 0
    )
    job = _sampled_grid(events, m, bucket_ns)
    if job is None:
        return pl.LazyFrame(schema=schema)
    grid, origin, size = job
    per_gpu = (
        m.with_columns(((pl.col("ts") - origin) // size).alias("bucket"))
        .group_by("node", "device", "bucket")
        .agg((pl.col("value").mean() / 100.0).alias("util"))
    )
    return (
        per_gpu.group_by("node", "bucket")
        .agg(pl.len().alias("n_gpus"), pl.col("util").mean())
        .join(grid, on="bucket", how="inner")
        .select(
            "node",
            "bucket",
            pl.col("bucket_start").alias("bucket_start_ns"),
            pl.col("bucket_len").alias("bucket_len_ns"),
            "n_gpus",
            "util",
        )
        .sort("node", "bucket")
    )
