"""The critical path on the timeline: the ``critical_path`` stage's stretches (its
``events.parquet``: per rank and step, the path stretch by stretch) placed on the index's lanes
and rows, and the path's length and time by kind (``steps.parquet``, ``by_kind.parquet``).

Nothing is computed about the path here: where it runs and what it is made of are the stage's.
This module only finds, for each stretch, the row of the index it is drawn on: its host thread
(node, rank, tid) or device stream (node, rank, device, stream), and on that lane the deepest
row whose event at the stretch's middle has the stretch's name; a stretch between events (no
name, or a name no event of that lane has there) on the lane's first row with nothing at its
middle (under the step marker that spans it: where the lane is seen empty), else the first row.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, cast

import numpy as np
import polars as pl

from profui.analysis.formatting import fmt_ns
from profui.analysis.lod import Lane, LodIndex
from profui.analysis.result_tables import OutputMissing

if TYPE_CHECKING:
    from profui.analysis.pipeline.result import Result

#: The least share of a step's path a kind of time needs to be named on the status line.
MIN_PART_SHARE = 0.05

#: What the path line calls each kind of stretch (``critical_path.KINDS``; HTA's kinds under
#: ``--hta-compat`` and any later kind read as their own names).
KIND_WORDS = {
    "host_compute": "op",
    "host_overhead": "host",
    "input": "input",
    "launch_delay": "launch",
    "device_compute": "{work}",
    "device_overhead": "gap",
    "transfer": "copy",
    "sync_wait": "sync",
    "communication": "comm",
    "rank_wait": "wait",
}


def kind_word(kind: str, work: str) -> str:
    """The short word the path line writes for stretches of ``kind`` (``work``: the devices'
    word for their work, ``kernel`` or ``XLA op``)."""
    return KIND_WORDS.get(kind, kind).format(work=work)


@dataclass(frozen=True)
class StepPath:
    """One step's critical path on every rank, placed on the index: per stretch its event
    ``row`` (-1 where its lane is not in the index), ``t0``/``t1`` (ns relative to the index's
    base), ``kind`` (an index into ``kinds``) and ``rank`` (-1 for none)."""

    step: int
    row: np.ndarray
    t0: np.ndarray
    t1: np.ndarray
    kind: np.ndarray
    kinds: list[str]
    rank: np.ndarray
    #: per rank: the path's length and its time by kind, longest first (the stage's tables)
    length: dict[int, int] = field(default_factory=dict)
    by_kind: dict[int, list[tuple[str, int]]] = field(default_factory=dict)
    #: the ranks with a path in this step
    ranks: list[int] = field(default_factory=list)

    def summary(self, rank: int, work: str) -> str:
        """``critical path of step 5, rank 1: 30.2 ms · host 25.0 ms · op 5.2 ms``: the path's
        length and its three largest kinds of time that are each at least
        :data:`MIN_PART_SHARE` of it."""
        who = f", rank {rank}" if rank >= 0 and len(self.ranks) > 1 else ""
        head = f"critical path of step {self.step}{who}"
        if rank not in self.length:
            return head
        total = self.length[rank]
        # at most three kinds, each at least MIN_PART_SHARE of the path: the line fits 80 columns
        parts = [
            f"{kind_word(k, work)} {fmt_ns(ns)}"
            for k, ns in self.by_kind.get(rank, [])[:3]
            if ns > 0 and ns >= MIN_PART_SHARE * total
        ]
        return " · ".join([f"{head}: {fmt_ns(self.length[rank])}", *parts])


class CriticalPaths:
    """The ``critical_path`` stage's outputs of a trace, placed on its index step by step (each
    step once, when first drawn)."""

    def __init__(self, index: LodIndex, result: Result) -> None:
        self.ix = index
        self.events = _frame(lambda: result.critical_path.events)
        self.steps_table = _frame(lambda: result.critical_path.steps)
        self.by_kind_table = _frame(lambda: result.critical_path.by_kind)
        self._placed: dict[int, StepPath] = {}
        self._name_id: dict[str, int] | None = None
        self._lanes = _lane_keys(index.lanes())

    @property
    def empty(self) -> bool:
        """True when the stage found no path in any step."""
        return self.events.is_empty()

    def window(self, number: int, rank: int | None = None) -> tuple[int, int] | None:
        """Step ``number``'s window as the stage took it (``rank``'s, else every rank's
        together), in ns relative to the index's base; None when the stage has no such step."""
        if self.steps_table.is_empty():
            return None
        rows = self.steps_table.filter(pl.col("step") == number)
        if rank is not None and (mine := rows.filter(pl.col("rank") == rank)).height:
            rows = mine
        if rows.is_empty():
            return None
        return (
            int(cast(int, rows["start_ns"].min())) - self.ix.base_ns,
            int(cast(int, rows["end_ns"].max())) - self.ix.base_ns,
        )

    def step_at(self, t: float) -> int | None:
        """The step of the stage whose window (on any rank) holds ``t`` (relative ns): for a
        trace whose index has no step markers (the stage's one window is the whole trace)."""
        if self.steps_table.is_empty():
            return None
        at = self.steps_table.filter(
            (pl.col("start_ns") - self.ix.base_ns <= t) & (pl.col("end_ns") - self.ix.base_ns >= t)
        )
        return int(cast(int, at["step"].min())) if at.height else None

    def step(self, number: int) -> StepPath | None:
        """Step ``number``'s path placed on the index (None when the stage has none for it)."""
        if number in self._placed:
            return self._placed[number]
        if self.events.is_empty() or "step" not in self.events.columns:
            return None
        rows = self.events.filter(pl.col("step") == number).sort("rank", "seq", nulls_last=True)
        if rows.is_empty():
            return None
        placed = self._place(number, rows)
        self._placed[number] = placed
        return placed

    def _place(self, number: int, rows: pl.DataFrame) -> StepPath:
        ix = self.ix
        start = rows.get_column("start_ns").to_numpy().astype(np.int64) - ix.base_ns
        end = rows.get_column("end_ns").to_numpy().astype(np.int64) - ix.base_ns
        ranks = rows.get_column("rank").fill_null(-1).to_numpy().astype(np.int64)
        row = np.full(rows.height, -1, dtype=np.int64)
        mid = (start + end) // 2
        names = rows.get_column("name").fill_null("").to_list()
        lane_of = [
            self._lane(r)
            for r in rows.select("lane", "node", "rank", "tid", "device", "stream").iter_rows(named=True)
        ]
        by_lane: dict[int, list[int]] = {}
        for i, lane in enumerate(lane_of):
            if lane is not None:
                by_lane.setdefault(lane.id, []).append(i)
        ids = self._names()
        for lane_id, members in by_lane.items():
            lane = ix.lane(lane_id)
            at = np.array(members, dtype=np.int64)
            found = np.zeros(at.size, dtype=bool)
            want = np.array([ids.get(names[i], -2) if names[i] else -2 for i in members], dtype=np.int64)
            row[at] = lane.rows[0]
            open_row = np.full(at.size, -1, dtype=np.int64)  # a gap's first row free at its middle
            for r in lane.rows:  # deeper rows later: the deepest holding the named event wins
                a, b = int(ix.row_start[r]), int(ix.row_start[r + 1])
                if a == b:
                    open_row[open_row < 0] = r
                    continue
                p = a + np.searchsorted(ix.t[a:b], mid[at], side="right") - 1
                ok = p >= a
                p = np.where(ok, p, a)
                covered = ok & (ix.end[p] > mid[at])
                named = covered & (ix.name[p] == want)
                row[at[named]] = r
                found |= named
                open_row[~covered & (open_row < 0)] = r
            gap = ~found & (open_row >= 0)
            row[at[gap]] = open_row[gap]
        length, by_kind = self._numbers(number)
        kinds, kind = np.unique(
            np.array(rows.get_column("kind").fill_null("").to_list()), return_inverse=True
        )
        return StepPath(
            number,
            row,
            start,
            end,
            kind.astype(np.int64),
            kinds.tolist(),
            ranks,
            length,
            by_kind,
            sorted(set(np.unique(ranks).tolist()) | set(length)),
        )

    def _numbers(self, number: int) -> tuple[dict[int, int], dict[int, list[tuple[str, int]]]]:
        """Per rank, the stage's path length and its time by kind for step ``number``."""
        length: dict[int, int] = {}
        by_kind: dict[int, list[tuple[str, int]]] = {}
        if not self.steps_table.is_empty():
            for r in self.steps_table.filter(pl.col("step") == number).iter_rows(named=True):
                length[_rank(r["rank"])] = int(r["length_ns"])
        if not self.by_kind_table.is_empty():
            got = self.by_kind_table.filter(pl.col("step") == number).sort("ns", descending=True)
            for r in got.iter_rows(named=True):
                by_kind.setdefault(_rank(r["rank"]), []).append((r["kind"], int(r["ns"])))
        return length, by_kind

    def _names(self) -> dict[str, int]:
        if self._name_id is None:
            self._name_id = {n: i for i, n in enumerate(self.ix.names)}
        return self._name_id

    def _lane(self, r: dict) -> Lane | None:
        """The index lane a stretch runs on (host thread or device stream); None when the index
        has none such."""
        rank = _rank(r["rank"])
        if r["lane"] == "host":
            key = ("thread", rank, r["tid"], None, None)
        else:
            key = ("stream", rank, None, r["device"], r["stream"])
        return self._lanes.get((r["node"], *key)) or self._lanes.get((None, *key))


def _rank(value: int | None) -> int:
    return -1 if value is None else int(value)


def _lane_keys(lanes: list[Lane]) -> dict[tuple, Lane]:
    """Host-thread and device-stream lanes by (node, kind, rank, tid, device, stream), and by
    the same with no node (a stage whose node names differ from the index's still finds them)."""
    out: dict[tuple, Lane] = {}
    for ln in lanes:
        key: tuple[str, int, int | None, int | None, int | None]
        if ln.kind == "thread":
            key = ("thread", _rank(ln.rank), ln.tid, None, None)
        elif ln.kind == "stream":
            key = ("stream", _rank(ln.rank), None, ln.device, ln.stream)
        else:
            continue
        out.setdefault((ln.node, *key), ln)
        out.setdefault((None, *key), ln)
    return out


def _frame(read: Callable[[], pl.DataFrame]) -> pl.DataFrame:
    """The table ``read`` gives; an empty frame where the stage gave none."""
    try:
        value = read()
    except OutputMissing:
        return pl.DataFrame()
    return value if isinstance(value, pl.DataFrame) else pl.DataFrame()
