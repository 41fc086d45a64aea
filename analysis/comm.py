"""Communication: collectives by kind, overlap with compute, ranks, stragglers.

Two sources describe a collective, and each rank's communication is read from one of them:

- ``device kernel``: NCCL/RCCL kernels, device kernels whose name matches :data:`COMM_PATTERN`
  (HTA's ``^nccl.*Kernel``, after a ``void``: ``ncclKernel_AllReduce_RING_LL_Sum_float``,
  ``ncclDevKernel_SendRecv``; and RCCL's ``rccl_main_kernel``). The collective
  comes from the kernel name (``AllReduce``, ``Broadcast``, ``SendRecv`` ...), else from the
  ``Collective name`` argument Kineto records, else ``other``. Computation is every other kernel.
- ``host op``: the CPU-side ranges of the process group, where a rank has no communication
  kernels (gloo, or CPU-only traces of any backend). A backend range (``gloo:all_reduce``,
  ``nccl:broadcast``, ``mpi:…``, ``ucc:…``) is where the collective runs — for gloo on a worker
  thread; where a rank records none, its ``c10d::allreduce_``-style dispatcher ops stand in.
  The collective is the op name in NCCL's spelling (``all_reduce``/``allreduce_`` → ``AllReduce``);
  bytes are the first input's elements × element size where the profiler recorded shapes.
  Computation is the rank's other CPU ops (the only computation a host trace records).

A rank with communication kernels is read from them alone: its ``nccl:*`` and ``c10d::*`` host
ranges describe the same collectives (their enqueue) and would count them twice. Every table
says which source each row was read from (``source``). Under ``hta_compat`` only device kernels
count, as in HTA. (HTA's rule — not communication, not ``Memcpy``/``Memset``, not ``...Sync``,
over HTA's GPU events — is in :func:`profui.analysis.hta_variants.hta_comm_comp_overlap`.)
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import NamedTuple

import polars as pl

from .args import int_member, str_member
from .engine import ENGINE
from .intervals import Frame, _lazy, clip_to_windows, merge_intervals, union_length

#: HTA's rule for communication kernels (``hta/utils/utils.py``, by name, case as written):
#: read by name wherever profui reproduces HTA (``hta_compat``, HTA's kernel types).
HTA_COMM_PATTERN = r"^nccl.*Kernel"
#: profui's one rule for communication kernels, read by every surface (communication, the
#: critical path, precision, the timeline): HTA's, which the kernels of both NCCL
#: (``ncclKernel_AllReduce_RING_LL_Sum_float``, ``ncclDevKernel_SendRecv``) and RCCL (which keeps
#: NCCL's names: ``ncclDevKernel_Generic``) match, also after the ``void`` a template kernel's
#: demangled name begins with (``void ncclKernel_AllReduce_DDA_Flat<float, 8u>(...)``), and
#: RCCL's general kernel of ROCm 5 to 6.0, ``rccl_main_kernel``. precision's rule before it
#: (``^(void )?(nccl|rccl)``) counted both.
COMM_PATTERN = r"^(?:void )?(?:nccl.*Kernel|rccl_main_kernel)"

_COLLECTIVE_FROM_NAME = r"^(?:void )?nccl(?:Dev)?Kernel_([A-Za-z]+?)(?:_|\(|$)"

#: Bytes per element of the ``dtype`` argument of NCCL kernels.
DTYPE_BYTES: dict[str, int] = {
    "Float": 4,
    "Double": 8,
    "Half": 2,
    "BFloat16": 2,
    "Int": 4,
    "Long": 8,
    "Short": 2,
    "Byte": 1,
    "Char": 1,
    "Bool": 1,
    "Float8_e4m3fn": 1,
    "Float8_e5m2": 1,
}


#: The ``source`` of a row read from communication kernels.
DEVICE_KERNEL = "device kernel"
#: The ``source`` of a row read from the process group's host ranges.
HOST_OP = "host op"

#: Event kinds host collectives are recorded as (``cpu_op``, ``record_function`` ranges).
HOST_KINDS = ("cpu_op", "annotation")
#: A process-group backend's range around a collective (``gloo:all_reduce``, ``nccl:broadcast``).
BACKEND_RANGE = r"^(?:gloo|nccl|mpi|ucc):[A-Za-z_]+$"
#: A c10d dispatcher op (``c10d::allreduce_``), counted only where a rank has no backend range.
C10D_OP = r"^c10d::[A-Za-z_]+$"
#: The prefixes :data:`BACKEND_RANGE` and :data:`C10D_OP` start with.
_HOST_PREFIXES = ("gloo:", "nccl:", "mpi:", "ucc:", "c10d::")

#: Host op names (lower case, underscores dropped) in NCCL's spelling of the collective.
HOST_COLLECTIVES: dict[str, str] = {
    "allreduce": "AllReduce",
    "allgather": "AllGather",
    "allgatherbase": "AllGather",
    "allgatherintotensorcoalesced": "AllGather",
    "reducescatter": "ReduceScatter",
    "reducescatterbase": "ReduceScatter",
    "reducescattertensorcoalesced": "ReduceScatter",
    "broadcast": "Broadcast",
    "reduce": "Reduce",
    "alltoall": "AllToAll",
    "alltoallbase": "AllToAll",
    "send": "Send",
    "recv": "Recv",
    "barrier": "Barrier",
    "gather": "Gather",
    "scatter": "Scatter",
}

#: Bytes per element of the ``Input type`` torch records for a host op's inputs.
TORCH_TYPE_BYTES: dict[str, int] = {
    "float": 4,
    "double": 8,
    "c10::Half": 2,
    "c10::BFloat16": 2,
    "int": 4,
    "long int": 8,
    "short int": 2,
    "signed char": 1,
    "unsigned char": 1,
    "bool": 1,
    "c10::Float8_e4m3fn": 1,
    "c10::Float8_e5m2": 1,
}

_RANK = ["node", "rank"]
#: The columns every communication row has, whichever its source.
_COMM_COLUMNS = ["node", "rank", "ts", "dur", "name", "collective", "msg_bytes", "source"]


def _device_kernels(events: pl.LazyFrame) -> pl.LazyFrame:
    return events.filter(pl.col("kind") == "kernel")


def _named(rows: pl.LazyFrame, matches: pl.Expr, keep: bool = True) -> pl.LazyFrame:
    """``rows`` whose name ``matches`` (or, ``keep=False``, does not): the test runs once per
    distinct name — kernel names are long and repeat thousands of times."""
    names = rows.select("name").unique().filter(matches)
    return rows.join(names, on="name", how="semi" if keep else "anti")


def comm_kernels(events: pl.LazyFrame) -> pl.LazyFrame:
    """Communication kernels with ``collective``, ``dtype``, ``nelems``, ``msg_bytes``,
    ``group_size`` (nulls where the trace did not record them) besides the event columns."""
    return with_collective(_named(_device_kernels(events), pl.col("name").str.contains(COMM_PATTERN)))


def with_collective(k: pl.LazyFrame) -> pl.LazyFrame:
    """Communication kernels ``k`` with :func:`comm_kernels`' extra columns."""
    from_name = pl.col("name").str.extract(_COLLECTIVE_FROM_NAME, 1)
    from_args = str_member("Collective name")
    dtype = str_member("dtype")
    nelems = int_member("In msg nelems")
    out_nelems = int_member("Out msg nelems")
    group = int_member("Group size")
    width = dtype.replace_strict(DTYPE_BYTES, default=None, return_dtype=pl.Int64)
    return k.with_columns(
        pl.coalesce(from_name, from_args, pl.lit("other")).alias("collective"),
        dtype.alias("dtype"),
        nelems.alias("nelems"),
        (pl.max_horizontal(nelems, out_nelems) * width).alias("msg_bytes"),
        group.alias("group_size"),
    )


