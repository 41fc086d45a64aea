"""What the critical-path graph is built from, per rank, found once for the whole trace with
vectorised Polars/numpy: each host thread's time by class, the anchors of the host threads
(launch calls, synchronize calls, host collectives), the device ops with their launch and
stream predecessor, the collectives matched across ranks, and the launch floor.

A host thread's time between two anchors is intrinsic to the thread and classified by what
covers it: inside a DataLoader fetch (:data:`profui.analysis.steps.DATA_LOADING`) ``input``,
else inside a ``cpu_op`` ``host_compute``, else ``host_overhead`` (python frames are no ops: a
``time.sleep`` between ops is host overhead).

Of the host overhead, a **stall** is a stretch outside any op at least :data:`STALL_MIN_NS`
long (on the step thread's time line, which counts every thread of the rank: no thread of the
rank runs an op then). That is what the ``host`` what-if removes; shorter gaps are the Python
dispatch between ops, work a loop needs, and stay.
"""

from __future__ import annotations

from bisect import bisect_left, bisect_right
from dataclasses import dataclass, field

import numpy as np
import polars as pl

from .args import int_member
from .collectives import collective_instances
from .comm import COMM_PATTERN, STRAGGLER_CAUSES
from .comm import lateness as comm_lateness
from .engine import ENGINE
from .launch import LAUNCHED_KINDS
from .steps import DATA_LOADING
from .sync import SYNC_CALLS

#: Classes of a host thread's own time (indices into :attr:`ThreadTime.cum`); row ``STALL`` of
#: ``cum`` is the part of ``HOST_OVERHEAD`` in stalls.
INPUT, HOST_COMPUTE, HOST_OVERHEAD, STALL = 0, 1, 2, 3
#: The shortest stretch outside any op that is a stall (a sleep, a blocking write, a log flush)
#: rather than the dispatch between ops. Measured: the step thread's stretches outside any op
#: of its rank in the analysed steps of ``samples/mlp_cpu``, the five injected CPU runs
#: (``tests/analysis/injected/runs.py``) and HTA's CPU-only trace: 2,396 stretches, 97% under
#: 300 µs; on runs without an injected wait the longest under 1 ms is 0.42 ms and the next
#: 1.37 ms (then a 12 ms and a 33 ms stall); the 3-rank gloo run's hand-offs to its worker
#: thread reach 0.94 ms, its waits for the late rank 1.2-48 ms; the injected sleeps 25 ms.
#: Between the two populations: 1 ms.
STALL_MIN_NS = 1_000_000
CLASS_KINDS = ("input", "host_compute", "host_overhead")
#: Far bounds of every thread's time line (epoch ns stay far inside them).
_LOW, _HIGH = 0, 2**62
_RANK = ["node", "rank"]
#: Kinds of host events that name a stretch of a thread (the innermost one covering it).
_NAMING_KINDS = ("cpu_op", "python", "annotation", "runtime", "driver")
#: The key of a rank's time line over all its threads in :attr:`RankInputs.threads`.
RANK_TIME = -(2**62)


