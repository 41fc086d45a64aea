"""The critical path of each step: its dependency graph across host threads, device streams
and ranks, the path's length and time by kind, and the graph replayed with one cause shrunk.

The graph (:mod:`.critical_path_graph`) is a discrete-event model whose replay with nothing
changed reproduces every observed start and end (:mod:`.critical_path_replay`). The path is
the walk back from the step's end (the later of its host marker's end and the end of the
device work it launched) along binding edges; every ns of the step is one of :data:`KINDS`.

What-if replays (``what_if.parquet``), one change each: ``input`` (time in DataLoader fetches
-> 0), ``host`` (the step thread's stalls -> 0: its stretches outside any op of its rank of at
least :data:`~.critical_path_inputs.STALL_MIN_NS`; the µs of dispatch between ops stay),
``compute`` (host op time and kernel time halved: what a 2x faster op or kernel would give),
``launch`` (binding launch delays -> the rank's floor, its least launch->start latency of a
kernel that was not queued), ``sync`` (synchronize calls no longer wait for the device),
``transfer`` (memcpy/memset -> 0, as if overlapped), ``straggler`` (each late rank's lateness
removed: its own time before a late arrival shrunk by how much later than the other ranks'
median it arrived, from the classes ``comm/arrivals.parquet`` gives that stretch, its
straggler cause first), ``communication`` (each collective's own time halved). A change with
no time on the path saves 0 without a replay.

At most :data:`MAX_STEPS` steps per job are analysed, the same step numbers on every rank;
which ones is said by the rows present.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
import polars as pl

from . import collectives, comm, critical_path_hta
from .critical_path_graph import THREAD_KINDS, RankStep, step_graph
from .critical_path_inputs import HOST_OVERHEAD, RankInputs, lateness, rank_inputs
from .critical_path_replay import BLOCKED, CHANGES, COLL, END, LAUNCH, THREAD, WAKE, Graph
from .engine import ENGINE
from .schemas import TABLES

#: The kinds of time on a critical path (``by_kind.parquet``'s ``kind``), in display order.
KINDS: tuple[str, ...] = (
    "host_compute",  # inside a host op (a CPU-only run's compute)
    "host_overhead",  # on a host thread outside any op
    "input",  # inside a DataLoader fetch
    "launch_delay",  # launch call -> device start, not queued behind other work
    "device_compute",  # kernels (XLA ops on CPU devices)
    "device_overhead",  # gap between two device ops of a stream on the path
    "transfer",  # memcpy / memset
    "sync_wait",  # host blocked in a synchronize call after the work it waited for ended
    "communication",  # collectives once the last rank arrived
    "rank_wait",  # in a collective waiting for another rank to arrive
)

#: Most steps analysed per job: the median-length step, the longest, and evenly spaced others.
MAX_STEPS = 16

#: Which kinds of time on the path each change shrinks (no such time: nothing to replay).
CHANGE_KINDS: dict[str, tuple[str, ...]] = {
    "input": ("input",),
    "host": ("host_overhead",),
    "compute": ("host_compute", "device_compute"),
    "launch": ("launch_delay",),
    "sync": ("sync_wait",),
    "transfer": ("transfer",),
    "straggler": ("rank_wait",),
    "communication": ("communication", "rank_wait"),
}

_EDGE_KIND = {
    "launch": "launch_delay",
    "stream": "device_overhead",
    "wake": "host_overhead",
    "sync": "sync_wait",
}


def empty_outputs() -> dict[str, Any]:
    """The stage's tables without rows."""
    return {
        f: TABLES[("critical_path", f)].empty()
        for f in ("steps.parquet", "by_kind.parquet", "events.parquet", "what_if.parquet")
    }