def host_comm_ops(events: pl.LazyFrame) -> pl.LazyFrame:
    """The process group's host-side collectives of every rank, whatever else the rank has:
    its backend ranges (``gloo:*``, ``nccl:*`` ...), or its ``c10d::*`` ops where it has none.

    Adds ``collective`` (NCCL's spelling, else the op name) and ``msg_bytes`` (first input's
    elements × element size, null where shapes or the type were not recorded).
    """
    name = pl.col("name")
    # a cheap prefix test first: the regexes then run on the few candidate rows, not every op
    maybe = pl.any_horizontal(name.str.starts_with(p) for p in _HOST_PREFIXES)
    host = events.filter(pl.col("kind").is_in(HOST_KINDS), maybe).with_columns(
        pl.when(pl.col("name").str.contains(BACKEND_RANGE))
        .then(1)
        .when(pl.col("name").str.contains(C10D_OP))
        .then(2)
        .alias("_tier")
    )
    host = host.filter(pl.col("_tier").is_not_null())
    host = host.filter(pl.col("_tier") == pl.col("_tier").min().over(_RANK)).drop("_tier")
    op = pl.col("name").str.extract(r"[:]+([A-Za-z_]+)$", 1)
    key = op.str.to_lowercase().str.replace_all("_", "")
    args = pl.col("args")
    dims = args.str.json_path_match("$['Input Dims'][0]").str.extract_all(r"\d+")
    has_dims = dims.list.len() > 0
    elems = dims.list.eval(pl.element().cast(pl.Int64).product()).list.first()
    width = args.str.json_path_match("$['Input type'][0]").replace_strict(
        TORCH_TYPE_BYTES, default=None, return_dtype=pl.Int64
    )
    return host.with_columns(
        key.replace_strict(HOST_COLLECTIVES, default=op, return_dtype=pl.String).alias("collective"),
        pl.when(has_dims).then(elems * width).alias("msg_bytes"),
    )


