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

A CUDA/HIP graph launch (``cudaGraphLaunch``, ``cuGraphLaunch``, ``hipGraphLaunch``) starts all
of its graph's device events under one correlation id: only the **first** of them (the earliest
start; of events starting at one ns, the first by :data:`TIE_ORDER`) measures that launch,
so only its row has a ``launch_delay`` and ``launch_latency``; the
later ones run in the graph's own order (a kernel late in a long graph starts 100+ ms after the
call without any launch waiting that long), and their two columns are null, left out of the
delay and latency statistics, histogram and outliers.

HTA's ``cuda_kernel_launch_stats`` (only launches through :data:`HTA_LAUNCH_NAMES`, any event
with an HTA stream, negative delays shown as 0) is
:func:`profui.analysis.hta_variants.hta_kernel_launches` over the same core.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Literal

import polars as pl

from .engine import ENGINE
from .intervals import Frame, _lazy
from .keys import varying

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

#: Launch calls that start a whole CUDA/HIP graph (one correlation id for all its device events).
GRAPH_LAUNCH = r"^(?:cuda|hip|cu)GraphLaunch"

#: How device events starting at the same ns are ordered (after ``ts``, and in
#: :func:`join_launches`' rows after ``correlation``): by these columns, nulls first.
TIE_ORDER: tuple[str, ...] = ("dur", "name", "kind", "device", "stream")

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


def group_by_varying(
    frame: Frame, by: Sequence[str], aggs: Sequence[pl.Expr], keys: Sequence[str] = ()
) -> pl.LazyFrame:
    """``frame`` grouped by ``by`` and ``keys``, ``aggs`` per group (columns ``by``, ``keys``,
    then the aggregates'; rows in no set order): of ``by``, the columns one value in every row
    (:func:`varying`) are taken as that value, not grouped by, and with no key left the whole
    frame is one group (unless it is empty: then no group). ``frame`` is collected for it."""
    rows = _lazy(frame).collect(engine=ENGINE)
    split = [*(varying([rows], by) if not rows.is_empty() else by), *keys]
    one = [pl.col(c).first() for c in by if c not in split]
    out = rows.lazy().group_by(split).agg(*one, *aggs) if split else rows.lazy().select(*one, *aggs)
    return out.select(*by, *keys, *(a.meta.output_name() for a in aggs))


def sort_in_groups(
    frame: Frame,
    groups: Sequence[str],
    order: Sequence[str],
    descending: Sequence[bool] | None = None,
    maintain_order: bool = False,
    nulls_last: bool = False,
) -> pl.LazyFrame:
    """``frame`` sorted by ``groups`` (ascending) then ``order`` (``descending`` per column):
    the rows of :meth:`polars.LazyFrame.sort` by them all, computed as a sort by ``order`` and
    then a stable sort by the ``groups`` that vary (:func:`varying`; ``frame`` is collected
    for it). Polars encodes every key of a sort by several columns into one row key, a string
    ``node`` among them: on df_index x20's 0.45M launches that sort took 4x the CPU of the
    two; the row index between them keeps the optimiser from merging the two sorts back into
    one."""
    frame = _lazy(frame).collect(engine=ENGINE)
    by_order = frame.lazy().sort(
        list(order),
        descending=list(descending or [False] * len(order)),
        maintain_order=maintain_order,
        nulls_last=nulls_last,
    )
    groups = varying([frame], groups)
    if not groups:
        return by_order
    return by_order.with_row_index("_sorted").sort(groups, maintain_order=True).drop("_sorted")


