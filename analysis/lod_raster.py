"""A frame's event rows of a :class:`~profui.analysis.lod.LodIndex` rasterised together, in one
pass over all of them — the timeline's cell rule, here only.

At fine zoom a row is drawn from its events in view (busy fraction from their exact extents;
per cell the event covering its centre, else the first starting inside it), at coarse zoom (more
than ~4 events per cell, cells at least two tile buckets wide) from the density tiles' prefix
sums, O(cells) whatever the number of events. Every step runs once over the concatenation of
the frame's rows (cell ``line * width + column``), so a frame costs a fixed number of numpy
calls (and, at coarse zoom, one gather per row and kind: each prefix sum is its own array), not
a few dozen per row. Folded lines (a lane's or a group's rows drawn as one) are folded here too.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .lod import LodIndex


@dataclass
class FrameCells:
    """Lines of ``width`` cells: ``busy`` (0..1, float32), ``kind`` (event kind id, -1 none),
    ``event`` (the event position drawn in each cell, -1 none) — each ``(lines, width)`` — and
    ``exact`` per line (drawn from events, so names can be shown, not from density tiles)."""

    busy: np.ndarray
    kind: np.ndarray
    event: np.ndarray
    exact: np.ndarray

    def take(self, lines: np.ndarray) -> FrameCells:
        """These lines (in this order) as a new :class:`FrameCells`."""
        return FrameCells(self.busy[lines], self.kind[lines], self.event[lines], self.exact[lines])


class FrameRaster:
    """Rasterises many rows of a :class:`LodIndex` over one viewport at once."""

    def __init__(self, ix: LodIndex) -> None:
        self.ix = ix
        n_rows = max(int(ix.row_start.size) - 1, 0)
        self.has_tiles = np.zeros(n_rows, dtype=bool)
        self.has_tiles[[r for r in ix.tile_cum if r < n_rows]] = True
        # per row with tiles: its kinds (in the index's order: the first of equal ones wins) and
        # their prefix sums
        self._tile_kinds = {
            r: (np.array(list(kinds), dtype=np.int8), list(kinds.values()))
            for r, kinds in ix.tile_kind_cum.items()
        }

    def rows(self, rows: np.ndarray, t0: float, t1: float, width: int) -> FrameCells:
        """Each of ``rows`` (event rows of the index) over ``width`` cells spanning ``[t0, t1)``."""
        ix = self.ix
        rows = np.asarray(rows, dtype=np.int64)
        n_lines = rows.size
        w = (t1 - t0) / width
        lo, hi = ix.windows(rows, int(np.floor(t0)), int(np.ceil(t1)))
        n = hi - lo
        tiled = (n > 4 * width) & (w >= 2 * ix.bucket_ns) & self.has_tiles[rows]
        out = FrameCells(
            np.zeros((n_lines, width), dtype=np.float32),
            np.full((n_lines, width), -1, dtype=np.int8),
            np.full((n_lines, width), -1, dtype=np.int64),
            ~tiled,
        )
        ev_lines = np.flatnonzero(~tiled)
        if ev_lines.size:
            busy, kind, event = self._events(lo[ev_lines], n[ev_lines], t0, w, width)
            out.busy[ev_lines], out.kind[ev_lines], out.event[ev_lines] = busy, kind, event
        tile_lines = np.flatnonzero(tiled)
        if tile_lines.size:
            busy, kind = self._tiles(rows[tile_lines].tolist(), t0, w, width)
            out.busy[tile_lines], out.kind[tile_lines] = busy, kind
        return out

    def _events(self, lo: np.ndarray, count: np.ndarray, t0: float, w: float, width: int):
        """Fine zoom: lines drawn from their events ``[lo, lo + count)``."""
        ix = self.ix
        n_lines = lo.size
        cells = n_lines * width
        busy = np.zeros(cells, dtype=np.float64)
        kind = np.full(cells, -1, dtype=np.int8)
        event = np.full(cells, -1, dtype=np.int64)
        total = int(count.sum())
        if total == 0:
            return (
                busy.astype(np.float32).reshape(n_lines, width),
                kind.reshape(n_lines, width),
                event.reshape(n_lines, width),
            )
        first_of = np.cumsum(count) - count  # each line's first event in the concatenation
        line = np.repeat(np.arange(n_lines, dtype=np.int64), count)
        pos = np.arange(total, dtype=np.int64) + np.repeat(lo - first_of, count)
        s = (ix.t[pos] - t0) / w
        e = (ix.end[pos] - t0) / w
        s = np.minimum(np.maximum(s, 0.0), width)
        e = np.minimum(np.maximum(e, 0.0), width)
        floor_s = np.floor(s).astype(np.int64)
        fs = np.minimum(floor_s, width - 1)
        fe = np.minimum(np.floor(e).astype(np.int64), width - 1)
        at = line * width
        # Busy fraction: the partial first and last cell of each event, then the cells it covers
        # whole (a difference array per line). bincount adds each cell's parts in event order,
        # as rasterising the line alone does, so the sums are the same to the last bit.
        same = fs == fe
        cov = np.zeros(cells, dtype=np.float64)
        cov += np.bincount(at[same] + fs[same], weights=(e - s)[same], minlength=cells)
        d = ~same
        cov += np.bincount(at[d] + fs[d], weights=(fs[d] + 1 - s[d]), minlength=cells)
        cov += np.bincount(at[d] + fe[d], weights=(e[d] - fe[d]), minlength=cells)
        full = d & (fe > fs + 1)
        if full.any():
            at1 = line[full] * (width + 1)
            diff = np.bincount(at1 + fs[full] + 1, minlength=n_lines * (width + 1)) - np.bincount(
                at1 + fe[full], minlength=n_lines * (width + 1)
            )
            cov += np.cumsum(diff.reshape(n_lines, width + 1), axis=1)[:, :width].ravel()
        busy = np.minimum(np.maximum(cov, 0.0), 1.0)
        # The event drawn in a cell: the one covering the cell's centre (the latest-starting of
        # nested ones), else the first that starts inside the cell (so short events never
        # vanish). Painted event by event: each event is the latest started for the centres from
        # its start to the next one's in its line, and covers those before its end. On whole
        # half cells, exact where float arithmetic on positions would round:
        # s <= c + 1/2  <=>  c >= ceil(2s) // 2,  and  e > c + 1/2  <=>  c < ceil(2e) // 2.
        since = np.ceil(2 * s).astype(np.int64) // 2
        after = np.empty_like(since)
        after[:-1] = since[1:]
        after[(first_of + count - 1)[count > 0]] = width  # a line's last event: to its end
        stop = np.minimum(after, np.ceil(2 * e).astype(np.int64) // 2)
        cover = np.maximum(stop - since, 0)
        painted = int(cover.sum())
        cell = np.repeat(at + since - np.cumsum(cover) + cover, cover) + np.arange(painted, dtype=np.int64)
        event[cell] = np.repeat(pos, cover)
        hit = np.zeros(cells, dtype=bool)
        hit[cell] = True
        # the first event starting in each cell, where no event covers its centre
        lead = floor_s < width
        lead[1:] &= (floor_s[1:] != floor_s[:-1]) | (line[1:] != line[:-1])
        cell = at[lead] + floor_s[lead]
        free = ~hit[cell]
        event[cell[free]] = pos[lead][free]
        has = event >= 0
        kind[has] = ix.kind[event[has]]
        # Instants have no extent: show them as a trace where they are.
        busy[has & (busy == 0)] = 0.01
        shape = (n_lines, width)
        return busy.astype(np.float32).reshape(shape), kind.reshape(shape), event.reshape(shape)

    def _tiles(self, rows: list[int], t0: float, w: float, width: int):
        """Coarse zoom: lines drawn from their rows' density tiles (per-kind prefix sums)."""
        ix = self.ix
        edges = t0 + w * np.arange(width + 1)
        b = np.minimum(np.maximum(np.rint(edges / ix.bucket_ns).astype(np.int64), 0), ix.n_buckets)
        span = np.maximum((b[1:] - b[:-1]) * ix.bucket_ns, 1)
        kinds = [self._tile_kinds[r] for r in rows]
        sizes = np.array([k.size for k, _ in kinds], dtype=np.int64)
        # every (row, kind)'s prefix sums at the cell edges (each prefix sum is its own array),
        # laid out as lines × kinds × cells, zero where a row has fewer kinds
        at = np.array([c[b] for _, cums in kinds for c in cums])
        owner = np.repeat(np.arange(len(rows)), sizes)
        slot = np.arange(owner.size) - np.repeat(np.cumsum(sizes) - sizes, sizes)
        per = np.zeros((len(rows), int(sizes.max()), width), dtype=np.int64)
        per[owner, slot] = at[:, 1:] - at[:, :-1]
        tot = per.sum(axis=1)
        busy = np.minimum(np.maximum(tot / span, 0.0), 1.0).astype(np.float32)
        # the dominant kind: the first of a row's kinds with the most busy time in the cell
        ids = np.full(per.shape[:2], -1, dtype=np.int8)
        ids[owner, slot] = np.concatenate([k for k, _ in kinds])
        top = np.take_along_axis(ids, per.argmax(axis=1), axis=1)
        kind = np.where(tot > 0, top, -1).astype(np.int8)
        return busy, kind

    def lines(
        self, groups: list[tuple[int, ...]], skip_outer: list[bool], t0: float, t1: float, width: int
    ) -> FrameCells:
        """One line per group of rows, each group's rows folded into one: the busiest fraction
        of any, the kind and event of the last (innermost) row busy in the cell. With
        ``skip_outer``, a group's first row (a thread's outermost, usually the step) is left out
        unless nothing nested is in view."""
        used = sorted({r for g in groups for r in g})
        where = {r: i for i, r in enumerate(used)}
        cells = self.rows(np.array(used, dtype=np.int64), t0, t1, width)
        drawn = [g[1:] if skip and len(g) > 1 else g for g, skip in zip(groups, skip_outer, strict=True)]
        out = _fold(cells, [[where[r] for r in g] for g in drawn])
        outer = [i for i, (g, skip) in enumerate(zip(groups, skip_outer, strict=True)) if skip and len(g) > 1]
        if outer:
            idx = np.array(outer, dtype=np.int64)
            blank = idx[~(out.busy[idx] > 0).any(axis=1)]
            if blank.size:  # zoomed into one long outer event: never a blank line
                fallback = cells.take(np.array([where[groups[i][0]] for i in blank.tolist()], dtype=np.int64))
                out.busy[blank], out.kind[blank], out.event[blank] = (
                    fallback.busy,
                    fallback.kind,
                    fallback.event,
                )
                out.exact[blank] = fallback.exact
        return out


def _fold(cells: FrameCells, groups: list[list[int]]) -> FrameCells:
    """Lines of ``cells`` folded per group (each non-empty): the max busy fraction; kind and
    event from the group's last line busy in the cell, else from its first line."""
    sizes = np.array([len(g) for g in groups], dtype=np.int64)
    flat = np.array([i for g in groups for i in g], dtype=np.int64)
    if flat.size == sizes.size:  # one line per group: nothing to fold
        return cells.take(flat)
    start = np.cumsum(sizes) - sizes
    busy = cells.busy[flat]
    top = np.maximum.reduceat(busy, start, axis=0)
    member = np.arange(flat.size, dtype=np.int64)[:, None]
    first = np.repeat(start, sizes)[:, None]
    chosen = flat[np.maximum.reduceat(np.where(busy > 0, member, first), start, axis=0)]
    col = np.arange(busy.shape[1])
    exact = np.logical_and.reduceat(cells.exact[flat], start)
    return FrameCells(top, cells.kind[chosen, col], cells.event[chosen, col], exact)