def comm_ops(events: pl.LazyFrame, host: bool = True, keep: Sequence[str] = ()) -> pl.LazyFrame:
    """Every communication row, one source per rank (the module docstring's model): a rank's
    communication kernels where it has any, else (with ``host``) its host collectives.

    Columns: ``node, rank, ts, dur, name, collective, msg_bytes, source``, then the event
    columns named in ``keep`` (e.g. ``tid, device, stream``). The other functions here take it
    collected (``comm=``) so that one stage finds the communication rows once.
    """
    columns = [*_COMM_COLUMNS, *keep]
    lazy_kernels = comm_kernels(events).with_columns(pl.lit(DEVICE_KERNEL).alias("source")).select(columns)
    if not host:
        return lazy_kernels
    kernels = lazy_kernels.collect(engine=ENGINE)
    # the host collectives are searched for (a test of every host op's name) unless every rank
    # has communication kernels, as on a GPU trace
    if not kernels.is_empty():
        without = events.select(_RANK).unique().join(kernels.lazy(), on=_RANK, how="anti", nulls_equal=True)
        if without.collect(engine=ENGINE).is_empty():
            return kernels.lazy()
    ops = host_comm_ops(events).join(
        kernels.lazy().select(_RANK).unique(), on=_RANK, how="anti", nulls_equal=True
    )
    ops = ops.with_columns(pl.lit(HOST_OP).alias("source")).select(columns)
    return pl.concat([kernels.lazy(), ops.cast(kernels.schema)])


def _given(comm: Frame) -> pl.LazyFrame:
    return comm.lazy() if isinstance(comm, pl.DataFrame) else comm


def _rank_sources(comm: Frame) -> Frame:
    """``node, rank, source`` of every rank with communication (eager when ``comm`` is)."""
    return comm.select(*_RANK, "source").unique()


def compute_kernels(events: pl.LazyFrame) -> pl.LazyFrame:
    """Computation kernels: every kernel that is not communication."""
    return _named(_device_kernels(events), pl.col("name").str.contains(COMM_PATTERN), keep=False)


def _host_compute(events: pl.LazyFrame, host_ranks: Frame) -> pl.LazyFrame:
    """The CPU ops of the ``host_ranks`` (host-op ranks) that are not communication."""
    name = pl.col("name")
    ops = events.filter(pl.col("kind") == "cpu_op").join(
        _lazy(host_ranks), on=_RANK, how="semi", nulls_equal=True
    )
    return _named(ops, name.str.contains(BACKEND_RANGE) | name.str.contains(C10D_OP), keep=False)


