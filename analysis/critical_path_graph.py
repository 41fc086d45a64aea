"""One step's dependency graph across every rank (:class:`~.critical_path_replay.Graph`), built
from each rank's :class:`~.critical_path_inputs.RankInputs` and step window.

Host lanes: each thread's time is a chain of instants, the starts and ends of its anchors
(launch calls, synchronize calls, host collectives) and the step's start and end; the time
between two is the thread's own, by class. Device lanes: each stream's ops in start order, each
after its launch call's start and its stream predecessor's end. A synchronize call's end waits
for the device op it waited on; a ``cudaStreamWaitEvent`` orders the waiting stream's next op
after the recorded op. A collective ends on each rank no earlier than the last rank's arrival
plus the collective's own time. An op on another thread that ends within
:data:`WAKE_WITHIN_NS` of a host collective's end waits for it.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import NamedTuple

import numpy as np
import polars as pl

from .comm import HOST_OP, STRAGGLER_CAUSES
from .critical_path_inputs import (
    CLASS_KINDS,
    HOST_COMPUTE,
    HOST_OVERHEAD,
    INPUT,
    RANK_TIME,
    STALL,
    RankInputs,
    ThreadTime,
)
from .critical_path_replay import (
    BLOCKED,
    COLL,
    END,
    ENQUEUE,
    EVENT_WAIT,
    LAUNCH,
    OP,
    ORPHAN,
    STREAM,
    SYNC,
    THREAD,
    WAKE,
    Graph,
    Lane,
)

#: An op starting this soon after an op of another stream of its device ended, and later than
#: its launch and its stream predecessor allow, waited for it (a ``cudaStreamWaitEvent`` or an
#: event a CUDA graph's edges imply, where the trace has no CUPTI sync rows). An event wait
#: releases the waiting stream a few µs after the recorded op ends (1-5 µs between the two on
#: hta-negative_queue_length_values_check, whose clock has 1 µs resolution); two independent
#: streams rarely hand over that close, and the rule only applies to a start nothing else
#: explains.
IMPLICIT_WAIT_NS = 10_000
#: A host op that ends this soon after a host collective on another thread of its rank ended
#: (and started before it ended) waited for it: a thread woken by the collective's end returns
#: from its wait within tens of µs.
WAKE_WITHIN_NS = 50_000
#: A thread outside any op when a host collective of another thread ended, whose next op starts
#: this soon after, was woken by it. gloo's DDP main thread waits outside any op for the worker
#: thread's ``gloo:all_reduce``: on a recorded 3-rank run (load 9 on 16 cores) it resumed 17 µs
#: to 1.2 ms after the collective ended. A thread that was not waiting and happens to start an
#: op this soon after only gets its idle time before it counted as a wait.
RESUME_WITHIN_NS = 2_000_000
#: The same for a thread idle outside any op since before the collective's middle (DDP's main
#: thread waiting for the all-reduce it asked for): a freshly recorded 3-rank run on a loaded
#: 2-core host (load ~6) resumed 3.3 ms after the collective ended; a thread that idle was
#: waiting for something, and the collective is what ended just before it resumed.
WOKEN_IDLE_WITHIN_NS = 10_000_000


@dataclass
class RankStep:
    """One rank's part of a step's graph: where it starts and ends, and its nodes."""

    key: tuple[str, int]
    step: int
    start: int
    cpu_end: int
    start_node: int = -1
    end_node: int = -1
    main_tid: int | None = None
    threads: dict[int, ThreadTime] = field(default_factory=dict)
    # (device, stream, ts) -> (start node, end node, op kind on the path, name)
    ops: dict[tuple[int, int, int], tuple[int, int]] = field(default_factory=dict)
    # (tid, ts) -> (start node, end node) of host collective anchors
    host_coll: dict[tuple[int, int], tuple[int, int, str]] = field(default_factory=dict)
    # a device op's start and end nodes -> its lane
    op_lane: dict[int, Lane] = field(default_factory=dict)
    # a host collective's start node -> threads' resumes inside it: (node, idle since, lane)
    resumes: dict[int, list[tuple[int, int, Lane]]] = field(default_factory=dict)
    # a host collective's (tid, start) -> the last arrival of its instance over the step's ranks
    last_arrival: dict[tuple[int, int], int] = field(default_factory=dict)
    # the points of the rank's host thread chains in time order: times and nodes
    host_t: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=np.int64))
    host_node: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=np.int64))

    def time_of(self, tid: int | None) -> ThreadTime | None:
        """The time line a thread's time is classified by: the step thread's is its rank's
        (every thread's ops), any other thread's its own."""
        if tid is not None and tid == self.main_tid:
            return self.threads.get(RANK_TIME)
        return self.threads.get(tid) if tid is not None else None

    @property
    def end(self) -> int:
        """Observed end of the step on this rank (set once the graph is built)."""
        return self._end

    @end.setter
    def end(self, value: int) -> None:
        self._end = value


def _op_kind(kind: str, comm: bool) -> str:
    if kind in ("memcpy", "memset"):
        return "transfer"
    return "communication" if comm else "device_compute"


def _split(tt: ThreadTime | None, a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Class times of each ``[a, b)`` on a thread, then its stall time (4 × n); a thread
    without events: overhead, no stall (nothing says it was stalled)."""
    if tt is None:
        out = np.zeros((4, len(a)), dtype=np.int64)
        out[HOST_OVERHEAD] = b - a
        return out
    return tt.at(b) - tt.at(a)


_NO_TIME = np.iinfo(np.int64).min


class Window(NamedTuple):
    """A rank's device ops in one step's window (the rank's ops' rows, in their order) as numpy
    columns; a null is the ``no_*`` mask's, its value a sentinel (``launch_ts``,
    ``correlation``: :data:`_NO_TIME`; ``prev_end``: the largest int64)."""

    col: dict[str, np.ndarray]
    height: int

    def launch_ts_numpy(self) -> np.ndarray:
        """The launch times, int64 ns (a null: :data:`_NO_TIME`; read ``no_launch`` first). Never
        float: epoch ns round to 256 ns in float64."""
        return self.col["launch_ts"]

    def launched(self) -> np.ndarray:
        """Each op's launch time, its start where it has none."""
        return np.where(self.col["no_launch"], self.col["ts"], self.col["launch_ts"])


def _derived(inp: RankInputs) -> dict:
    """What every step's graph of the rank reads from its frames, made once: the anchors' and
    ops' times as numpy (a null time: one no window holds, as a filter drops a null) and each op's
    lane id with the lanes (one per distinct device, stream, name, kind, comm)."""
    d = inp.derived
    if d:
        return d
    ops = inp.ops
    a = inp.anchors
    d["anchor_ts"] = a["ts"].fill_null(_NO_TIME).to_numpy()
    d["anchors"] = {
        "tid": a["tid"].to_numpy(),
        "ts": a["ts"].to_numpy(),
        "end": a["end"].to_numpy(),
        "sync": a["sync"].to_numpy(),
        "no_launch": a["launch"].is_null().to_numpy(),
        "launch": a["launch"].to_numpy(),
        **{c: _objects(a[c].to_list()) for c in ("name", "wait_stream", "wait_until")},
    }
    d["ts"] = ops["ts"].fill_null(-_NO_TIME - 1).to_numpy()
    d["end"] = ops["end"].fill_null(_NO_TIME).to_numpy()
    d["uncorrelated"] = ops["launch_ts"].is_null().to_numpy()
    d["launch_ts"] = ops["launch_ts"].fill_null(_NO_TIME).to_numpy()
    d["window"] = {
        "device": ops["device"].to_numpy(),
        "stream": ops["stream"].to_numpy(),
        "ts": ops["ts"].to_numpy(),
        "end": ops["end"].to_numpy(),
        "comm": ops["comm"].to_numpy(),
        "launch_ts": d["launch_ts"],
        "no_launch": d["uncorrelated"],
        "correlation": ops["correlation"].fill_null(_NO_TIME).to_numpy(),
        "no_correlation": ops["correlation"].is_null().to_numpy(),
        "prev_end": ops["prev_end"].fill_null(-_NO_TIME - 1).to_numpy(),
        "no_prev": ops["prev_end"].is_null().to_numpy(),
    }
    what = ["device", "stream", "name", "kind", "comm"]
    ids = ops.select(pl.struct(what).rank("dense").cast(pl.Int64) - 1).to_series().to_numpy()
    distinct = ops.select(what).with_columns(_id=ids).unique("_id").sort("_id")
    d["lane_id"] = ids
    d["lanes"] = _objects(
        [Lane("device", None, dv, st, nm, _op_kind(k, c)) for dv, st, nm, k, c, _ in distinct.iter_rows()]
    )
    coll = inp.collectives
    d["arrive"] = coll["arrive_ns"].fill_null(_NO_TIME).to_numpy()
    d["coll_rows"] = coll.select(
        "source", "collective", "seq", "name", "tid", "device", "stream", "arrive_ns"
    ).rows()
    return d


def _rank_graph(g: Graph, ri: int, rs: RankStep, inp: RankInputs, main_tid: int | None) -> None:
    start, cpu_end = rs.start, rs.cpu_end
    rs.start_node = g.node(start, ri, fixed=True)
    d = _derived(inp)
    a_ts = d["anchor_ts"]
    keep = (a_ts >= start) & (a_ts < cpu_end)
    anchors = {c: col[keep] for c, col in d["anchors"].items()}
    o_ts, o_end, o_lts, o_unc = d["ts"], d["end"], d["launch_ts"], d["uncorrelated"]
    in_step = (~o_unc & (o_lts >= start) & (o_lts < cpu_end)) | (o_unc & (o_ts >= start) & (o_ts < cpu_end))
    last = o_end[in_step].max() if in_step.any() else None
    end = max(cpu_end, int(last) if last is not None else cpu_end)
    rs.end = end
    rows = np.flatnonzero((o_end > start) & (o_ts < end) & (o_unc | (o_lts < cpu_end)))
    win = Window({c: col[rows] for c, col in d["window"].items()}, len(rows))
    win_lanes = d["lanes"][d["lane_id"][rows]]
    rs.main_tid = main_tid

    # host anchors: a start instant each, and an end instant for those something waits on
    a_tid, a_ts, a_end, sync = anchors["tid"], anchors["ts"], anchors["end"], anchors["sync"]
    n = len(a_ts)
    is_coll = anchors["no_launch"] & ~sync
    s_nodes = g.nodes(a_ts.tolist(), ri) + np.arange(n)
    waits = np.flatnonzero(sync | is_coll)  # a launch call's own end is no dependency of anything
    e_of = np.full(n, -1, dtype=np.int64)
    e_of[waits] = g.nodes(a_end[waits].tolist(), ri) + np.arange(len(waits))
    has_launch = ~anchors["no_launch"]
    launch_node = dict(zip(anchors["launch"][has_launch].tolist(), s_nodes[has_launch].tolist(), strict=True))
    names = anchors["name"]
    sync_ends: list[tuple] = []  # node, ts, end, wait_stream, until, tid, name
    wstream, until = anchors["wait_stream"], anchors["wait_until"]
    for i in np.flatnonzero(sync).tolist():
        u = until[i] if until[i] is not None else int(a_ts[i])
        sync_ends.append((int(e_of[i]), int(a_ts[i]), int(a_end[i]), wstream[i], u, int(a_tid[i]), names[i]))
    coll_anchors: list[tuple[int, int, int, int, int, str]] = []  # tid, ts, end, s, e, name
    for i in np.flatnonzero(is_coll).tolist():
        tid, ts = int(a_tid[i]), int(a_ts[i])
        coll_anchors.append((tid, ts, int(a_end[i]), int(s_nodes[i]), int(e_of[i]), names[i]))
        rs.host_coll[(tid, ts)] = (int(s_nodes[i]), int(e_of[i]), names[i])
    # points of the threads' chains: (tid, time, order at equal times, node, blocked)
    p_tid = [a_tid, a_tid[waits]]
    p_t = [a_ts, a_end[waits]]
    p_ord = [2 * np.arange(n), 2 * waits + 1]
    p_node = [s_nodes, e_of[waits]]
    p_blk = [np.zeros(n, dtype=bool), np.ones(len(waits), dtype=bool)]
    extra: list[tuple[int, int, int, int, bool]] = []
    # a collective a worker thread runs starts once another thread enqueued it (gloo's worker
    # runs the all-reduce that the main thread's c10d::allreduce_ asked for): its idle time
    # before is no work of its own
    enqueued = 1 << 60
    for ctid, cts, _c_end, c_start, _e, _cname in coll_anchors:
        got = _enqueue(rs, ctid, cts)
        if got is None:
            continue
        tid, at, name = got
        q = g.node(at, ri)
        extra.append((tid, at, enqueued, q, False))
        enqueued += 1
        # before the collective starts: no event of its thread holds that time by name
        g.edge(q, c_start, ENQUEUE, 0, Lane("host", tid=ctid, kind="host_overhead"))
        p_blk[0][np.flatnonzero(s_nodes == c_start)] = True
    if main_tid is None and n:
        tids, counts = np.unique(a_tid, return_counts=True)
        main_tid = int(tids[np.argmax(counts)])
        rs.main_tid = main_tid
    host_end = g.node(cpu_end, ri)
    if main_tid is not None:
        woken = _step_end_wake(g, rs, main_tid, coll_anchors, host_end)
        extra.append((main_tid, cpu_end, 1 << 62, host_end, woken))
    # an op of another thread woken by a host collective's end waits for it
    order = 1 << 61
    for ctid, cts, c_end, c_start, c_node, _name in coll_anchors:
        for tid, tt in rs.threads.items():
            if tid in (ctid, RANK_TIME):
                continue
            m = (tt.name_end >= c_end) & (tt.name_end <= c_end + WAKE_WITHIN_NS) & (tt.name_start < c_end)
            hits = np.flatnonzero(m)
            if len(hits):  # an op that waited inside: it ends right after the collective
                j = int(hits[np.argmin(tt.name_end[hits])])
                at, name = int(tt.name_end[j]), tt.names[j]
            else:  # a thread idle outside its ops until woken: its next event starts right after
                # (a user's annotation or a python frame around the wait is no op it runs)
                running = tt.in_op(c_end)
                since = tt.idle_since(c_end)
                idle_since = since if since is not None else start
                # idle since before the collective's middle: it waited for it, however late
                # the scheduler woke it (within a bound)
                within = WOKEN_IDLE_WITHIN_NS if 2 * idle_since <= cts + c_end else RESUME_WITHIN_NS
                m = (tt.name_start >= c_end) & (tt.name_start <= c_end + within)
                hits = np.flatnonzero(m)
                if running or not len(hits):
                    continue
                j = int(hits[np.argmin(tt.name_start[hits])])
                at, name = int(tt.name_start[j]), ""  # the wait lies before the op: unnamed
            w = g.node(at, ri)
            g.edge(c_node, w, WAKE, 0, Lane("host", tid=tid, name=name, kind="host_overhead"))
            extra.append((tid, at, order, w, True))
            order += 1
        # the collective's result is in once its last rank arrived (this rank, or a later one)
        ready = max(cts, rs.last_arrival.get((ctid, cts), cts))
        for tid, tt in rs.threads.items():
            # woken while the collective still runs here (its end recorded later than its
            # result was in): the thread's first event started inside it after the last rank's
            # arrival, on a thread outside its ops until then; joined to that arrival in
            # :func:`_collectives`
            if tid in (ctid, RANK_TIME):
                continue
            inside = np.flatnonzero((tt.name_start > ready) & (tt.name_start < c_end))
            if not len(inside):
                continue
            j = int(inside[np.argmin(tt.name_start[inside])])
            at = int(tt.name_start[j])
            since = tt.idle_since(at)
            if since is not None and since >= at:
                continue  # running: not idle when it resumed
            idle_from = since if since is not None else start
            w = g.node(at, ri)
            rs.resumes.setdefault(c_start, []).append(
                (w, idle_from, Lane("host", tid=tid, kind="host_overhead"))
            )
            extra.append((tid, at, order, w, True))
            order += 1
    if main_tid is not None:
        extra.extend(_thread_waits(g, ri, rs, main_tid, coll_anchors))
    if extra:
        cols = list(zip(*extra, strict=True))
        for dst_list, col in zip((p_tid, p_t, p_ord, p_node, p_blk), cols, strict=True):
            dst_list.append(np.asarray(col))
    tid_all = np.concatenate(p_tid).astype(np.int64)
    t_all = np.concatenate(p_t).astype(np.int64)
    node_all = np.concatenate(p_node).astype(np.int64)
    blk_all = np.concatenate(p_blk).astype(bool)
    by = np.lexsort((np.concatenate(p_ord), t_all, tid_all))
    tid_all, t_all, node_all, blk_all = tid_all[by], t_all[by], node_all[by], blk_all[by]
    by_t = np.argsort(t_all, kind="stable")
    rs.host_t, rs.host_node = t_all[by_t], node_all[by_t]
    first = np.r_[True, tid_all[1:] != tid_all[:-1]] if len(by) else np.zeros(0, dtype=bool)
    prev_node = np.where(first, rs.start_node, np.roll(node_all, 1))
    prev_t = np.where(first, start, np.roll(t_all, 1))
    # a host collective's end right after its own start: its COLL edges say when it ends
    keep = np.ones(len(node_all), dtype=bool)
    if coll_anchors:
        own = {e: s for _, _, _, s, e, _ in coll_anchors}
        keep = np.array(
            [own.get(d) != p for d, p in zip(node_all.tolist(), prev_node.tolist(), strict=True)], dtype=bool
        )
    splits: list[np.ndarray] = []
    lanes: list[Lane] = []
    bounds = np.flatnonzero(np.r_[first, True])
    for k in range(len(bounds) - 1):
        lo, hi = int(bounds[k]), int(bounds[k + 1])
        tid = int(tid_all[lo])
        part = _split(rs.time_of(tid), prev_t[lo:hi], t_all[lo:hi])
        if tid != main_tid:
            part[3] = 0  # the host change removes the step thread's stalls only
        splits.append(part.T)
        lanes.extend([Lane("host", tid=tid)] * (hi - lo))
    sel = np.flatnonzero(keep)
    g.edges(
        prev_node[sel],
        node_all[sel],
        np.where(blk_all[sel], BLOCKED, THREAD).tolist(),
        0,
        [lanes[i] for i in sel.tolist()],
        np.concatenate(splits)[sel] if splits else np.zeros((0, 4), dtype=np.int64),
    )
    end_node = g.node(end, ri)
    rs.end_node = end_node
    g.edge(host_end, end_node, END)
    _device_lanes(g, ri, rs, inp, win, win_lanes, launch_node, end_node)
    _syncs(g, ri, win, sync_ends, rs)
    _stream_waits(g, inp, win, rs)
    _implicit_waits(g, inp, win, rs)


def _step_end_wake(
    g: Graph,
    rs: RankStep,
    main_tid: int,
    coll_anchors: list[tuple[int, int, int, int, int, str]],
    host_end: int,
) -> bool:
    """The step's end waits for a host collective of another thread when the step thread has
    no event of its own from the collective's start to the step's end (idle across it: DDP's
    main thread in ``work.wait()`` while gloo's worker runs the all-reduce); of several, the
    one ending last. Returns whether one was found (its ``WAKE`` edge added).

    No wake window applies here, unlike a resume at an op (:data:`WOKEN_IDLE_WITHIN_NS`): that
    bound keeps an unrelated later op from being taken for the collective's waiter, but a step
    end with nothing of the thread's own since the collective began has no other candidate in
    the trace, and without the edge the collective's whole span would read as the step
    thread's own overhead (hta-cpu_only rank 34, ProfilerStep#551: 170 ms of gloo:all_reduce
    called a removable stall). The time from the collective's end to the step's end (12.9 ms
    there) stays on the path as the step thread's overhead, removed by the host change where
    it is a stall."""
    own = rs.threads.get(main_tid)  # None: no event of its own in the step at all
    best: tuple[int, int] | None = None  # (end, end node)
    for tid, cts, c_end, _s, c_node, _name in coll_anchors:
        if tid == main_tid or c_end > rs.cpu_end:
            continue
        if own is not None and ((own.name_end > cts) & (own.name_start < rs.cpu_end)).any():
            continue  # the step thread did something of its own meanwhile
        if best is None or c_end > best[0]:
            best = (c_end, c_node)
    if best is None:
        return False
    tt = rs.time_of(main_tid)
    part = _split(tt, np.array([best[0]]), np.array([rs.cpu_end]))[:, 0]
    split = (0, 0, int(rs.cpu_end - best[0]), int(part[STALL]))
    g.edge(best[1], host_end, WAKE, 0, Lane("host", tid=main_tid, kind="host_overhead"), split)
    return True


def _thread_waits(
    g: Graph, ri: int, rs: RankStep, main_tid: int, coll_anchors: list[tuple[int, int, int, int, int, str]]
) -> list[tuple[int, int, int, int, bool]]:
    """The step thread waiting for another thread of its rank (DDP's main thread blocked in
    ``backward`` while the autograd thread runs the backward ops): a stretch between two
    consecutive instants of the step thread's own events (nothing of its own starts or ends
    inside) in which another thread, idle at its start, runs ops that all end inside it, the
    last within :data:`RESUME_WITHIN_NS` of the step thread's resume. The other thread's first
    op there waits for the stretch's start (``ENQUEUE``), the resume for its last op's end
    (``WAKE``); of several such threads, the one ending last. Stretches a host collective meets
    are left to the collective rules. Returns the chain points to add."""
    own = rs.threads.get(main_tid)
    if own is None:
        return []
    lo, hi = rs.start, rs.cpu_end
    starts, ends = own.sorted_bounds()
    inside = [
        x[np.searchsorted(x, lo, side="left") : np.searchsorted(x, hi, side="right")] for x in (starts, ends)
    ]
    b = np.unique(np.concatenate([[lo, hi], *inside]))
    if len(b) < 2:
        return []
    k_n = len(b) - 1
    best_end = np.full(k_n, -1, dtype=np.int64)
    best: dict[int, tuple[int, int, int]] = {}  # stretch -> (tid, first op start, last op end)
    for tid, tt in rs.threads.items():
        if tid in (main_tid, RANK_TIME) or not len(tt.name_start):
            continue
        i0, i1 = np.searchsorted(tt.name_start, [lo, hi], side="left")
        ns, ne = tt.name_start[i0:i1], tt.name_end[i0:i1]
        if not len(ns):
            continue
        k = np.searchsorted(b, ns, side="right") - 1
        first = np.full(k_n, np.iinfo(np.int64).max, dtype=np.int64)
        last = np.full(k_n, -1, dtype=np.int64)
        np.minimum.at(first, k, ns)
        np.maximum.at(last, k, ne)
        # idle at the stretch's start: no event of its own covers it
        s_sorted, e_sorted = tt.sorted_bounds()
        starts = b[:-1]
        running = (
            np.searchsorted(s_sorted, starts, side="left") - np.searchsorted(e_sorted, starts, side="right")
            > 0
        )
        ends = b[1:]
        ok = (last >= 0) & (last <= ends) & (ends - last <= RESUME_WITHIN_NS) & ~running & (last > best_end)
        # it ran ops there (runtime calls alone are no work the step thread waits for)
        ok[ok] = (tt.at(last[ok]) - tt.at(first[ok]))[[INPUT, HOST_COMPUTE]].sum(axis=0) > 0
        for j in np.flatnonzero(ok).tolist():
            best[j] = (tid, int(first[j]), int(last[j]))
            best_end[j] = last[j]
    out: list[tuple[int, int, int, int, bool]] = []
    for j, (tid, f, z) in sorted(best.items()):
        x, y = int(b[j]), int(b[j + 1])
        if any(cts <= y and c_end >= x for _t, cts, c_end, *_ in coll_anchors):
            continue
        mx, tf, tz, my = g.node(x, ri), g.node(f, ri), g.node(z, ri), g.node(y, ri)
        g.edge(mx, tf, ENQUEUE, 0, Lane("host", tid=main_tid, kind="host_overhead"))
        g.edge(tz, my, WAKE, 0, Lane("host", tid=main_tid, kind="host_overhead"))
        # at equal times: the stretch's start after the step thread's other points there, its
        # resume and the other thread's first op before theirs (they follow the wait)
        out += [(main_tid, x, _LAST, mx, False), (main_tid, y, -1, my, True)]
        out += [(tid, f, -1, tf, True), (tid, z, _LAST, tz, False)]
    return out


#: A chain point's order after every other point at the same instant but the step's end.
_LAST = (1 << 62) - 1


def _enqueue(rs: RankStep, ctid: int, cts: int) -> tuple[int, int, str] | None:
    """The latest ``c10d::`` op of another thread of the rank started in the step by ``cts``
    (a host collective's start on thread ``ctid``): (thread, its start, its name)."""
    best: tuple[int, int, str] | None = None
    for tid, tt in rs.threads.items():
        if tid in (ctid, RANK_TIME):
            continue
        i = int(np.searchsorted(tt.name_start, cts, side="right")) - 1
        lowest = int(np.searchsorted(tt.name_start, rs.start, side="left"))
        for j in range(i, max(lowest, i - 4096) - 1, -1):
            if tt.names[j].startswith("c10d::"):
                at = int(tt.name_start[j])
                if best is None or at > best[1]:
                    best = (tid, at, tt.names[j])
                break
    return best


def _device_lanes(
    g: Graph,
    ri: int,
    rs: RankStep,
    inp: RankInputs,
    win: Window,
    lanes: np.ndarray,
    launch_node: dict[int, int],
    end_node: int,
) -> None:
    """Each stream's ops in start order: after its launch call's start and its predecessor;
    ``lanes`` holds each op's lane (ops of one device, stream, name and kind share one)."""
    m = win.height
    if not m:
        return
    w = win.col
    dev, stream, ts, te, comm = w["device"], w["stream"], w["ts"], w["end"], w["comm"]
    s_nodes = g.nodes(ts.tolist(), ri) + np.arange(m)
    e_nodes = g.nodes(te.tolist(), ri) + np.arange(m)
    s_list, e_list, lane_list = s_nodes.tolist(), e_nodes.tolist(), lanes.tolist()
    keys = zip(dev.tolist(), stream.tolist(), ts.tolist(), strict=True)
    rs.ops.update(zip(keys, zip(s_list, e_list, strict=True), strict=True))
    rs.op_lane.update(zip(s_list, lane_list, strict=True))
    rs.op_lane.update(zip(e_list, lane_list, strict=True))
    # launch edges: from the launch call's start in the step, else from a fixed instant
    no_launch = w["no_launch"]
    src = np.full(m, -1, dtype=np.int64)
    if launch_node:
        known = np.fromiter(launch_node.keys(), dtype=np.int64, count=len(launch_node))
        node_of = np.fromiter(launch_node.values(), dtype=np.int64, count=len(launch_node))
        by = np.argsort(known)
        known, node_of = known[by], node_of[by]
        corr = w["correlation"]
        at = np.clip(np.searchsorted(known, corr), 0, len(known) - 1)
        src = np.where(known[at] == corr, node_of[at], -1)
    outside = np.flatnonzero((src < 0) & ~no_launch)
    lts = win.launch_ts_numpy()
    outside = outside[lts[outside] <= ts[outside]]
    src[outside] = g.nodes(lts[outside].tolist(), ri, fixed=True) + np.arange(len(outside))
    has = np.flatnonzero(src >= 0)
    g.edges(src[has], s_nodes[has], LAUNCH, inp.launch_floor, lanes[has].tolist())
    # stream order: the previous op of the stream in the window, else its end as a fixed instant
    same = np.r_[False, (dev[1:] == dev[:-1]) & (stream[1:] == stream[:-1])]
    prev = np.where(same, np.roll(e_nodes, 1), -1)
    pe = w["prev_end"]
    first = np.flatnonzero(~same & (pe <= ts))
    prev[first] = g.nodes(pe[first].tolist(), ri, fixed=True) + np.arange(len(first))
    # one gap lane per stream (the window is sorted by device and stream)
    run = np.cumsum(~same) - 1
    heads = np.flatnonzero(~same)
    gap_lane = _objects(
        [
            Lane("device", None, d, st, "", "device_overhead")
            for d, st in zip(dev[heads].tolist(), stream[heads].tolist(), strict=True)
        ]
    )
    has = np.flatnonzero(prev >= 0)
    g.edges(prev[has], s_nodes[has], STREAM, 0, gap_lane[run[has]].tolist())
    # an op without a correlation (MTIA's DMA requests) names no launch at all: it follows the
    # host that issued it, waiting for the latest point of its rank's host chains before its
    # start. Reached only from the step's start or its stream predecessor, it kept its observed
    # offset in every replay, and a replay that sped the host up could not move it
    # (hta-mtia_trace_single_rank: 22,359 such ops held the compute what-if to 4 ms on a path
    # of 13.3 s of host ops). An op whose correlation names a launch the trace lacks (Nsight's
    # copies issued before the capture) keeps its stream order alone: its launch is elsewhere
    alone = np.flatnonzero(w["no_correlation"] & (ts > rs.start))
    at = np.searchsorted(rs.host_t, ts[alone], side="left") - 1
    alone, at = alone[at >= 0], at[at >= 0]
    g.edges(rs.host_node[at], s_nodes[alone], ORPHAN, 0, gap_lane[run[alone]].tolist())
    work = np.flatnonzero(~comm)
    g.edges(s_nodes[work], e_nodes[work], OP, 0, lanes[work].tolist())
    # a stream's ops end in order in every replay (each starts after the one before it ends):
    # its last one launched in the step is the one the step's end can wait for
    lt = w["launch_ts"]
    here = np.where(
        no_launch,
        (ts >= rs.start) & (ts < rs.cpu_end),
        (lt >= rs.start) & (lt < rs.cpu_end),
    )
    i = np.flatnonzero(here)
    last = i[np.r_[run[i][1:] != run[i][:-1], True]] if len(i) else i
    for e in e_nodes[last].tolist():
        g.edge(e, end_node, END)


def _objects(items: list) -> np.ndarray:
    """``items`` as a 1-d object array (tuples stay whole: numpy would unpack them)."""
    out = np.empty(len(items), dtype=object)
    for i, x in enumerate(items):
        out[i] = x
    return out


def _syncs(g: Graph, ri: int, win: Window, sync_ends: list[tuple], rs: RankStep) -> None:
    """Each synchronize call's end after the device op it waited for: of the rank's ops launched
    by the time it started (or the event it waits on was recorded), on the stream it names when
    it names one, the one ending last by the call's end."""
    if not sync_ends or win.height == 0:
        return
    ends, launched, streams = win.col["end"], win.launched(), win.col["stream"]
    keys = list(zip(win.col["device"].tolist(), streams.tolist(), win.col["ts"].tolist(), strict=True))
    for node, _ts, s_end, wstream, until, tid, name in sync_ends:
        m = (launched <= until) & (ends <= s_end) & (ends > rs.start)
        if wstream is not None:
            m &= streams == wstream
        hits = np.flatnonzero(m)
        if not len(hits):
            continue
        j = int(hits[np.argmax(ends[hits])])
        op_end = rs.ops[keys[j]][1]
        g.edge(op_end, node, SYNC, 0, Lane("host", tid=tid, name=name, kind="sync_wait"))


def _stream_waits(g: Graph, inp: RankInputs, win: Window, rs: RankStep) -> None:
    """A ``cudaStreamWaitEvent``: the waiting stream's next op starts after the recorded op."""
    if inp.waits.height == 0 or win.height == 0:
        return
    waits = inp.waits.filter(pl.col("ts") >= rs.start, pl.col("ts") < rs.cpu_end)
    ends, launched, streams = win.col["end"], win.launched(), win.col["stream"]
    keys = list(zip(win.col["device"].tolist(), streams.tolist(), win.col["ts"].tolist(), strict=True))
    for ts, stream, wstream, until in waits.select("ts", "stream", "wait_stream", "wait_until").iter_rows():
        rec = np.flatnonzero((streams == wstream) & (launched <= until))
        nxt = np.flatnonzero((streams == stream) & (launched > ts))
        if not len(rec) or not len(nxt):
            continue
        a = rs.ops[keys[int(rec[np.argmax(ends[rec])])]][1]
        b = rs.ops[keys[int(nxt[np.argmin(launched[nxt])])]][0]
        g.edge(
            a,
            b,
            EVENT_WAIT,
            0,
            Lane("device", device=keys[int(nxt[0])][0], stream=stream, kind="device_overhead"),
        )


def _implicit_waits(g: Graph, inp: RankInputs, win: Window, rs: RankStep) -> None:
    """A stream wait no sync row records: an op that starts later than its launch allows (its
    launch + the rank's floor) and later than its stream predecessor's end, within
    :data:`IMPLICIT_WAIT_NS` after an op of another stream of its device ended, waited for that
    op (the latest such end)."""
    if win.height < 2:
        return
    w = win.col
    dev, stream, ts, te = w["device"], w["stream"], w["ts"], w["end"]
    low = np.iinfo(np.int64).min // 2
    launched = np.where(w["no_launch"], low, w["launch_ts"]) + inp.launch_floor
    ready = np.maximum(launched, np.where(w["no_prev"], low, w["prev_end"]))
    for d in np.unique(dev).tolist():
        on = np.flatnonzero(dev == d)
        by_end = on[np.argsort(te[on], kind="stable")]
        ends = te[by_end]
        waiting = on[ts[on] > ready[on]]
        lo = np.searchsorted(ends, ts[waiting] - IMPLICIT_WAIT_NS, side="left")
        hi = np.searchsorted(ends, ts[waiting], side="right")
        # the latest end in [lo, hi) of another stream: the last one, else the one before the
        # run of its stream that the last one ends (every end in that run is of the op's stream)
        s_end = stream[by_end]
        run_start = np.flatnonzero(np.r_[True, s_end[1:] != s_end[:-1]])
        before_run = run_start[np.searchsorted(run_start, np.arange(len(by_end)), side="right") - 1] - 1
        last = np.maximum(hi - 1, 0)
        at = np.where(s_end[last] != stream[waiting], last, before_run[last])
        found = (hi > lo) & (at >= lo)
        for i, j in zip(waiting[found].tolist(), by_end[at[found]].tolist(), strict=True):
            src = rs.ops[(int(dev[j]), int(stream[j]), int(ts[j]))][1]
            dst = rs.ops[(int(dev[i]), int(stream[i]), int(ts[i]))][0]
            lane = Lane("device", device=int(dev[i]), stream=int(stream[i]), kind="device_overhead")
            g.edge(src, dst, EVENT_WAIT, 0, lane)


def _collectives(g: Graph, parts: list[RankStep], inputs: dict[tuple[str, int], RankInputs]) -> None:
    """Each collective's end on each rank after every rank's arrival (floor: its own time)."""
    groups: dict[tuple[str, str, int], list[tuple[int, int, int, Lane]]] = {}
    for ri, rs in enumerate(parts):
        d = _derived(inputs[rs.key])
        arrive_ns, rows = d["arrive"], d["coll_rows"]
        for i in np.flatnonzero((arrive_ns >= rs.start) & (arrive_ns < rs.end)).tolist():
            source, collective, seq, name, tid, dev, stream, arrive = rows[i]
            if tid is not None and (tid, arrive) in rs.host_coll:
                a, e, _ = rs.host_coll[(tid, arrive)]
                lane = Lane("host", tid=tid, name=name, kind="communication")
            elif dev is not None and (dev, stream, arrive) in rs.ops:
                a, e = rs.ops[(dev, stream, arrive)]
                lane = Lane("device", device=dev, stream=stream, name=name, kind="communication")
            else:
                continue
            groups.setdefault((source, collective, seq), []).append((ri, a, e, lane))
    for members in groups.values():
        last = max(members, key=lambda m: g.t[m[1]])
        own_time = g.t[last[2]] - g.t[last[1]]
        # the result is in on every rank by the first end any rank recorded: on a loaded host
        # the exchange itself can take longer after the last arrival than the wake bound
        done = max(g.t[last[1]], min(g.t[m[2]] for m in members))
        for ri, a, _e, _lane in members:
            # a thread idle when the last rank arrived and resuming soon after the result was in
            # waited for it
            for w, idle_from, lane in parts[ri].resumes.get(a, []):
                if idle_from <= g.t[last[1]] <= g.t[w] <= done + WOKEN_IDLE_WITHIN_NS:
                    g.edge(last[1], w, WAKE, 0, lane)
                    g.woken[w] = a
        for _ri, a, e, lane in members:
            arrivals = [m[1] for m in members] if g.t[e] >= g.t[last[1]] else [a]
            g.coll[e] = (arrivals, a, own_time if len(arrivals) > 1 else g.t[e] - g.t[a])
            for q in arrivals:
                g.edge(q, e, COLL, g.coll[e][2], lane)
    # a collective found on one rank only (the others not traced): its own time
    has_in = set(g.dst)
    for rs in parts:
        for a, e in list(rs.ops.values()):
            if e not in g.coll and e not in has_in:
                g.coll[e] = ([a], a, g.t[e] - g.t[a])
                g.edge(a, e, COLL, g.t[e] - g.t[a], rs.op_lane[e])


def _last_arrivals(
    windows: list[tuple[tuple[str, int], int, int, int | None]], inputs: dict[tuple[str, int], RankInputs]
) -> dict[tuple[str, int], dict[tuple[int, int], int]]:
    """Per rank, each host collective arriving in its step window (by thread and start): the
    latest arrival at its instance among the ranks' windows."""
    latest: dict[tuple[str, str, int], int] = {}
    mine: list[tuple[tuple[str, int], tuple[int, int], tuple[str, str, int]]] = []
    for key, cpu_start, cpu_end, _tid in windows:
        d = _derived(inputs[key])
        arrive, rows = d["arrive"], d["coll_rows"]
        for i in np.flatnonzero((arrive >= cpu_start) & (arrive < cpu_end)).tolist():
            source, collective, seq, _name, tid, _dev, _stream, at = rows[i]
            inst = (source, collective, seq)
            latest[inst] = max(latest.get(inst, at), at)
            if tid is not None:
                mine.append((key, (tid, at), inst))
    out: dict[tuple[str, int], dict[tuple[int, int], int]] = {}
    for key, anchor, inst in mine:
        out.setdefault(key, {})[anchor] = latest[inst]
    return out


def step_graph(
    step: int,
    windows: list[tuple[tuple[str, int], int, int, int | None]],
    inputs: dict[tuple[str, int], RankInputs],
    late: pl.DataFrame | None = None,
) -> tuple[Graph, list[RankStep]]:
    """The graph of one step: ``windows`` holds each rank's (key, cpu_start, cpu_end, marker tid);
    ``late`` (:func:`~.critical_path_inputs.lateness`' rows) what the straggler change cuts."""
    g = Graph()
    parts: list[RankStep] = []
    last = _last_arrivals(windows, inputs)
    for ri, (key, cpu_start, cpu_end, main_tid) in enumerate(windows):
        inp = inputs[key]
        rs = RankStep(key, step, cpu_start, cpu_end, threads=inp.threads, last_arrival=last.get(key, {}))
        _rank_graph(g, ri, rs, inp, main_tid)
        parts.append(rs)
    _collectives(g, parts, inputs)
    # a node nothing explains, after the step's start: reached from the start
    has_in = set(g.dst)
    for n in range(len(g.t)):
        if n in has_in or g.fixed[n]:
            continue
        rs = parts[g.rank_of[n]]
        if g.t[n] > rs.start:
            dev = rs.op_lane.get(n)
            lane = (
                Lane("device", device=dev.device, stream=dev.stream, kind="device_overhead") if dev else None
            )
            g.edge(rs.start_node, n, ORPHAN, 0, lane or Lane("host", tid=rs.main_tid, kind="host_overhead"))
        else:
            g.fixed[n] = True
    if late is not None and late.height:
        _lateness_cuts(g, parts, late.filter(pl.col("step") == step))
    g.finish({ri: inputs[rs.key].launch_floor for ri, rs in enumerate(parts)})
    return g, parts


def _lateness_cuts(g: Graph, parts: list[RankStep], late: pl.DataFrame) -> None:
    """What the straggler change removes (``g.cut``): on each late rank, its own time in the
    stretch before its late arrival, by the arrivals' classes (the step thread's input, host
    overhead and, on a host-op rank, its ops; a device-kernel rank's compute kernels and
    transfers), latest first, as much of each class as :func:`~.critical_path_inputs.lateness`
    says."""
    src_t = np.asarray(g.t, dtype=np.int64)[np.asarray(g.src, dtype=np.int64)]
    dst_t = np.asarray(g.t, dtype=np.int64)[np.asarray(g.dst, dtype=np.int64)]
    rank_of = np.asarray(g.rank_of, dtype=np.int64)[np.asarray(g.dst, dtype=np.int64)]
    kinds = np.asarray(g.kind)
    cut = np.zeros(len(g.src), dtype=np.int64)
    for ri, rs in enumerate(parts):
        mine = late.filter(
            pl.col("node").eq_missing(rs.key[0]), pl.col("rank") == rs.key[1], pl.col("arrive_ns") >= rs.start
        )
        if mine.height == 0:
            continue
        on_rank = rank_of == ri
        host = np.flatnonzero(
            on_rank
            & np.isin(kinds, [THREAD, BLOCKED])
            & np.array([ln.tid == rs.main_tid for ln in g.lane], dtype=bool)
        )
        ops = np.flatnonzero(on_rank & (kinds == OP))
        op_class = np.array([{"device_compute": 2, "transfer": 3}.get(g.lane[e].kind, -1) for e in ops])
        tt = rs.time_of(rs.main_tid)
        for source, f, a, *want in mine.select(
            "source", "from_ns", "arrive_ns", *(f"cut_{c}" for c in STRAGGLER_CAUSES)
        ).iter_rows():
            lo, hi = np.maximum(src_t[host], f), np.minimum(dst_t[host], a)
            h = np.flatnonzero(hi > lo)
            split = _split(tt, lo[h], hi[h])  # input, host_compute, host_overhead
            amount = np.zeros((len(h), 4), dtype=np.int64)
            amount[:, 0] = split[0]
            amount[:, 1] = split[2] + (split[1] if source != HOST_OP else 0)
            amount[:, 2] = split[1] if source == HOST_OP else 0
            edges, ends = [host[h]], [hi[h]]
            if source != HOST_OP and len(ops):
                olo, ohi = np.maximum(src_t[ops], f), np.minimum(dst_t[ops], a)
                o = np.flatnonzero((ohi > olo) & (op_class >= 0))
                extra = np.zeros((len(o), 4), dtype=np.int64)
                extra[np.arange(len(o)), op_class[o]] = (ohi - olo)[o]
                amount = np.vstack([amount, extra])
                edges.append(ops[o])
                ends.append(ohi[o])
            edge, end = np.concatenate(edges), np.concatenate(ends)
            by = np.argsort(-end, kind="stable")  # latest first: just before the arrival
            edge, amount = edge[by], amount[by]
            before = np.cumsum(amount, axis=0) - amount
            take = np.clip(np.asarray(want, dtype=np.int64)[None, :] - before, 0, amount)
            np.add.at(cut, edge, take.sum(axis=1))
    g.cut = cut.tolist()


#: The path kinds of a thread's classes.
THREAD_KINDS = CLASS_KINDS