def chosen_steps(windows: pl.DataFrame, most: int = MAX_STEPS) -> list[int]:
    """The step numbers analysed: all when ``most`` or fewer, else the median-length step, the
    longest and evenly spaced others (lengths: the job's, each step's longest rank)."""
    per = (
        windows.group_by("step")
        .agg((pl.max_horizontal("cpu_end_ns", "end_ns") - pl.col("cpu_start_ns")).max().alias("len"))
        .sort("step")
    )
    steps = per["step"].to_list()
    if len(steps) <= most:
        return steps
    by_len = per.sort("len", "step")
    keep = {by_len["step"][(by_len.height - 1) // 2], by_len["step"][-1]}
    n = len(steps)
    for i in range(most):
        if len(keep) >= most:
            break
        keep.add(steps[round(i * (n - 1) / (most - 1))])
    return sorted(keep)


def _spans(windows: pl.DataFrame) -> list[tuple[int, int]]:
    """The analysed steps' time on every rank, merged: each step window from its CPU start to
    the later of its CPU end and the end of the device work it launched."""
    rows = windows.select(
        pl.min_horizontal("cpu_start_ns", "start_ns").alias("lo"),
        pl.max_horizontal("cpu_end_ns", "end_ns").alias("hi"),
    ).sort("lo")
    out: list[tuple[int, int]] = []
    for lo, hi in rows.iter_rows():
        if out and lo <= out[-1][1]:
            out[-1] = (out[-1][0], max(out[-1][1], hi))
        else:
            out.append((lo, hi))
    return out


def _overlaps(spans: list[tuple[int, int]], start: pl.Expr, end: pl.Expr) -> pl.Expr:
    """Rows whose ``[start, end]`` meets one of ``spans`` (what the stage reads: its cost is
    bounded by the analysed steps, not the trace's length). ``spans`` are sorted and disjoint
    (:func:`_spans`): of those ending at or after ``start`` the first starts earliest, so a row
    meets one exactly when it meets that one."""
    if not spans:
        return pl.lit(False)
    ends = pl.Series([hi for _, hi in spans], dtype=pl.Int64)
    starts = pl.Series([lo for lo, _ in spans] + [2**62], dtype=pl.Int64)  # past the last: none
    return pl.lit(starts).gather(pl.lit(ends).search_sorted(start, side="left")) <= end


def _marker_tids(events: pl.LazyFrame) -> dict[tuple[str, int, int], int]:
    rows = events.filter(pl.col("kind") == "step").select("node", "rank", "ts", "tid").collect(engine=ENGINE)
    return {(n, r, ts): tid for n, r, ts, tid in rows.iter_rows()}


def path_stretches(
    g: Graph, rs: RankStep
) -> list[tuple[str, str, int | None, int | None, int | None, str, int, int]]:
    """The rank's critical path in time order: (kind, lane, tid, device, stream, name, start,
    end), contiguous from the step's start to its end."""
    binding = g.binding_of()
    n = rs.end_node
    lo, hi = rs.start, rs.end
    # the walk back along binding edges, latest first: (kind, lane, name, start, end) per
    # stretch; a thread's time (kind None, its time line in the name's place) is cut by class
    # below, all of a thread's at once
    walk: list[tuple] = []
    while g.t[n] > lo and n in binding:
        e = binding[n]
        s = g.src[e]
        kind, lane = g.kind[e], g.lane[e]
        a, b = g.t[s], g.t[n]
        if kind == END:
            pass
        elif kind in (THREAD, BLOCKED):
            walk.append((None, lane, rs.time_of(lane.tid), a, b))
        elif kind == COLL:
            own = g.coll[n][1]
            walk.append(("communication", lane, lane.name, a, b))
            walk.append(("rank_wait", lane, lane.name, g.t[own], a))
            s = own
        elif kind == WAKE and n in g.woken:
            # woken once another rank arrived: the wait for it, from this rank's own arrival
            own = g.woken[n]
            walk.append(("host_overhead", lane, None, a, b))
            walk.append(("rank_wait", lane, None, g.t[own], a))
            s = own
        elif kind == "op":
            walk.append((lane.kind, lane, lane.name, a, b))
        elif kind == LAUNCH:
            walk.append(("launch_delay", lane, "", a, b))  # before its op starts: a gap of the stream
        else:
            walk.append((_EDGE_KIND.get(kind, lane.kind or "host_overhead"), lane, lane.name, a, b))
        n = s
    out = _joined(*_cut(walk), lo, hi)
    out.reverse()
    # a host stretch is named by the innermost op or frame of its own thread holding it whole
    # (what a user looks at; the step thread's class counts its rank's threads, its name not)
    unnamed: dict[int | None, list[int]] = {}
    for i, row in enumerate(out):
        if row[5] is None:
            unnamed.setdefault(row[2], []).append(i)
    for tid, rows in unnamed.items():
        tt = rs.threads.get(tid) if tid is not None else None
        starts = np.array([out[i][6] for i in rows], dtype=np.int64)
        ends = np.array([out[i][7] for i in rows], dtype=np.int64)
        names = tt.names_at(starts, ends) if tt is not None else [""] * len(rows)
        for i, name in zip(rows, names, strict=True):
            out[i] = (*out[i][:5], name, *out[i][6:])
    return out


def _cut(walk: list[tuple]) -> tuple[list[tuple], np.ndarray, np.ndarray, np.ndarray]:
    """The walk's stretches with each thread stretch cut where its class changes (latest piece
    first, as the walk goes; a thread without a time line: one piece of overhead): the distinct
    rows (kind, lane, tid, device, stream, name; a thread's piece unnamed: None, a device
    stretch without a name: ""), then each stretch's row (an index into them), start and end."""
    count = np.ones(len(walk), dtype=np.int64)
    by_time: dict[int, tuple[Any, list[int]]] = {}
    rows: dict[tuple, int] = {}
    row_of = np.zeros(len(walk), dtype=np.int64)
    threads: dict[Any, int] = {}
    thread_of = np.zeros(len(walk), dtype=np.int64)
    for i, (kind, lane, name, _a, _b) in enumerate(walk):
        if kind is None:
            thread_of[i] = threads.setdefault(lane, len(threads))
            if name is not None:
                by_time.setdefault(id(name), (name, []))[1].append(i)
            continue
        if not name:
            name = None if lane.lane == "host" else ""
        row_of[i] = rows.setdefault((kind, lane.lane, lane.tid, lane.device, lane.stream, name), len(rows))
    cut: dict[int, tuple[np.ndarray, np.ndarray, np.ndarray]] = {}
    for tt, items in by_time.values():
        a = np.array([walk[i][3] for i in items], dtype=np.int64)
        b = np.array([walk[i][4] for i in items], dtype=np.int64)
        n, pa, pb, pc = tt.pieces_of(a, b)
        count[items] = n
        cut[id(tt)] = (pa, pb, pc)
    first = np.cumsum(count) - count
    starts = np.zeros(int(count.sum()), dtype=np.int64)
    ends = np.zeros_like(starts)
    classes = np.full(len(starts), HOST_OVERHEAD, dtype=np.int64)
    whole = np.flatnonzero(count == 1)  # one piece: the walk's own times unless cut below
    starts[first[whole]] = [walk[i][3] for i in whole.tolist()]
    ends[first[whole]] = [walk[i][4] for i in whole.tolist()]
    for tt, items in by_time.values():
        pa, pb, pc = cut[id(tt)]
        # each item's pieces come in time order: placed latest first from its first position
        k = count[items]
        at = np.repeat(first[items] + k - 1, k) - (np.arange(len(pa)) - np.repeat(np.cumsum(k) - k, k))
        starts[at], ends[at], classes[at] = pa, pb, pc
    # a thread's piece: the row of its thread and class (the same row as any other stretch's
    # with those fields)
    thread_row = np.array(
        [
            [
                rows.setdefault((k, lane.lane, lane.tid, lane.device, lane.stream, None), len(rows))
                for k in THREAD_KINDS
            ]
            for lane in threads
        ],
        dtype=np.int64,
    ).reshape(-1, len(THREAD_KINDS))
    is_thread = np.repeat(np.array([w[0] is None for w in walk], dtype=bool), count)
    code = np.repeat(row_of, count)
    code[is_thread] = thread_row[np.repeat(thread_of, count)[is_thread], classes[is_thread]]
    return list(rows), code, starts, ends


def _joined(
    table: list[tuple], code: np.ndarray, a: np.ndarray, b: np.ndarray, lo: int, hi: int
) -> list[tuple]:
    """The cut stretches (latest first) inside ``[lo, hi]``, empty ones dropped, and a stretch
    like the one after it in time (same row, touching it) joined to it: (*row, start, end)."""
    a, b = np.maximum(a, lo), np.minimum(b, hi)
    keep = np.flatnonzero(b > a)
    code, a, b = code[keep], a[keep], b[keep]
    if not len(code):
        return []
    # walking back, a stretch joins the one before it in the walk when their rows are the same
    # and it ends where that one starts
    new = np.r_[True, (code[1:] != code[:-1]) | (a[:-1] != b[1:])]
    head = np.flatnonzero(new)
    last = np.r_[head[1:], len(code)] - 1
    return [
        (*table[c], x, y)
        for c, x, y in zip(code[head].tolist(), a[last].tolist(), b[head].tolist(), strict=True)
    ]


def _analyse_step(
    step: int,
    windows: list[tuple[tuple[str, int], int, int, int | None]],
    inputs: dict[tuple[str, int], RankInputs],
    rows: dict[str, list],
    late: pl.DataFrame,
) -> None:
    g, parts = step_graph(step, windows, inputs, late)
    base = g.t
    lengths = {}
    for rs in parts:
        node, rank = rs.key
        length = base[rs.end_node] - rs.start
        lengths[rs.key] = length
        rows["steps"].append((node, rank, step, rs.start, rs.end, length))
        stretches = path_stretches(g, rs)
        by: dict[str, int] = {}
        for kind, *_, a, b in stretches:
            by[kind] = by.get(kind, 0) + b - a
        rows["events"].append((node, rank, step, stretches))  # a row per stretch: _tables
        for kind in KINDS:
            if kind in by:
                rows["by_kind"].append((node, rank, step, kind, by[kind]))
        rs.by_kind = by  # type: ignore[attr-defined]
    for ci, change in enumerate(CHANGES, start=1):
        needed = any(rs.by_kind.get(k, 0) > 0 for rs in parts for k in CHANGE_KINDS[change])  # type: ignore[attr-defined]
        if change == "straggler":
            needed = needed and any(c > 0 for c in g.cut)
        t = g.replay(ci) if needed else base
        for rs in parts:
            node, rank = rs.key
            length = t[rs.end_node] - rs.start
            saved = lengths[rs.key] - length
            if saved < 0:
                # a change never lengthens the graph's longest path; counted should it happen
                rows["clamped"].append((node, rank, step, change, saved))
                saved, length = 0, lengths[rs.key]
            rows["what_if"].append((node, rank, step, change, length, saved))


def stage(
    events: pl.LazyFrame,
    windows: pl.DataFrame,
    launches: pl.DataFrame,
    hta_compat: bool,
    arrivals: pl.DataFrame | None = None,
    stragglers: pl.DataFrame | None = None,
) -> dict[str, Any]:
    """The ``critical_path`` stage's outputs (see :data:`profui.analysis.schemas.TABLES`);
    ``arrivals`` and ``stragglers`` are the comm stage's tables (computed when not given)."""
    return analyse(events, windows, launches, hta_compat, arrivals, stragglers)[0]


def analyse(
    events: pl.LazyFrame,
    windows: pl.DataFrame,
    launches: pl.DataFrame,
    hta_compat: bool,
    arrivals: pl.DataFrame | None = None,
    stragglers: pl.DataFrame | None = None,
) -> tuple[dict[str, Any], list[tuple]]:
    """:func:`stage`'s tables and the what-if savings that came out negative and were clamped
    to 0 (node, rank, step, change, saved_ns; none on any trace seen)."""
    if hta_compat:
        return critical_path_hta.stage(events, windows, launches), []
    if windows.height == 0:
        return empty_outputs(), []
    if arrivals is None:
        arrivals = collectives.arrivals(events, windows.lazy())
    if stragglers is None:
        stragglers = comm.stragglers(arrivals).collect(engine=ENGINE)
    plan = path_plan(windows, arrivals, stragglers)
    return paths(plan, windows, path_share(events, launches, arrivals, plan.spans))


@dataclass(frozen=True)
class PathPlan:
    """What the job decides before any rank's inputs are read: the analysed steps, each late
    rank's lateness there (:func:`~.critical_path_inputs.lateness`) and the analysed steps'
    time on every rank, merged (:func:`_spans`: the events the inputs are read from)."""

    steps: list[int]
    late: pl.DataFrame
    spans: list[tuple[int, int]]


@dataclass
class PathShare:
    """The graph's inputs read from some ranks' events (a run by ranks: one rank's; the
    whole trace: every rank's): each rank's :class:`RankInputs` and the host thread of each
    step marker (``(node, rank, ts) -> tid``)."""

    inputs: dict[tuple[str, int], RankInputs]
    tids: dict[tuple[str, int, int], int]


def path_plan(windows: pl.DataFrame, arrivals: pl.DataFrame, stragglers: pl.DataFrame) -> PathPlan:
    """The job's :class:`PathPlan` from its step windows and the comm stage's arrivals and
    stragglers (all ranks')."""
    steps = chosen_steps(windows)
    late = lateness(arrivals, stragglers, steps)
    return PathPlan(steps, late, _spans(windows.filter(pl.col("step").is_in(steps))))


def path_share(
    events: pl.LazyFrame, launches: pl.DataFrame, arrivals: pl.DataFrame, spans: list[tuple[int, int]]
) -> PathShare:
    """The :class:`PathShare` of the ranks ``events`` holds: their events, launches and
    arrivals meeting ``spans`` (:attr:`PathPlan.spans`). A rank's share reads that rank's rows
    alone, so the shares of a job's ranks, joined, are the whole trace's."""
    # the analysed steps' events read once; every query below runs on them alone
    mine = events.filter(_overlaps(spans, pl.col("ts"), pl.col("ts") + pl.col("dur"))).collect(engine=ENGINE)
    inputs = rank_inputs(
        mine.lazy(),
        launches.filter(_overlaps(spans, pl.col("launch_ts"), pl.col("launch_ts") + pl.col("launch_dur"))),
        arrivals,
    )
    return PathShare(inputs, _marker_tids(mine.lazy()))


def joined_shares(shares: list[PathShare]) -> PathShare:
    """The ranks' shares as one (each rank's inputs are in its own share alone)."""
    out = PathShare({}, {})
    for share in shares:
        out.inputs.update(share.inputs)
        out.tids.update(share.tids)
    return out


def paths(plan: PathPlan, windows: pl.DataFrame, share: PathShare) -> tuple[dict[str, Any], list[tuple]]:
    """The stage's tables from the job's plan, its step windows and every rank's share (see
    :func:`analyse`)."""
    steps, inputs = plan.steps, share.inputs
    rows: dict[str, list] = {"steps": [], "by_kind": [], "events": [], "what_if": [], "clamped": []}
    # every analysed step's windows in one pass (a filter per step costs more than its rows)
    by_step: dict[int, list[tuple]] = {}
    chosen = windows.filter(pl.col("step").is_in(steps)).sort("node", "rank", maintain_order=True)
    for step_, n, r, s, e in chosen.select("step", "node", "rank", "cpu_start_ns", "cpu_end_ns").iter_rows():
        by_step.setdefault(step_, []).append((n, r, s, e))
    for step in steps:
        ranks = [
            ((n, r), s, e, share.tids.get((n, r, s)))
            for n, r, s, e in by_step.get(step, [])
            if (n, r) in inputs
        ]
        if ranks:
            _analyse_step(step, ranks, inputs, rows, plan.late)
    return _tables(rows), rows["clamped"]


def _tables(rows: dict[str, list]) -> dict[str, Any]:
    cols = {
        "steps": ["node", "rank", "step", "start_ns", "end_ns", "length_ns"],
        "by_kind": ["node", "rank", "step", "kind", "ns"],
        "events": [
            "node",
            "rank",
            "step",
            "seq",
            "kind",
            "lane",
            "tid",
            "device",
            "stream",
            "name",
            "start_ns",
            "end_ns",
        ],
        "what_if": ["node", "rank", "step", "change", "length_ns", "saved_ns"],
    }
    columns: dict[str, list[Any]] = {
        name: list(zip(*rows[name], strict=True)) for name in cols if name != "events"
    }
    # the events' chunks (one rank's path in one step): each stretch's node, rank, step and
    # seq, then the stretch's own fields
    chunks = rows["events"]
    stretches = [row for *_, part in chunks for row in part]
    if stretches:
        lengths = [len(part) for *_, part in chunks]
        keys = [[key[i] for key, n in zip(chunks, lengths, strict=True) for _ in range(n)] for i in range(3)]
        seq = [j for n in lengths for j in range(n)]
        columns["events"] = [*keys, seq, *zip(*stretches, strict=True)]
    out: dict[str, Any] = {}
    for name, names in cols.items():
        table = TABLES[("critical_path", f"{name}.parquet")]
        empty = table.empty()
        if not columns.get(name):
            out[f"{name}.parquet"] = empty
            continue
        # column by column with the declared dtypes (building from rows infers each value's type)
        frame = pl.DataFrame(
            [
                pl.Series(c, values, dtype=empty.schema[c])
                for c, values in zip(names, columns[name], strict=True)
            ]
        )
        out[f"{name}.parquet"] = frame.select(empty.columns)
    return out