@dataclass
class ThreadTime:
    """One host thread's time line: breakpoints ``bp``, the class of each interval between two
    breakpoints (``cls``), the cumulative time of each class at each breakpoint and of stalls
    (``cum``, 4 rows) and the naming events sorted by start (innermost lookups)."""

    bp: np.ndarray
    cls: np.ndarray
    cum: np.ndarray
    name_start: np.ndarray
    name_end: np.ndarray
    names: list[str]
    stall: np.ndarray  # per interval: inside a stall
    # runs of one class and the naming events' bounds as Python lists, made on first use
    # (scalar lookups on lists cost a tenth)
    _bp: list[int] | None = None
    _cls: list[int] | None = None
    _ns: list[int] | None = None
    _ne: list[int] | None = None
    _runs: tuple[np.ndarray, np.ndarray] | None = None  # runs of one class: bounds, classes
    _sorted: tuple[np.ndarray, np.ndarray] | None = None

    def __reduce__(self) -> tuple:
        # sent from a rank's task to the job (a run by ranks): the cumulative times are made
        # again from the classes where it lands, the names as codes into their distinct values,
        # the caches made on first use not at all (less than half the bytes)
        distinct, codes = np.unique(np.array(self.names, dtype=object), return_inverse=True)
        state = (
            self.bp,
            self.cls,
            self.name_start,
            self.name_end,
            distinct.tolist(),
            codes.astype(np.int32),
            self.stall,
        )
        return (_thread_time_from, state)

    def sorted_bounds(self) -> tuple[np.ndarray, np.ndarray]:
        """The naming events' starts and their ends, each sorted (made once)."""
        if self._sorted is None:
            self._sorted = (np.sort(self.name_start), np.sort(self.name_end))
        return self._sorted

    def at(self, x: np.ndarray) -> np.ndarray:
        """Cumulative time of each class, then of stalls, at instants ``x`` (4 × len(x))."""
        i = np.clip(np.searchsorted(self.bp, x, side="right") - 1, 0, len(self.cls) - 1)
        part = x - self.bp[i]
        out = self.cum[:, i].copy()
        for c in range(3):
            out[c] += np.where(self.cls[i] == c, part, 0)
        out[STALL] += np.where(self.stall[i], part, 0)
        return out

    def pieces(self, a: int, b: int) -> list[tuple[int, int, int]]:
        """``[a, b)`` cut where its class changes: ``(start, end, class)`` in time order."""
        if self._bp is None or self._cls is None:  # set together
            # runs of one class (adjacent intervals of the same class merged), as lists
            change = np.r_[True, self.cls[1:] != self.cls[:-1]]
            self._bp, self._cls = (
                self.bp[:-1][change].tolist() + [int(self.bp[-1])],
                self.cls[change].tolist(),
            )
        rb, rc = self._bp, self._cls
        i0 = max(bisect_right(rb, a) - 1, 0)
        i1 = min(bisect_left(rb, b), len(rc))
        out: list[tuple[int, int, int]] = []
        for i in range(i0, max(i1, i0 + 1)):
            s, e = max(a, rb[i]), min(b, rb[i + 1])
            if e > s:
                out.append((s, e, rc[i]))
        return out

    def class_runs(self) -> tuple[np.ndarray, np.ndarray]:
        """Runs of one class (adjacent intervals of the same class merged): their bounds (one
        more than runs) and classes (made once)."""
        if self._runs is None:
            change = np.r_[True, self.cls[1:] != self.cls[:-1]]
            self._runs = (np.r_[self.bp[:-1][change], self.bp[-1]], self.cls[change].astype(np.int64))
        return self._runs

    def in_op(self, x: int) -> bool:
        """Whether one of the thread's ops (or a DataLoader fetch) runs across instant ``x``."""
        rb, rc = self.class_runs()
        before = max(int(np.searchsorted(rb, x, side="left")) - 1, 0)
        after = int(np.searchsorted(rb, x, side="right")) - 1
        return bool(rc[before] != HOST_OVERHEAD and rc[after] != HOST_OVERHEAD)

    def idle_since(self, x: int) -> int | None:
        """The end of the thread's last op (or DataLoader fetch) by instant ``x`` (``x`` itself
        while one runs), None when it ran none before. Annotations and python frames are no
        ops: a user's range, or ``loss.backward()``'s frame, holds the thread's waits too."""
        rb, rc = self.class_runs()
        i = int(np.searchsorted(rb, x, side="left")) - 1  # the run holding the instant before x
        if i < 0:
            return None
        if rc[i] != HOST_OVERHEAD:
            return x
        return int(rb[i]) if i > 0 else None

    def pieces_of(self, a: np.ndarray, b: np.ndarray) -> tuple[np.ndarray, ...]:
        """:meth:`pieces` of many stretches ``[a, b)`` at once: each stretch's number of pieces,
        then all pieces' starts, ends and classes, stretch after stretch in time order."""
        rb, rc = self.class_runs()
        i0 = np.maximum(np.searchsorted(rb, a, side="right") - 1, 0)
        i1 = np.minimum(np.searchsorted(rb, b, side="left"), len(rc))
        count = np.maximum(i1, i0 + 1) - i0
        first = np.cumsum(count) - count
        i = np.repeat(i0 - first, count) + np.arange(int(count.sum()))
        s = np.maximum(np.repeat(a, count), rb[i])
        e = np.minimum(np.repeat(b, count), rb[i + 1])
        keep = e > s
        kept = np.add.reduceat(keep.astype(np.int64), first) if len(first) else count
        return kept, s[keep], e[keep], rc[i][keep]

    def names_at(self, a: np.ndarray, b: np.ndarray) -> list[str]:
        """:meth:`name_at` of many stretches ``[a, b)`` at once."""
        j = np.searchsorted(self.name_start, a, side="right") - 1
        found = np.full(len(a), -1, dtype=np.int64)
        # each stretch steps back from the latest event starting by it, at most 256 events;
        # only the stretches still looking are carried to the next step
        at = np.arange(len(a))
        for _ in range(256):
            keep = j >= 0
            at, j = at[keep], j[keep]
            if not len(at):
                break
            hit = self.name_end[j] >= b[at]
            found[at[hit]] = j[hit]
            at, j = at[~hit], j[~hit] - 1
        return [self.names[k] if k >= 0 else "" for k in found.tolist()]

    def name_at(self, a: int, b: int) -> str:
        """The innermost naming event (latest start) covering ``[a, b)``; empty when none."""
        if self._ns is None or self._ne is None:  # set together
            self._ns, self._ne = self.name_start.tolist(), self.name_end.tolist()
        ne = self._ne
        i = bisect_right(self._ns, a) - 1
        # nested ranges: the innermost is the latest-starting one still open; siblings that
        # ended before ``a`` are stepped over, a bounded number of them
        for j in range(i, max(i - 256, -1), -1):
            if ne[j] >= b:
                return self.names[j]
        return ""


