"""The critical path under ``hta_compat``: Holistic Trace Analysis 0.5.0's lightweight rules.

HTA's ``critical_path_analysis(rank, annotation, instance_id)`` builds, for one rank and the
window of one instance of an annotation, a graph whose nodes are the starts and ends of host
ops, runtime calls and device events, and takes its longest path. Its rules, reproduced here on
HTA's view of the events (:func:`profui.analysis.hta.hta_events`: whole µs, HTA's streams,
last ProfilerStep dropped):

- **Window.** The annotation's instances are the rank's host events whose name contains the
  annotation text (see :func:`instances` for their numbering); an instance's window is its
  span (the whole rank for the empty annotation). Kept: host events starting in it with a
  positive duration, device events whose launch call does, and every ``Stream Wait Event``.
- **Host edges**, per thread, walking op nesting (host ops, runtime and driver calls only): an
  edge from each boundary to the next inside an outermost op, weighted by the time between
  them, zero into the end of a blocking call (``cudaDeviceSynchronize``, ``cudaMemcpy`` ...);
  from an outermost op's end to the next one's start a zero-weight dependency (the host's time
  between outermost ops never counts).
- **Device edges**, per event in start order (syncs at their end): the event's duration; a
  launch delay from the launch call's start when the stream's queue was empty (one item
  queued after the call, none left once the event started) and the previous event there
  ended before the call; else a kernel-kernel delay from the previous event on the stream; zero-weight sync
  edges for ``cudaStreamWaitEvent`` (event record → the next launch), ``Event Sync`` and
  ``Stream``/``Context Sync`` (the device work → the host call that waited for it).
- **Kinds** (HTA's ``bound_by``): host edges ``cpu_bound``; device events
  ``gpu_communication_bound`` (NCCL) or ``gpu_compute_bound`` (memcpy and memset included);
  ``gpu_kernel_kernel_overhead``; ``gpu_kernel_launch_overhead``. HTA 0.5.0 has no
  ``data_loading`` kind: input time on the host is ``cpu_bound`` there.
- **The path**: networkx's ``dag_longest_path`` (its topological order and first-maximum
  ties reproduced, so the same path is picked among equal ones); negative weights (rounding)
  count 0 as in HTA's path (its breakdown keeps them negative, so its kinds may sum to a few
  µs less than its length; here they sum to the length); a graph with a cycle is refused.

HTA nests each thread's ops inside all its host events (annotations, Python frames); here the
ops and calls nest among themselves, which is the same wherever events nest properly.

HTA's sorts are numpy's unstable quicksort; the same sorts run here on the same values, but
from :data:`TRACE_ORDER` (a total order of the events' own fields: start, longest first, then
the rest), not HTA's file order, so events at one timestamp may come out in another order than
HTA's (and an equally long path be picked): on no window of the shared traces does it change a
number (``benchmarks/critical_path_vs_hta.py``). The import's row order is no input: it may
differ between two imports of one file, and the tables here are a function of the events. HTA's node kinds are
Kineto categories (``cpu_op``, ``cuda_runtime``, ``cuda_driver``); here the import's kinds, so
an MTIA or XPU runtime call is a node here and not in HTA. ``what_if.parquet`` is empty under
``hta_compat``: HTA's analysis has no replays.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import polars as pl

from .comm import HTA_COMM_PATTERN
from .schemas import TABLES

#: HTA's breakdown kinds, in its order (``hta.analyzers.critical_path_analysis.bound_by``).
HTA_KINDS: tuple[str, ...] = (
    "cpu_bound",
    "gpu_compute_bound",
    "gpu_communication_bound",
    "gpu_kernel_kernel_overhead",
    "gpu_kernel_launch_overhead",
)

_BLOCKING = (
    "cudaDeviceSynchronize",
    "cudaStreamSynchronize",
    "cudaEventQuery",
    "cudaEventSynchronize",
    "cudaMemcpy",
    "cudaMemcpyAsync",
)
_LAUNCHES = (
    "cudaMemsetAsync",
    "cudaMemcpyAsync",
    "cudaLaunchKernel",
    "cudaLaunchKernelExC",
    "cuLaunchKernel",
    "runFunction - job_prep_and_submit_for_execution",
    "hipLaunchKernel",
    "hipExtModuleLaunchKernel",
    "hipMemsetAsync",
    "hipMemcpyAsync",
    "hipMemcpyWithStream",
)
_SYNC_NAMES = ("Event Sync", "Context Sync")
_HOST_NODE_KINDS = ("cpu_op", "runtime", "driver")
_WAIT_STREAM_RE = r'"wait_on_stream":\s*(-?\d+)'
_WAIT_CORR_RE = r'"wait_on_cuda_event_record_corr_id":\s*(-?\d+)'
_STEP_RE = re.compile(r"#(\d+)")
_FILES = ("steps.parquet", "by_kind.parquet", "events.parquet", "what_if.parquet")

# edge types
_OP, _DEP, _LAUNCH, _KK, _SYNC = range(5)


class GraphRefused(ValueError):
    """HTA refuses the graph: it has a cycle."""


#: A path's stretches: one row per edge (``event``: the event the edge belongs to, -1 for none).
STRETCH_SCHEMA = {
    "kind": pl.String,
    "event": pl.Int64,
    "start_ns": pl.Int64,
    "end_ns": pl.Int64,
    "ns": pl.Int64,
}


@dataclass
class Path:
    """One window's critical path: its length, time by HTA's kind and its stretches."""

    length_ns: int
    by_kind: dict[str, int]
    #: one row per edge of the path: ``kind`` (empty for zero-weight dependencies), ``event``
    #: (the trace-order index of the event its time belongs to, -1: none), ``start_ns``,
    #: ``end_ns``, ``ns``
    stretches: pl.DataFrame = field(default_factory=lambda: pl.DataFrame(schema=STRETCH_SCHEMA))


#: The order the events are numbered in (HTA's ``index``, the order its sorts start from): by
#: rank, start, longest first, then every other field, so that only identical events tie (and
#: which of two identical events comes first changes nothing).
TRACE_ORDER: tuple[str, ...] = (
    "node",
    "rank",
    "ts",
    "dur",
    "kind",
    "tid",
    "pid",
    "device",
    "stream",
    "hta_stream",
    "correlation",
    "external_id",
    "name",
    "bytes",
    "memcpy_kind",
    "args",
)


def in_trace_order(events: pl.DataFrame) -> pl.DataFrame:
    """``events`` sorted by :data:`TRACE_ORDER` (text columns by their text, ``dur`` longest
    first), ``hta_order`` renumbered 0, 1, ... in that order."""
    keys = [c for c in TRACE_ORDER if c in events.columns]
    text = {c for c in keys if events.schema[c] in (pl.Categorical, pl.Enum) or events.schema[c] == pl.String}
    by = [pl.col(c).cast(pl.String) if c in text else pl.col(c) for c in keys]
    ordered = events.sort(by, descending=[c == "dur" for c in keys], nulls_last=True, maintain_order=True)
    return ordered.drop("hta_order", strict=False).with_row_index("hta_order")


def _quick_order(values: np.ndarray) -> np.ndarray:
    # pandas' sort_values on one column: numpy's (unstable) quicksort, whose ties HTA inherits
    return np.argsort(values, kind="quicksort")


def _rank_frame(events: pl.DataFrame) -> pl.DataFrame:
    """One rank's events in trace order with HTA's ``index`` and ``index_correlation``."""
    df = events.sort("hta_order").with_row_index("index").with_columns(pl.col("index").cast(pl.Int64))
    is_gpu = ((pl.col("hta_stream") >= 0) & (pl.col("hta_correlation") >= 0)) | pl.col("name").is_in(
        _SYNC_NAMES
    )
    has_corr = pl.col("hta_correlation") != -1
    flags = df.select(is_gpu.alias("g"), has_corr.alias("c"))
    corr = df["hta_correlation"].to_numpy()
    idx_corr = np.minimum(corr, 0)
    cpu = df.filter(has_corr & ~is_gpu).select("index", "hta_correlation")
    gpu = df.filter(flags["c"] & flags["g"]).select("index", "hta_correlation")
    pairs = cpu.join(gpu, on="hta_correlation", how="inner", maintain_order="left_right")
    idx_corr[pairs["index"].to_numpy()] = pairs["index_right"].to_numpy()
    idx_corr[pairs["index_right"].to_numpy()] = pairs["index"].to_numpy()
    return df.with_columns(
        pl.Series("index_correlation", idx_corr, pl.Int64),
        (pl.col("ts") + pl.col("dur")).alias("end"),
        pl.col("args").str.extract(_WAIT_STREAM_RE, 1).cast(pl.Int64).fill_null(-1).alias("wait_on_stream"),
        pl.col("args").str.extract(_WAIT_CORR_RE, 1).cast(pl.Int64).fill_null(-1).alias("wait_corr"),
    )


def instances(events: pl.DataFrame, annotation: str) -> pl.DataFrame:
    """The host instances of ``annotation`` on one rank (``_rank_frame`` output), in time order:
    ``instance`` (0, 1, ...), ``name``, ``start_ns``, ``end_ns``. The empty annotation is one
    instance: the rank's whole span.

    HTA numbers the events whose name contains the annotation in its trace file's order, device
    annotations of the same name included; the file's order is not kept by the import, so the
    instances here are the host ones by start (for ProfilerSteps, HTA's host numbers in order).
    """
    schema = {"instance": pl.Int64, "name": pl.String, "start_ns": pl.Int64, "end_ns": pl.Int64}
    if annotation == "":
        return pl.DataFrame([(0, "", events["ts"].min(), events["end"].max())], schema=schema, orient="row")
    return (
        events.filter(
            pl.col("name").str.contains(annotation, literal=True), pl.col("kind") != "gpu_annotation"
        )
        .sort("ts", "index")
        .select(
            pl.int_range(pl.len(), dtype=pl.Int64).alias("instance"),
            "name",
            pl.col("ts").alias("start_ns"),
            pl.col("end").alias("end_ns"),
        )
    )


def _clip(df: pl.DataFrame, start: int, end: int) -> np.ndarray:
    """The event indexes HTA keeps for the window [start, end]."""
    host = df.filter(pl.col("hta_stream") == -1)
    in_win = host.filter(pl.col("ts").is_between(start, end), pl.col("dur") > 0)["index"]
    launched = host.filter(pl.col("ts").is_between(start, end), pl.col("dur") > 0).select(
        pl.col("index_correlation").alias("index")
    )
    dev = df.filter(pl.col("hta_stream") != -1)
    dev_in = pl.concat(
        [
            dev.join(launched, on="index", how="semi")["index"],
            dev.filter(pl.col("name") == "Stream Wait Event")["index"],
        ]
    )
    return np.unique(np.concatenate([in_win.to_numpy(), dev_in.to_numpy()]))


def _queue_lengths(df: pl.DataFrame) -> dict[int, int]:
    """HTA's queue length after each launch call and each device event it launched (by index)."""
    launches = df.filter(pl.col("name").is_in(_LAUNCHES), pl.col("index_correlation") > 0)
    dev = df.filter(pl.col("hta_stream") != -1)
    lq = launches.select("index", "ts", "hta_correlation").join(
        dev.select("hta_correlation", pl.col("hta_stream").alias("s")),
        on="hta_correlation",
        how="left",
        maintain_order="left",
    )
    dq = dev.filter(pl.col("hta_correlation").is_in(launches["hta_correlation"].implode())).select(
        "index", "ts", pl.col("hta_stream").alias("s")
    )
    idx = np.concatenate([lq["index"].to_numpy(), dq["index"].to_numpy()])
    ts = np.concatenate([lq["ts"].to_numpy(), dq["ts"].to_numpy()])
    stream = np.concatenate([lq["s"].fill_null(-(2**62)).to_numpy(), dq["s"].to_numpy()])
    step = np.concatenate([np.ones(lq.height, np.int64), -np.ones(dq.height, np.int64)])
    o = _quick_order(ts)
    idx, stream, step = idx[o], stream[o], step[o]
    keep = stream != -(2**62)
    idx, stream, step = idx[keep], stream[keep], step[keep]
    g = np.argsort(stream, kind="stable")
    s_sorted = stream[g]
    c = np.cumsum(step[g])
    first = np.r_[True, s_sorted[1:] != s_sorted[:-1]]
    base = np.maximum.accumulate(np.where(first, np.arange(len(g)), 0))
    before = np.r_[0, c[:-1]]
    q = c - before[base]
    return dict(zip(idx[g].tolist(), q.tolist(), strict=True))


def _launch_calls(df: pl.DataFrame) -> pl.DataFrame:
    """HTA's ``_get_cuda_runtime_calls_df``: launch calls by start (quicksort), joined to the device
    event they launched, numbered ``launch_id``."""
    calls = df.filter(pl.col("name").is_in(_LAUNCHES), pl.col("index_correlation") > 0)
    calls = calls[_quick_order(calls["ts"].to_numpy())]
    dev = df.filter(pl.col("hta_stream") != -1, pl.col("index_correlation") > 0).select(
        pl.col("index").alias("index_correlation"),
        pl.col("hta_stream").alias("k_stream"),
        pl.col("pid").alias("k_pid"),
    )
    out = calls.join(dev, on="index_correlation", how="inner", maintain_order="left")
    return out.with_columns(pl.int_range(pl.len(), dtype=pl.Int64).alias("launch_id"))


def _previous_launch(df: pl.DataFrame, launches: pl.DataFrame) -> dict[int, int]:
    """Per ``cudaEventRecord`` correlation: the launch call (index) last before it on the recorded
    stream (HTA's ``_get_cuda_event_record_df``)."""
    rec = df.filter(pl.col("name") == "cudaEventRecord")
    rec = rec[_quick_order(rec["ts"].to_numpy())]
    where = (
        df.filter(pl.col("wait_on_stream") > -1)
        .select(
            pl.col("wait_corr").alias("hta_correlation"),
            pl.col("wait_on_stream").alias("k_stream"),
            pl.col("pid").alias("k_pid"),
        )
        .unique(maintain_order=True)
    )
    rec = rec.join(where, on="hta_correlation", how="inner", maintain_order="left")
    out: dict[int, int] = {}
    if rec.height == 0:
        return out
    ts = np.concatenate([launches["ts"].to_numpy(), rec["ts"].to_numpy()])
    pid = np.concatenate([launches["k_pid"].to_numpy(), rec["k_pid"].to_numpy()])
    st = np.concatenate([launches["k_stream"].to_numpy(), rec["k_stream"].to_numpy()])
    lid = np.concatenate([launches["launch_id"].to_numpy(), -np.ones(rec.height, np.int64)])
    who = np.concatenate([launches["index"].to_numpy(), rec["hta_correlation"].to_numpy()])
    o = _quick_order(ts)
    by_id = dict(zip(launches["launch_id"].to_list(), launches["index"].to_list(), strict=True))
    for gpu, stream in rec.select("k_pid", "k_stream").unique().iter_rows():
        sel = o[(pid[o] == gpu) & (st[o] == stream)]
        prev = np.maximum.accumulate(lid[sel])
        for j, p in zip(sel[lid[sel] < 0], prev[lid[sel] < 0], strict=True):
            out[int(who[j])] = by_id[int(p)] if p >= 0 else -1
    return out


def _next_launch(df: pl.DataFrame, launches: pl.DataFrame) -> dict[int, int]:
    """Per ``cudaStreamWaitEvent`` call (index): the launch call (index) next after it from the same
    thread to the waiting stream (HTA's ``_get_cuda_stream_wait_event_df``)."""
    waits = df.filter(pl.col("name") == "cudaStreamWaitEvent", pl.col("index_correlation") > 0)
    waits = waits[_quick_order(waits["ts"].to_numpy())]
    dev = df.filter(pl.col("hta_stream") != -1, pl.col("index_correlation") > 0).select(
        pl.col("index").alias("index_correlation"), pl.col("hta_stream").alias("k_stream")
    )
    waits = waits.join(dev, on="index_correlation", how="inner", maintain_order="left")
    out: dict[int, int] = {}
    if waits.height == 0:
        return out
    big = np.iinfo(np.int64).max
    ts = np.concatenate([launches["ts"].to_numpy(), waits["ts"].to_numpy()])
    key = np.concatenate(
        [
            launches.select("pid", "tid", "k_stream").to_numpy(),
            waits.select("pid", "tid", "k_stream").to_numpy(),
        ]
    )
    lid = np.concatenate([launches["launch_id"].to_numpy(), np.full(waits.height, big)])
    who = np.concatenate([launches["index"].to_numpy(), waits["index"].to_numpy()])
    o = _quick_order(ts)
    by_id = dict(zip(launches["launch_id"].to_list(), launches["index"].to_list(), strict=True))
    for k in np.unique(waits.select("pid", "tid", "k_stream").to_numpy(), axis=0):
        sel = o[(key[o] == k).all(axis=1)]
        nxt = np.minimum.accumulate(lid[sel][::-1])[::-1]
        for j, n in zip(sel[lid[sel] == big], nxt[lid[sel] == big], strict=True):
            out[int(who[j])] = by_id[int(n)] if n != big else -1
    return out


def _rank_links(df: pl.DataFrame, known: dict[str, Any]) -> tuple[dict, dict, dict]:
    """The rank's queue lengths and event-record / stream-wait links (HTA computes them on the
    whole rank for each window: once per rank here, kept in ``known``)."""
    if "q" not in known:
        launches = _launch_calls(df)
        names = set(df["name"].unique().to_list())
        known["q"] = _queue_lengths(df)
        known["prev"] = _previous_launch(df, launches) if "cudaEventRecord" in names else {}
        waits = {"cudaStreamWaitEvent", "Stream Wait Event"} <= names
        known["next"] = _next_launch(df, launches) if waits else {}
    return known["q"], known["prev"], known["next"]


def critical_path(df: pl.DataFrame, start: int, end: int, known: dict[str, Any] | None = None) -> Path:
    """HTA's critical path of one rank (``_rank_frame`` output) over the window [start, end] ns;
    ``known`` keeps what a rank's windows share between calls."""
    known = {} if known is None else known
    full_ts = df["ts"].to_numpy()
    full_ic = df["index_correlation"].to_numpy()
    keep = _clip(df, start, end)
    cl = df[keep]
    stream = cl["hta_stream"].to_numpy()
    ic = cl["index_correlation"].to_numpy()
    kind = cl["kind"].cast(pl.String).to_numpy()
    is_node = np.isin(kind, _HOST_NODE_KINDS) | ((stream != -1) & (ic >= 0))
    nodes_ev = cl["index"].to_numpy()[is_node]
    m = len(nodes_ev)
    n_ts = np.concatenate([cl["ts"].to_numpy()[is_node], cl["end"].to_numpy()[is_node]])
    order = _quick_order(n_ts)
    node_of = np.empty(2 * m, np.int64)
    node_of[order] = np.arange(2 * m)
    start_of = np.full(df.height, -1, np.int64)
    end_of = np.full(df.height, -1, np.int64)
    start_of[nodes_ev] = node_of[:m]
    end_of[nodes_ev] = node_of[m:]
    ts_node = n_ts[order]
    names = df["name"].to_numpy()

    host = _host_edges(
        cl.filter(pl.Series(is_node) & (pl.col("hta_stream") == -1)), start_of, end_of, ts_node
    )
    src: list[int] = []
    dst: list[int] = []
    wt: list[int] = []
    typ: list[int] = []
    attr: list[int] = []  # the event an edge's time belongs to (-1: none)

    def edge(u: int, v: int, t: int, ev: int = -1) -> None:
        src.append(u)
        dst.append(v)
        wt.append(0 if t == _SYNC else int(ts_node[v] - ts_node[u]))
        typ.append(t)
        attr.append(ev)

    start_node = dict(zip(nodes_ev.tolist(), node_of[:m].tolist(), strict=True))
    end_node = dict(zip(nodes_ev.tolist(), node_of[m:].tolist(), strict=True))
    _device_edges(df, cl, start_node, end_node, ts_node, full_ts, full_ic, edge, known)
    dev = [np.array(x, np.int64) for x in (src, dst, wt, typ, attr)]
    e_src, e_dst, e_wt, e_typ, e_attr = (np.concatenate([h, d]) for h, d in zip(host, dev, strict=True))
    return _longest(e_src, e_dst, e_wt, e_typ, e_attr, ts_node, df, names)


def _host_edges(
    host: pl.DataFrame, start_of: np.ndarray, end_of: np.ndarray, ts_node: np.ndarray
) -> tuple[np.ndarray, ...]:
    """HTA's host edges, thread by thread (``src, dst, weight, type, event``): the ops' and
    calls' boundaries in HTA's call-stack order (time; ends before starts; longer starts first,
    shorter ends first; then index), an edge from each to the next."""
    bounds = pl.concat(
        [
            host.select(
                "pid",
                "tid",
                "index",
                pl.col("ts").alias("t"),
                pl.lit(1).alias("s"),
                (-pl.col("dur")).alias("k1"),
                pl.col("index").alias("k2"),
            ),
            host.select(
                "pid",
                "tid",
                "index",
                pl.col("end").alias("t"),
                pl.lit(-1).alias("s"),
                pl.col("dur").alias("k1"),
                (-pl.col("index")).alias("k2"),
            ),
        ]
    ).sort("pid", "tid", "t", "s", "k1", "k2")
    by = ("pid", "tid")
    e = (
        bounds.with_columns(pl.col("s").cum_sum().over(by).alias("depth"))
        .with_columns(
            # the op a stretch between two siblings lies in: the last one to open at this depth
            pl.when(pl.col("s") == 1).then(pl.col("index")).forward_fill().over(*by, "depth").alias("parent"),
        )
        .with_columns(
            pl.col("index")
            .is_in(host.filter(pl.col("name").is_in(_BLOCKING))["index"].implode())
            .alias("blocking")
        )
        .select(
            "index",
            "s",
            "depth",
            "parent",
            pl.col("index").shift(-1).over(by).alias("n_index"),
            pl.col("s").shift(-1).over(by).alias("n_s"),
            pl.col("blocking").shift(-1).over(by).alias("n_blocking"),
        )
        .filter(pl.col("n_index").is_not_null())
    )
    ev, s, depth, parent = (e[c].to_numpy() for c in ("index", "s", "depth", "parent"))
    n_ev, n_s, n_blocking = (e[c].to_numpy() for c in ("n_index", "n_s", "n_blocking"))
    src = np.where(s == 1, start_of[ev], end_of[ev])
    dst = np.where(n_s == 1, start_of[n_ev], end_of[n_ev])
    # after an outermost op ends, a zero-weight dependency to the next one's start
    dep = (s == -1) & (depth == 0)
    zero = dep | ((n_s == -1) & n_blocking)
    weight = np.where(zero, 0, ts_node[dst] - ts_node[src])
    # HTA's attribution: a stretch from a start is its op's; into an end, that op's; from one
    # op's end to a sibling's start, the enclosing op's
    owner = np.where(s == 1, ev, np.where(n_s == -1, n_ev, np.where(np.isnan(parent), ev, parent)))
    typ = np.where(dep, _DEP, _OP)
    return src, dst, weight, typ, np.where(dep, -1, owner).astype(np.int64)


def _device_edges(
    df: pl.DataFrame,
    cl: pl.DataFrame,
    start_node: dict,
    end_node: dict,
    ts_node: np.ndarray,
    full_ts: np.ndarray,
    full_ic: np.ndarray,
    edge: Any,
    rank: dict[str, Any],
) -> None:
    """HTA's walk over the device events in start order (syncs at their end)."""
    dev = cl.filter(
        ((pl.col("hta_stream") != -1) | pl.col("name").is_in(_SYNC_NAMES))
        & (pl.col("index_correlation") >= 0)
    )
    if dev.height == 0:
        return
    q, prev_launch, next_launch = _rank_links(df, rank)
    is_sync = (dev["kind"] == "sync").to_numpy()
    sort_by = np.where(is_sync, dev["end"].to_numpy(), dev["ts"].to_numpy())
    rows = dev[_quick_order(sort_by)].select(
        "index", "name", "kind", "hta_stream", "index_correlation", "wait_corr"
    )
    last: dict[int, int] = {}
    last_ev: dict[int, int] = {}  # HTA gives a kernel-kernel delay to the earlier kernel
    kernel_sync: dict[int, int] = {}
    for ev, name, kind, stream, runtime, wait_corr in rows.iter_rows():
        if kind == "sync":
            if name in ("Stream Wait Event", "Event Sync"):
                launch = prev_launch.get(wait_corr, -1)
                if launch == -1:
                    continue
                src_kernel = int(full_ic[launch])
                if name == "Stream Wait Event":
                    dest_launch = next_launch.get(runtime, -1)
                    if dest_launch >= 0:
                        kernel_sync[int(full_ic[dest_launch])] = src_kernel
                elif src_kernel in end_node and runtime in end_node:
                    edge(end_node[src_kernel], end_node[runtime], _SYNC)
                continue
            if name in ("Context Sync", "Stream Sync"):
                targets = list(last.values()) if name == "Context Sync" else [last.get(stream)]
                for g in targets:
                    if g is not None and runtime in end_node:
                        edge(g, end_node[runtime], _SYNC)
            continue
        s, e = start_node[ev], end_node[ev]
        edge(s, e, _OP, ev)
        sync_src = kernel_sync.pop(ev, None)
        sync_end = end_node.get(sync_src) if sync_src is not None else None
        if sync_end is not None:
            edge(sync_end, s, _SYNC)
        launch_ts = full_ts[runtime]
        prev = last.get(stream)
        if (
            q.get(runtime) == 1
            and q.get(ev) == 0
            and (prev is None or ts_node[prev] < launch_ts)
            and (sync_end is None or ts_node[sync_end] < launch_ts)
            and runtime in start_node
        ):
            edge(start_node[runtime], s, _LAUNCH, ev)
        elif prev is not None and (sync_end is None or ts_node[sync_end] < ts_node[prev]):
            edge(prev, s, _KK, last_ev[stream])
        last[stream] = e
        last_ev[stream] = ev


def _longest(
    src: np.ndarray,
    dst: np.ndarray,
    wt: np.ndarray,
    typ: np.ndarray,
    attr: np.ndarray,
    ts_node: np.ndarray,
    df: pl.DataFrame,
    names: np.ndarray,
) -> Path:
    """networkx's ``dag_longest_path`` over the edges as HTA adds them to its DiGraph (nodes in
    order of first appearance, one edge per pair: the last added, at the first one's place),
    then the path's time by HTA's kind. Negative weights count 0, as HTA corrects them."""
    if len(src) == 0:
        return Path(0, {})
    n = len(ts_node)
    # one edge per pair: its place is the pair's first, its weight and kind the pair's last
    key = src * n + dst
    _, first = np.unique(key, return_index=True)
    last = len(key) - 1 - np.unique(key[::-1], return_index=True)[1]
    keep = last[np.argsort(first, kind="stable")]  # pairs in order of first insertion
    # nodes in order of first appearance (u before v in each edge)
    both = np.stack([src, dst], axis=1).ravel()
    seen, at = np.unique(both, return_index=True)
    nodes = seen[np.argsort(at, kind="stable")].tolist()
    ks, kd = src[keep], dst[keep]
    by_src = keep[np.argsort(ks, kind="stable")]
    by_dst = keep[np.argsort(kd, kind="stable")]
    src_l, dst_l = src.tolist(), dst.tolist()
    w = np.maximum(wt, 0).tolist()
    s_start = np.searchsorted(ks[np.argsort(ks, kind="stable")], np.arange(n + 1)).tolist()
    d_start = np.searchsorted(kd[np.argsort(kd, kind="stable")], np.arange(n + 1)).tolist()
    out_e, in_e = by_src.tolist(), by_dst.tolist()
    # a graph walk: each node's distance needs its predecessors' (no vectorised form)
    indeg = [d_start[v + 1] - d_start[v] for v in range(n)]
    gen = [v for v in nodes if indeg[v] == 0]
    topo: list[int] = []
    while gen:
        topo.extend(gen)
        nxt: list[int] = []
        for v in gen:
            for i in out_e[s_start[v] : s_start[v + 1]]:
                c = dst_l[i]
                indeg[c] -= 1
                if indeg[c] == 0:
                    nxt.append(c)
        gen = nxt
    if len(topo) != len(nodes):
        raise GraphRefused("the critical-path graph has a cycle")
    dist = [0] * n
    via = [-1] * n
    for v in topo:
        best, arg = 0, -1
        for i in in_e[d_start[v] : d_start[v + 1]]:
            d = dist[src_l[i]] + w[i]
            if arg == -1 or d > best:
                best, arg = d, i
        if arg != -1:
            dist[v], via[v] = best, arg
    v = max(topo, key=dist.__getitem__)
    length = dist[v]
    path_edges: list[int] = []
    while via[v] >= 0:
        path_edges.append(via[v])
        v = src_l[via[v]]
    path_edges.reverse()
    e = np.array(path_edges, np.int64)
    kinds = _kinds(typ[e], attr[e], df["hta_stream"].to_numpy(), names)
    ns = np.maximum(wt[e], 0)
    stretches = pl.DataFrame(
        {"kind": kinds, "event": attr[e], "start_ns": ts_node[src[e]], "end_ns": ts_node[dst[e]], "ns": ns},
        schema=STRETCH_SCHEMA,
    )
    totals = (
        stretches.filter(pl.col("kind") != "").group_by("kind", maintain_order=True).agg(pl.col("ns").sum())
    )
    return Path(length, dict(totals.iter_rows()), stretches)


def _kinds(typ: np.ndarray, ev: np.ndarray, stream: np.ndarray, names: np.ndarray) -> np.ndarray:
    """HTA's ``bound_by`` of each edge ("" for its zero-weight dependency and sync edges)."""
    on = np.maximum(ev, 0)
    device = stream[on] >= 0
    comm = np.zeros(len(ev), bool)
    if device.any():
        comm[device] = pl.Series(names[on[device]], dtype=pl.String).str.contains(HTA_COMM_PATTERN).to_numpy()
    return np.select(
        [typ == _KK, typ == _LAUNCH, (typ == _DEP) | (typ == _SYNC), ~device, comm],
        [
            "gpu_kernel_kernel_overhead",
            "gpu_kernel_launch_overhead",
            "",
            "cpu_bound",
            "gpu_communication_bound",
        ],
        "gpu_compute_bound",
    )


def _step_of(name: str, instance: int) -> int:
    m = _STEP_RE.search(name)
    return int(m.group(1)) if m else instance


def paths(
    events: pl.LazyFrame | pl.DataFrame, annotation: str = "ProfilerStep", instance: int | None = None
) -> list[tuple[str, int, int, str, int, int, Path | None]]:
    """HTA's critical path of each window: ``(node, rank, instance, name, start_ns, end_ns,
    path)`` per rank and host instance of ``annotation`` (:func:`instances`; only the
    ``instance``-th when given) on HTA's view of the events. ``path`` is None where HTA refuses
    the graph (a cycle).
    """
    return _paths(
        in_trace_order(events.collect() if isinstance(events, pl.LazyFrame) else events), annotation, instance
    )


def _paths(
    ev: pl.DataFrame, annotation: str, instance: int | None
) -> list[tuple[str, int, int, str, int, int, Path | None]]:
    """:func:`paths` of events already in :func:`in_trace_order`."""
    out = []
    for (node, rank), part in ev.group_by("node", "rank", maintain_order=True):
        df = _rank_frame(part)
        inst = instances(df, annotation)
        if instance is not None:
            inst = inst.filter(pl.col("instance") == instance)
        known: dict[str, Any] = {}
        for i, name, s, e in inst.iter_rows():
            try:
                p: Path | None = critical_path(df, s, e, known)
            except GraphRefused:
                p = None
            out.append((node, rank, i, name, s, e, p))
    return out


def stage(
    events: pl.LazyFrame,
    windows: pl.DataFrame | None = None,
    launches: pl.DataFrame | None = None,
    annotation: str = "ProfilerStep",
    instance: int | None = None,
) -> dict[str, Any]:
    """The ``critical_path`` stage's tables under ``hta_compat`` (see the module docstring).

    ``events`` is HTA's view (:meth:`profui.analysis.Trace.hta_events`); ``windows`` and
    ``launches`` are not read (HTA takes its windows and launch links from the events). One row
    of ``steps`` per rank and window of :func:`paths`: ``step`` is the number after ``#`` in the
    annotation's name, else its instance id; ``length_ns`` is the path's length, which is not
    ``end_ns - start_ns`` (HTA's path skips host time between outermost ops). ``by_kind``'s
    ``kind`` are HTA's kinds; ``events`` has a row per edge of the path (``kind`` ``dependency``
    for HTA's zero-weight dependency and sync edges, whose ends may lie apart in time);
    ``what_if`` is empty under ``hta_compat`` (HTA has no replays). A window whose graph HTA
    refuses has no rows.
    """
    ev = in_trace_order(events.collect() if isinstance(events, pl.LazyFrame) else events)
    steps, kinds = [], []
    stretches: list[pl.DataFrame] = []
    in_order: dict[tuple[str, int], pl.DataFrame] = {}
    for node, rank, i, name, s, e, p in _paths(ev, annotation, instance):
        if p is None:
            continue
        if (node, rank) not in in_order:
            rank_ev = ev.filter(pl.col("node") == node, pl.col("rank") == rank).sort("hta_order")
            in_order[(node, rank)] = rank_ev.with_row_index("index").with_columns(
                pl.col("index").cast(pl.Int64)
            )
        step = _step_of(name, i)
        steps.append((node, rank, step, s, e, p.length_ns))
        kinds += [(node, rank, step, k, v) for k, v in p.by_kind.items()]
        stretches.append(_stretch_rows(in_order[(node, rank)], p, node, rank, step))
    out = {f: TABLES[("critical_path", f)].empty() for f in _FILES}
    for f, rows in (("steps.parquet", steps), ("by_kind.parquet", kinds)):
        if rows:
            out[f] = pl.DataFrame(rows, schema=out[f].schema, orient="row")
    if stretches:
        out["events.parquet"] = pl.concat(stretches).cast(out["events.parquet"].schema)
    return out


def _stretch_rows(df: pl.DataFrame, p: Path, node: str, rank: int, step: int) -> pl.DataFrame:
    """The path's rows of ``events.parquet`` (``df``: the rank's events in trace order)."""
    info = df.select(
        pl.col("index").alias("event"),
        "name",
        "tid",
        "device",
        pl.col("hta_stream").cast(pl.Int32).alias("stream"),
    )
    on_host = (pl.col("event") < 0) | (pl.col("stream") == -1)
    return (
        p.stretches.with_row_index("seq")
        .join(info, on="event", how="left", maintain_order="left")
        .select(
            pl.lit(node).alias("node"),
            pl.lit(rank, pl.Int64).alias("rank"),
            pl.lit(step, pl.Int64).alias("step"),
            pl.col("seq").cast(pl.Int64),
            pl.when(pl.col("kind") == "").then(pl.lit("dependency")).otherwise(pl.col("kind")).alias("kind"),
            pl.when(on_host).then(pl.lit("host")).otherwise(pl.lit("device")).alias("lane"),
            pl.when(on_host).then(pl.col("tid")).alias("tid"),
            pl.when(~on_host).then(pl.col("device")).alias("device"),
            pl.when(~on_host).then(pl.col("stream")).alias("stream"),
            pl.col("name").fill_null(""),
            "start_ns",
            "end_ns",
        )
    )