def _compute(events: pl.LazyFrame, sources: Frame) -> pl.LazyFrame:
    """Computation of each rank in its source's terms: kernels, or CPU ops of host-op ranks.

    With ``sources`` collected (as the stage has it), a trace without host-op ranks — every
    GPU trace — reads no CPU op at all."""
    host_ranks = sources.filter(pl.col("source") == HOST_OP).select(_RANK)
    kernels = compute_kernels(events).select(*_RANK, "ts", "dur")
    if isinstance(host_ranks, pl.DataFrame) and host_ranks.is_empty():
        return kernels
    kernels = kernels.join(_lazy(host_ranks), on=_RANK, how="anti", nulls_equal=True)
    return pl.concat([kernels, _host_compute(events, host_ranks).select(*_RANK, "ts", "dur")])


def rank_computation(events: pl.LazyFrame, comm: Frame) -> pl.LazyFrame:
    """Each rank's computation in its source's terms (compute kernels, or a host-op rank's CPU
    ops; ``comm`` is :func:`comm_ops`' frame) as its union: disjoint ``node, rank, start, end``.

    :func:`comm_comp_overlap` and :func:`comm_per_step` take it (``computation=``) so that a
    stage builds the union once."""
    return _rank_computation(events, _rank_sources(comm))


def _rank_computation(events: pl.LazyFrame, sources: Frame) -> pl.LazyFrame:
    return merge_intervals(_iv(_compute(events, sources), _RANK), _RANK)


def comm_by_collective(
    events: pl.LazyFrame, by: Sequence[str] = (), host: bool = True, comm: Frame | None = None
) -> pl.LazyFrame:
    """Communication time per source and collective (and ``by`` group), from :func:`comm_ops`.

    Columns: ``by..., source, collective, count, total_ns`` (sum of durations), ``mean_ns,
    min_ns, max_ns, share`` (of all communication time in the group), ``bytes`` (sum of message
    sizes where recorded, else null) and ``algbw_gbps`` (bytes / time). Sorted by ``total_ns``
    descending.
    """
    keys = list(by)
    c = _given(comm) if comm is not None else comm_ops(events, host)
    agg = c.group_by([*keys, "source", "collective"]).agg(
        pl.len().cast(pl.Int64).alias("count"),
        pl.col("dur").sum().alias("total_ns"),
        pl.col("dur").mean().alias("mean_ns"),
        pl.col("dur").min().alias("min_ns"),
        pl.col("dur").max().alias("max_ns"),
        pl.when(pl.col("msg_bytes").is_not_null().any()).then(pl.col("msg_bytes").sum()).alias("bytes"),
        pl.col("dur").filter(pl.col("msg_bytes").is_not_null()).sum().alias("_timed"),
    )
    total = pl.col("total_ns").sum().over(keys) if keys else pl.col("total_ns").sum()
    return (
        agg.with_columns(
            (pl.col("total_ns") / total).alias("share"),
            pl.when(pl.col("_timed") > 0).then(pl.col("bytes") / pl.col("_timed")).alias("algbw_gbps"),
        )
        .drop("_timed")
        .sort(
            [*keys, "total_ns", "source", "collective"], descending=[False] * len(keys) + [True, False, False]
        )
    )


def _iv(frame: pl.LazyFrame, by: Sequence[str]) -> pl.LazyFrame:
    return frame.select(*by, pl.col("ts").alias("start"), (pl.col("ts") + pl.col("dur")).alias("end"))