@dataclass
class RankInputs:
    """One rank's inputs to the graph (frames in time order; see the module docstring)."""

    threads: dict[int, ThreadTime]
    anchors: pl.DataFrame  # tid, ts, end, name, launch (corr or null), sync (bool), wait_stream, wait_until
    ops: (
        pl.DataFrame
    )  # device, stream, ts, end, kind, name, correlation, launch_ts, launch_tid, comm, prev_end
    collectives: pl.DataFrame  # source, collective, seq, tid, device, stream, arrive_ns, end_ns, name
    launch_floor: int
    waits: pl.DataFrame = field(
        default_factory=pl.DataFrame
    )  # stream-wait-event: ts, stream, wait_stream, until
    # what the graph derives from these frames once for every step it builds (columns as numpy,
    # the ops' lanes), filled by :mod:`.critical_path_graph`
    derived: dict = field(default_factory=dict, repr=False)


def _thread_time(
    starts: np.ndarray,
    ends: np.ndarray,
    is_input: np.ndarray,
    names: tuple[np.ndarray, np.ndarray, list[str]],
    extent: tuple[int, int],
    busy: tuple[np.ndarray, np.ndarray] | None = None,
) -> ThreadTime:
    """The time line of a thread whose covering events are ``starts``/``ends`` (``is_input``:
    a DataLoader fetch); ``busy`` intervals (host collectives of another thread) are no ops
    but no stall either: overhead inside them is a wait for communication."""
    b_lo, b_hi = busy if busy is not None else (np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.int64))
    bp = np.sort(np.concatenate([[_LOW, _HIGH], starts, ends, b_lo, b_hi]))
    bp = bp[np.r_[True, bp[1:] != bp[:-1]]]
    depth = np.zeros((2, len(bp)), dtype=np.int64)
    for k, sel in ((0, is_input), (1, ~is_input)):
        depth[k] += np.bincount(np.searchsorted(bp, starts[sel]), minlength=len(bp))
        depth[k] -= np.bincount(np.searchsorted(bp, ends[sel]), minlength=len(bp))
    depth = np.cumsum(depth, axis=1)[:, :-1]
    cls = np.where(depth[0] > 0, INPUT, np.where(depth[1] > 0, HOST_COMPUTE, HOST_OVERHEAD)).astype(np.int8)
    in_busy = (
        np.cumsum(
            np.bincount(np.searchsorted(bp, b_lo), minlength=len(bp))
            - np.bincount(np.searchsorted(bp, b_hi), minlength=len(bp))
        )[:-1]
        > 0
    )
    # runs of overhead outside busy intervals (adjacent intervals merged) at least
    # STALL_MIN_NS long are stalls; a run is measured inside the thread's extent (its first to
    # last event, step markers included): the time before its first event or after its last is
    # no stall the trace shows
    free = (cls == HOST_OVERHEAD) & ~in_busy
    key = np.where(free, -1, cls)
    run = np.cumsum(np.r_[True, key[1:] != key[:-1]]) - 1
    run_len = np.bincount(run, weights=np.diff(np.clip(bp, *extent))).astype(np.int64)
    stall = free & (run_len[run] >= STALL_MIN_NS)
    return ThreadTime(bp, cls, _cumulative(bp, cls, stall), *names, stall)