def sort_total(
    frame: pl.LazyFrame,
    groups: Sequence[str],
    order: Sequence[str],
    ties: Sequence[str],
    nulls_last: bool = False,
) -> pl.LazyFrame:
    """``frame`` sorted by ``groups`` (:func:`sort_in_groups`; none: a plain sort), then
    ``order``, then ``ties`` (``nulls_last`` for ``order`` and ``ties``), collected. Rows alike
    in the groups and ``order`` are neighbours after the sort by those: only where there are
    such rows is it sorted by ``ties`` too: string keys among them (names) took
    ``idle_breakdown``'s CPU on df_index x20, whose device events never share a start, from
    0.19 to 0.40 s."""

    rows = frame.collect(engine=ENGINE)  # once, not again for the sort by the ties
    groups = varying([rows], groups)

    def sort(by: list[str]) -> pl.DataFrame:
        return sort_in_groups(rows, groups, by, nulls_last=nulls_last).collect(engine=ENGINE)

    out = sort(list(order))
    keys = [*groups, *order]
    alike = pl.all_horizontal(pl.col(c).eq_missing(pl.col(c).shift(1)) for c in keys).slice(1)
    if out.height > 1 and out.select(alike.any()).item():
        out = sort([*order, *ties])
    return out.lazy()


def first_calls(calls: pl.LazyFrame, keys: Sequence[str] = ("node", "rank", "correlation")) -> pl.LazyFrame:
    """Launch ``calls`` (with ``keys`` and ``launch_ts``) cut to one per correlation id of a rank
    (``keys``: ``correlation`` alone where ``calls`` are one rank's): the earliest, so a device
    event is never counted twice."""
    return calls.sort("launch_ts").unique(subset=list(keys), keep="first", maintain_order=True)


def join_by_rank(
    left: pl.LazyFrame,
    right: pl.LazyFrame,
    how: Literal["inner", "left"] = "inner",
    per_rank: Callable[[pl.LazyFrame], pl.LazyFrame] | None = None,
) -> pl.LazyFrame:
    """``left`` joined to ``right`` on ``node, rank, correlation`` (``per_rank``: applied to
    each rank's rows of ``right`` first), one rank at a time: a join keyed on the integer
    correlation id alone costs 2/3 of one keyed on all three, which Polars encodes row by row
    (df_index x20's 0.45M device events to 0.85M launch calls, first calls included: 0.20 ->
    0.13 CPU-s; the three-key join grew 2.7x faster than the rows from 1x to 20x)."""
    right_df = right.collect(engine=ENGINE)
    by_rank = right_df.partition_by("node", "rank", as_dict=True, maintain_order=True)
    none = right_df.head(0)
    parts = []
    for key, rows in (
        left.collect(engine=ENGINE).partition_by("node", "rank", as_dict=True, maintain_order=True).items()
    ):
        # a join matches no null key
        mine = by_rank.get(key, none) if None not in key else none
        if how == "inner" and mine.is_empty():
            continue
        r = mine.lazy() if per_rank is None else per_rank(mine.lazy())
        parts.append(rows.lazy().join(r.drop("node", "rank"), on="correlation", how=how))
    if not parts:  # nothing to join: the empty frame of the join's columns
        return left.head(0).join(right.head(0), on=["node", "rank", "correlation"], how=how)
    return pl.concat(parts)


def launch_times(launches: Frame) -> pl.LazyFrame:
    """``node, rank, correlation, launch_ts`` of each launch call that :func:`kernel_launches`
    matched to device work (``launches``: its frame): the calls its rule chose, for an analysis
    that joins device events to their launch again."""
    return (
        _lazy(launches)
        .select("node", "rank", "correlation", "launch_ts")
        .unique(subset=["node", "rank", "correlation"], keep="any")
    )


def kernel_launches(events: pl.LazyFrame) -> pl.LazyFrame:
    """One row per launched device event joined to its launch call (columns :data:`LAUNCH_COLUMNS`).

    The join is on ``(node, rank, correlation)``; device events without a matching host call
    (e.g. the host side was not recorded) are left out. When a correlation id appears on more
    than one host call of a rank (not seen in practice) the earliest call is used, so a device
    event is never counted twice. Times are ns.
    """
    device = events.filter(pl.col("kind").is_in(LAUNCHED_KINDS))
    return join_launches(launch_calls(events), device)


def _call_columns(calls: pl.LazyFrame) -> pl.LazyFrame:
    """Launch ``calls`` as a link's call columns: ``node, rank, correlation`` and ``launch_*``."""
    return calls.select(
        "node",
        "rank",
        "correlation",
        pl.col("name").alias("launch_name"),
        pl.col("tid").alias("launch_tid"),
        pl.col("ts").alias("launch_ts"),
        pl.col("dur").alias("launch_dur"),
    )


