"""Launch latency: from the host's runtime/driver launch call to the device activity it caused.

Every device event (kernel, memcpy, memset) is joined to the ``runtime`` / ``driver`` call that
launched it by its **correlation id within one node and rank** — never by flow events, which are
often missing or broken in real traces. Per launch we get:

- ``launch_dur``: how long the host spent inside the launch call (HTA's ``cpu_duration``);
- ``dur``: how long the device ran it (HTA's ``gpu_duration``);
- ``launch_delay``: launch call end → device start (HTA's ``launch_delay``; negative when the
  device started before the call returned);
- ``launch_latency``: launch call start → device start (what the timeline's link shows);
- ``launch_bound``: the device ran it for less time than the host needed to launch it.

``hta_compat=True`` expects events already passed through :func:`profui.analysis.hta.hta_events`
(µs rounding, last step dropped) and, like HTA's ``cuda_kernel_launch_stats``, only counts
launches made through :data:`HTA_LAUNCH_NAMES`.
"""

from __future__ import annotations

from collections.abc import Sequence

import polars as pl

#: Event kinds of host calls that can launch device work.
LAUNCH_KINDS: tuple[str, ...] = ("runtime", "driver")

#: Event kinds of device work that a launch causes (sync events are waits, not launched work).
LAUNCHED_KINDS: tuple[str, ...] = ("kernel", "memcpy", "memset")

#: The launch API names HTA's ``cuda_kernel_launch_stats`` (v0.5) matches. HIP and the CUDA
#: driver API (``cuLaunchKernel``, used by Triton) are not among them, so HTA reports 0 launches
#: on the AMD and Triton traces; our default mode counts every launch of any API.
HTA_LAUNCH_NAMES: tuple[str, ...] = (
    "cudaLaunchKernel",
    "cudaLaunchKernelExC",
    "cudaMemcpyAsync",
    "cudaMemsetAsync",
    "runFunction - job_prep_and_submit_for_execution",  # MTIA
)

#: HTA's default outlier cut-offs (µs in HTA; ns here).
RUNTIME_OUTLIER_NS = 50_000
LAUNCH_DELAY_OUTLIER_NS = 100_000

#: Columns of :func:`kernel_launches`.
LAUNCH_COLUMNS: tuple[str, ...] = (
    "node",
    "rank",
    "device",
    "stream",
    "correlation",
    "kind",
    "name",
    "ts",
    "dur",
    "launch_name",
    "launch_tid",
    "launch_ts",
    "launch_dur",
    "launch_delay",
    "launch_latency",
    "launch_bound",
)


def launch_calls(events: pl.LazyFrame, names: Sequence[str] | None = None) -> pl.LazyFrame:
    """Host runtime/driver calls that carry a correlation id (optionally only ``names``)."""
    calls = events.filter(pl.col("kind").is_in(LAUNCH_KINDS) & pl.col("correlation").is_not_null())
    if names is not None:
        calls = calls.filter(pl.col("name").is_in(list(names)))
    return calls


def kernel_launches(events: pl.LazyFrame, hta_compat: bool = False) -> pl.LazyFrame:
    """One row per launched device event joined to its launch call (columns :data:`LAUNCH_COLUMNS`).

    The join is on ``(node, rank, correlation)``; device events without a matching host call
    (e.g. the host side was not recorded) are left out. When a correlation id appears on more
    than one host call of a rank (not seen in practice) the earliest call is used, so a device
    event is never counted twice. Times are ns; ``hta_compat`` restricts the launch calls to
    :data:`HTA_LAUNCH_NAMES`.
    """
    calls = (
        launch_calls(events, HTA_LAUNCH_NAMES if hta_compat else None)
        .select(
            "node",
            "rank",
            "correlation",
            pl.col("name").alias("launch_name"),
            pl.col("tid").alias("launch_tid"),
            pl.col("ts").alias("launch_ts"),
            pl.col("dur").alias("launch_dur"),
        )
        .sort("launch_ts")
        .unique(subset=["node", "rank", "correlation"], keep="first", maintain_order=True)
    )
    if hta_compat:  # HTA's GPU side: any event with a stream (sync events included)
        device = events.filter(pl.col("hta_gpu")).with_columns(pl.col("hta_stream").alias("stream"))
    else:
        device = events.filter(pl.col("kind").is_in(LAUNCHED_KINDS))
    device = device.filter(pl.col("correlation").is_not_null()).select(
        "node", "rank", "device", "stream", "correlation", "kind", "name", "ts", "dur"
    )
    delay = pl.col("ts") - pl.col("launch_ts") - pl.col("launch_dur")
    if hta_compat:  # HTA reports a device start before the call returned as 0 delay
        delay = pl.max_horizontal(delay, pl.lit(0, dtype=pl.Int64))
    return (
        device.join(calls, on=["node", "rank", "correlation"], how="inner")
        .with_columns(
            delay.alias("launch_delay"),
            (pl.col("ts") - pl.col("launch_ts")).alias("launch_latency"),
            (pl.col("dur") < pl.col("launch_dur")).alias("launch_bound"),
        )
        .select(LAUNCH_COLUMNS)
        .sort("node", "rank", "ts")
    )


def _dist(col: str, out: str) -> list[pl.Expr]:
    c = pl.col(col)
    return [
        c.sum().alias(f"{out}_sum_ns"),
        c.mean().alias(f"{out}_mean_ns"),
        c.min().alias(f"{out}_min_ns"),
        c.max().alias(f"{out}_max_ns"),
        c.quantile(0.5, interpolation="linear").alias(f"{out}_p50_ns"),
        c.quantile(0.9, interpolation="linear").alias(f"{out}_p90_ns"),
        c.quantile(0.99, interpolation="linear").alias(f"{out}_p99_ns"),
    ]