def _cumulative(bp: np.ndarray, cls: np.ndarray, stall: np.ndarray) -> np.ndarray:
    """:attr:`ThreadTime.cum`: each class's time, then the stalls', up to each breakpoint."""
    length = np.diff(bp)
    cum = np.zeros((4, len(bp)), dtype=np.int64)
    for c in range(3):
        cum[c, 1:] = np.cumsum(np.where(cls == c, length, 0))
    cum[STALL, 1:] = np.cumsum(np.where(stall, length, 0))
    return cum


def _thread_time_from(
    bp: np.ndarray,
    cls: np.ndarray,
    name_start: np.ndarray,
    name_end: np.ndarray,
    distinct: list[str],
    codes: np.ndarray,
    stall: np.ndarray,
) -> ThreadTime:
    """The :class:`ThreadTime` its ``__reduce__`` sent."""
    names = [distinct[i] for i in codes.tolist()]
    return ThreadTime(bp, cls, _cumulative(bp, cls, stall), name_start, name_end, names, stall)


def _threads(host: pl.DataFrame, host_coll: pl.DataFrame) -> dict[tuple[str, int, int], ThreadTime]:
    """Every host thread's :class:`ThreadTime` from its host events (step markers only bound
    its extent); ``host_coll`` (``node, rank, ts, end``: the rank's host collectives) is no
    stall on the rank's time line."""
    covering = host.filter(
        pl.col("kind").is_in(["cpu_op", "annotation"]),
    ).with_columns(
        pl.col("name").str.contains(DATA_LOADING).alias("_input"),
    )
    # an annotation covers as input only (a user range is no op)
    covering = covering.filter(pl.col("_input") | (pl.col("kind") == "cpu_op"))
    out: dict[tuple[str, int, int], ThreadTime] = {}
    spans = host.group_by([*_RANK, "tid"]).agg(
        pl.col("ts").min().alias("lo"), pl.col("end").max().alias("hi")
    )
    extent = {(n, r, t): (lo, hi) for n, r, t, lo, hi in spans.iter_rows()}
    rank_extent = {
        (n, r): (lo, hi)
        for n, r, lo, hi in spans.group_by(_RANK).agg(pl.col("lo").min(), pl.col("hi").max()).iter_rows()
    }
    cov = {k: g for k, g in covering.partition_by(["node", "rank", "tid"], as_dict=True).items()}
    # of ops alike in start and end the last in event order is the innermost (a profiler lists
    # an op before those it calls): a stable sort keeps it last, where the name search looks
    naming = host.filter(pl.col("kind").is_in(_NAMING_KINDS)).sort(
        "ts", pl.col("end").neg(), maintain_order=True
    )
    for key, g in naming.partition_by(["node", "rank", "tid"], as_dict=True).items():
        c = cov.get(key)
        if c is None:
            c = covering.clear()
        names = (g["ts"].to_numpy(), g["end"].to_numpy(), g["name"].to_list())
        out[key] = _thread_time(
            c["ts"].to_numpy(), c["end"].to_numpy(), c["_input"].to_numpy(), names, extent[key]
        )
    # the step thread's time is classified by what any thread of its rank runs: a main thread
    # outside its own ops while the autograd thread runs backward ops waits for them (compute)
    # nor is it stalled while another thread of its rank runs a host collective (gloo's worker
    # thread: an annotation, no op): it most plausibly waits for the collective
    cov_rank = covering.partition_by(_RANK, as_dict=True)
    coll_rank = host_coll.partition_by(_RANK, as_dict=True)
    for key, g in naming.partition_by(_RANK, as_dict=True).items():
        c = cov_rank.get(key, covering.clear())
        names = (g["ts"].to_numpy(), g["end"].to_numpy(), g["name"].to_list())
        h = coll_rank.get(key, host_coll.clear())
        out[key + (RANK_TIME,)] = _thread_time(
            c["ts"].to_numpy(),
            c["end"].to_numpy(),
            c["_input"].to_numpy(),
            names,
            rank_extent[key],
            (h["ts"].to_numpy(), h["end"].to_numpy()),
        )
    return out