def _unions_and_overlap(
    comm: pl.LazyFrame, comp: pl.LazyFrame, keys: list[str], disjoint: tuple[bool, bool] = (False, False)
) -> pl.LazyFrame:
    """Per group of either side: ``comm_ns``, ``compute_ns`` (unions, 0 when absent) and
    ``overlap_ns = |comm ∩ compute| = comm + compute − |comm ∪ compute|`` — what
    :func:`~profui.analysis.intervals.overlap_length` computes, with each union built once and
    the union of both from the two (far fewer) merged sides. ``disjoint``: whether each side
    already is a union (disjoint intervals of positive length per group), kept as it is."""
    comm, comp = (
        side.select(*keys, "start", "end") if done else merge_intervals(side, keys)
        for side, done in zip((comm, comp), disjoint, strict=True)
    )
    length = pl.col("end") - pl.col("start")
    both = union_length(pl.concat([comm, comp]), keys, "_ab")
    return (
        both.join(
            comm.group_by(keys).agg(length.sum().alias("comm_ns")), on=keys, how="left", nulls_equal=True
        )
        .join(
            comp.group_by(keys).agg(length.sum().alias("compute_ns")), on=keys, how="left", nulls_equal=True
        )
        .with_columns(pl.col("comm_ns", "compute_ns").fill_null(0))
        .with_columns((pl.col("comm_ns") + pl.col("compute_ns") - pl.col("_ab")).alias("overlap_ns"))
        .drop("_ab")
    )


def _shares(overlap: pl.LazyFrame) -> pl.LazyFrame:
    """``overlap_share`` (overlap / comm, null without comm) and ``exposed_comm_ns`` (comm − overlap)."""
    return overlap.with_columns(
        pl.when(pl.col("comm_ns") > 0).then(pl.col("overlap_ns") / pl.col("comm_ns")).alias("overlap_share"),
        (pl.col("comm_ns") - pl.col("overlap_ns")).alias("exposed_comm_ns"),
    )


def comm_comp_overlap(
    events: pl.LazyFrame,
    by: Sequence[str] = ("node", "rank"),
    host: bool = True,
    comm: Frame | None = None,
    computation: Frame | None = None,
) -> pl.LazyFrame:
    """How much of the communication time ran while computation was running.

    Per ``by`` group: ``comm_ns`` (union of :func:`comm_ops`), ``compute_ns`` (union of the
    computation in the rank's source's terms: compute kernels, or the CPU ops of a host-op rank),
    ``overlap_ns`` (``|comm ∩ compute|``), ``overlap_share`` = overlap/comm (null without
    communication; HTA's ``comp_comm_overlap_pctg`` / 100 on device kernels) and
    ``exposed_comm_ns`` (communication not hidden under computation). Groups are the
    ranks with device kernels or host collectives; per rank, ``source`` says which was read.
    ``by`` groups ranks (``node``, ``rank`` or none); ``computation`` is
    :func:`rank_computation`'s frame where the caller has it.
    """
    comm = comm if comm is not None else comm_ops(events, host)
    sources = _rank_sources(comm)
    comm = _iv(_given(comm), _RANK)
    keys = list(by) or ["_all"]
    compute = _lazy(computation) if computation is not None else _rank_computation(events, sources)
    kernel_ranks = _device_kernels(events).select(_RANK).unique()
    ranks = pl.concat([kernel_ranks, _lazy(sources).select(_RANK)]).unique()
    if not by:
        comm, compute, ranks = (f.with_columns(pl.lit(0).alias("_all")) for f in (comm, compute, ranks))
    groups = ranks.select(keys).unique()
    per_rank = set(_RANK) <= set(keys)
    # the computation is a union of each rank's intervals: still one in a group of one rank
    out = groups.join(_unions_and_overlap(comm, compute, keys, (False, per_rank)), on=keys, how="left")
    out = _shares(out.with_columns(pl.col("comm_ns", "compute_ns", "overlap_ns").fill_null(0)))
    if per_rank:
        out = out.join(_lazy(sources), on=_RANK, how="left", nulls_equal=True).with_columns(
            pl.col("source").fill_null(DEVICE_KERNEL)
        )
    out = out.sort(keys)
    return out if by else out.drop("_all")


