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

import numpy as np
import polars as pl

from .critical_path_inputs import CLASS_KINDS, HOST_OVERHEAD, RANK_TIME, RankInputs, ThreadTime
from .critical_path_replay import (
    BLOCKED,
    COLL,
    END,
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

#: A host op that ends this soon after a host collective on another thread of its rank ended
#: (and started before it ended) waited for it: gloo's DDP main thread is woken when the
#: worker thread's ``gloo:all_reduce`` ends, tens of µs later on a loaded host (the waits seen
#: on recorded gloo runs end 5–40 µs after the collective).
WAKE_WITHIN_NS = 50_000


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
    """Class times of each ``[a, b)`` on a thread (3 × n); a thread without events: overhead."""
    if tt is None:
        out = np.zeros((3, len(a)), dtype=np.int64)
        out[HOST_OVERHEAD] = b - a
        return out
    return tt.at(b) - tt.at(a)


def _rank_graph(g: Graph, ri: int, rs: RankStep, inp: RankInputs, main_tid: int | None) -> None:
    start, cpu_end = rs.start, rs.cpu_end
    rs.start_node = g.node(start, ri, fixed=True)
    anchors = inp.anchors.filter(pl.col("ts") >= start, pl.col("ts") < cpu_end)
    ops = inp.ops
    in_step = pl.col("launch_ts").is_between(start, cpu_end, closed="left")
    uncorrelated = pl.col("launch_ts").is_null() & (pl.col("ts") >= start) & (pl.col("ts") < cpu_end)
    last = ops.filter(in_step | uncorrelated)["end"].max()
    end = max(cpu_end, int(last) if last is not None else cpu_end)  # type: ignore[arg-type]
    rs.end = end
    win = ops.filter(
        pl.col("end") > start,
        pl.col("ts") < end,
        pl.col("launch_ts").is_null() | (pl.col("launch_ts") < cpu_end),
    )
    rs.main_tid = main_tid

    # host anchors: a start and an end instant each, on their thread's chain
    points: dict[int, list[tuple[int, int, int, bool]]] = {}
    launch_node: dict[int, int] = {}
    sync_ends: list[tuple] = []  # node, ts, end, wait_stream, until, tid, name
    coll_anchors: list[tuple[int, int, int, int, int, str]] = []  # tid, ts, end, s, e, name
    for i, (tid, ts, e_ts, name, launch, sync, wstream, until) in enumerate(
        anchors.select("tid", "ts", "end", "name", "launch", "sync", "wait_stream", "wait_until").iter_rows()
    ):
        is_coll = launch is None and not sync
        s = g.node(ts, ri)
        pts = points.setdefault(tid, [])
        pts.append((ts, 2 * i, s, False))
        if sync or is_coll:
            # a launch call's own end is no dependency of anything: its time stays the thread's
            e = g.node(e_ts, ri)
            pts.append((e_ts, 2 * i + 1, e, True))
        if launch is not None:
            launch_node[launch] = s
        if sync:
            sync_ends.append((e, ts, e_ts, wstream, until if until is not None else ts, tid, name))
        if is_coll:
            coll_anchors.append((tid, ts, e_ts, s, e, name))
            rs.host_coll[(tid, ts)] = (s, e, name)
    if main_tid is None:
        main_tid = max(points, key=lambda k: len(points[k])) if points else None
        rs.main_tid = main_tid
    host_end = g.node(cpu_end, ri)
    if main_tid is not None:
        points.setdefault(main_tid, []).append((cpu_end, 1 << 62, host_end, False))
    # an op of another thread woken by a host collective's end waits for it
    order = 1 << 61
    for ctid, _cts, c_end, _s, c_node, _name in coll_anchors:
        for tid, tt in rs.threads.items():
            if tid in (ctid, RANK_TIME):
                continue
            m = (tt.name_end >= c_end) & (tt.name_end <= c_end + WAKE_WITHIN_NS) & (tt.name_start < c_end)
            hits = np.flatnonzero(m)
            if not len(hits):
                continue
            j = int(hits[np.argmin(tt.name_end[hits])])
            w = g.node(int(tt.name_end[j]), ri)
            g.edge(c_node, w, WAKE, 0, Lane("host", tid=tid, name=tt.names[j], kind="host_overhead"))
            points.setdefault(tid, []).append((int(tt.name_end[j]), order, w, True))
            order += 1
    for tid, pts in points.items():
        pts.sort(key=lambda p: (p[0], p[1]))
        tt = rs.time_of(tid)
        times = np.array([start] + [p[0] for p in pts], dtype=np.int64)
        split = _split(tt, times[:-1], times[1:])
        shrink = tid == main_tid
        prev = rs.start_node
        lane = Lane("host", tid=tid)
        own_arrival = {e: s for _, _, _, s, e, _ in coll_anchors}
        for (_t, _o, n, blocked), ti, hc, ho in zip(pts, *split.tolist(), strict=True):
            # a host collective's end right after its start: its COLL edges say when it ends
            if own_arrival.get(n) != prev:
                g.edge(prev, n, BLOCKED if blocked else THREAD, 0, lane, (ti, hc, ho, shrink))
            prev = n
    end_node = g.node(end, ri)
    rs.end_node = end_node
    g.edge(host_end, end_node, END)

    # device lanes
    floor = inp.launch_floor
    prev_on: dict[tuple[int, int], int] = {}
    last_end: dict[tuple[int, int], int] = {}
    rows = win.select(
        "device", "stream", "ts", "end", "kind", "name", "correlation", "launch_ts", "comm", "prev_end"
    )
    for dev, stream, ts, e_ts, kind, name, corr, launch_ts, comm, prev_end in rows.iter_rows():
        s = g.node(ts, ri)
        e = g.node(e_ts, ri)
        path_kind = _op_kind(kind, comm)
        rs.ops[(dev, stream, ts)] = (s, e)
        lane = Lane("device", device=dev, stream=stream, name=name, kind=path_kind)
        rs.op_lane[s] = rs.op_lane[e] = lane
        if corr is not None and corr in launch_node:
            g.edge(launch_node[corr], s, LAUNCH, floor, lane)
        elif launch_ts is not None and launch_ts <= ts:
            g.edge(g.node(launch_ts, ri, fixed=True), s, LAUNCH, floor, lane)
        p = prev_on.get((dev, stream))
        if p is not None:
            g.edge(p, s, STREAM, 0, Lane("device", device=dev, stream=stream, kind="device_overhead"))
        elif prev_end is not None and prev_end <= ts:
            g.edge(g.node(prev_end, ri, fixed=True), s, STREAM, 0, Lane("device", device=dev, stream=stream))
        prev_on[(dev, stream)] = e
        if not comm:
            g.edge(s, e, OP, 0, lane)
        started_here = (launch_ts is not None and start <= launch_ts < cpu_end) or (
            launch_ts is None and start <= ts < cpu_end
        )
        if started_here:
            last_end[(dev, stream)] = e
    # a stream's ops end in order in every replay (each starts after the one before it ends):
    # its last one launched in the step is the one the step's end can wait for
    for e in last_end.values():
        g.edge(e, end_node, END)
    _syncs(g, ri, win, sync_ends, rs)
    _stream_waits(g, inp, win, rs)


def _syncs(g: Graph, ri: int, win: pl.DataFrame, sync_ends: list[tuple], rs: RankStep) -> None:
    """Each synchronize call's end after the device op it waited for: of the rank's ops launched
    by the time it started (or the event it waits on was recorded), on the stream it names when
    it names one, the one ending last by the call's end."""
    if not sync_ends or win.height == 0:
        return
    ends = win["end"].to_numpy()
    launched = win["launch_ts"].fill_null(win["ts"]).to_numpy()
    streams = win["stream"].to_numpy()
    keys = list(zip(win["device"].to_list(), win["stream"].to_list(), win["ts"].to_list(), strict=True))
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


def _stream_waits(g: Graph, inp: RankInputs, win: pl.DataFrame, rs: RankStep) -> None:
    """A ``cudaStreamWaitEvent``: the waiting stream's next op starts after the recorded op."""
    if inp.waits.height == 0 or win.height == 0:
        return
    waits = inp.waits.filter(pl.col("ts") >= rs.start, pl.col("ts") < rs.cpu_end)
    launched = win["launch_ts"].fill_null(win["ts"]).to_numpy()
    streams = win["stream"].to_numpy()
    ends = win["end"].to_numpy()
    keys = list(zip(win["device"].to_list(), win["stream"].to_list(), win["ts"].to_list(), strict=True))
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


def _collectives(g: Graph, parts: list[RankStep], inputs: dict[tuple[str, int], RankInputs]) -> None:
    """Each collective's end on each rank after every rank's arrival (floor: its own time)."""
    groups: dict[tuple[str, str, int], list[tuple[int, int, int, Lane]]] = {}
    for ri, rs in enumerate(parts):
        coll = inputs[rs.key].collectives.filter(
            pl.col("arrive_ns") >= rs.start, pl.col("arrive_ns") < rs.end
        )
        for source, collective, seq, name, tid, dev, stream, arrive in coll.select(
            "source", "collective", "seq", "name", "tid", "device", "stream", "arrive_ns"
        ).iter_rows():
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
        for _ri, a, e, lane in members:
            arrivals = [m[1] for m in members] if g.t[e] >= g.t[last[1]] else [a]
            g.coll[e] = (arrivals, a, own_time if len(arrivals) > 1 else g.t[e] - g.t[a])
            for q in arrivals:
                g.edge(q, e, COLL, g.coll[e][2], lane)
    # a collective found on one rank only (the others not traced): its own time
    for rs in parts:
        for a, e in list(rs.ops.values()):
            if e not in g.coll and not g.inc[e]:
                g.coll[e] = ([a], a, g.t[e] - g.t[a])
                g.edge(a, e, COLL, g.t[e] - g.t[a], rs.op_lane[e])


def step_graph(
    step: int,
    windows: list[tuple[tuple[str, int], int, int, int | None]],
    inputs: dict[tuple[str, int], RankInputs],
) -> tuple[Graph, list[RankStep]]:
    """The graph of one step: ``windows`` holds each rank's (key, cpu_start, cpu_end, marker tid)."""
    g = Graph()
    parts: list[RankStep] = []
    for ri, (key, cpu_start, cpu_end, main_tid) in enumerate(windows):
        inp = inputs[key]
        rs = RankStep(key, step, cpu_start, cpu_end, threads=inp.threads)
        _rank_graph(g, ri, rs, inp, main_tid)
        parts.append(rs)
    _collectives(g, parts, inputs)
    # a node nothing explains, after the step's start: reached from the start
    for n, inc in enumerate(g.inc):
        if inc or g.fixed[n]:
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
    g.finish({ri: inputs[rs.key].launch_floor for ri, rs in enumerate(parts)})
    return g, parts


#: The path kinds of a thread's classes.
THREAD_KINDS = CLASS_KINDS
