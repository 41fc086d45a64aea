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

from .comm import comm_ops
from .engine import ENGINE

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
        .sort(["node", "rank", "arrive_ns", "seq"], nulls_last=True)
    )
