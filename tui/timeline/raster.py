"""A frame's event rows rasterised together, in one pass over all of them.

The rules are those of :meth:`LodIndex.raster <profui.analysis.lod.LodIndex.raster>`, which
rasterises one row: at fine zoom from the events in view (busy fraction from their exact
extents; per cell the event covering its centre, else the first starting inside it), at coarse
zoom (more than ~4 events per cell, cells at least two tile buckets wide) from the density
tiles' prefix sums. Here every step runs once over the concatenation of the frame's rows (cell
``line * width + column``), so a frame costs a fixed number of numpy calls, not a few dozen per
row; the result is the same, cell for cell, as rasterising the rows one by one and folding
the merged lanes' rows into one.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from profui.analysis.lod import LodIndex


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


def search_rows(values: np.ndarray, lo: np.ndarray, hi: np.ndarray, target: int, right: bool) -> np.ndarray:
    """``lo[i] + np.searchsorted(values[lo[i]:hi[i]], target, side)`` for every ``i`` at once
    (each slice sorted): one vectorised binary search instead of a call per row."""
    base = np.asarray(lo, dtype=np.int64).copy()
    n = np.asarray(hi, dtype=np.int64) - base
    last = max(values.size - 1, 0)
    # each step at least halves every count, so the longest slice's bit length of steps ends all
    for _ in range(int(n.max()).bit_length() if values.size and n.size else 0):
        half = n >> 1
        mid = base + half
        v = values[np.minimum(mid, last)]
        go = ((v <= target) if right else (v < target)) & (n > 0)
        base = np.where(go, mid + 1, base)
        n = np.where(go, n - half - 1, half)
    return base


class FrameRaster:
    """Rasterises many rows of a :class:`LodIndex` over one viewport at once."""

    def __init__(self, ix: LodIndex) -> None:
        self.ix = ix
        n_rows = max(int(ix.row_start.size) - 1, 0)
        self.has_tiles = np.zeros(n_rows + 1, dtype=bool)
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
        a, b = ix.row_start[rows], ix.row_start[rows + 1]
        lo = search_rows(ix.end_max, a, b, int(np.floor(t0)), right=True)
        hi = np.maximum(lo, search_rows(ix.t, a, b, int(np.ceil(t1)), right=False))
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
        # vanish). Both searches run over all lines at once on integer keys (line, position in
        # half cells or cells) — exact where adding a line offset to float positions would round:
        # s <= c + 1/2  <=>  ceil(2s) <= 2c + 1,  and  s < c  <=>  floor(s) < c.
        col = np.tile(np.arange(width, dtype=np.int64), n_lines)
        cell_line = np.repeat(np.arange(n_lines, dtype=np.int64), width)
        half_key = line * (2 * width + 3) + np.ceil(2 * s).astype(np.int64)
        j = np.searchsorted(half_key, cell_line * (2 * width + 3) + 2 * col + 1, side="right") - 1
        valid = j >= first_of[cell_line]
        jj = np.where(valid, j, 0)
        centres = col + 0.5
        hit = valid & (e[jj] > centres)
        event[hit] = pos[jj[hit]]
        cell_key = line * (width + 2) + floor_s
        first = np.searchsorted(cell_key, cell_line * (width + 2) + col, side="left")
        inside = (first < (first_of + count)[cell_line]) & ~hit
        fi = np.minimum(first, total - 1)
        inside &= s[fi] < col + 1
        event[inside] = pos[fi[inside]]
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