#: A device event's columns in a link (the first of :data:`LAUNCH_COLUMNS`).
_DEVICE_COLUMNS = LAUNCH_COLUMNS[: LAUNCH_COLUMNS.index("dur") + 1]

#: The columns of :func:`sync_links`: a launch link's, less what only launched work has (its
#: kind and the launch's delay, latency and bound).
SYNC_LINK_COLUMNS: tuple[str, ...] = tuple(
    c for c in LAUNCH_COLUMNS if c not in ("kind", "launch_delay", "launch_latency", "launch_bound")
)


def sync_links(events: pl.LazyFrame) -> pl.LazyFrame:
    """One row per device-side sync event (kind ``sync``: cudaStreamWaitEvent,
    cudaStreamSynchronize, cudaEventQuery on a stream) joined to the host call that issued it
    (columns :data:`SYNC_LINK_COLUMNS`), as :func:`kernel_launches` joins launched work: on
    ``(node, rank, correlation)``, the earliest call of a correlation id, events without a call
    left out. Not launched work, so no launch delay: the timeline links the pair and draws the
    call on its GPU's launch lane. Rows by node, rank, ``ts``, ``correlation``, then name,
    device, stream and duration."""
    device = events.filter((pl.col("kind") == "sync") & pl.col("correlation").is_not_null()).select(
        [c for c in _DEVICE_COLUMNS if c != "kind"]
    )
    joined = join_by_rank(
        device, _call_columns(launch_calls(events)), per_rank=lambda c: first_calls(c, ["correlation"])
    )
    return joined.pipe(
        sort_total, ["node", "rank"], ["ts", "correlation"], ["name", "device", "stream", "dur"]
    ).select(SYNC_LINK_COLUMNS)