def _sync_anchors(events: pl.LazyFrame) -> tuple[pl.LazyFrame, pl.LazyFrame]:
    """Host synchronize calls with the stream and launch bound they wait on, and the
    ``cudaStreamWaitEvent`` calls (device-side waits between two streams)."""
    host = events.filter(pl.col("kind").is_in(["runtime", "driver"]), pl.col("device") < 0)
    calls = host.filter(pl.col("name").is_in(list(SYNC_CALLS))).select(
        *_RANK, "tid", "ts", (pl.col("ts") + pl.col("dur")).alias("end"), "name", "correlation"
    )
    # CUPTI's sync records (kind sync) say which stream an event or stream sync waited on
    rows = events.filter(pl.col("kind") == "sync").select(
        *_RANK,
        "correlation",
        pl.col("stream").alias("_sync_stream"),
        int_member("wait_on_stream").alias("_wait_on"),
        int_member("wait_on_cuda_event_record_corr_id").alias("_record"),
    )
    records = host.select(*_RANK, pl.col("correlation").alias("_record"), pl.col("ts").alias("_record_ts"))
    rows = rows.join(records, on=[*_RANK, "_record"], how="left").unique(
        [*_RANK, "correlation"], keep="first"
    )
    wait_stream = (
        pl.when(pl.col("_wait_on") >= 0)
        .then(pl.col("_wait_on"))
        .when(pl.col("_sync_stream") >= 0)
        .then(pl.col("_sync_stream"))
    )
    syncs = calls.join(rows, on=[*_RANK, "correlation"], how="left").with_columns(
        wait_stream.cast(pl.Int64).alias("wait_stream"),
        pl.coalesce("_record_ts", "ts").alias("wait_until"),
    )
    waits = (
        host.filter(pl.col("name").is_in(["cudaStreamWaitEvent", "hipStreamWaitEvent", "cuStreamWaitEvent"]))
        .select(*_RANK, "ts", "correlation")
        .join(rows, on=[*_RANK, "correlation"], how="inner")
        .filter(pl.col("_wait_on") >= 0, pl.col("_sync_stream") >= 0)
        .select(
            *_RANK,
            "ts",
            pl.col("_sync_stream").cast(pl.Int64).alias("stream"),
            pl.col("_wait_on").cast(pl.Int64).alias("wait_stream"),
            pl.coalesce("_record_ts", "ts").alias("wait_until"),
        )
    )
    return syncs.drop("_sync_stream", "_wait_on", "_record", "_record_ts"), waits


def collectives_of(events: pl.LazyFrame) -> pl.DataFrame:
    """The collectives of every rank (:func:`.collectives.collective_instances`):
    ``node, rank, source, collective, name, seq, tid, device, stream, arrive_ns, end_ns``."""
    return _lazy_df(collective_instances(events)).select(
        *_RANK, "source", "collective", "name", "seq", "tid", "device", "stream", "arrive_ns", "end_ns"
    )


def _lazy_df(frame: pl.DataFrame | pl.LazyFrame) -> pl.DataFrame:
    return frame.collect(engine=ENGINE) if isinstance(frame, pl.LazyFrame) else frame