def overlap_of(
    device: pl.LazyFrame,
    comm_of: Callable[[pl.LazyFrame], pl.LazyFrame],
    compute_of: Callable[[pl.LazyFrame], pl.LazyFrame],
    by: Sequence[str] = ("node", "rank"),
) -> pl.LazyFrame:
    """:func:`comm_comp_overlap` over ``device`` events split by ``comm_of`` / ``compute_of``."""
    keys = list(by) or ["_all"]
    if not by:
        device = device.with_columns(pl.lit(0).alias("_all"))
    comm = _iv(comm_of(device), keys)
    comp = _iv(compute_of(device), keys)
    groups = _iv(device, keys).select(keys).unique()
    out = groups.join(_unions_and_overlap(comm, comp, keys), on=keys, how="left").with_columns(
        pl.col("comm_ns", "compute_ns", "overlap_ns").fill_null(0)
    )
    out = _shares(out).sort(keys)
    return out if by else out.drop("_all")


def comm_per_rank(events: pl.LazyFrame, host: bool = True, comm: Frame | None = None) -> pl.LazyFrame:
    """Per ``node, rank``: the ``source`` its communication is read from, ``count``,
    ``total_ns`` (sum), ``busy_ns`` (union), and the share of the rank's span spent
    communicating — its device span (first to last device event), or for a host-op rank its
    host span (first to last CPU op, range or step)."""
    c = comm if comm is not None else comm_ops(events, host)
    sources = _rank_sources(c)
    c = _given(c)
    per = c.group_by(_RANK).agg(pl.len().cast(pl.Int64).alias("count"), pl.col("dur").sum().alias("total_ns"))
    busy = union_length(_iv(c, _RANK), _RANK, "busy_ns")
    host_ranks = _lazy(sources).filter(pl.col("source") == HOST_OP).select(_RANK)
    end = pl.col("ts") + pl.col("dur")
    device_span = (
        events.filter(pl.col("kind").is_in(["kernel", "memcpy", "memset"]))
        .join(host_ranks, on=_RANK, how="anti", nulls_equal=True)
        .group_by(_RANK)
        .agg((end.max() - pl.col("ts").min()).alias("span_ns"))
    )
    host_span = (
        events.filter(pl.col("kind").is_in([*HOST_KINDS, "step"]))
        .join(host_ranks, on=_RANK, how="semi", nulls_equal=True)
        .group_by(_RANK)
        .agg((end.max() - pl.col("ts").min()).alias("span_ns"))
    )
    return (
        pl.concat([device_span, host_span])
        .join(per, on=_RANK, how="left", nulls_equal=True)
        .join(busy, on=_RANK, how="left", nulls_equal=True)
        .join(_lazy(sources), on=_RANK, how="left", nulls_equal=True)
        .with_columns(
            pl.col("count", "total_ns", "busy_ns").fill_null(0), pl.col("source").fill_null(DEVICE_KERNEL)
        )
        .with_columns(
            pl.when(pl.col("span_ns") > 0).then(pl.col("busy_ns") / pl.col("span_ns")).alias("share")
        )
        .select(*_RANK, "source", "count", "total_ns", "busy_ns", "span_ns", "share")
        .sort(_RANK)
    )


