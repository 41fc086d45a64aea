"""Collective instances: each rank's communication rows numbered so that one collective can be
found on every rank.

The rows are :func:`profui.analysis.comm.comm_ops`' (a rank's NCCL kernels where it has any,
else its host collectives). A process group runs its collectives in the same order on every
rank, so the k-th collective of a kind that a rank ran (``seq`` = k, counted per ``node, rank,
source, collective`` in start order) is the same collective as the k-th of that kind on every
other rank: rows with equal ``source, collective, seq`` are one collective instance.
"""

from __future__ import annotations

import polars as pl

from .comm import DEVICE_KERNEL, HOST_KINDS, HOST_OP, _host_compute, comm_ops, compute_kernels
from .engine import ENGINE
from .intervals import _lazy, clip_to_windows, merge_intervals, union_length
from .steps import DATA_LOADING, in_step

#: The columns of :func:`collective_instances`, in order.
INSTANCE_COLUMNS = [
    "node",
    "rank",
    "seq",
    "collective",
    "name",
    "source",
    "tid",
    "device",
    "stream",
    "arrive_ns",
    "end_ns",
]

#: A rank's collectives of one kind: ``seq`` counts within it.
SEQ_GROUP = ["node", "rank", "source", "collective"]
#: What makes rows of different ranks one collective instance.
INSTANCE_KEY = ["source", "collective", "seq"]


def collective_instances(events: pl.LazyFrame, comm: pl.DataFrame | None = None) -> pl.DataFrame:
    """Every communication row of each rank with its ``seq`` (0, 1, 2 … per ``node, rank,
    source, collective`` in start order), ``arrive_ns`` (the row's start: when the rank
    arrived at the collective) and ``end_ns`` (its end).

    Columns :data:`INSTANCE_COLUMNS`, sorted by ``node, rank, arrive_ns``. ``comm`` is
    :func:`~profui.analysis.comm.comm_ops`' frame with ``tid, device, stream`` kept, where the
    caller has it.
    """
    rows = (
        comm
        if comm is not None
        else comm_ops(events, keep=("tid", "device", "stream")).collect(engine=ENGINE)
    )
    # ties in start (two collectives enqueued in the same ns) are ordered by end, then thread
    # and stream, so that every rank numbers them alike
    ordered = rows.sort([*SEQ_GROUP, "ts", "dur", "tid", "stream", "name"], nulls_last=True)
    return (
        ordered.with_columns(
            pl.int_range(pl.len(), dtype=pl.Int64).over(SEQ_GROUP).alias("seq"),
            pl.col("ts").alias("arrive_ns"),
            (pl.col("ts") + pl.col("dur")).alias("end_ns"),
        )
        .select(INSTANCE_COLUMNS)
        .sort(["node", "rank", "arrive_ns", "source", "collective", "seq"], nulls_last=True)
    )


#: The classes of a rank's time before it arrives at a collective (:func:`arrivals`).
CAUSES = ("input", "host", "compute", "transfer")

#: The columns of :func:`arrivals`, in order.
ARRIVAL_COLUMNS = [
    "node",
    "rank",
    "step",
    "source",
    "collective",
    "seq",
    "arrive_ns",
    "end_ns",
    "from_ns",
    *(f"{c}_ns" for c in CAUSES),
]

_RANK = ["node", "rank"]


def _step_bounds(windows: pl.LazyFrame, sources: pl.LazyFrame) -> pl.LazyFrame:
    """Each rank's step windows on the clock its collectives are read on: the device window of
    a device-kernel rank (its CPU window where the step reached no device), the CPU window of a
    host-op rank — as ``cpu_start_ns, cpu_end_ns`` for :func:`~profui.analysis.steps.in_step`."""
    on_device = pl.col("source") == DEVICE_KERNEL
    return windows.join(sources, on=_RANK, how="inner", nulls_equal=True).select(
        *_RANK,
        "step",
        pl.when(on_device)
        .then(pl.coalesce("start_ns", "cpu_start_ns"))
        .otherwise(pl.col("cpu_start_ns"))
        .alias("cpu_start_ns"),
        pl.when(on_device)
        .then(pl.coalesce("end_ns", "cpu_end_ns"))
        .otherwise(pl.col("cpu_end_ns"))
        .alias("cpu_end_ns"),
    )


def _class_rows(events: pl.LazyFrame, sources: pl.DataFrame) -> dict[str, list[tuple[str, pl.LazyFrame]]]:
    """``node, rank, start, end`` of the rows of each class a stretch is cut into, in the order
    a class claims time before the next (:func:`arrivals`): a host-op rank's DataLoader fetches,
    then its other non-collective CPU ops; a device-kernel rank's memcpy/memset, then its
    compute kernels, then its host's DataLoader fetches (the device idle while the host loads)."""

    def iv(rows: pl.LazyFrame, source: str) -> pl.LazyFrame:
        ranks = sources.lazy().filter(pl.col("source") == source).select(_RANK)
        return rows.join(ranks, on=_RANK, how="semi", nulls_equal=True).select(
            *_RANK, pl.col("ts").alias("start"), (pl.col("ts") + pl.col("dur")).alias("end")
        )

    host_ranks = sources.filter(pl.col("source") == HOST_OP).select(_RANK)
    loading = events.filter(pl.col("kind").is_in(HOST_KINDS), pl.col("name").str.contains(DATA_LOADING))
    transfer = events.filter(pl.col("kind").is_in(["memcpy", "memset"]))
    return {
        HOST_OP: [
            ("input", iv(loading, HOST_OP)),
            ("compute", iv(_host_compute(events, host_ranks), HOST_OP)),
        ],
        DEVICE_KERNEL: [
            ("transfer", iv(transfer, DEVICE_KERNEL)),
            ("compute", iv(compute_kernels(events), DEVICE_KERNEL)),
            ("input", iv(loading, DEVICE_KERNEL)),
        ],
    }