def rank_inputs(
    events: pl.LazyFrame, launches: pl.DataFrame, arrivals: pl.DataFrame | None = None
) -> dict[tuple[str, int], RankInputs]:
    """Every rank's :class:`RankInputs`. With ``arrivals`` (the comm stage's table), each
    collective's ``seq`` is the one it gives, so that ``events`` may hold only some steps."""
    host = (
        events.filter(pl.col("device") < 0, pl.col("kind").is_in([*_NAMING_KINDS, "step"]))
        .select(*_RANK, "tid", "kind", "name", "ts", (pl.col("ts") + pl.col("dur")).alias("end"))
        .collect(engine=ENGINE)
    )
    links = launches.select(
        *_RANK,
        "correlation",
        "launch_tid",
        "launch_ts",
        (pl.col("launch_ts") + pl.col("launch_dur")).alias("launch_end"),
        "launch_name",
    ).unique([*_RANK, "correlation"], keep="first")
    ops = (
        events.filter(pl.col("kind").is_in(list(LAUNCHED_KINDS)), pl.col("device") >= 0)
        .select(
            *_RANK,
            "device",
            "stream",
            "ts",
            (pl.col("ts") + pl.col("dur")).alias("end"),
            "kind",
            "name",
            "correlation",
        )
        .join(
            links.lazy().select(*_RANK, "correlation", "launch_ts", "launch_tid"),
            on=[*_RANK, "correlation"],
            how="left",
        )
        .sort(*_RANK, "device", "stream", "ts", "end")
        .with_columns(
            pl.col("end").shift(1).over([*_RANK, "device", "stream"]).alias("prev_end"),
            ((pl.col("kind") == "kernel") & pl.col("name").str.contains(COMM_PATTERN)).alias("comm"),
        )
        .collect(engine=ENGINE)
    )
    not_queued = ops.filter(
        pl.col("launch_ts").is_not_null(), pl.col("prev_end").is_null() | (pl.col("prev_end") < pl.col("ts"))
    )
    floors = not_queued.group_by(_RANK).agg((pl.col("ts") - pl.col("launch_ts")).min().clip(0).alias("floor"))
    lazy_syncs, lazy_waits = _sync_anchors(events)
    syncs = lazy_syncs.collect(engine=ENGINE)
    waits = lazy_waits.collect(engine=ENGINE)
    coll = collectives_of(events)
    if arrivals is not None:
        seq_key = [*_RANK, "source", "collective", "arrive_ns"]
        seq = arrivals.select(*seq_key, "seq").unique(seq_key, keep="first")
        coll = coll.drop("seq").join(seq, on=seq_key, how="inner", nulls_equal=True).select(coll.columns)
    threads = _threads(
        host,
        coll.filter(pl.col("source") == "host op").select(
            *_RANK, pl.col("arrive_ns").alias("ts"), pl.col("end_ns").alias("end")
        ),
    )
    host_coll = coll.filter(pl.col("source") == "host op").select(
        *_RANK,
        "tid",
        pl.col("arrive_ns").alias("ts"),
        pl.col("end_ns").alias("end"),
        "name",
        pl.lit(None, pl.Int64).alias("launch"),
        pl.lit(False).alias("sync"),
        pl.lit(None, pl.Int64).alias("wait_stream"),
        pl.lit(None, pl.Int64).alias("wait_until"),
    )
    launch_anchors = links.select(
        *_RANK,
        pl.col("launch_tid").alias("tid"),
        pl.col("launch_ts").alias("ts"),
        pl.col("launch_end").alias("end"),
        pl.col("launch_name").alias("name"),
        pl.col("correlation").alias("launch"),
    )
    # a synchronous copy is a launch and a sync at once: one anchor with both roles
    call_anchors = launch_anchors.join(
        syncs.select(
            *_RANK,
            pl.col("correlation").alias("launch"),
            pl.lit(True).alias("sync"),
            "wait_stream",
            "wait_until",
        ),
        on=[*_RANK, "launch"],
        how="left",
    ).with_columns(pl.col("sync").fill_null(False))
    sync_only = syncs.join(
        launch_anchors.select(*_RANK, pl.col("launch").alias("correlation")),
        on=[*_RANK, "correlation"],
        how="anti",
    )
    sync_only = sync_only.select(
        *_RANK,
        "tid",
        "ts",
        "end",
        "name",
        pl.lit(None, pl.Int64).alias("launch"),
        pl.lit(True).alias("sync"),
        "wait_stream",
        "wait_until",
    )
    anchors = pl.concat([call_anchors, sync_only, host_coll], how="vertical_relaxed").sort(
        *_RANK, "tid", "ts", "end"
    )
    parts = {
        "anchors": anchors.partition_by(_RANK, as_dict=True),
        "ops": ops.partition_by(_RANK, as_dict=True),
        "coll": coll.partition_by(_RANK, as_dict=True),
        "waits": waits.partition_by(_RANK, as_dict=True),
    }
    floor = {(n, r): int(f) for n, r, f in floors.iter_rows()}
    ranks = set(parts["ops"]) | set(parts["anchors"]) | {(k[0], k[1]) for k in threads}
    out: dict[tuple[str, int], RankInputs] = {}
    for key in ranks:
        out[key] = RankInputs(
            threads={k[2]: v for k, v in threads.items() if (k[0], k[1]) == key},
            anchors=parts["anchors"].get(key, anchors.clear()),
            ops=parts["ops"].get(key, ops.clear()),
            collectives=parts["coll"].get(key, coll.clear()),
            launch_floor=floor.get(key, 0),
            waits=parts["waits"].get(key, waits.clear()),
        )
    return out