def comm_per_step(
    events: pl.LazyFrame,
    windows: pl.LazyFrame,
    host: bool = True,
    comm: Frame | None = None,
    computation: Frame | None = None,
) -> pl.LazyFrame:
    """Per step and rank: communication and computation time inside the step window.

    ``windows`` is :func:`profui.analysis.steps.step_windows`' frame or any frame with ``node,
    rank, step, start, end`` (ns). A rank's device window (``start_ns, end_ns``) is used, or for a
    host-op rank its host window (``cpu_start_ns, cpu_end_ns``); communication and computation
    are :func:`comm_comp_overlap`'s. Columns: ``node, rank, step, step_ns, comm_ns,
    compute_ns, overlap_ns, exposed_comm_ns`` (comm time not hidden under compute); unions,
    clipped to the window. ``computation``: :func:`rank_computation`'s frame where the caller
    has it.
    """
    keys = _RANK
    comm_all = comm if comm is not None else comm_ops(events, host)
    sources = _rank_sources(comm_all)
    comm_all = _given(comm_all)
    names = windows.collect_schema().names()
    if "start_ns" in names:
        is_host = pl.col("source").fill_null("") == HOST_OP
        w = windows.join(_lazy(sources), on=keys, how="left", nulls_equal=True).select(
            *keys,
            "step",
            pl.when(is_host).then(pl.col("cpu_start_ns")).otherwise(pl.col("start_ns")).alias("w_start"),
            pl.when(is_host).then(pl.col("cpu_end_ns")).otherwise(pl.col("end_ns")).alias("w_end"),
        )
    else:
        w = windows.select(*keys, "step", pl.col("start").alias("w_start"), pl.col("end").alias("w_end"))
    # each rank's union first, then cut to the windows: far fewer rows meet the windows, and
    # clipping a union gives the union of the clipped intervals
    comm = clip_to_windows(merge_intervals(_iv(comm_all, keys), keys), w, keys).select(
        *keys, "step", "start", "end"
    )
    computation = _lazy(computation) if computation is not None else _rank_computation(events, sources)
    comp = clip_to_windows(computation, w, keys).select(*keys, "step", "start", "end")
    k2 = [*keys, "step"]
    return (
        w.select(*k2, (pl.col("w_end") - pl.col("w_start")).alias("step_ns"))
        # each side a rank's union cut to its windows: disjoint in each step already
        .join(_unions_and_overlap(comm, comp, k2, (True, True)), on=k2, how="left")
        .with_columns(pl.col("comm_ns", "compute_ns", "overlap_ns").fill_null(0))
        .with_columns((pl.col("comm_ns") - pl.col("overlap_ns")).alias("exposed_comm_ns"))
        .sort("step", "node", "rank")
    )


#: The ``cause`` classes of a straggler, in the order a tie between them is settled.
STRAGGLER_CAUSES = ("input", "host", "compute", "transfer")
_INSTANCE = ["source", "collective", "seq"]


def lateness(arrive: str = "arrive_ns") -> pl.Expr:
    """A rank's lateness at a collective instance (rows of equal ``source, collective, seq``;
    the expression runs over them): its arrival minus the latest arrival of the *other* ranks
    there, 0 for every rank but a last one (ties at the last arrival: 0 for all).

    Why that rule: a collective cannot end before its last rank arrives, so the instance's end
    moves with the last arrival and with nothing else. If the last rank came earlier, the
    instance would still wait for the next-to-last rank; removing this lateness, and no more,
    is what the critical path's ``straggler`` what-if does, so its saving at the instance and
    the straggler table's ``lateness_ns`` are one number. Measured against the earliest
    arrival (or the others' median), lateness would count time the instance would wait for the
    other ranks anyway, and the table would promise more than removing it recovers."""
    col = pl.col(arrive)
    last = col.max().over(_INSTANCE)
    next_to_last = col.sort(descending=True).get(1, null_on_oob=True).over(_INSTANCE)
    return pl.when(pl.len().over(_INSTANCE) >= 2).then(
        pl.when(col == last).then(last - next_to_last).otherwise(0)
    )