def launch_stats(
    launches: pl.LazyFrame,
    by: Sequence[str] = ("node", "rank"),
    runtime_outlier_ns: int = RUNTIME_OUTLIER_NS,
    launch_delay_outlier_ns: int = LAUNCH_DELAY_OUTLIER_NS,
) -> pl.LazyFrame:
    """Distribution of launch numbers per ``by`` group (all launches together when ``by=()``).

    Columns: ``launches``; for ``cpu`` (= ``launch_dur``), ``gpu`` (= ``dur``), ``delay``
    (= ``launch_delay``) and ``latency`` (= ``launch_latency``): ``_sum_ns, _mean_ns, _min_ns,
    _max_ns, _p50_ns, _p90_ns, _p99_ns`` (ns; linear-interpolated percentiles, like pandas); ``launch_bound``
    (device time shorter than the launch call, HTA's ``n_gpu_shorter_than_cpu``);
    ``runtime_outliers`` (launch call longer than ``runtime_outlier_ns``) and
    ``delay_outliers`` (launch delay longer than ``launch_delay_outlier_ns``).
    """
    aggs = [
        pl.len().alias("launches"),
        *_dist("launch_dur", "cpu"),
        *_dist("dur", "gpu"),
        *_dist("launch_delay", "delay"),
        *_dist("launch_latency", "latency"),
        pl.col("launch_bound").sum().cast(pl.Int64).alias("launch_bound"),
        (pl.col("launch_dur") > runtime_outlier_ns).sum().cast(pl.Int64).alias("runtime_outliers"),
        (pl.col("launch_delay") > launch_delay_outlier_ns).sum().cast(pl.Int64).alias("delay_outliers"),
    ]
    if by:
        return launches.group_by(list(by)).agg(aggs).sort(list(by))
    return launches.select(aggs)


def launch_stats_by_kernel(launches: pl.LazyFrame, by: Sequence[str] = ()) -> pl.LazyFrame:
    """Per device-event name: launches, mean/p50/max launch delay and latency, launch-bound count.

    Sorted by total launch delay, the kernels whose launches keep the device waiting first.
    """
    keys = [*by, "name"]
    return (
        launches.group_by(keys)
        .agg(
            pl.len().alias("launches"),
            pl.col("launch_dur").mean().alias("cpu_mean_ns"),
            pl.col("dur").mean().alias("gpu_mean_ns"),
            pl.col("launch_delay").sum().alias("delay_sum_ns"),
            pl.col("launch_delay").mean().alias("delay_mean_ns"),
            pl.col("launch_delay").median().alias("delay_p50_ns"),
            pl.col("launch_delay").max().alias("delay_max_ns"),
            pl.col("launch_latency").mean().alias("latency_mean_ns"),
            pl.col("launch_bound").sum().cast(pl.Int64).alias("launch_bound"),
        )
        .sort(["delay_sum_ns", "name"], descending=[True, False])
    )


def launch_outliers(
    launches: pl.LazyFrame,
    runtime_outlier_ns: int = RUNTIME_OUTLIER_NS,
    launch_delay_outlier_ns: int = LAUNCH_DELAY_OUTLIER_NS,
) -> pl.LazyFrame:
    """Launches whose call took longer than ``runtime_outlier_ns`` or whose device start came
    more than ``launch_delay_outlier_ns`` after the call returned, worst delay first, with a
    ``reason`` column (``"slow_call"``, ``"late_start"`` or ``"both"``)."""
    slow = pl.col("launch_dur") > runtime_outlier_ns
    late = pl.col("launch_delay") > launch_delay_outlier_ns
    return (
        launches.filter(slow | late)
        .with_columns(
            pl.when(slow & late)
            .then(pl.lit("both"))
            .when(slow)
            .then(pl.lit("slow_call"))
            .otherwise(pl.lit("late_start"))
            .alias("reason")
        )
        .sort(["launch_delay", "launch_dur"], descending=True)
    )


def launch_histogram(
    launches: pl.LazyFrame, column: str = "launch_delay", edges_ns: Sequence[int] | None = None
) -> pl.LazyFrame:
    """Counts of ``column`` in buckets (default: <1 µs, 1-10 µs, 10-100 µs, 0.1-1 ms, 1-10 ms, ≥10 ms).

    Columns ``lo_ns`` (inclusive; the first bucket also holds negatives), ``hi_ns`` (exclusive,
    null for the last), ``count``; every bucket is present, empty ones with 0.
    """
    edges = list(edges_ns) if edges_ns is not None else [1_000, 10_000, 100_000, 1_000_000, 10_000_000]
    lows = [None, *edges]
    highs = [*edges, None]
    idx = pl.lit(0, dtype=pl.Int64)
    for e in edges:
        idx = idx + (pl.col(column) >= e).cast(pl.Int64)
    counts = (
        launches.select(idx.alias("bucket")).group_by("bucket").agg(pl.len().cast(pl.Int64).alias("count"))
    )
    frame = pl.LazyFrame(
        {
            "bucket": list(range(len(lows))),
            "lo_ns": [lo if lo is not None else None for lo in lows],
            "hi_ns": highs,
        },
        schema={"bucket": pl.Int64, "lo_ns": pl.Int64, "hi_ns": pl.Int64},
    )
    return (
        frame.join(counts, on="bucket", how="left")
        .with_columns(pl.col("count").fill_null(0))
        .sort("bucket")
        .drop("bucket")
    )
