"""The dependency graph of one step (all ranks together), its replay and its critical path.

A node is an instant (an anchor's start or end, a device op's start or end, a step's start or
end). Its observed time is the max over its incoming edges of (source time + edge weight); the
edge that attains it is **binding** and keeps its observed gap, every other edge gets its floor.
So the replay with nothing changed gives every node its observed time, and a change (a class
of time shrunk) is replayed by recomputing the nodes in topological order.
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass, field
from typing import NamedTuple

import numpy as np

#: What a what-if replay shrinks (``what_if.parquet``'s ``change``), in order; index + 1 is the
#: change's position in an edge's weights (0: nothing changed).
CHANGES: tuple[str, ...] = (
    "input",
    "host",
    "compute",
    "launch",
    "sync",
    "transfer",
    "straggler",
    "communication",
)
_N = len(CHANGES) + 1
(_INPUT, _HOST, _COMPUTE, _LAUNCH, _SYNC, _TRANSFER, _STRAGGLER, _COMM) = range(1, _N)
#: An edge's weight where a change removes the edge.
NONE = -(2**62)

# edge kinds
THREAD = "thread"  # a host thread's own time between two instants (classified)
BLOCKED = "blocked"  # a thread's time ending at an instant that waits on something else
LAUNCH = "launch"  # launch call start -> device op start
STREAM = "stream"  # previous op's end on the stream -> op start
OP = "op"  # a device op's start -> its end
SYNC = "sync"  # waited-for device op end -> synchronize call end
EVENT_WAIT = "event_wait"  # recorded op end -> first op after a stream wait event
WAKE = "wake"  # host collective end -> an op on another thread that waited for it
ENQUEUE = "enqueue"  # an op asking for a collective -> its start on the thread that runs it
COLL = "coll"  # a rank's arrival at a collective -> a rank's end of it
END = "end"  # some work's end -> the step's end
ORPHAN = "orphan"  # the step's start (a device op: its rank's host) -> a node nothing explains


class Lane(NamedTuple):
    """Where a stretch of the path is (``events.parquet``'s lane columns) and what it is."""

    lane: str  # host / device
    tid: int | None = None
    device: int | None = None
    stream: int | None = None
    name: str = ""
    kind: str = ""  # the device op's path kind, or the edge's fixed kind


#: An END edge's lane: it joins some work's end to the step's end and is no stretch of any lane.
NO_LANE = Lane("")


@dataclass
class Graph:
    """Nodes (observed times, fixed or not) and edges with one weight per change."""

    t: list[int] = field(default_factory=list)
    fixed: list[bool] = field(default_factory=list)
    rank_of: list[int] = field(default_factory=list)
    # the edges by the node they reach, in the order they were made (the replay's edge order)
    _inc_edges: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=np.int64))
    # the replay's walk: the nodes in topological order that an edge reaches and that are not
    # fixed, and where their incoming edges are in the edge order ([lo, hi)); the edges' sources
    # in that order
    _walk: tuple[list[int], list[int], list[int]] = field(default_factory=lambda: ([], [], []))
    _walk_src: list[int] = field(default_factory=list)
    src: list[int] = field(default_factory=list)
    dst: list[int] = field(default_factory=list)
    kind: list[str] = field(default_factory=list)
    floor: list[int] = field(default_factory=list)
    lane: list[Lane] = field(default_factory=list)
    # the edges with a class split (a thread's time: input, host_compute, host_overhead, and
    # the part of its overhead the host change removes, the step thread's stalls): (first
    # edge id, one row per edge), a chunk per call that made them
    splits: list[tuple[int, np.ndarray]] = field(default_factory=list)
    # per change (0: none), each edge's weight (NONE: the change removes it)
    weights: np.ndarray = field(default_factory=lambda: np.zeros((0, 0), dtype=np.int64))
    binding: list[int] = field(default_factory=list)
    # COLL groups: end node -> (arrival nodes, own arrival, own time)
    coll: dict[int, tuple[list[int], int, int]] = field(default_factory=dict)
    # a thread's resume woken by another rank's arrival -> its own rank's arrival there
    woken: dict[int, int] = field(default_factory=dict)
    # per edge: what the straggler change removes from it (its rank's lateness; empty: none)
    cut: list[int] = field(default_factory=list)

    def node(self, t: int, rank: int, fixed: bool = False) -> int:
        """A new node at observed time ``t`` on rank index ``rank``."""
        self.t.append(int(t))
        self.fixed.append(fixed)
        self.rank_of.append(rank)
        return len(self.t) - 1

    def nodes(self, times: list[int], rank: int, fixed: bool = False) -> int:
        """New nodes at ``times`` on rank index ``rank``; the first one's id (the others follow)."""
        first = len(self.t)
        self.t.extend(times)
        self.fixed.extend([fixed] * len(times))
        self.rank_of.extend([rank] * len(times))
        return first

    def edges(
        self,
        src: np.ndarray,
        dst: np.ndarray,
        kind: str | list[str],
        floor: int | np.ndarray,
        lanes: list[Lane],
        splits: np.ndarray | None = None,
    ) -> None:
        """Many edges at once (as :meth:`edge` each); ``splits``: one row of 4 per edge."""
        t = np.asarray(self.t, dtype=np.int64)
        keep = np.flatnonzero(t[src] <= t[dst])
        n = len(keep)
        if splits is not None and n:
            self.splits.append((len(self.src), np.asarray(splits, dtype=np.int64)[keep]))
        self.src.extend(src[keep].tolist())
        self.dst.extend(dst[keep].tolist())
        at = keep.tolist()
        self.kind.extend([kind] * n if isinstance(kind, str) else [kind[i] for i in at])
        self.floor.extend([floor] * n if isinstance(floor, int) else floor[keep].tolist())
        self.lane.extend([lanes[i] for i in at])

    def edge(
        self,
        src: int,
        dst: int,
        kind: str,
        floor: int = 0,
        lane: Lane = NO_LANE,
        split: tuple[int, int, int, int] | None = None,
    ) -> None:
        """An edge, dropped when its source is observed after its target (no dependency)."""
        if self.t[src] > self.t[dst]:
            return
        if split is not None:
            self.splits.append((len(self.src), np.array([split], dtype=np.int64)))
        self.src.append(src)
        self.dst.append(dst)
        self.kind.append(kind)
        self.floor.append(int(floor))
        self.lane.append(lane)

    # -- binding edges, weights, order --------------------------------------------------------

    def finish(self, launch_floor: dict[int, int]) -> None:
        """Choose each node's binding edge, give every edge its weight per change, and order the
        nodes topologically (vectorised over the edges)."""
        t = np.asarray(self.t, dtype=np.int64)
        src = np.asarray(self.src, dtype=np.int64)
        dst = np.asarray(self.dst, dtype=np.int64)
        kind = np.asarray(self.kind)
        floor = np.asarray(self.floor, dtype=np.int64)
        n_edges = len(src)
        # each node's incoming edges, in the order they were made
        by_dst = np.argsort(dst, kind="stable")
        bounds = np.searchsorted(dst[by_dst], np.arange(len(t) + 1))  # node n's: [bounds[n], bounds[n+1])
        self._inc_edges = by_dst
        gap = t[dst] - t[src]
        is_thread = kind == THREAD
        eff = np.where(is_thread, gap, np.minimum(floor, gap))
        # of edges reaching the same instant, one whose floor fit the observed gap first (a
        # launch seen faster than the rank's floor did not hold the op back), then the first made
        fits = (eff == floor) | is_thread
        ids = np.arange(n_edges)
        by = np.lexsort((-ids, fits, t[src] + eff, dst))
        d = dst[by]
        last = by[np.flatnonzero(np.r_[d[1:] != d[:-1], True])] if n_edges else by
        last = last[~np.asarray(self.fixed, dtype=bool)[dst[last]]]
        self.binding = last.tolist()
        bind = np.zeros(n_edges, dtype=bool)
        bind[last] = True
        w = np.where(bind | is_thread, gap, eff)
        weights = np.repeat(w[None, :], _N, axis=0)
        split = np.zeros((n_edges, 4), dtype=np.int64)
        has_split = np.zeros(n_edges, dtype=bool)
        for first, rows in self.splits:
            split[first : first + len(rows)] = rows
            has_split[first : first + len(rows)] = True
        ti, hc, _ho, stall = split.T
        # a wake carrying a split is the step thread's own time after a collective it waited
        # for (the step's end woken by it): shrunk like the thread's time when it binds
        woke = (kind == WAKE) & has_split
        own = (is_thread | (kind == BLOCKED) | woke) & (bind | is_thread)
        weights[_INPUT] = np.where(own, w - ti, w)
        weights[_HOST] = np.where(own, w - stall, w)
        weights[_COMPUTE] = np.where(own, w - hc + hc // 2, w)
        floors = np.array(
            [launch_floor.get(r, 0) for r in range(max(self.rank_of, default=0) + 1)], dtype=np.int64
        )
        rank = np.asarray(self.rank_of, dtype=np.int64)
        launch = (kind == LAUNCH) & bind
        weights[_LAUNCH] = np.where(launch, np.minimum(w, floors[rank[dst]]), weights[_LAUNCH])
        is_op = kind == OP
        lanes = self.lane
        op_kind = np.array([lanes[e].kind for e in np.flatnonzero(is_op).tolist()], dtype=object)
        op_of = np.full(n_edges, "", dtype=object)
        op_of[is_op] = op_kind
        weights[_COMPUTE] = np.where(op_of == "device_compute", w - w // 2, weights[_COMPUTE])
        weights[_TRANSFER] = np.where(op_of == "transfer", 0, weights[_TRANSFER])
        weights[_SYNC] = np.where(kind == SYNC, NONE, weights[_SYNC])
        is_coll = kind == COLL
        own_time = np.zeros(n_edges, dtype=np.int64)
        colls = np.flatnonzero(is_coll)
        own_time[colls] = [self.coll[x][2] for x in dst[colls].tolist()]
        # each collective's own time halved: every edge into its end loses the half removed
        if self.cut:
            cut = np.asarray(self.cut, dtype=np.int64)
            weights[_STRAGGLER] = np.where(
                cut > 0, np.maximum(weights[_STRAGGLER] - cut, 0), weights[_STRAGGLER]
            )
        weights[_COMM] = np.where(is_coll, np.maximum(0, w - (own_time - own_time // 2)), weights[_COMM])
        self.weights = weights
        order = self._order(t, src, dst, bounds)
        lo, hi = bounds[order], bounds[order + 1]
        walk = (hi > lo) & ~np.asarray(self.fixed, dtype=bool)[order]
        self._walk = (order[walk].tolist(), lo[walk].tolist(), hi[walk].tolist())
        self._walk_src = src[by_dst].tolist()

    def _order(self, t: np.ndarray, src: np.ndarray, dst: np.ndarray, bounds: np.ndarray) -> np.ndarray:
        # by time, then depth along zero-length edges, then creation: topological unless zero-
        # length edges form a cycle (then Kahn's algorithm says so)
        depth = np.zeros(len(t), dtype=np.int64)
        zero = t[src] == t[dst]
        zs, zd = src[zero], dst[zero]
        for _ in range(64):
            deeper = depth.copy()
            np.maximum.at(deeper, zd, depth[zs] + 1)
            if (deeper == depth).all():
                break
            depth = deeper
        order = np.lexsort((np.arange(len(t)), depth, t))
        pos = np.empty(len(t), dtype=np.int64)
        pos[order] = np.arange(len(t))
        if not len(src) or bool((pos[src] < pos[dst]).all()):
            return order
        indeg = np.diff(bounds).tolist()
        out_edges: list[list[int]] = [[] for _ in self.t]
        for e, s in enumerate(self.src):
            out_edges[s].append(e)
        ready = deque(n for n, d in enumerate(indeg) if d == 0)
        found: list[int] = []
        while ready:
            n = ready.popleft()
            found.append(n)
            for e in out_edges[n]:
                d = self.dst[e]
                indeg[d] -= 1
                if indeg[d] == 0:
                    ready.append(d)
        if len(found) != len(self.t):
            raise ValueError("critical path graph has a cycle")  # zero-length edges both ways
        return np.asarray(found, dtype=np.int64)

    # -- replay -------------------------------------------------------------------------------

    def replay(self, change: int = 0) -> list[int]:
        """Every node's time with change ``change`` (0: none; else ``CHANGES[change - 1]``)."""
        t = list(self.t)
        src = self._walk_src
        w = self.weights[change][self._inc_edges].tolist()  # in the walk's edge order
        for n, lo, hi in zip(*self._walk, strict=True):
            if hi - lo == 1:  # most nodes: one edge in
                if w[lo] != NONE:
                    t[n] = t[src[lo]] + w[lo]
                continue
            best = None
            for i in range(lo, hi):
                if w[i] != NONE:
                    v = t[src[i]] + w[i]
                    if best is None or v > best:
                        best = v
            if best is not None:
                t[n] = best
        return t

    def binding_of(self) -> dict[int, int]:
        """Each node's binding edge."""
        return {self.dst[e]: e for e in self.binding}
