"""Level-of-detail index of a trace: what the timeline draws, at any zoom, in O(cells).

Built from the trace's events and what the stage graph found in them (:class:`TimelineInputs`:
the steps and correlate stages' outputs, with the default parameters: the timeline draws the
exact events, so under ``hta_compat`` it is the same timeline; HTA's launch matching is the
Launches view's), once per trace, code version and inputs' key (:func:`index_version`; the
caller, :mod:`.lod_open`, gives the key and the inputs), and cached under
``trace/.profui/lod/`` (``meta.json`` with lanes, rows, steps and names; ``tiles.parquet``; the
hot event columns as raw little arrays ``*.bin`` that are memory-mapped when opened, so a
10M-event trace opens in a fraction of a second):

* **memory** — per device of each rank, the allocator's allocated level over time (the
  ``[memory]`` events, :func:`profui.analysis.allocations.memory_events`; ``memory.parquet``),
  drawn as a metric lane first under its rank, with its peak and out-of-memory instants.
* **lanes** — a tree: node ▸ rank ▸ host threads (one *row* per nesting depth: step ▸
  annotation ▸ op ▸ launch ...), and per GPU its host *launch* lane (the runtime calls that
  started work on that GPU) and one lane per device stream; per node the sampled metric series.
* **events** — every event once per row it is drawn on, sorted by ``(row, start)``; a position in
  this order identifies an event instance everywhere (selection, links, search). ``link`` joins a
  launch to the device activity it started and back: the pairs the correlate stage made
  (``correlate/launches.parquet``), never a join of the index's own.
* **steps** — the steps stage's windows (``steps/windows.parquet``), numbered as the Steps view
  numbers them.
* **density tiles** — per row, busy nanoseconds per power-of-two time bucket and per event kind
  (level 0 stored; coarser levels are exact pairwise sums), so a coarse viewport is drawn from
  prefix sums instead of events.

Times inside the index are ns relative to :attr:`LodIndex.base_ns` (the first event's start).
Pure Polars/NumPy/PyArrow: no rendering here.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterable
from dataclasses import asdict, dataclass, field
from functools import cached_property, lru_cache
from pathlib import Path
from typing import Any

import numpy as np
import polars as pl
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from profui.capture.format import EVENT_KINDS, TraceDir

from .allocations import memory_events
from .formatting import fmt_memory_device
from .launch import LAUNCH_KINDS

#: Row keys: per lane three groups (host steps, activity, GPU annotations) of up to 2048 depths.
ROWS_PER_SUB = 2048
ROWS_PER_LANE = 3 * ROWS_PER_SUB
#: Level-0 tile buckets over the whole trace span (at most).
TILE_BUCKETS = 1 << 16
KIND_ID: dict[str, int] = {k: i for i, k in enumerate(EVENT_KINDS)}

Progress = Callable[[float, str], None]


@dataclass(frozen=True)
class Lane:
    """One lane of the tree. Group lanes (``node``, ``rank``, ``gpu``, ``metrics``) have no rows."""

    id: int
    parent: int | None
    kind: str  # node | rank | thread | gpu | launch | stream | metrics | metric
    label: str
    node: str
    rank: int | None = None
    pid: int | None = None
    tid: int | None = None
    device: int | None = None
    stream: int | None = None
    rows: tuple[int, ...] = ()
    series: int | None = None  # metric lanes: index into LodIndex.series
    n_events: int = 0


@dataclass(frozen=True)
class Step:
    """A training step: its number (from ``ProfilerStep#N``), name and window (relative ns);
    ``node``/``rank`` for one rank's step, None for the job's (all ranks merged)."""

    number: int | None
    name: str
    t0: int
    t1: int
    node: str | None = None
    rank: int | None = None


@dataclass(frozen=True)
class Series:
    """A sampled metric: ``ts`` (relative ns, sorted) and ``value``."""

    node: str
    source: str
    device: int
    metric: str
    ts: np.ndarray
    value: np.ndarray


@dataclass
class _Meta:
    base_ns: int
    span_ns: int
    bucket_ns: int
    n_buckets: int
    n_events: int
    names: list[str] = field(default_factory=list)
    lanes: list[dict] = field(default_factory=list)
    rows: list[dict] = field(default_factory=list)
    steps: list[dict] = field(default_factory=list)
    files: list[list] = field(default_factory=list)


@dataclass(frozen=True)
class TimelineInputs:
    """What the index takes from the stage graph instead of working it out: the steps stage's
    windows (``steps/windows.parquet``: per rank each step's number, name and CPU window), whether
    the trace marks steps at all (``steps/steps.json``'s ``has_markers``: without markers the
    windows are whole ranks, which the timeline does not draw as steps) and the correlate stage's
    links (``correlate/launches.parquet``: each launched device event and its call;
    ``correlate/sync_links.parquet``: each device sync event and the call that issued it)."""

    windows: pl.DataFrame
    has_markers: bool
    launches: pl.DataFrame | pl.LazyFrame
    syncs: pl.DataFrame | pl.LazyFrame


def _time_extent(trace: TraceDir) -> tuple[int, int]:
    """(first start, last end) over every events file, reading only ``ts`` and ``dur``; over the
    metrics samples when there are no events."""
    lo, hi = None, None
    files = [f for f in trace.events if f.num_rows] or [f for f in trace.metrics if f.num_rows]
    for f in files:
        end = pl.col("ts") + pl.col("dur").clip(0) if f.table == "events" else pl.col("ts")
        r = pl.scan_parquet(f.path).select(pl.col("ts").min().alias("lo"), end.max().alias("hi")).collect()
        a, b = r["lo"][0], r["hi"][0]
        lo = a if lo is None else min(lo, a)
        hi = b if hi is None else max(hi, b)
    return (lo or 0, hi or 0)


def write_index(
    trace: TraceDir, given: TimelineInputs, folder: Path, progress: Progress | None = None
) -> dict[str, Path]:
    """Write the index of ``trace`` into the empty ``folder``; return each of
    :data:`INDEX_FILES` by its path. ``given``: what the stage graph found (the timeline
    stage's inputs); ``progress(fraction, message)`` is called as ranks are indexed."""
    say = progress or (lambda _f, _m: None)
    say(0.03, "scanning the trace")
    base, end = _time_extent(trace)
    span = max(end - base, 1)
    bucket = 1 << max(0, int(np.ceil(np.log2(span / TILE_BUCKETS))) if span > TILE_BUCKETS else 0)
    n_buckets = int(span // bucket) + 1
    names: dict[str, int] = {}
    lanes: list[dict] = []
    rows: list[dict] = []
    tiles: list[pa.Table] = []
    files_meta: list[list] = []
    ranks = trace.ranks
    by_rank: dict[tuple[str, int | None], list] = {}
    for f in trace.events:
        by_rank.setdefault((f.node, f.rank), []).append(f)
    node_lane: dict[str, int] = {}
    row_counts: list[int] = []
    steps = _steps_of(given, base) if given.has_markers else []
    links = _links_by_rank(given.launches, given.syncs)
    del given  # what the index keeps of it: its steps, and the links (slices, or scans)
    pos_base = 0  # each rank's events follow the ranks' before it in the index's order
    for i, (node, rank) in enumerate(ranks):

        def part(done: float, i: int = i, node: str = node, rank: int = rank) -> None:
            # a rank's share of the bar, moved within it as its indexing goes (one huge rank
            # is all of it)
            say(0.05 + 0.9 * (i + done) / max(len(ranks), 1), f"indexing {node} rank {rank}")

        part(0.0)
        if node not in node_lane:
            node_lane[node] = len(lanes)
            lanes.append(dict(id=len(lanes), parent=None, kind="node", label=node, node=node))
        files = [f for f in by_rank[(node, rank)] if f.num_rows]
        if not files:
            continue
        src_base = sum(r for _, r in files_meta)
        files_meta.extend([str(f.path.relative_to(trace.path)), f.num_rows] for f in files)
        indexed = _index_rank(
            files,
            node,
            rank,
            links(node, rank),
            base,
            bucket,
            n_buckets,
            names,
            lanes,
            rows,
            node_lane[node],
            pos_base,
            src_base,
            part,
        )
        if indexed is None:
            continue
        tile, arrays = indexed
        tiles.append(tile)
        _append_arrays(folder, arrays, row_counts)
        pos_base += arrays["t"].size
    say(0.95, "writing the index")
    _memory_table(trace, base).write_parquet(folder / "memory.parquet")
    if pos_base == 0:
        _append_arrays(
            folder,
            {k: np.zeros(0, dtype=dt) for k, dt in _ARRAYS.items() if k != "end_max"}
            | {"row": np.zeros(0, dtype=np.int32)},
            row_counts,
        )
    row_counts.extend([0] * (len(rows) - len(row_counts)))
    np.save(folder / "row_start.npy", np.concatenate([[0], np.cumsum(np.array(row_counts, dtype=np.int64))]))
    tile_table = pa.concat_tables(tiles) if tiles else _tile_schema().empty_table()
    pq.write_table(tile_table, folder / "tiles.parquet", compression="zstd", compression_level=1)
    meta = _Meta(
        int(base),
        int(span),
        int(bucket),
        int(n_buckets),
        int(pos_base),
        _invert(names),
        lanes,
        rows,
        steps,
        files_meta,
    )
    (folder / "index.json").write_text(json.dumps(asdict(meta)))
    say(1.0, "timeline index ready")
    return {name: folder / name for name in INDEX_FILES}


def _steps_of(given: TimelineInputs, base: int) -> list[dict]:
    """Every rank's steps as the steps stage numbered them (relative ns), in time order."""
    return (
        given.windows.select(
            pl.col("step").alias("number"),
            "name",
            (pl.col("cpu_start_ns") - base).alias("t0"),
            (pl.col("cpu_end_ns") - base).alias("t1"),
            "node",
            "rank",
        )  # fmt: skip
        .sort("t0", "node", "rank", maintain_order=True)
        .to_dicts()
    )


#: The columns of the correlate stage's ``launches.parquet`` the index reads: what identifies a
#: launched device event and its call among a rank's events.
LINK_COLUMNS = ("node", "rank", "correlation", "device", "stream", "kind", "ts", "dur",
                "launch_tid", "launch_ts", "launch_dur")  # fmt: skip
#: Those of its ``sync_links.parquet``: the same, but the kind, ``sync`` on every row.
SYNC_LINK_COLUMNS = tuple(c for c in LINK_COLUMNS if c != "kind")


def _launches_by_rank(launches: pl.DataFrame) -> dict[tuple[str, int | None], pl.DataFrame]:
    """The correlate stage's links per ``(node, rank)``: the rows of each rank, slices of
    ``launches`` (no copy) where its rows come rank by rank, as the stage writes them."""
    if launches.is_empty():
        return {}
    groups = (
        launches.select("node", "rank")
        .with_row_index("i")
        .group_by("node", "rank", maintain_order=True)
        .agg(pl.col("i").min().alias("lo"), pl.col("i").max().alias("hi"), pl.len().alias("n"))
    )
    if (groups["hi"] - groups["lo"] + 1 != groups["n"]).any():  # not rank by rank: copied apart
        parts = launches.partition_by("node", "rank", as_dict=True, maintain_order=True)
        return {(str(k[0]), None if k[1] is None else int(k[1])): v for k, v in parts.items()}  # type: ignore[arg-type]
    return {
        (node, rank): launches.slice(lo, n)
        for node, rank, lo, n in groups.select("node", "rank", "lo", "n").iter_rows()
    }


def _links_by_rank(
    *tables: pl.DataFrame | pl.LazyFrame,
) -> Callable[[str, int | None], list[pl.DataFrame]]:
    """Each rank's rows of the correlate stage's links (of its launch links, then of its sync
    links), by ``(node, rank)``: slices of a table in memory; of a recorded one (a scan of its
    Parquet file) the rank's rows read when that rank is indexed, the filter pushed into the scan,
    so a build holds one rank's links at a time, not the whole job's."""
    parts = [_launches_by_rank(t) if isinstance(t, pl.DataFrame) else t for t in tables]

    def of(node: str, rank: int | None) -> list[pl.DataFrame]:
        out = []
        for t in parts:
            if isinstance(t, dict):
                part = t.get((node, rank))
            else:
                same_rank = pl.col("rank").is_null() if rank is None else pl.col("rank") == rank
                part = t.filter((pl.col("node") == node) & same_rank).collect()
            if part is not None and part.height:
                out.append(part)
        return out

    return of


def _identities(links: pl.DataFrame) -> pl.DataFrame:
    """One rank's links with nulls as the index reads them (-1) and kinds as its kind ids (a
    sync link, which has no kind column, ``sync``'s)."""
    kind = (
        pl.col("kind").cast(pl.String).replace_strict(KIND_ID, return_dtype=pl.Int8)
        if "kind" in links.columns
        else pl.lit(KIND_ID["sync"], dtype=pl.Int8).alias("kind")
    )
    return links.select(
        "correlation",
        pl.col("device").fill_null(-1),
        pl.col("stream").fill_null(-1),
        kind,
        "ts",
        "dur",
        pl.col("launch_tid").fill_null(-1),
        "launch_ts",
        "launch_dur",
    )


def _memory_table(trace: TraceDir, base: int) -> pl.DataFrame:
    """Every rank's readable memory events: device, ``t`` (relative ns), the allocated and
    reserved levels, the event (alloc / free / oom), in order per device."""
    cols = ["kind", "name", "ts", "pid", "tid", "args"]
    parts = [
        pl.scan_parquet(f.path)
        .select(cols)
        .filter(pl.col("kind") == "instant")
        .with_columns(pl.lit(f.node).alias("node"), pl.lit(f.rank, dtype=pl.Int64).alias("rank"))
        for f in trace.events
        if f.num_rows
    ]
    if not parts:
        return pl.DataFrame(
            schema={"node": pl.String, "rank": pl.Int64, "device_type": pl.String, "device": pl.Int32,
                    "t": pl.Int64, "event": pl.String, "allocated_bytes": pl.Int64, "reserved_bytes": pl.Int64}
        )  # fmt: skip
    return (
        memory_events(pl.concat(parts, how="vertical_relaxed"))
        .select(
            "node",
            "rank",
            "device_type",
            "device",
            (pl.col("ts") - base).alias("t"),
            "event",
            "allocated_bytes",
            "reserved_bytes",
        )  # fmt: skip
        .collect()
    )


#: The hot columns, stored as raw arrays (memory-mapped when opened) beside the Parquet.
_ARRAYS = {
    "t": np.int64,
    "end": np.int64,
    "end_max": np.int64,
    "kind": np.int8,
    "name": np.int32,
    "link": np.int64,
    "src": np.int64,
}


#: The index's files (:func:`write_index`), the timeline stage's outputs: its description, the
#: density tiles, the memory levels, each row's first position, and the hot columns' arrays.
INDEX_FILES = (
    "index.json",
    "tiles.parquet",
    "memory.parquet",
    "row_start.npy",
    *(f"{key}.bin" for key in _ARRAYS),
)


def _append_arrays(folder: Path, arrays: dict[str, np.ndarray], row_counts: list[int]) -> None:
    """Append one rank's hot columns to ``<name>.bin``; ``end_max`` is the running max of ends per row."""
    row = arrays["row"]
    end = arrays["end"]
    if row.size:
        r0 = int(row[0])
        shift = (row - r0).astype(np.int64) * (int(end.max()) + 2)
        arrays["end_max"] = np.maximum.accumulate(end + shift) - shift
        counts = np.bincount(row - r0)
        row_counts.extend([0] * (r0 - len(row_counts)))
        row_counts.extend(counts.tolist())
    else:
        arrays["end_max"] = end
    for key, dtype in _ARRAYS.items():
        with open(folder / f"{key}.bin", "ab") as fh:
            fh.write(np.ascontiguousarray(arrays[key], dtype=dtype).tobytes())


def _tile_schema() -> pa.Schema:
    return pa.schema(
        [("row", pa.int32()), ("kind_id", pa.int8()), ("bucket", pa.int32()), ("busy_ns", pa.int64())]
    )


def _dict_ids(col: pa.ChunkedArray, mapping: Callable[[str], int]) -> np.ndarray:
    """Ids of a (dictionary-encoded) string column's values through ``mapping``, chunk by chunk."""
    out = []
    for chunk in col.chunks:
        if not pa.types.is_dictionary(chunk.type):
            chunk = pc.dictionary_encode(chunk)
        lut = np.array([mapping(v) for v in chunk.dictionary.to_pylist()] or [0], dtype=np.int32)
        idx = chunk.indices.to_numpy(zero_copy_only=False)
        out.append(lut[idx.astype(np.int64)])
    return np.concatenate(out) if out else np.zeros(0, dtype=np.int32)


def _ints(col: pa.ChunkedArray, null: int = -1) -> np.ndarray:
    return col.fill_null(null).to_numpy().astype(np.int64, copy=False)


def _depths(lane: np.ndarray, t: np.ndarray, end: np.ndarray, big: int) -> np.ndarray:
    """Nesting depth of each event within its lane (arrays sorted by lane, t, -dur).

    For properly nested intervals the ancestors of an event are exactly the events of its lane
    that started before it and have not ended by its start: depth = started - ended.
    """
    n = t.size
    if n == 0:
        return np.zeros(0, dtype=np.int64)
    key_s = lane * big + t
    key_e = np.sort(lane * big + end)
    first = np.searchsorted(lane, lane, side="left")
    started = np.arange(n) - first
    ended = np.searchsorted(key_e, key_s, side="right") - first
    return np.clip(started - ended, 0, 2047)


def _sort_by_key_then_longest(key: np.ndarray, dur: np.ndarray) -> np.ndarray:
    """Order by ``key``, equal keys by decreasing ``dur`` (a parent before the child that starts
    with it). One stable sort (events arrive nearly sorted), then only the ties are re-sorted."""
    order = np.argsort(key, kind="stable")
    k = key[order]
    tie = k[1:] == k[:-1]
    if tie.any():
        involved = np.zeros(k.size, dtype=bool)
        involved[1:] |= tie
        involved[:-1] |= tie
        at = np.flatnonzero(involved)
        sub = order[at]
        order[at] = sub[np.lexsort((-dur[sub], k[at]))]
    return order


def _first_by_key(keys: np.ndarray, t: np.ndarray, values: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """For each distinct key, the value of its earliest (by ``t``) element: (sorted keys, values)."""
    order = np.lexsort((t, keys))
    k = keys[order]
    first = np.concatenate([[True], k[1:] != k[:-1]]) if k.size else np.zeros(0, dtype=bool)
    return k[first], values[order][first]


def _lookup(
    keys: np.ndarray, table_keys: np.ndarray, table_values: np.ndarray, missing: int = -1
) -> np.ndarray:
    """``table_values`` at ``keys`` (``table_keys`` sorted and unique), ``missing`` where absent."""
    if table_keys.size == 0:
        return np.full(keys.size, missing, dtype=np.int64)
    i = np.clip(np.searchsorted(table_keys, keys), 0, table_keys.size - 1)
    return np.where(table_keys[i] == keys, table_values[i], missing)


def _linked(
    links: list[pl.DataFrame] | None,
    ts: np.ndarray,
    dur: np.ndarray,
    kind: np.ndarray,
    tid: np.ndarray,
    device: np.ndarray,
    stream: np.ndarray,
    corr: np.ndarray,
    corr_valid: np.ndarray,
) -> tuple[np.ndarray, np.ndarray]:
    """Which of a rank's events the correlate stage linked (``links``, its rows of the rank: of
    its launch links, then of its sync links): the calls (sorted indices into the events) and the
    launched device events and device syncs (a mask).
    Each is found by what identifies it (correlation, start, duration; a call's thread, a device
    event's device, stream and kind), so the pairs are the stage's, whatever the index's order."""
    n = ts.size
    dev_mask = np.zeros(n, dtype=bool)
    if not links:
        return np.zeros(0, dtype=np.int64), dev_mask
    rank_links = pl.concat([_identities(part) for part in links])

    def columns(*names: str) -> list[np.ndarray]:
        # A join matches no null: a link with one in its identity identifies no event.
        rows = rank_links.select(names).drop_nulls()
        return [rows[c].cast(pl.Int64).to_numpy() for c in names]

    sel = np.flatnonzero(corr_valid)
    on_dev = device[sel] >= 0
    dev = sel[on_dev]
    identity = columns("ts", "correlation", "dur", "device", "stream", "kind")
    dev_mask[dev[_rows_among((ts, corr, dur, device, stream, kind), dev, identity)]] = True
    host = sel[~on_dev & np.isin(kind[sel], [KIND_ID[k] for k in LAUNCH_KINDS])]
    identity = columns("launch_ts", "correlation", "launch_dur", "launch_tid")
    called = host[_rows_among((ts, corr, dur, tid), host, identity)]
    # A call has a row per device event it launched; of several calls of one correlation, the first.
    _, first = np.unique(corr[called], return_index=True)
    return np.sort(called[first]).astype(np.int64, copy=False), dev_mask


_KEY_MAX = (1 << 63) - 1


def _rows_among(cols: Iterable[np.ndarray], at: np.ndarray, of: list[np.ndarray]) -> np.ndarray:
    """Positions in ``at`` of the rows (``cols`` at ``at``) whose values, column for column, are
    those of a row of ``of`` (columns as many, int64): a semi-join by sorting, no hashing.
    Each row's values are packed into one int64 key, digit by digit (a column's digit: its value
    less ``of``'s least, in base its range); where the next digit would overflow, the key so far
    is replaced by its rank among ``of``'s keys, and a column too wide by its value's."""
    if at.size == 0 or of[0].size == 0:
        return np.zeros(0, dtype=np.int64)
    ok = np.ones(at.size, dtype=bool)  # a row whose value is outside ``of``'s has a wrong key
    key, of_key, card = np.zeros(at.size, dtype=np.int64), np.zeros(of[0].size, dtype=np.int64), 1
    for col, of_col in zip(cols, of, strict=True):
        lo, hi = int(of_col.min()), int(of_col.max())
        v = col[at].astype(np.int64, copy=False)
        span = hi - lo + 1
        if span > _KEY_MAX // card and card > 1:
            keys, of_key = np.unique(of_key, return_inverse=True)
            found, key = _ranks(key, keys)
            ok &= found
            card = keys.size
        if span > _KEY_MAX // card:
            values, of_col = np.unique(of_col, return_inverse=True)
            found, v = _ranks(v, values)
            ok &= found
            span = values.size
        else:
            ok &= (v >= lo) & (v <= hi)
            of_col, v = of_col - lo, v - lo
        key, of_key, card = key * span + v, of_key * span + of_col, card * span
    found, _ = _ranks(key, np.sort(of_key))
    return np.flatnonzero(ok & found)


def _ranks(values: np.ndarray, table: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Whether each of ``values`` is in ``table`` (sorted), and where (by ``np.searchsorted``)."""
    i = np.searchsorted(table, values)
    found = table[np.minimum(i, table.size - 1)] == values
    return found, i


def _index_rank(
    files,
    node,
    rank,
    links,
    base,
    bucket,
    n_buckets,
    names,
    lanes,
    rows,
    node_lane_id,
    pos_base,
    src_base,
    part: Callable[[float], None] = lambda done: None,
):
    """Index one rank: its lanes and rows, its events in LOD order with the correlate stage's
    links (``links``: its rows of this rank), its tiles; ``part(done)`` says how far it is (0-1)."""
    cols = ["ts", "dur", "kind", "name", "pid", "tid", "device", "stream", "correlation"]
    tab = pa.concat_tables([pq.read_table(f.path, columns=cols) for f in files], promote_options="permissive")
    part(0.15)
    if tab.num_rows == 0:
        return None
    n = tab.num_rows
    ts = tab["ts"].to_numpy()
    t = ts - base
    dur = np.clip(tab["dur"].to_numpy(), 0, None)
    odd: set[str] = set()

    def kind_id(k: str) -> int:  # a kind the format lacks is -1, and kept to be named below
        if k in KIND_ID:
            return KIND_ID[k]
        odd.add(k)
        return -1

    kind = _dict_ids(tab["kind"], kind_id).astype(np.int8)
    if odd and (kind < 0).any():  # a kind the format lacks: refused, as the analysis refuses it
        from profui.capture.format.readcheck import kind_not_in_format

        raise kind_not_in_format(files, odd)
    name = _dict_ids(tab["name"], lambda v: names.setdefault(v if v is not None else "", len(names)))
    pid, tid = _ints(tab["pid"]), _ints(tab["tid"])
    device, stream = _ints(tab["device"]), _ints(tab["stream"])
    corr_valid = tab["correlation"].is_valid().to_numpy(zero_copy_only=False)
    corr = _ints(tab["correlation"])
    host = device < 0
    part(0.3)
    calls, launched = _linked(links, ts, _ints(tab["dur"]), kind, tid, device, stream, corr, corr_valid)
    part(0.45)
    linked = launched.copy()
    linked[calls] = True
    # The device of each call's first launched event: its copy goes on that GPU's launch lane.
    dsel = np.flatnonzero(launched)
    corr_keys, corr_dev = _first_by_key(corr[dsel], t[dsel], device[dsel])
    lsel = calls
    target = _lookup(corr[lsel], corr_keys, corr_dev)
    lsel, target = lsel[target >= 0], target[target >= 0]
    # LOD entries: every event once, plus a copy of each launch on its GPU's launch lane.
    # Lane sort key: section (host threads first, then GPUs), then (pid, tid) or (device, lane kind, stream).
    src = np.concatenate([np.arange(n), lsel])
    is_copy = np.concatenate([np.zeros(n, dtype=bool), np.ones(lsel.size, dtype=bool)])
    hs = np.concatenate([host, np.zeros(lsel.size, dtype=bool)])
    k1 = np.concatenate([np.where(host, pid, device), target])
    k2 = np.concatenate([np.where(host, tid, (1 << 40) + stream), np.full(lsel.size, -1, dtype=np.int64)])
    sec = (~hs).astype(np.int64)
    _, k1c = np.unique(k1, return_inverse=True)
    _, k2c = np.unique(k2, return_inverse=True)
    lane_key = (sec * (k1c.max() + 1) + k1c) * (k2c.max() + 1) + k2c
    _, lane = np.unique(lane_key, return_inverse=True)
    lane = lane.astype(np.int64)
    et = t[src]
    edur = dur[src]
    # On a device stream, GPU user annotations nest among themselves on rows below the
    # activity (kernels, copies) so that a stream's work stays on its first row. On a host
    # thread the step markers take the first row of their own: a step need not nest (profcap
    # ends a step when optimizer.step() is called, inside the optimizer's range), and nesting
    # it under that range would hide every step after the first.
    gpu_ann = (kind[src] == KIND_ID["gpu_annotation"]) & ~host[src]
    host_step = (kind[src] == KIND_ID["step"]) & host[src]
    sub = np.where(host_step, 0, np.where(gpu_ann, 2, 1)).astype(np.int64)
    dl = lane * 3 + sub
    order = _sort_by_key_then_longest(dl * (int(et.max()) + 1) + et, edur)
    src, is_copy, lane, et, edur, dl, sub = (a[order] for a in (src, is_copy, lane, et, edur, dl, sub))
    part(0.6)
    eend = et + edur
    depth = _depths(dl, et, eend, int(eend.max()) + 2)
    part(0.7)
    row_key = lane * ROWS_PER_LANE + sub * ROWS_PER_SUB + depth
    uniq_rows, row_local = np.unique(row_key, return_inverse=True)
    row = row_local.astype(np.int64) + len(rows)
    # Already ordered by (lane, t, -dur) and rows refine lanes: a stable sort by row is enough.
    order = np.argsort(row_local.astype(np.int16 if row_local.max() < 32767 else np.int32), kind="stable")
    src, is_copy, lane, et, edur, eend, depth, row = (
        a[order] for a in (src, is_copy, lane, et, edur, eend, depth, row)
    )
    m = src.size
    pos = pos_base + np.arange(m, dtype=np.int64)
    # Links: a call (host row or launch-lane copy) -> its first launched event; a launched event
    # -> the call's launch-lane copy.
    ecorr, elinked = corr[src], linked[src]
    on_dev = ~host[src]
    dsel = np.flatnonzero(on_dev & elinked)
    dkeys, dpos = _first_by_key(ecorr[dsel], et[dsel], pos[dsel])
    csel = np.flatnonzero(is_copy)
    ckeys, cpos = _first_by_key(ecorr[csel], et[csel], pos[csel])
    link = np.full(m, -1, dtype=np.int64)
    is_launch = ~on_dev & elinked
    link[is_launch] = _lookup(ecorr[is_launch], dkeys, dpos)
    dl = on_dev & elinked
    link[dl] = _lookup(ecorr[dl], ckeys, cpos)
    # Lanes and rows metadata, in tree order.
    rank_id = len(lanes)
    host_pids = np.unique(pid[host])
    lanes.append(
        dict(
            id=rank_id,
            parent=node_lane_id,
            kind="rank",
            label=f"rank {rank}",
            node=node,
            rank=rank,
            pid=int(host_pids[0]) if host_pids.size == 1 else None,
        )
    )
    lane_first = np.searchsorted(lane, np.arange(int(lane.max()) + 1), side="left")
    row_lane_local, row_depth = uniq_rows // ROWS_PER_LANE, uniq_rows % ROWS_PER_SUB
    row_counter = len(rows)
    gpu_lane: dict[int, int] = {}
    lane_counts = np.bincount(lane)
    for ln_local in range(lane_first.size):
        i0 = src[lane_first[ln_local]]
        copy0 = bool(is_copy[lane_first[ln_local]])
        depths_here = row_depth[row_lane_local == ln_local].tolist()
        row_ids = tuple(range(row_counter, row_counter + len(depths_here)))
        row_counter += len(depths_here)
        lid = len(lanes)
        if host[i0] and not copy0:
            label = f"thread {tid[i0]}" if host_pids.size == 1 else f"pid {pid[i0]} tid {tid[i0]}"
            lanes.append(
                dict(
                    id=lid,
                    parent=rank_id,
                    kind="thread",
                    label=label,
                    node=node,
                    rank=rank,
                    pid=int(pid[i0]),
                    tid=int(tid[i0]),
                    rows=row_ids,
                    n_events=int(lane_counts[ln_local]),
                )
            )
        else:
            dv = int(target[np.searchsorted(lsel, i0)]) if copy0 else int(device[i0])
            if dv not in gpu_lane:
                gpu_lane[dv] = lid
                lanes.append(
                    dict(
                        id=lid, parent=rank_id, kind="gpu", label=f"GPU {dv}", node=node, rank=rank, device=dv
                    )
                )
                lid += 1
            if copy0:
                lanes.append(
                    dict(
                        id=lid,
                        parent=gpu_lane[dv],
                        kind="launch",
                        label="launches",
                        node=node,
                        rank=rank,
                        device=dv,
                        rows=row_ids,
                        n_events=int(lane_counts[ln_local]),
                    )
                )
            else:
                lanes.append(
                    dict(
                        id=lid,
                        parent=gpu_lane[dv],
                        kind="stream",
                        label=f"stream {stream[i0]}",
                        node=node,
                        rank=rank,
                        device=dv,
                        stream=int(stream[i0]),
                        rows=row_ids,
                        n_events=int(lane_counts[ln_local]),
                    )
                )
        for d, r in zip(depths_here, row_ids, strict=True):
            rows.append(dict(row=r, lane=lid, depth=d))
    part(0.8)
    tile = _tiles(row, et, edur, kind[src].astype(np.int64), bucket, n_buckets)
    part(0.9)
    arrays = {
        "t": et,
        "end": eend,
        "kind": kind[src],
        "name": name[src].astype(np.int32),
        "link": link,
        "row": row.astype(np.int32),
        "src": src + src_base,
    }
    return tile, arrays


def _invert(names: dict[str, int]) -> list[str]:
    out = [""] * len(names)
    for n, k in names.items():
        out[k] = n
    return out


def _tiles(
    row: np.ndarray, t: np.ndarray, dur: np.ndarray, kind: np.ndarray, bucket: int, n_buckets: int
) -> pa.Table:
    """Level-0 density tiles: busy ns per (row, kind, bucket), exact, for the non-empty cells."""
    ok = dur > 0
    row, t, dur, kind = row[ok], t[ok], dur[ok], kind[ok].astype(np.int64)
    if row.size == 0:
        return _tile_schema().empty_table()
    r0 = int(row.min())
    nk = len(EVENT_KINDS)
    groups, local = np.unique((row - r0).astype(np.int64) * nk + kind, return_inverse=True)
    end = t + dur
    a = t // bucket
    z = (end - 1) // bucket
    one = a == z
    base = local * n_buckets
    # Partial first/last buckets and single-bucket events, then every whole bucket in between
    # (sparse: only buckets something touches, so many rows cost what their events cost).
    keys = [base[one] + a[one], base[~one] + a[~one], base[~one] + z[~one]]
    weights = [dur[one], (a[~one] + 1) * bucket - t[~one], end[~one] - z[~one] * bucket]
    span = ~one & (z > a + 1)
    if span.any():
        counts = (z[span] - a[span] - 1).astype(np.int64)
        first = np.repeat(base[span] + a[span] + 1, counts)
        offsets = np.arange(int(counts.sum()), dtype=np.int64) - np.repeat(np.cumsum(counts) - counts, counts)
        keys.append(first + offsets)
        weights.append(np.full(offsets.size, bucket, dtype=np.int64))
    allk = np.concatenate(keys)
    allw = np.concatenate(weights).astype(np.float64)
    if groups.size * n_buckets <= 4 * allk.size:  # dense enough: one bincount over every cell
        dense = np.bincount(allk, weights=allw, minlength=groups.size * n_buckets)
        nz = np.flatnonzero(dense)
        busy = dense[nz]
    else:  # sparse: only the cells something touches
        uniq, inv = np.unique(allk, return_inverse=True)
        busy = np.bincount(inv, weights=allw)
        keep = busy > 0
        nz, busy = uniq[keep], busy[keep]
    g = groups[nz // n_buckets]
    return pa.table(
        {
            "row": pa.array((g // nk + r0).astype(np.int32)),
            "kind_id": pa.array((g % nk).astype(np.int8)),
            "bucket": pa.array((nz % n_buckets).astype(np.int32)),
            "busy_ns": pa.array(np.rint(busy).astype(np.int64)),
        },
        schema=_tile_schema(),
    )


def search_rows(values: np.ndarray, lo: np.ndarray, hi: np.ndarray, target: int, right: bool) -> np.ndarray:
    """``lo[i] + np.searchsorted(values[lo[i]:hi[i]], target, side)`` for every ``i`` at once
    (each slice sorted): one vectorised binary search instead of a call per slice. Each slice's
    count of values before the target is built from the largest power of two down."""
    pos = np.array(lo, dtype=np.int64)
    hi = np.asarray(hi, dtype=np.int64)
    if values.size == 0 or pos.size == 0:
        return pos
    if pos.size == 1:  # one slice: numpy's own search is cheaper
        a = int(pos[0])
        pos[0] += np.searchsorted(values[a : int(hi[0])], target, side="right" if right else "left")
        return pos
    last = values.size - 1
    step = 1 << max(int((hi - pos).max()).bit_length() - 1, 0)
    while step:
        idx = pos + (step - 1)  # the last value the slice's count would take in with this step
        v = values[np.minimum(idx, last)]
        ok = (idx < hi) & ((v <= target) if right else (v < target))
        pos += ok * step
        step >>= 1
    return pos


class LodIndex:
    """An opened LOD index. Positions are indices into the index's event order."""

    def __init__(self, trace: TraceDir, folder: Path) -> None:
        self.trace = trace
        self.folder = folder
        m = json.loads((folder / "index.json").read_text())
        self.base_ns: int = m["base_ns"]
        self.span_ns: int = m["span_ns"]
        self.bucket_ns: int = m["bucket_ns"]
        self.n_buckets: int = m["n_buckets"]
        self.names: list[str] = m["names"]
        self._names_arr = np.array(self.names, dtype=object)
        n = m["n_events"]

        def arr(key: str) -> np.ndarray:
            if n == 0:
                return np.zeros(0, dtype=_ARRAYS[key])
            # A plain ndarray view of the map: slicing a np.memmap subclass costs more per call.
            return np.memmap(folder / f"{key}.bin", dtype=_ARRAYS[key], mode="r", shape=(n,)).view(np.ndarray)

        self.t = arr("t")
        self.end = arr("end")
        self.end_max = arr("end_max")
        self.kind = arr("kind")
        self.name = arr("name")
        self.link = arr("link")
        self.src = arr("src")
        self.row_start = np.load(folder / "row_start.npy")
        n_rows = len(m["rows"])
        self.rows: list[dict] = m["rows"]
        self.row_lane = np.array([r["lane"] for r in self.rows], dtype=np.int64)
        self.row_depth = np.array([r["depth"] for r in self.rows], dtype=np.int64)
        self._load_tiles(n_rows)
        self.series: list[Series] = []
        self._lanes = self._make_lanes(m["lanes"])
        self._lane_by_id = {ln.id: ln for ln in self._lanes}
        self._steps, self._rank_steps = self._make_steps(m["steps"])
        self._files: list[list] = m.get("files", [])
        self._file_offsets = np.concatenate([[0], np.cumsum([r for _, r in self._files], dtype=np.int64)])
        self._pfiles: dict[int, pq.ParquetFile] = {}
        self._groups: dict[tuple[int, int], pa.Table] = {}

    # -- construction helpers --------------------------------------------------------------
    def _load_tiles(self, n_rows: int) -> None:
        tiles = pq.read_table(self.folder / "tiles.parquet")
        self.tile_cum: dict[int, np.ndarray] = {}
        self.tile_kind_cum: dict[int, dict[int, np.ndarray]] = {}
        if tiles.num_rows == 0:
            return
        r = tiles["row"].to_numpy()
        k = tiles["kind_id"].to_numpy()
        b = tiles["bucket"].to_numpy()
        v = tiles["busy_ns"].to_numpy()
        order = np.lexsort((b, k, r))
        r, k, b, v = r[order], k[order], b[order], v[order]
        bounds = np.flatnonzero(np.diff(r.astype(np.int64) * 256 + k)) + 1
        for lo, hi in zip(np.concatenate([[0], bounds]), np.concatenate([bounds, [r.size]]), strict=True):
            row, kind = int(r[lo]), int(k[lo])
            dense = np.zeros(self.n_buckets, dtype=np.int64)
            dense[b[lo:hi]] = v[lo:hi]
            cum = np.concatenate([[0], np.cumsum(dense)])
            self.tile_kind_cum.setdefault(row, {})[kind] = cum
            tot = self.tile_cum.get(row)
            self.tile_cum[row] = cum if tot is None else tot + cum

    def _make_lanes(self, raw: list[dict]) -> list[Lane]:
        lanes: list[Lane] = []
        out_of_order: dict[str, list[Lane]] = {}
        for d in raw:
            lanes.append(Lane(**{**d, "rows": tuple(d.get("rows", ()))}))
        # Metric lanes go under their node, after its ranks.
        metrics = self._load_metrics()
        next_id = len(lanes)
        for node in dict.fromkeys(s.node for s in metrics):
            node_lane = next((ln for ln in lanes if ln.kind == "node" and ln.node == node), None)
            if node_lane is None:
                node_lane = Lane(id=next_id, parent=None, kind="node", label=node, node=node)
                next_id += 1
                lanes.append(node_lane)
            group = Lane(id=next_id, parent=node_lane.id, kind="metrics", label="metrics", node=node)
            next_id += 1
            items = [group]
            for i, s in enumerate(metrics):
                if s.node != node:
                    continue
                dev = "" if s.device < 0 else str(s.device)
                items.append(
                    Lane(
                        id=next_id,
                        parent=group.id,
                        kind="metric",
                        label=f"{s.source}{dev} {s.metric}",
                        node=node,
                        device=s.device,
                        series=i,
                        n_events=int(s.ts.size),
                    )
                )
                next_id += 1
            out_of_order[node] = items
        self.series = metrics
        self.memory_peak: dict[int, tuple[int, int]] = {}
        self.memory_oom: dict[int, np.ndarray] = {}
        memory = self._memory_lanes(lanes, next_id)
        # Tree order: depth-first; a rank's memory lanes first under it.
        children: dict[int | None, list[Lane]] = {}
        for ln in lanes:
            children.setdefault(ln.parent, []).append(ln)
        for items in out_of_order.values():
            for ln in items:
                children.setdefault(ln.parent, []).append(ln)
        for ln in reversed(memory):
            children.setdefault(ln.parent, []).insert(0, ln)
        ordered: list[Lane] = []

        def walk(parent: int | None) -> None:
            for ln in children.get(parent, []):
                ordered.append(ln)
                walk(ln.id)

        walk(None)
        return ordered

    def _memory_lanes(self, lanes: list[Lane], next_id: int) -> list[Lane]:
        """One metric lane per device of each rank: its allocated level (``memory.parquet``),
        the series appended to :attr:`series`; their peaks and OOM instants noted."""
        path = self.folder / "memory.parquet"
        df = pl.read_parquet(path) if path.is_file() else pl.DataFrame()
        if df.is_empty():
            return []
        out = []
        for (node, rank, dtype, device), g in df.group_by(
            ["node", "rank", "device_type", "device"], maintain_order=True
        ):
            rank_lane = next(
                (ln for ln in lanes if ln.kind == "rank" and ln.node == node and ln.rank == rank), None
            )
            if rank_lane is None:
                continue
            label = fmt_memory_device(dtype, device)
            ts, value = g["t"].to_numpy(), g["allocated_bytes"].to_numpy().astype(np.float64)
            i = len(self.series)
            self.series.append(Series(node, "memory", int(device), f"mem allocated {label}", ts, value))
            k = int(np.argmax(value))
            self.memory_peak[i] = (int(ts[k]), int(value[k]))
            self.memory_oom[i] = g.filter(pl.col("event") == "oom")["t"].to_numpy()
            out.append(
                Lane(
                    id=next_id,
                    parent=rank_lane.id,
                    kind="metric",
                    label=f"mem {label}",
                    node=node,
                    rank=int(rank),
                    device=int(device),
                    series=i,
                    n_events=int(ts.size),
                )
            )
            next_id += 1
        return out

    def memory_series(self) -> list[int]:
        """The :attr:`series` indices of the memory lanes, highest peak first."""
        return sorted(self.memory_peak, key=lambda i: (-self.memory_peak[i][1], self.memory_peak[i][0]))

    def _load_metrics(self) -> list[Series]:
        if not self.trace.metrics:
            return []
        parts = [
            pl.read_parquet(f.path).with_columns(pl.lit(f.node).alias("node")) for f in self.trace.metrics
        ]
        df = pl.concat(
            [
                p.with_columns(pl.col("source").cast(pl.String), pl.col("metric").cast(pl.String))
                for p in parts
            ],
            how="vertical_relaxed",
        )
        df = df.with_columns((pl.col("ts") - self.base_ns).alias("t")).sort(
            "node", "source", "device", "metric", "t"
        )
        out = []
        for (node, source, device, metric), g in df.group_by(
            ["node", "source", "device", "metric"], maintain_order=True
        ):
            out.append(Series(node, source, int(device), metric, g["t"].to_numpy(), g["value"].to_numpy()))
        return out

    def _make_steps(self, raw: list[dict]) -> tuple[list[Step], list[Step]]:
        """The job's steps (each over all ranks: earliest start to latest end) and every rank's
        own, both in time order: the steps stage's windows, as the index stored them, so the
        timeline's step N is the Steps view's."""
        if not raw:
            return [], []
        own_df = pl.DataFrame(
            raw,
            schema={
                "number": pl.Int64,
                "name": pl.String,
                "t0": pl.Int64,
                "t1": pl.Int64,
                "node": pl.String,
                "rank": pl.Int64,
            },
        )
        agg = (
            own_df.group_by("number", maintain_order=True)
            .agg(pl.col("name").first(), pl.col("t0").min(), pl.col("t1").max())
            .sort("t0", "number")
        )
        job = [Step(r["number"], r["name"], r["t0"], r["t1"]) for r in agg.iter_rows(named=True)]
        own = [
            Step(r["number"], r["name"], r["t0"], r["t1"], r["node"], r["rank"])
            for r in own_df.iter_rows(named=True)
        ]
        return job, own

    # -- structure -------------------------------------------------------------------------
    def lanes(self) -> list[Lane]:
        """Every lane, in tree order (depth first)."""
        return list(self._lanes)

    def lane(self, lane_id: int) -> Lane:
        """One lane by id."""
        return self._lane_by_id[lane_id]

    def steps(self, rank: int | None = None, node: str | None = None) -> list[Step]:
        """Training steps in time order: the job's (merged over ranks: earliest start to latest
        end), or with ``rank`` (and ``node`` where ranks repeat across nodes) that rank's own."""
        if rank is None:
            return list(self._steps)
        return [s for s in self._rank_steps if s.rank == rank and (node is None or s.node == node)]

    @property
    def n_events(self) -> int:
        """Event instances in the index (launches counted again on their GPU's launch lane)."""
        return int(self.t.size)

    @property
    def dur(self) -> np.ndarray:
        """Durations (computed; prefer slices: ``end[a:b] - t[a:b]``)."""
        return self.end - self.t

    def rows_of(self, pos: np.ndarray) -> np.ndarray:
        """Rows of event positions."""
        return np.searchsorted(self.row_start, pos, side="right") - 1

    def row_of(self, pos: int) -> int:
        """Row of an event position."""
        return int(np.searchsorted(self.row_start, pos, side="right") - 1)

    def lane_of(self, pos: int) -> Lane:
        """Lane of an event position."""
        return self._lane_by_id[int(self.row_lane[self.row_of(pos)])]

    def _rows_mask(self, keep: Callable[[Lane], bool]) -> np.ndarray:
        """Boolean mask over all positions: True where the event's lane satisfies ``keep``."""
        ok = np.array([keep(self._lane_by_id[int(ln)]) for ln in self.row_lane], dtype=bool)
        return np.repeat(ok, np.diff(self.row_start))

    def name_of(self, pos: int) -> str:
        """Name of an event position."""
        return self.names[int(self.name[pos])]

    def kind_of(self, pos: int) -> str:
        """Kind of an event position."""
        return EVENT_KINDS[int(self.kind[pos])]

    # -- windows ---------------------------------------------------------------------------
    def windows(self, rows: np.ndarray, t0: int, t1: int) -> tuple[np.ndarray, np.ndarray]:
        """Per row of ``rows``, the positions ``[lo, hi)`` of its events that may overlap
        ``[t0, t1)``, for all the rows at once (two vectorised binary searches).

        Every event in a range overlaps the window except, where events of a row overlap each
        other, some that ended before ``t0``.
        """
        rows = np.asarray(rows, dtype=np.int64)
        a, b = self.row_start[rows], self.row_start[rows + 1]
        lo = search_rows(self.end_max, a, b, t0, right=True)
        return lo, np.maximum(lo, search_rows(self.t, a, b, t1, right=False))

    def window(self, row: int, t0: int, t1: int) -> tuple[int, int]:
        """Positions ``[lo, hi)`` of one row's events that may overlap ``[t0, t1)`` (:meth:`windows`)."""
        lo, hi = self.windows(np.array([row], dtype=np.int64), t0, t1)
        return int(lo[0]), int(hi[0])

    def overlapping(self, row: int, t0: int, t1: int) -> np.ndarray:
        """Positions of exactly the row's events overlapping ``[t0, t1)`` (instants at ``t0 <= t < t1``)."""
        lo, hi = self.window(row, t0, t1)
        p = np.arange(lo, hi)
        e = self.end[lo:hi]
        s = self.t[lo:hi]
        return p[(e > t0) | ((s >= t0) & (e == s))]

    def events_between(self, row: int, t0: int, t1: int) -> int:
        """How many of a row's events may overlap ``[t0, t1)`` (an upper bound, O(log n))."""
        lo, hi = self.window(row, t0, t1)
        return hi - lo

    # -- metrics -----------------------------------------------------------------------------
    @cached_property
    def _series_flat(self) -> tuple[np.ndarray | None, np.ndarray, np.ndarray, int, int]:
        """Every series' samples end to end, searchable at once: each sample's key (its time
        from the earliest sample, plus its series' index times a stride longer than every
        series, so the keys are sorted), values (float64, one spare NaN at the end), each
        series' first sample (one more at the end), the earliest time and the stride. The keys
        are None where they could leave int64 (a damaged sample far from the others): each
        series is then searched on its own."""
        off = np.zeros(len(self.series) + 1, dtype=np.int64)
        off[1:] = np.cumsum([s.ts.size for s in self.series])
        ts = np.concatenate([s.ts.astype(np.int64) for s in self.series] or [np.zeros(0, dtype=np.int64)])
        first = int(ts.min()) if ts.size else 0
        stride = (int(ts.max()) - first if ts.size else 0) + 2
        value = np.concatenate([s.value.astype(np.float64) for s in self.series] + [[np.nan]])
        if stride * len(self.series) >= 2**62 or abs(first) >= 2**62:
            return None, value, off, first, stride
        key = ts - first + np.repeat(np.arange(len(self.series), dtype=np.int64) * stride, np.diff(off))
        return key, value, off, first, stride

    def metric_lines(self, series: Iterable[int], t0: float, t1: float, width: int) -> np.ndarray:
        """Metrics' values per cell, ``(len(series), width)``: the max of the samples in the
        cell, else the last one before; NaN before any. All the series at once."""
        series = np.asarray(list(series), dtype=np.int64)
        key, value, off, first, stride = self._series_flat
        edges = t0 + (t1 - t0) / width * np.arange(width + 1)
        # a sample (integer ns) is before an edge exactly when it is before the edge's ceiling
        ceil = np.ceil(edges)
        beyond = ceil >= 2.0**63  # after every int64 sample
        limit = np.clip(ceil, -(2.0**63), np.nextafter(2.0**63, 0)).astype(np.int64)
        if key is None:
            idx = np.zeros((series.size, width + 1), dtype=np.int64)
            for i, s in enumerate(series):
                ts = self.series[s].ts.astype(np.int64)
                idx[i] = off[s] + np.where(beyond, ts.size, np.searchsorted(ts, limit, side="left"))
        else:
            # clipped to one past every sample, the ceiling keeps to its series' keys
            at = (np.clip(limit, first, first + stride - 1) - first)[None, :] + (series * stride)[:, None]
            idx = np.searchsorted(key, at, side="left")
        start, stop = idx[:, :-1], idx[:, 1:]
        out = np.full((series.size, width), np.nan)
        has_prev = start > off[series][:, None]
        out[has_prev] = value[start[has_prev] - 1]
        nonempty = stop > start
        if nonempty.any():
            # each non-empty cell's max over exactly its samples: reduceat over (start, stop)
            # pairs, the stops' segments dropped (a stop may be the spare sample at the end)
            bounds = np.stack([start[nonempty], stop[nonempty]], axis=1).ravel()
            out[nonempty] = np.maximum.reduceat(value, bounds)[::2]
        return out

    def metric_cells(self, series: int, t0: float, t1: float, width: int) -> np.ndarray:
        """:meth:`metric_lines` of one series."""
        return self.metric_lines([series], t0, t1, width)[0]

    # -- tiles and queries -----------------------------------------------------------------
    @lru_cache(maxsize=64)  # noqa: B019 - one index per opened trace
    def tiles(self, row: int, level: int) -> pl.DataFrame:
        """Density tiles of a row at ``level`` (bucket width ``bucket_ns << level``).

        Columns ``bucket, t0, t1, busy_ns, kind`` (dominant kind), only for non-empty buckets.
        Level 0 is stored; level L+1 sums pairs of level L, so every level sums to the row's busy time.
        """
        kinds = self.tile_kind_cum.get(row, {})
        if not kinds:
            return pl.DataFrame(
                schema={
                    "bucket": pl.Int64,
                    "t0": pl.Int64,
                    "t1": pl.Int64,
                    "busy_ns": pl.Int64,
                    "kind": pl.String,
                }
            )
        width = 1 << level
        nb = -(-self.n_buckets // width)
        edges = np.minimum(np.arange(nb + 1) * width, self.n_buckets)
        ks = list(kinds)
        per = np.stack([kinds[k][edges[1:]] - kinds[k][edges[:-1]] for k in ks])
        tot = per.sum(axis=0)
        nz = np.flatnonzero(tot)
        dom = np.array(ks)[np.argmax(per[:, nz], axis=0)] if nz.size else np.zeros(0, dtype=np.int64)
        bw = self.bucket_ns << level
        return pl.DataFrame(
            {
                "bucket": nz.astype(np.int64),
                "t0": nz.astype(np.int64) * bw,
                "t1": (nz.astype(np.int64) + 1) * bw,
                "busy_ns": tot[nz].astype(np.int64),
                "kind": [EVENT_KINDS[k] for k in dom],
            }
        )

    def query(
        self,
        lane: int | Lane,
        t0: int,
        t1: int,
        cols: Iterable[str] | None = None,
        max_events: int = 10_000,
        max_cells: int = 4096,
    ) -> pl.DataFrame:
        """What to draw of ``lane`` over ``[t0, t1)`` (relative ns).

        Events lanes: the events overlapping the window (columns ``pos, row, depth, t, dur,
        kind, name, link`` or ``cols``) when there are at most ``max_events`` of them, else the
        density tiles of the finest level with at most ``max_cells`` buckets in the window
        (columns ``row, level, bucket, t0, t1, busy_ns, kind``). Metric lanes: samples ``t, value``.
        """
        ln = lane if isinstance(lane, Lane) else self._lane_by_id[lane]
        if ln.series is not None:
            s = self.series[ln.series]
            a, b = np.searchsorted(s.ts, [t0, t1])
            return pl.DataFrame({"t": s.ts[a:b], "value": s.value[a:b]})
        n = sum(self.events_between(r, t0, t1) for r in ln.rows)
        if n <= max_events:
            pos = (
                np.concatenate([self.overlapping(r, t0, t1) for r in ln.rows])
                if ln.rows
                else np.zeros(0, np.int64)
            )
            rows = self.rows_of(pos)
            df = pl.DataFrame(
                {
                    "pos": pos.astype(np.int64),
                    "row": rows.astype(np.int64),
                    "depth": self.row_depth[rows] if pos.size else np.zeros(0, np.int64),
                    "t": np.asarray(self.t[pos]),
                    "dur": np.asarray(self.end[pos] - self.t[pos]),
                    "kind": [EVENT_KINDS[k] for k in self.kind[pos]],
                    "name": self._names_arr[self.name[pos]].tolist() if pos.size else [],
                    "link": np.asarray(self.link[pos]),
                },
                schema_overrides={"kind": pl.String, "name": pl.String},
            )
            return df.select(list(cols)) if cols else df
        level = 0
        while ((t1 - t0) / (self.bucket_ns << level)) > max_cells:
            level += 1
        out = []
        for r in ln.rows:
            tl = self.tiles(r, level).filter(pl.col("t1") > t0, pl.col("t0") < t1)
            out.append(
                tl.with_columns(pl.lit(r, pl.Int64).alias("row"), pl.lit(level, pl.Int64).alias("level"))
            )
        df = pl.concat(out) if out else pl.DataFrame()
        return df.select("row", "level", "bucket", "t0", "t1", "busy_ns", "kind")

    # -- events ----------------------------------------------------------------------------
    def event(self, pos: int) -> dict[str, Any]:
        """Every field of one event (read from its trace file), plus ``pos``, ``lane``, ``node``,
        ``rank``, ``depth``, ``t`` (relative start), ``link`` and ``launch_latency_ns``."""
        pos = int(pos)
        src = int(self.src[pos])
        f = int(np.searchsorted(self._file_offsets, src, side="right")) - 1
        table, first = self._row_group_of(f, src - int(self._file_offsets[f]))
        rec = table.slice(first, 1).to_pylist()[0]
        row = self.row_of(pos)
        ln = self._lane_by_id[int(self.row_lane[row])]
        link = int(self.link[pos])
        rec.update(
            pos=pos,
            lane=ln.id,
            node=ln.node,
            rank=ln.rank,
            depth=int(self.row_depth[row]),
            t=int(self.t[pos]),
            link=link,
            launch_latency_ns=None,
        )
        if link >= 0:
            if rec["kind"] in LAUNCH_KINDS:
                rec["launch_latency_ns"] = int(self.t[link] - self.t[pos])
            else:
                rec["launch_latency_ns"] = int(self.t[pos] - self.t[link])
        return rec

    def _row_group_of(self, f: int, row_in_file: int) -> tuple[pa.Table, int]:
        """The decoded row group of file ``f`` holding ``row_in_file`` (last two kept), and the row's offset in it."""
        pf = self._pfiles.get(f)
        if pf is None:
            pf = self._pfiles[f] = pq.ParquetFile(self.trace.path / self._files[f][0])
        sizes = np.cumsum(
            [0] + [pf.metadata.row_group(i).num_rows for i in range(pf.metadata.num_row_groups)]
        )
        rg = int(np.searchsorted(sizes, row_in_file, side="right")) - 1
        key = (f, rg)
        hit = self._groups.get(key)
        if hit is None:
            hit = pf.read_row_group(rg)
            self._groups[key] = hit
            while len(self._groups) > 2:
                self._groups.pop(next(iter(self._groups)))
        return hit, row_in_file - int(sizes[rg])

    def neighbour(self, row: int, t: float, direction: int) -> int:
        """The next (``direction`` > 0) or previous event of ``row`` starting after/before ``t``; -1 if none."""
        a, b = int(self.row_start[row]), int(self.row_start[row + 1])
        if direction > 0:
            i = a + int(np.searchsorted(self.t[a:b], t, side="right"))
            return i if i < b else -1
        i = a + int(np.searchsorted(self.t[a:b], t, side="left")) - 1
        return i if i >= a else -1

    def at(self, row: int, t: float) -> int:
        """The event of ``row`` covering time ``t`` (the nearest start when none covers it); -1 for an empty row."""
        a, b = int(self.row_start[row]), int(self.row_start[row + 1])
        if a == b:
            return -1
        i = a + int(np.searchsorted(self.t[a:b], t, side="right")) - 1
        if i >= a and self.end[i] > t:
            return i
        cands = [c for c in (i, i + 1) if a <= c < b]
        return min(cands, key=lambda c: abs(self.t[c] - t))

    def search(self, pattern: str, regex: bool = False) -> np.ndarray:
        """Positions of events whose name contains ``pattern`` (case-insensitive; a regex when
        ``regex``), in time order. Launch-lane copies are left out (their host rows match)."""
        try:
            rx = re.compile(pattern if regex else re.escape(pattern), re.IGNORECASE)
        except re.error as exc:
            raise ValueError(f"bad regular expression: {exc}") from None
        ids = np.array([i for i, n in enumerate(self.names) if rx.search(n)], dtype=np.int64)
        if ids.size == 0:
            return np.zeros(0, dtype=np.int64)
        mask = np.isin(self.name, ids) & self._rows_mask(lambda ln: ln.kind != "launch")
        pos = np.flatnonzero(mask)
        return pos[np.argsort(self.t[pos], kind="stable")]

    def find_kernel(self, name: str | None = None, ts_ns: int | None = None, rank: int | None = None) -> int:
        """Position of a device event by exact name and/or absolute start (earliest match; -1 if none)."""
        mask = self._rows_mask(lambda ln: ln.kind == "stream" and (rank is None or ln.rank == rank))
        if name is not None:
            ids = [i for i, n in enumerate(self.names) if n == name]
            mask &= np.isin(self.name, ids)
        if ts_ns is not None:
            mask &= np.asarray(self.t) == ts_ns - self.base_ns
        pos = np.flatnonzero(mask)
        if pos.size == 0:
            return -1
        return int(pos[np.argmin(self.t[pos])])
