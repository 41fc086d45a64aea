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

# edge kinds
THREAD = "thread"  # a host thread's own time between two instants (classified)
BLOCKED = "blocked"  # a thread's time ending at an instant that waits on something else
LAUNCH = "launch"  # launch call start -> device op start
STREAM = "stream"  # previous op's end on the stream -> op start
OP = "op"  # a device op's start -> its end
SYNC = "sync"  # waited-for device op end -> synchronize call end
EVENT_WAIT = "event_wait"  # recorded op end -> first op after a stream wait event
WAKE = "wake"  # host collective end -> an op on another thread that waited for it
COLL = "coll"  # a rank's arrival at a collective -> a rank's end of it
END = "end"  # some work's end -> the step's end
ORPHAN = "orphan"  # the step's start -> a node nothing else explains


@dataclass
class Lane:
    """Where a stretch of the path is (``events.parquet``'s lane columns) and what it is."""

    lane: str  # host / device
    tid: int | None = None
    device: int | None = None
    stream: int | None = None
    name: str = ""
    kind: str = ""  # the device op's path kind, or the edge's fixed kind


@dataclass
class Graph:
    """Nodes (observed times, fixed or not) and edges with one weight per change."""

    t: list[int] = field(default_factory=list)
    fixed: list[bool] = field(default_factory=list)
    rank_of: list[int] = field(default_factory=list)
    inc: list[list[int]] = field(default_factory=list)
    src: list[int] = field(default_factory=list)
    dst: list[int] = field(default_factory=list)
    kind: list[str] = field(default_factory=list)
    floor: list[int] = field(default_factory=list)
    lane: list[Lane | None] = field(default_factory=list)
    # per edge: class split of a thread edge (input, host_compute, host_overhead, shrinkable)
    split: list[tuple[int, int, int, bool] | None] = field(default_factory=list)
    # per edge: the device op's kind for OP edges (kernel/memcpy/memset, comm)
    weights: list[tuple[int | None, ...]] = field(default_factory=list)
    binding: list[int] = field(default_factory=list)
    # COLL groups: end node -> (arrival nodes, own arrival, own time)
    coll: dict[int, tuple[list[int], int, int]] = field(default_factory=dict)
    order: list[int] = field(default_factory=list)

    def node(self, t: int, rank: int, fixed: bool = False) -> int:
        """A new node at observed time ``t`` on rank index ``rank``."""
        self.t.append(int(t))
        self.fixed.append(fixed)
        self.rank_of.append(rank)
        self.inc.append([])
        return len(self.t) - 1

    def edge(
        self,
        src: int,
        dst: int,
        kind: str,
        floor: int = 0,
        lane: Lane | None = None,
        split: tuple[int, int, int, bool] | None = None,
    ) -> None:
        """An edge, dropped when its source is observed after its target (no dependency)."""
        if self.t[src] > self.t[dst]:
            return
        self.src.append(src)
        self.dst.append(dst)
        self.kind.append(kind)
        self.floor.append(int(floor))
        self.lane.append(lane)
        self.split.append(split)
        self.inc[dst].append(len(self.src) - 1)

    # -- binding edges, weights, order --------------------------------------------------------

    def finish(self, launch_floor: dict[int, int]) -> None:
        """Choose each node's binding edge, give every edge its weight per change, and order the
        nodes topologically."""
        t = self.t
        for n, edges in enumerate(self.inc):
            if self.fixed[n] or not edges:
                continue
            best, best_at = -1, None
            for e in edges:
                floor = self._floor(e)
                # of edges reaching the same instant, one whose floor fit the observed gap
                # first: a launch seen faster than the rank's floor did not hold the op back
                at = (t[self.src[e]] + floor, floor == self.floor[e] or self.kind[e] == THREAD)
                if best_at is None or at > best_at:
                    best, best_at = e, at
            self.binding.append(best)
        bind = set(self.binding)
        self.weights = [self._weights(e, e in bind, launch_floor) for e in range(len(self.src))]
        self._order()

    def _floor(self, e: int) -> int:
        gap = self.t[self.dst[e]] - self.t[self.src[e]]
        if self.kind[e] == THREAD:
            return gap  # a thread's own time is intrinsic: always its observed length
        if self.kind[e] == COLL:
            return min(self.floor[e], gap)
        return min(self.floor[e], gap)

    def _weights(self, e: int, binding: bool, launch_floor: dict[int, int]) -> tuple[int | None, ...]:
        kind = self.kind[e]
        gap = self.t[self.dst[e]] - self.t[self.src[e]]
        w = gap if binding or kind == THREAD else self._floor(e)
        out: list[int | None] = [w] * _N
        if kind in (THREAD, BLOCKED) and (binding or kind == THREAD) and self.split[e] is not None:
            ti, hc, ho, shrink = self.split[e]  # type: ignore[misc]
            out[_INPUT] = w - ti
            out[_HOST] = w - ho if shrink else w
            out[_COMPUTE] = w - hc + hc // 2
        elif kind == LAUNCH and binding:
            out[_LAUNCH] = min(w, launch_floor.get(self.rank_of[self.dst[e]], 0))
        elif kind == OP:
            op = self.lane[e].kind if self.lane[e] else ""
            if op == "device_compute":
                out[_COMPUTE] = w - w // 2
            elif op == "transfer":
                out[_TRANSFER] = 0
        elif kind == SYNC:
            out[_SYNC] = None
        elif kind == COLL:
            arrivals, own, own_time = self.coll[self.dst[e]]
            # own time halved: the binding edge keeps its gap less the half removed
            out[_COMM] = max(0, w - (own_time - own_time // 2))
        return tuple(out)

    def _order(self) -> None:
        indeg = [len(e) for e in self.inc]
        out_edges: list[list[int]] = [[] for _ in self.t]
        for e, s in enumerate(self.src):
            out_edges[s].append(e)
        ready = deque(n for n, d in enumerate(indeg) if d == 0)
        order: list[int] = []
        while ready:
            n = ready.popleft()
            order.append(n)
            for e in out_edges[n]:
                d = self.dst[e]
                indeg[d] -= 1
                if indeg[d] == 0:
                    ready.append(d)
        if len(order) != len(self.t):
            raise ValueError("critical path graph has a cycle")  # zero-length edges both ways
        self.order = order

    # -- replay -------------------------------------------------------------------------------

    def replay(self, change: int = 0) -> list[int]:
        """Every node's time with change ``change`` (0: none; else ``CHANGES[change - 1]``)."""
        t = list(self.t)
        src, weights, inc, fixed, coll = self.src, self.weights, self.inc, self.fixed, self.coll
        for n in self.order:
            edges = inc[n]
            if fixed[n] or not edges:
                continue
            best = None
            for e in edges:
                w = weights[e][change]
                if w is None:
                    continue
                if change == _STRAGGLER and n in coll:
                    continue
                v = t[src[e]] + w
                if best is None or v > best:
                    best = v
            if change == _STRAGGLER and n in coll:
                best = self._straggler(n, t, best)
            if best is not None:
                t[n] = best
        return t

    def _straggler(self, n: int, t: list[int], best: int | None) -> int | None:
        """A collective's end with every rank arriving at the ranks' median arrival (the late
        rank's lateness removed), never before this rank's own arrival plus its observed gap."""
        arrivals, own, _ = self.coll[n]
        times = sorted(t[a] for a in arrivals)
        med = times[(len(times) - 1) // 2]
        for e in self.inc[n]:
            w = self.weights[e][_STRAGGLER]
            if w is None:
                continue
            s = self.src[e]
            if self.kind[e] == COLL and s != own:
                v = med + w
            else:
                v = t[s] + w
            if best is None or v > best:
                best = v
        return best

    def binding_of(self) -> dict[int, int]:
        """Each node's binding edge."""
        return {self.dst[e]: e for e in self.binding}