def _claimed(stretches: pl.LazyFrame, classes: list[tuple[str, pl.LazyFrame]]) -> pl.LazyFrame:
    """Per stretch (``_sid``), each class's ``<class>_ns``: the time its rows cover in the
    stretch that no class before it covers (cumulative unions, each minus the one before)."""
    out = stretches.select("_sid")
    cuts: list[pl.DataFrame] = []
    before = pl.lit(0, pl.Int64)
    windows = stretches.select(*_RANK, pl.col("_sid").alias("step"), "w_start", "w_end")
    for name, frame in classes:
        # each class's union cut to the stretches once: the cumulative unions then merge only
        # the few pieces inside each stretch, never a rank's whole rows again
        cut = clip_to_windows(merge_intervals(frame, _RANK), windows, _RANK).select("step", "start", "end")
        cuts.append(cut.collect(engine=ENGINE))
        upto = union_length(pl.concat(cuts).lazy(), ["step"], f"_upto_{name}")
        out = out.join(upto.rename({"step": "_sid"}), on="_sid", how="left").with_columns(
            pl.col(f"_upto_{name}").fill_null(0)
        )
        out = out.with_columns((pl.col(f"_upto_{name}") - before).alias(f"{name}_ns"))
        before = pl.col(f"_upto_{name}")
    return out.with_columns(before.alias("_covered")).select(
        "_sid", "_covered", *(f"{n}_ns" for n, _ in classes)
    )


def arrivals(events: pl.LazyFrame, windows: pl.LazyFrame, comm: pl.DataFrame | None = None) -> pl.DataFrame:
    """Each rank's arrival at every collective inside a step, and what the rank did just before.

    The rows are :func:`collective_instances`' with ``step``: the step whose window holds the
    arrival (:func:`~profui.analysis.steps.in_step`; a device-kernel rank's device window, a
    host-op rank's CPU window; ``windows`` is the steps stage's ``windows.parquet``); rows
    outside every step are left out. ``from_ns`` is where the rank's stretch before the arrival
    starts: the end of its previous collective (the latest end of those it arrived at before),
    or the step's start where that is later. The stretch ``[from_ns, arrive_ns)`` is cut into
    ``input_ns`` (DataLoader fetches), ``transfer_ns`` (memcpy/memset), ``compute_ns`` (a host-op
    rank's CPU ops, a device-kernel rank's compute kernels) and ``host_ns``, the rest: nothing
    traced running — a host stall (on a device-kernel rank: the device waiting for the host). A
    class takes the time no class before it took (:func:`_class_rows`' order), so the four sum to
    the stretch. Depends on the rank's own events only: a per-rank table.
    Columns :data:`ARRIVAL_COLUMNS`, sorted by ``node, rank, arrive_ns``.
    """
    inst = collective_instances(events, comm)
    sources = inst.select(*_RANK, "source").unique()
    bounds = _step_bounds(_lazy(windows), sources.lazy())
    prev_end = pl.col("end_ns").cum_max().shift(1).over(_RANK, order_by=["arrive_ns", "seq"])
    found = (
        in_step(inst.lazy().with_columns(prev_end.alias("_prev")), bounds, ts="arrive_ns")
        .join(
            bounds.select(*_RANK, "step", pl.col("cpu_start_ns").alias("_ws")),
            on=[*_RANK, "step"],
            nulls_equal=True,
        )
        .with_columns(pl.min_horizontal(pl.max_horizontal("_ws", "_prev"), "arrive_ns").alias("from_ns"))
        .sort(*_RANK, "arrive_ns", "source", "collective", "seq", nulls_last=True)
        .with_row_index("_sid")
        .collect(engine=ENGINE)
    )
    stretches = found.lazy().select(
        "_sid", *_RANK, "source", pl.col("from_ns").alias("w_start"), pl.col("arrive_ns").alias("w_end")
    )
    parts = []
    present = set(found["source"])
    for source, classes in _class_rows(events, sources).items():
        if source in present:
            parts.append(_claimed(stretches.filter(pl.col("source") == source), classes))
    cut = (
        pl.concat(parts, how="diagonal").collect(engine=ENGINE)
        if parts
        else pl.DataFrame({"_sid": [], "_covered": []}, schema={"_sid": pl.UInt32, "_covered": pl.Int64})
    )
    absent = [pl.lit(None, pl.Int64).alias(f"{c}_ns") for c in CAUSES if f"{c}_ns" not in cut.columns]
    cut = cut.with_columns(absent).drop("host_ns", strict=False)
    zero = [pl.col(f"{c}_ns").fill_null(0) for c in CAUSES if c != "host"]
    return (
        found.join(cut, on="_sid", how="left")
        .sort("_sid")
        .with_columns(*zero, pl.col("_covered").fill_null(0))
        .with_columns((pl.col("arrive_ns") - pl.col("from_ns") - pl.col("_covered")).alias("host_ns"))
        .select(ARRIVAL_COLUMNS)
    )