def lateness(arrivals: pl.DataFrame, stragglers: pl.DataFrame, steps: list[int]) -> pl.DataFrame:
    """Each rank's lateness at each collective of ``steps`` and what of its stretch before the
    arrival removes it: ``node, rank, step, source, from_ns, arrive_ns`` and ``cut_<class>``
    (:data:`~profui.analysis.comm.STRAGGLER_CAUSES`), only rows with some lateness.

    Lateness is :func:`profui.analysis.comm.lateness` (the straggler table's rule: the arrival
    minus the latest of the other ranks' at the same instance), so that the straggler what-if
    removes exactly the ``lateness_ns`` the straggler table reports. It is taken from the
    stretch's classes (the arrivals' numbers, not a second reading of the trace) in order: the
    step's straggler cause first on the straggler rank (``comm/stragglers.parquet``), then the
    larger classes first; never more than a class holds."""
    inst = ["source", "collective", "seq"]
    # lateness over every rank's row of an instance, before keeping the analysed steps: an
    # instance's ranks may place it in different steps; its step is the earliest (comm's rule)
    a = arrivals.with_columns(
        comm_lateness().alias("late_ns"), pl.col("step").min().over(inst).alias("_istep")
    ).filter(pl.col("step").is_in(steps), pl.col("late_ns") > 0)
    cause = stragglers.select(
        "step", pl.col("straggler_node").alias("node"), pl.col("straggler_rank").alias("rank"), "cause"
    )
    late = a.join(cause.rename({"step": "_istep"}), on=["_istep", *_RANK], how="left", nulls_equal=True)
    rows = []
    for r in late.iter_rows(named=True):
        budget = r["late_ns"]
        order = sorted(STRAGGLER_CAUSES, key=lambda c: (c != r["cause"], -(r[f"{c}_ns"] or 0)))
        cut = dict.fromkeys(STRAGGLER_CAUSES, 0)
        for c in order:
            take = min(budget, max(r[f"{c}_ns"] or 0, 0))
            cut[c], budget = take, budget - take
        rows.append(
            (r["node"], r["rank"], r["step"], r["source"], r["from_ns"], r["arrive_ns"], *cut.values())
        )
    names = [
        "node",
        "rank",
        "step",
        "source",
        "from_ns",
        "arrive_ns",
        *(f"cut_{c}" for c in STRAGGLER_CAUSES),
    ]
    schema = dict.fromkeys(names, pl.Int64) | {"node": pl.String, "source": pl.String}
    return pl.DataFrame(rows, schema=schema, orient="row")