def stragglers(arrivals: Frame) -> pl.LazyFrame:
    """The straggler of each step: the rank that arrives last at the step's collectives.

    ``arrivals`` is :func:`profui.analysis.collectives.arrivals`' table (every rank's). A
    collective instance is the rows of equal ``source, collective, seq`` on two or more ranks;
    its step is the earliest its ranks place it in. A rank's lateness at an instance is
    :func:`lateness` (its arrival minus the latest of the other ranks'). Per step: the straggler is the rank with the
    largest ``lateness_ns`` (summed over the step's instances; ties: the first node and rank);
    ``wait_ns`` its cost: the other ranks' mean wait for it (their time from their own arrival
    to its arrival, 0 where they came later, summed over the step's instances). ``cause`` is the
    class (``input``, ``host``, ``compute``, ``transfer``: the arrivals' stretch classes) in
    which the straggler spent the most more than the other ranks' mean over the same stretches
    before the step's instances, ``cause_ns`` that excess (null cause where no class exceeds
    the others'). ``recurs``: the same rank is the straggler in at least half the steps.
    Columns: ``step, ranks, straggler_node, straggler_rank, lateness_ns, wait_ns, cause,
    cause_ns, recurs``. Steps whose collectives only one rank reached are left out.
    """
    classes = [f"{c}_ns" for c in STRAGGLER_CAUSES]
    a = _lazy(arrivals).with_columns(
        pl.len().over(_INSTANCE).alias("_n"),
        pl.col("step").min().over(_INSTANCE).alias("step"),
        lateness().alias("_late"),
    )
    a = a.filter(pl.col("_n") >= 2)
    per_rank = a.group_by("step", *_RANK).agg(
        pl.col("_late").sum().alias("lateness_ns"), *(pl.col(c).sum() for c in classes)
    )
    chosen = (
        per_rank.sort(
            ["step", "lateness_ns", "node", "rank"], descending=[False, True, False, False], nulls_last=True
        )
        .group_by("step", maintain_order=True)
        .agg(
            pl.len().cast(pl.Int64).alias("ranks"),
            pl.col("node").first().alias("straggler_node"),
            pl.col("rank").first().alias("straggler_rank"),
            pl.col("lateness_ns").first(),
        )
        .filter(pl.col("ranks") >= 2)
    )
    is_straggler = (pl.col("node").eq_missing(pl.col("straggler_node"))) & (
        pl.col("rank") == pl.col("straggler_rank")
    )
    theirs = a.join(chosen.select("step", "straggler_node", "straggler_rank"), on="step")
    arrival_of = theirs.filter(is_straggler).select("step", *_INSTANCE, pl.col("arrive_ns").alias("_theirs"))
    waits = (
        theirs.filter(~is_straggler)
        .join(arrival_of, on=["step", *_INSTANCE], how="left")
        .group_by("step", *_RANK)
        .agg((pl.col("_theirs") - pl.col("arrive_ns")).clip(lower_bound=0).fill_null(0).sum().alias("_wait"))
        .group_by("step")
        .agg(pl.col("_wait").mean().alias("wait_ns"))
    )
    others = (
        per_rank.join(chosen.select("step", "straggler_node", "straggler_rank"), on="step")
        .with_columns(is_straggler.alias("_s"))
        .group_by("step")
        .agg(
            *(
                (pl.col(c).filter(pl.col("_s")).first() - pl.col(c).filter(~pl.col("_s")).mean()).alias(c)
                for c in classes
            )
        )
    )
    excess = pl.concat_list(classes)
    best = excess.list.arg_max()
    steps = pl.len().over(pl.lit(1))
    return (
        chosen.join(waits, on="step", how="left")
        .join(others, on="step", how="left")
        .with_columns(
            pl.col("wait_ns").fill_null(0.0),
            excess.list.max().alias("cause_ns"),
            best.replace_strict(dict(enumerate(STRAGGLER_CAUSES)), return_dtype=pl.String).alias("cause"),
        )
        .with_columns(
            pl.when(pl.col("cause_ns") > 0).then(pl.col("cause")).alias("cause"),
            pl.when(pl.col("cause_ns") > 0).then(pl.col("cause_ns")).alias("cause_ns"),
            (pl.len().over("straggler_node", "straggler_rank") * 2 >= steps).alias("recurs"),
        )
        .select(
            "step",
            "ranks",
            "straggler_node",
            "straggler_rank",
            "lateness_ns",
            "wait_ns",
            "cause",
            "cause_ns",
            "recurs",
        )
        .sort("step")
    )


class UsualStraggler(NamedTuple):
    """The rank :func:`usual_straggler` names: it arrives last in ``steps`` of ``of`` steps."""

    node: str | None
    rank: int
    steps: int
    of: int


def usual_straggler(stragglers: pl.DataFrame) -> UsualStraggler | None:
    """The rank :func:`stragglers` names in the most steps (ties: the one named first), with in
    how many steps, of the steps with a straggler; None without any."""
    if stragglers.is_empty():
        return None
    node, rank, steps = (
        stragglers.group_by("straggler_node", "straggler_rank")
        .agg(pl.len().alias("steps"), pl.col("step").min().alias("_first"))
        .sort(["steps", "_first"], descending=[True, False])
        .select("straggler_node", "straggler_rank", "steps")
        .row(0)
    )
    return UsualStraggler(node, rank, steps, stragglers.height)