def join_launches(calls: pl.LazyFrame, device: pl.LazyFrame, clamp_delay: bool = False) -> pl.LazyFrame:
    """:func:`kernel_launches` from chosen launch ``calls`` and ``device`` events;
    ``clamp_delay`` shows negative launch delays as 0 (HTA's way). Rows by node, rank, ``ts``,
    ``correlation``, then :data:`TIE_ORDER` (a graph launch's measured event first of its
    equals): a function of the events, not of their row order."""
    calls = _call_columns(calls)
    device = device.filter(pl.col("correlation").is_not_null()).select(_DEVICE_COLUMNS)
    delay = pl.col("ts") - pl.col("launch_ts") - pl.col("launch_dur")
    if clamp_delay:
        delay = pl.max_horizontal(delay, pl.lit(0, dtype=pl.Int64))
    # a graph launch's later device events run in the graph's order: no launch latency of theirs.
    # A correlation id has one call, so its rows are all a graph launch's or none are: the
    # window that finds the first runs over the graph launches' rows alone (few, where any)
    joined = join_by_rank(device, calls, per_rank=lambda c: first_calls(c, ["correlation"]))
    graph = pl.col("launch_name").str.contains(GRAPH_LAUNCH)
    # a graph's events numbered in the tie rule's order (the first, 0, is measured); rows alike
    # in every sort key are alike in every column but this number, so which gets 0 is moot
    ordinal = pl.int_range(pl.len(), dtype=pl.Int64).over(["node", "rank", "correlation"])
    parts = [
        joined.filter(~graph).with_columns(_ord=pl.lit(0, dtype=pl.Int64)),
        joined.filter(graph).sort(["ts", *TIE_ORDER]).with_columns(_ord=ordinal),
    ]
    measured = pl.col("_ord") == 0
    # correlation and the tie rule break ties: device events of one rank may start at the
    # same ns (µs traces), a graph launch's under one correlation id
    return (
        pl.concat(parts)
        .with_columns(
            pl.when(measured).then(delay).otherwise(None).alias("launch_delay"),
            pl.when(measured)
            .then(pl.col("ts") - pl.col("launch_ts"))
            .otherwise(None)
            .alias("launch_latency"),
            (pl.col("dur") < pl.col("launch_dur")).alias("launch_bound"),
        )
        .pipe(sort_total, ["node", "rank"], ["ts", "correlation"], ["_ord", *TIE_ORDER])
        .select(LAUNCH_COLUMNS)
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
    if not by:
        return launches.select(aggs)
    # a one-rank trace's node and rank not grouped by: on df_index x20 (one group) the group-by
    # took 2.3x the CPU of the select (25 -> 11 ms), its quantiles by group
    return group_by_varying(launches, by, aggs).sort(list(by))


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
    rows = (
        _lazy(launches)
        .filter(slow | late)
        .with_columns(
            pl.when(slow & late)
            .then(pl.lit("both"))
            .when(slow)
            .then(pl.lit("slow_call"))
            .otherwise(pl.lit("late_start"))
            .alias("reason")
        )
        .collect(engine=ENGINE)
    )
    # ties in the launches' order (node, rank, ts, correlation): the same run to run and by
    # ranks, where each rank's outliers are concatenated in (node, rank) order
    return sort_descending(rows, ["launch_delay", "launch_dur"])


def sort_descending(rows: pl.DataFrame, by: Sequence[str]) -> pl.LazyFrame:
    """``rows`` sorted by the integer columns ``by``, each descending with nulls first, rows
    alike in them in the order they have: by one key that packs them, where their ranges fit
    in an Int64 (else by the columns). A stable sort by two columns took 2.7x the CPU of one by
    a packed key (df_index x20's 178k launch outliers: 19 -> 7 ms; launch_outliers 29 -> 18)."""
    key, size = pl.lit(0, pl.Int64), 1
    for c in by:
        if not rows.schema[c].is_signed_integer():
            size = 1 << 63
            break
        lo, hi = rows.select(pl.col(c).min(), pl.col(c).max().alias("_hi")).row(0)
        if lo is None:  # every value null: one code
            continue
        codes = int(hi) - int(lo) + 2  # a value's hi - value + 1, from 1 to hi - lo + 1; null's 0
        size *= codes
        key = key * codes + (pl.lit(hi, pl.Int64) - pl.col(c).cast(pl.Int64) + 1).fill_null(0)
    if size >= 1 << 63:
        return rows.lazy().sort(list(by), descending=True, maintain_order=True)
    return rows.lazy().with_columns(key.alias("_key")).sort("_key", maintain_order=True).drop("_key")


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
    launches = launches.filter(pl.col(column).is_not_null())  # a graph's later events: none
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


# -- ATen ops and the kernels they launch ---------------------------------------------------

#: Columns of :func:`aten_op_kernels`.
ATEN_OP_COLUMNS: tuple[str, ...] = (
    "node",
    "rank",
    "aten_op",
    "kernel_sequence",
    "count",
    "mean_aten_op_delay_ns",
    "mean_runtime_delay_ns",
)


def aten_op_kernels(events: pl.LazyFrame, launches: Frame | None = None) -> pl.LazyFrame:
    """Which device work each ATen op launches, how often, and the delays of its first launch.

    Every launch (a runtime/driver call joined to its kernel, memcpy or memset by correlation:
    :func:`kernel_launches`, or correlate's ``launches`` table when given) goes to the innermost
    ``aten::`` CPU op of its thread that wraps the call. Per op instance its launched work, in
    launch order, forms the ``kernel_sequence`` (names joined by ``" -> "``); its first launch
    gives the ``aten_op_delay`` (op start → launch call start) and the ``runtime_delay`` (launch
    call start → device start). Per ``node, rank, aten_op, kernel_sequence``: ``count`` (op
    instances) and ``mean_aten_op_delay_ns`` / ``mean_runtime_delay_ns`` (means rounded to whole
    ns). Most frequent first. (HTA's ``aten_op_kernels_and_delay``:
    :func:`profui.analysis.hta_variants.hta_aten_op_kernels`.)
    """
    links = kernel_launches(events) if launches is None else _lazy(launches)
    calls = sort_in_groups(links, ["node", "rank"], ["launch_ts"], maintain_order=True).select(
        "node",
        "rank",
        pl.col("launch_tid").alias("tid"),
        pl.int_range(pl.len(), dtype=pl.Int64).alias("call_ord"),
        pl.col("launch_ts").alias("call_ts"),
        (pl.col("launch_ts") + pl.col("launch_dur")).alias("call_end"),
        pl.col("name").alias("kernel_name"),
        pl.col("ts").alias("kernel_ts"),
    )
    # the name test on the CPU ops alone, held first: as one filter Polars tested every event's
    # name (df_index x20: 30 -> 22 ms CPU)
    cpu_ops = events.filter(pl.col("kind") == "cpu_op").select("node", "rank", "tid", "name", "ts", "dur")
    ops = cpu_ops.collect(engine=ENGINE).lazy().filter(pl.col("name").str.starts_with("aten::"))
    return op_rows(op_instances(deepest_ops(calls, ops, same_thread=True)))


def launch_device_pairs(
    events: pl.LazyFrame, device: pl.LazyFrame, names_re: str | None = None
) -> pl.LazyFrame:
    """Launch calls (``names_re``: only names matching it) joined on ``node, rank,
    correlation`` to the ``device`` events they launched: ``node, rank, tid, call_ts,
    call_end, kernel_name, kernel_ts`` and ``call_ord``, the call's place in trace order
    (HTA's ``hta_order`` where there is one, else the row order of ``events``)."""
    if "hta_order" not in events.collect_schema().names():
        events = events.with_row_index("hta_order")
    calls = launch_calls(events)
    if names_re is not None:
        calls = calls.filter(pl.col("name").str.contains(names_re))
    calls = calls.select(
        "node",
        "rank",
        "tid",
        "correlation",
        pl.col("hta_order").cast(pl.Int64).alias("call_ord"),
        pl.col("ts").alias("call_ts"),
        (pl.col("ts") + pl.col("dur")).alias("call_end"),
    )
    dev = device.filter(pl.col("correlation").is_not_null()).select(
        "node", "rank", "correlation", pl.col("name").alias("kernel_name"), pl.col("ts").alias("kernel_ts")
    )
    return calls.join(dev, on=["node", "rank", "correlation"], how="inner").drop("correlation")


def _sparse_max(values: pl.Series) -> list[pl.Series]:
    """Sparse table: level ``k`` holds the max of ``values[i : i + 2**k]`` at ``i``."""
    table = [values]
    k = 1
    while (1 << k) <= len(values):
        prev, half = table[-1], 1 << (k - 1)
        a, b = prev.head(len(prev) - half), prev.slice(half)
        table.append(a.zip_with(a >= b, b))
        k += 1
    return table


#: How many of a call's nearest candidates :func:`_last_wrapping` looks at one by one before it
#: builds the sparse table: the op wrapping a launch is nearly always the last op left to start
#: by then (df_index: 20,250 of the 20,270 wrapped launches; the rest the one before it), so the
#: table (log2(ops) passes over every op) is built for the rare calls left, if any.
NEAREST_CANDIDATES = 8


def _last_wrapping(op_end: pl.Series, start: pl.Series, cur: pl.Series, e: pl.Series) -> pl.Series:
    """Per query: the largest index ``i`` in ``[start, cur)`` with ``op_end[i] >= e``, −1 when
    none. The :data:`NEAREST_CANDIDATES` nearest (``cur - 1`` down) are looked at first; the
    queries they do not answer skip blocks over a sparse max table of ``op_end``."""
    out = pl.repeat(-1, len(cur), dtype=pl.Int64, eager=True)
    todo = pl.int_range(len(cur), dtype=pl.Int64, eager=True)
    lo, hi, want = start, cur, e
    for step in range(1, NEAREST_CANDIDATES + 1):
        if todo.is_empty() or op_end.is_empty():
            return out
        i = hi - step
        has = i >= lo
        hit = has & (op_end.gather(i.clip(lower_bound=0)) >= want)
        out.scatter(todo.filter(hit), i.filter(hit))
        more = has & ~hit
        todo, lo, hi, want = (s.filter(more) for s in (todo, lo, hi, want))
    if not todo.is_empty():
        out.scatter(todo, _table_search(op_end, lo, hi - NEAREST_CANDIDATES, want))
    return out


def _table_search(op_end: pl.Series, start: pl.Series, cur: pl.Series, e: pl.Series) -> pl.Series:
    """:func:`_last_wrapping` for every query at once by block skipping over a sparse max table
    of ``op_end``."""
    table = _sparse_max(op_end)
    for k in range(len(table) - 1, -1, -1):
        idx = cur - (1 << k)
        skip = (idx >= start) & (table[k].gather(idx.clip(lower_bound=0)) < e)
        cur = cur.zip_with(~skip, idx)
    return pl.select(pl.when(cur > start).then(cur - 1).otherwise(-1)).to_series()


def deepest_ops(calls: pl.LazyFrame, ops: pl.LazyFrame, same_thread: bool = True) -> pl.LazyFrame:
    """Each of :func:`launch_device_pairs`' ``calls`` with the latest-starting op of ``ops`` that
    wraps it (``op_ts <= call_ts`` and ``op_end >= call_end``): ``op_tid, aten_op, op_ts`` and
    ``op_row`` added; calls no op wraps are left out.

    ``same_thread``: only ops of the call's thread, and of ops starting at the same ns the
    shortest (innermost). Otherwise (HTA) any thread of the rank, and of ops starting at the
    same time the first in event order. Of a thread's ops alike in start and end, the last in
    event order (a profiler lists an op before those it calls, which may share its µs).
    ``node``, ``rank`` and ``tid`` are never null in a trace (the format's folders and columns).

    ``op_row`` names the op instance by a row of ``ops``: the op's, or of ops alike in node,
    rank, thread, name and start the first (:func:`op_instances` groups by that one integer).
    """
    columns = [*calls.collect_schema().names(), "op_tid", "aten_op", "op_ts", "op_row"]
    op_frame = ops.collect(engine=ENGINE)
    call_frame = calls.with_row_index("_call").collect(engine=ENGINE)
    keys = varying([op_frame, call_frame], ["node", "rank", "tid"] if same_thread else ["node", "rank"])
    # the op's name is read for the ops picked alone: carried through the sorts below, it was
    # gathered at every one of them (a string column)
    o = (
        op_frame.lazy()
        .with_row_index("_ord")
        .select(
            *keys,
            "_ord",
            pl.col("tid").alias("op_tid"),
            pl.col("ts").alias("op_ts"),
            (pl.col("ts") + pl.col("dur")).alias("op_end"),
        )
    )
    # the search takes the last candidate in this order: of equal starts the innermost (or
    # HTA's first in event order), of equal spans the last in event order
    order = ["op_ts", "op_end", "_ord"] if same_thread else ["op_ts", "_ord"]
    descending = [False, True, False] if same_thread else [False, True]
    # an op wrapping a call holds the call's start: ops holding none (most, where launches are
    # few among many ops) are left out before anything else is done with them. Any call's
    # start, not only its group's: an op left in that wraps no call of its group is never
    # picked, and a join without the group's keys costs 1/6 of one with them (df_index x20)
    starts = call_frame.lazy().select(pl.col("call_ts").alias("_next")).sort("_next")
    o = (
        o.sort("op_ts")
        .join_asof(starts, left_on="op_ts", right_on="_next", strategy="forward", check_sortedness=False)
        .filter(pl.col("_next") <= pl.col("op_end"))
        .drop("_next")
    )
    # the ops of every group in one array, a group's ops together and in start order: a call's
    # candidates are the ops of its group from the group's first to the last starting by it
    # (a group's first row: the first whose keys differ from the row before, the groups being
    # contiguous; a window over the keys hashed them all again)
    first_of_group = (
        pl.any_horizontal(pl.col(k).ne_missing(pl.col(k).shift()) for k in keys)
        if keys
        else pl.col("_i") == 0
    )
    grouped = (
        sort_in_groups(o, keys, order, descending)
        .with_row_index("_i")
        .with_columns(pl.col("_i").cast(pl.Int64))
        .with_columns(pl.when(first_of_group).then(pl.col("_i")).forward_fill().alias("_g0"))
        # the latest end of a group's ops up to each: a call ending after it has no wrapping op
        # (df_index: 1 in 11), which the search then need not prove op by op
        .with_columns(pl.col("op_end").cum_max().over("_g0").alias("_reach"))
        .collect(engine=ENGINE)
    )
    run_end = (pl.col("op_ts").shift(-1) != pl.col("op_ts")) | (pl.col("_g0").shift(-1) != pl.col("_g0"))
    last_start = (
        grouped.lazy()
        .filter(run_end.fill_null(True))
        .select("_g0", "op_ts", pl.col("_i") + 1, "_reach")
        .sort("op_ts")
    )
    # a call's group named by its first op's index (a join to one row per group), so the as-of
    # join goes by that one integer, not by the keys, a string among them (deepest_ops on
    # df_index x20: 144 -> 133 ms CPU)
    groups = grouped.lazy().filter(pl.col("_i") == pl.col("_g0")).select(*keys, "_g0")
    # the calls' other columns, a string among them, stay out of the sorts (put back beside)
    candidates = call_frame.lazy().select("_call", *keys, "call_ts")
    candidates = (
        (
            candidates.join(groups, on=keys, how="left")
            if keys
            else candidates.with_columns(_g0=pl.lit(0, pl.Int64))
        )
        .sort("call_ts")
        .join_asof(
            last_start,
            left_on="call_ts",
            right_on="op_ts",
            by="_g0",
            strategy="backward",
            check_sortedness=False,
        )
        .sort("_call")
        .select("_g0", "_i", "_reach")
    )
    c = pl.concat([call_frame, candidates.collect(engine=ENGINE)], how="horizontal")
    if grouped.is_empty():  # no op to wrap any call
        schema = {
            "op_tid": op_frame.schema["tid"],
            "aten_op": op_frame.schema["name"],
            "op_ts": op_frame.schema["ts"],
        }
        none = pl.DataFrame(schema={**schema, "op_row": pl.Int64})
        return c.head(0).join(none, how="cross").select(columns).lazy()
    start = c["_g0"].fill_null(0)
    # no candidate for a call no op of its group reaches past
    cur = c.select(pl.when(pl.col("_reach") >= pl.col("call_end")).then("_i").otherwise(start)).to_series()
    i = _last_wrapping(grouped["op_end"], start, cur, c["call_end"])
    found = i >= 0
    at = i.filter(found)
    op = grouped.select("op_tid", "op_ts", "_ord")[at]
    names = op_frame.get_column("name")
    picked = pl.DataFrame(
        {
            "op_tid": op.get_column("op_tid"),
            "aten_op": names.gather(op.get_column("_ord")),
            "op_ts": op.get_column("op_ts"),
            "op_row": _instance_rows(grouped, names).gather(at),
        }
    )
    return pl.concat([c.filter(found), picked], how="horizontal").select(columns).lazy()


def _instance_rows(grouped: pl.DataFrame, names: pl.Series) -> pl.Series:
    """Per op of :func:`deepest_ops`' ``grouped`` (ops by group, then start): its row in the ops
    (``_ord``), or of ops alike in group, start, thread and name the first. Alike ops start
    together in one group, so they lie in one run of equal starts: runs of one op (nearly all)
    are their own instance, and only the ops of longer runs are compared by name."""
    rows = grouped.get_column("_ord").cast(pl.Int64)
    same_run = (pl.col("_g0") == pl.col("_g0").shift()) & pl.col("op_ts").eq_missing(pl.col("op_ts").shift())
    shared = grouped.filter((same_run | same_run.shift(-1)).fill_null(False))
    if shared.is_empty():
        return rows
    first = shared.with_columns(names.gather(shared.get_column("_ord")).alias("_name")).select(
        "_i", pl.col("_ord").cast(pl.Int64).min().over("_g0", "op_ts", "op_tid", "_name")
    )
    return rows.scatter(first.get_column("_i"), first.get_column("_ord"))


def in_order_within(frame: pl.DataFrame, groups: Sequence[str], order: Sequence[str]) -> bool:
    """Whether each group of rows alike in ``groups`` lies in one run of the frame and is
    strictly ascending in ``order`` (compared as a tuple, nulls never in order): then a sort by
    ``order`` leaves each group's rows in the order they have (a strict order has no ties)."""
    ascending = pl.lit(False)
    for c in reversed(order):
        prev = pl.col(c).shift()
        ascending = (pl.col(c) > prev) | ((pl.col(c) == prev) & ascending)
    new_run = pl.any_horizontal(pl.col(g).ne_missing(pl.col(g).shift()) for g in groups)
    runs = frame.select(new_run.alias("_new"), (new_run | ascending.fill_null(False)).alias("_ok"))
    if not runs["_ok"].all():
        return False
    return not frame.filter(runs["_new"]).select(groups).is_duplicated().any()


def op_instances(
    matched: pl.LazyFrame, launch_order: Sequence[str] = ("call_ts", "call_ord")
) -> pl.LazyFrame:
    """Per op instance (``node, rank, op_tid, aten_op, op_ts``) of :func:`deepest_ops`' rows: its
    ``kernel_sequence`` (the launched names in ``launch_order`` — time; HTA: trace order — as a
    list of categories; :func:`op_rows` joins them) and the first launch's ``aten_op_delay`` /
    ``runtime_delay``. Grouped by :func:`deepest_ops`' ``op_row`` where ``matched`` has it (one
    integer, not five columns, two of them strings), and only where an op launched more than
    once (df_index x20: 87 -> 39 ms CPU)."""
    keys = ["node", "rank", "op_tid", "aten_op", "op_ts"]
    rows = matched.collect(engine=ENGINE)
    # a group's list takes its rows in frame order, and every group lies in one node and rank:
    # rows already in launch order there (aten_op_kernels' calls are) need no sort of them all
    if not in_order_within(rows, ["node", "rank"], launch_order):
        rows = rows.sort(list(launch_order))
    # a list of categories, not a joined string nor a list of strings: op_rows groups by it,
    # and by lists of integer codes 5x cheaper than by lists of names (df_index x20: 88 -> 18
    # ms CPU), 3x cheaper than by one long string per op instance
    kernels = pl.col("kernel_name").cast(pl.Categorical)
    first = [pl.col("call_ts").first().alias("_call_ts"), pl.col("kernel_ts").first().alias("_kernel_ts")]
    if "op_row" in rows.columns:
        # an op of one launch (df_index x20: 343k of 405k launches) is its row: only the others
        # are grouped, and their keys are taken from the first row, not grouped by
        alone = rows.get_column("op_row").is_unique()
        one = rows.filter(alone).select(
            *keys,
            pl.concat_list(kernels).alias("kernel_sequence"),
            pl.col("call_ts").alias("_call_ts"),
            pl.col("kernel_ts").alias("_kernel_ts"),
        )
        several = (
            rows.filter(~alone)
            .group_by("op_row")
            .agg(*(pl.col(k).first() for k in keys), kernels.alias("kernel_sequence"), *first)
            .drop("op_row")
        )
        instances = pl.concat([one, several]).lazy()
    else:
        instances = rows.lazy().group_by(keys).agg(kernels.alias("kernel_sequence"), *first)
    return instances.select(
        *keys,
        "kernel_sequence",
        (pl.col("_call_ts") - pl.col("op_ts")).alias("aten_op_delay"),
        (pl.col("_kernel_ts") - pl.col("_call_ts")).alias("runtime_delay"),
    )


def op_rows(instances: pl.LazyFrame) -> pl.LazyFrame:
    """:func:`aten_op_kernels`' rows from :func:`op_instances`."""
    aggs = [
        pl.len().cast(pl.Int64).alias("count"),
        pl.col("aten_op_delay").mean().round(0).cast(pl.Int64).alias("mean_aten_op_delay_ns"),
        pl.col("runtime_delay").mean().round(0).cast(pl.Int64).alias("mean_runtime_delay_ns"),
    ]
    return (
        group_by_varying(instances, ["node", "rank"], aggs, keys=["aten_op", "kernel_sequence"])
        .with_columns(pl.col("kernel_sequence").list.eval(pl.element().cast(pl.String)).list.join(" -> "))
        .sort(
            ["node", "rank", "count", "aten_op", "kernel_sequence"],
            descending=[False, False, True, False, False],
        )
        .select(ATEN_OP_COLUMNS)
    )
