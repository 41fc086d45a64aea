"""Drawing the timeline as Strips: a label column, a time ruler, a step band and one line per
visible lane row. All of a frame's event rows are rasterised together from the LOD index
(:mod:`profui.analysis.lod_raster`, O(cells)), its metric lines together too, coloured and
labelled together, then each line is cut into a few Segments by runs of equal style — the cost
of a frame depends on its size, not on the trace.
"""

from __future__ import annotations

import math

import numpy as np
import polars as pl
from rich.segment import Segment
from rich.style import Style
from textual.strip import Strip

from profui.analysis.comm import COMM_PATTERN
from profui.analysis.formatting import block_label, elide, fmt_ns
from profui.analysis.lod_raster import FrameCells, FrameRaster
from profui.capture.format import EVENT_KINDS

from .critical import StepPath, kind_word
from .state import TimelineState, VisibleRow

KIND_COLORS = {
    "cpu_op": "steel_blue1",
    "python": "khaki3",
    "annotation": "medium_purple1",
    "step": "grey62",
    "runtime": "dark_cyan",
    "driver": "cyan3",
    "kernel": "green3",
    "memcpy": "gold1",
    "memset": "orange3",
    "sync": "red3",
    "gpu_annotation": "orchid",
    "instant": "white",
}
COMM_COLOR = "dark_orange"
#: Colour slots: the event kinds, then communication kernels (communication's one rule,
#: :data:`~profui.analysis.comm.COMM_PATTERN`), then metric colours.
COLORS = [KIND_COLORS[k] for k in EVENT_KINDS] + [COMM_COLOR, "green3", "gold1", "red3", "cyan3"]
COMM = len(EVENT_KINDS)
METRIC_COLORS = {"util": COMM + 1, "mem": COMM + 2, "power": COMM + 3}
N_COLORS = len(COLORS)

# Style ids: 0 plain, 1 dim, then per colour a solid block and a bar, then the highlights.
PLAIN, DIM = 0, 1
SOLID0 = 2
BAR0 = SOLID0 + N_COLORS
SELECTED = BAR0 + N_COLORS
LINKED = SELECTED + 1
MATCH = SELECTED + 2
LINK_LINE = SELECTED + 3
LABEL, LABEL_CURSOR, LABEL_HEADER, LABEL_DIM, RULER, STEP_A, STEP_B = range(SELECTED + 4, SELECTED + 11)
#: The critical path: an event on it, a stretch of it between events, the path line's runs.
PATH_EVENT, PATH_GAP, PATH_LINE = range(SELECTED + 11, SELECTED + 14)

STYLES: list[Style] = (
    [Style(), Style(color="grey50")]
    + [Style(color=c, reverse=True) for c in COLORS]
    + [Style(color=c) for c in COLORS]
    + [
        Style(color="black", bgcolor="bright_white", bold=True, underline=True),
        Style(color="black", bgcolor="magenta", bold=True, underline=True),
        Style(color="black", bgcolor="yellow", bold=True),
        Style(color="magenta", bold=True),
        Style(),
        Style(reverse=True, bold=True),
        Style(bold=True),
        Style(color="grey50"),
        Style(color="grey70"),
        Style(color="grey70", reverse=True),
        Style(color="grey50", reverse=True),
        # underlined (and bold for the selection only), so that it reads without colour too
        Style(color="black", bgcolor="orchid1", underline=True),
        Style(color="orchid1", bold=True),
        Style(color="orchid1", bold=True),
    ]
)

#: Short words for what a nested row holds, in its label.
ROW_WORDS = {
    "annotation": "annot",
    "cpu_op": "ops",
    "runtime": "launch",
    "driver": "launch",
    "python": "py",
    "gpu_annotation": "annot",
    "kernel": "kernels",
    "step": "steps",
}

EIGHTHS = np.array(list(" ▁▂▃▄▅▆▇█"))
SOLID_AT = 0.75  # a cell at least this busy is drawn as a solid block
SEPARATOR = "▏"
BOUNDARY = "┊"
#: The critical path where it runs between events on a lane, and on the path line.
PATH_GAP_CHAR = "━"
PATH_RUN, PATH_START = "─", "├"


def nice_step(raw: float) -> float:
    """The 1-2-5 step at or above ``raw``."""
    if raw <= 0:
        return 1.0
    e = 10 ** math.floor(math.log10(raw))
    for m in (1, 2, 5, 10):
        if m * e >= raw:
            return m * e
    return 10 * e


def fmt_tick(t: float, step: float) -> str:
    """A ruler label for relative time ``t``: the largest unit that shows ``step`` with at most 3 decimals."""
    for unit, scale in (("s", 1e9), ("ms", 1e6), ("µs", 1e3), ("ns", 1.0)):
        if step >= scale / 1000 or unit == "ns":
            digits = max(0, math.ceil(-math.log10(step / scale) - 1e-9)) if step < scale else 0
            return f"{t / scale:.{min(digits, 3)}f}{unit}"
    return f"{t:.0f}ns"  # pragma: no cover


class Renderer:
    """Turns a :class:`TimelineState` into the lines of the timeline widget."""

    def __init__(self, state: TimelineState) -> None:
        self.state = state
        ix = state.ix
        # communication kernels by communication's one rule, tested once per distinct name
        comm = pl.Series(ix.names or [""], dtype=pl.String).str.contains(COMM_PATTERN).to_numpy()
        self.is_comm = comm
        self.raster = FrameRaster(ix)
        self._labels_cache: dict[tuple, Segment] = {}
        self._subtree_rows: dict[int, tuple[int, ...]] = {}
        # Each nested row is labelled with what it mostly holds (its first events' commonest kind).
        self.row_word: dict[int, str] = {}
        for ln in state.lanes:
            for r in ln.rows[1:]:
                a = int(ix.row_start[r])
                b = min(int(ix.row_start[r + 1]), a + 200)
                if b > a:
                    k = int(np.bincount(ix.kind[a:b].astype(np.int64)).argmax())
                    self.row_word[r] = ROW_WORDS.get(EVENT_KINDS[k], EVENT_KINDS[k])
        # Streams whose first events are communication kernels are labelled as such.
        self.comm_lanes: set[int] = set()
        for ln in state.lanes:
            if ln.kind == "stream" and ln.rows:
                a = int(ix.row_start[ln.rows[0]])
                b = min(int(ix.row_start[ln.rows[0] + 1]), a + 200)
                if b > a and comm[ix.name[a:b]].mean() > 0.5:
                    self.comm_lanes.add(ln.id)
        self.series_max = [
            100.0 if s.metric.endswith("_pct") else float(np.nanmax(s.value)) if s.value.size else 1.0
            for s in ix.series
        ]

    def label_width(self, width: int) -> int:
        """Width of the lane-label column."""
        return 18 if width < 100 else 26

    def header_lines(self) -> int:
        """Lines above the lane rows: the ruler, the step band and, while the critical path is
        drawn, the path line."""
        return 3 if self.state.path_on else 2

    def rows_height(self, height: int) -> int:
        """Screen lines for lane rows (the rest hold the ruler, the step band, the path line)."""
        return max(height - self.header_lines(), 1)

    # -- the frame ---------------------------------------------------------------------------
    def render(self, width: int, height: int) -> list[Strip]:
        """All ``height`` lines of a ``width``-wide frame."""
        st = self.state
        lw = self.label_width(width)
        cw = max(width - lw, 1)
        nrows = self.rows_height(height)
        st.scroll_to_cursor(nrows)
        rows = st.visible_rows()[st.top : st.top + nrows]
        t0, t1 = st.t0, st.t1
        w = (t1 - t0) / cw
        bounds = self._step_columns(t0, w, cw)
        path = st.path_in_view()
        chars, styles = self._canvas(rows, t0, t1, cw, bounds, path)
        self._draw_link(rows, chars, styles, t0, w, cw)
        out = [self._ruler(lw, cw, t0, t1), self._step_band(lw, cw, t0, w)]
        if st.path_on:
            out.append(self._path_line(path, lw, cw, t0, w))
        labels = [self._label(vr, lw, st.top + i == st.cursor) for i, vr in enumerate(rows)]
        out.extend(_strips(labels, chars, styles, width))
        blank = Strip([Segment(" " * width, STYLES[PLAIN])], width)
        while len(out) < height:
            out.append(blank)
        return out[:height]

    def _step_columns(self, t0: float, w: float, cw: int) -> np.ndarray:
        steps = self.state.ix.steps()
        if not steps:
            return np.zeros(0, dtype=np.int64)
        starts = np.array([s.t0 for s in steps], dtype=np.float64)
        c = np.floor((starts - t0) / w).astype(np.int64)
        return c[(c >= 0) & (c < cw)]

    def _canvas(
        self, rows: list[VisibleRow], t0: float, t1: float, cw: int, bounds: np.ndarray, path: StepPath | None
    ):
        """The canvas of every line (characters and style ids, ``(lines, cw)``): the event lines
        rasterised together, then coloured, labelled and marked together; the critical ``path``
        of the step in view over them, when drawn."""
        st = self.state
        chars = np.full((len(rows), cw), " ", dtype="<U1")
        styles = np.zeros((len(rows), cw), dtype=np.int32)
        event_lines: list[int] = []
        drawn: list[tuple[int, ...]] = []  # per event line, the event rows it draws
        skip_outer: list[bool] = []
        metric_lines: list[int] = []
        metric_series: list[int] = []
        for i, vr in enumerate(rows):
            if vr.series is not None:
                metric_lines.append(i)
                metric_series.append(vr.series)
            elif vr.row is None and not (vr.lane.id in st.collapsed and self._subtree(vr.lane.id)):
                chars[i, bounds] = BOUNDARY
                styles[i, bounds] = DIM
            else:
                # a folded node / rank / GPU shows everything inside it; a folded lane its
                # nested rows (below the outermost unless nothing nested is in view)
                event_lines.append(i)
                drawn.append(self._subtree(vr.lane.id) if vr.row is None else (vr.merged or (vr.row,)))
                skip_outer.append(vr.row is not None)
        if event_lines:
            lines = np.array(event_lines, dtype=np.int64)
            cells = self.raster.lines(drawn, skip_outer, t0, t1, cw)
            c, s = chars[lines], styles[lines]
            self._event_lines(cells, drawn, c, s, t0, t1, bounds)
            if path is not None:
                self._path_on_lanes(path, drawn, c, s, t0, (t1 - t0) / cw)
            chars[lines], styles[lines] = c, s
        if metric_lines:
            lines = np.array(metric_lines, dtype=np.int64)
            c, s = chars[lines], styles[lines]
            self._metric_lines(metric_series, t0, t1, c, s)
            chars[lines], styles[lines] = c, s
        return chars, styles

    def _metric_lines(
        self, series: list[int], t0: float, t1: float, chars: np.ndarray, styles: np.ndarray
    ) -> None:
        """Sampled metrics (one per row of ``chars``/``styles``) as a bar per cell, with the peak
        jumped to (▲) and out-of-memory instants (✗)."""
        st = self.state
        ix = st.ix
        cw = chars.shape[1]
        v = ix.metric_lines(series, t0, t1, cw)
        ok = ~np.isnan(v)
        scale = np.array([max(self.series_max[s], 1e-12) for s in series])
        frac = np.minimum(np.maximum(v / scale[:, None], 0.0), 1.0)
        chars[ok] = EIGHTHS[np.maximum(np.ceil(frac[ok] * 8).astype(np.int64), 1)]
        color = [
            next((c for k, c in METRIC_COLORS.items() if ix.series[s].metric.startswith(k)), COMM + 4)
            for s in series
        ]
        styles[ok] = np.broadcast_to((BAR0 + np.array(color, dtype=np.int32))[:, None], ok.shape)[ok]
        w = (t1 - t0) / cw
        mark = st.peak_mark
        for y, s in enumerate(series):
            if mark is not None and mark[0] == s:  # the peak jumped to: ▲
                c = int(np.floor((mark[1] - t0) / w))
                if 0 <= c < cw:
                    chars[y, c], styles[y, c] = "▲", MATCH
            oom = ix.memory_oom.get(s)
            if oom is not None and oom.size:  # out-of-memory instants: ✗ (over the peak's ▲)
                c = np.floor((oom - t0) / w).astype(np.int64)
                c = c[(c >= 0) & (c < cw)]
                chars[y, c], styles[y, c] = "✗", LINKED

    def _event_lines(
        self,
        cells: FrameCells,
        drawn: list[tuple[int, ...]],
        chars: np.ndarray,
        styles: np.ndarray,
        t0: float,
        t1: float,
        bounds: np.ndarray,
    ) -> None:
        """Colour, label and mark the event lines (``chars``/``styles`` rows, one per line)."""
        st = self.state
        ix = st.ix
        busy, color, ev = cells.busy, cells.kind.astype(np.int64), cells.event
        has_ev = ev >= 0
        color[has_ev & self.is_comm[ix.name[np.where(has_ev, ev, 0)]]] = COMM
        filled = busy > 0
        solid = busy >= SOLID_AT
        part = filled & ~solid
        chars[part] = EIGHTHS[np.minimum(np.maximum(np.ceil(busy[part] * 8).astype(np.int64), 1), 8)]
        styles[part] = BAR0 + color[part]
        styles[solid] = SOLID0 + color[solid]
        if bounds.size:
            at_bound = np.zeros(busy.shape, dtype=bool)
            at_bound[:, bounds] = True
            at_bound &= ~filled
            chars[at_bound] = BOUNDARY
            styles[at_bound] = DIM
        named = cells.exact & has_ev.any(axis=1)  # lines drawn from events: names, matches
        labelled = np.zeros(busy.shape, dtype=bool)
        if named.any():
            self._labels(chars, ev, solid, named, labelled)
            if st.matches.size:
                ms = st.matches_sorted
                m = has_ev & named[:, None]
                i = np.minimum(np.searchsorted(ms, ev[m]), ms.size - 1)
                hit = np.zeros(busy.shape, dtype=bool)
                hit[m] = ms[i] == ev[m]
                styles[hit] = MATCH
        if st.matches.size and not named.all():
            # Coarse zoom: mark the cells where matches of these lines' rows start.
            coarse = np.flatnonzero(~named)
            self._match_starts(styles, coarse, [drawn[i] for i in coarse.tolist()], t0, t1)
        # a solid cell without a label is a full block in the bar's colour, not a coloured
        # space: without colour (NO_COLOR) a space would leave a busy row blank
        bare = solid & ~labelled & (styles != MATCH)
        chars[bare] = EIGHTHS[8]
        styles[bare] = BAR0 + color[bare]
        cw = chars.shape[1]
        for pos, sid in ((st.linked, LINKED), (st.selected, SELECTED)):
            if pos < 0:
                continue
            row = ix.row_of(pos)
            a, b = self._cols(pos, t0, (t1 - t0) / cw, cw)
            if b < 0 or a >= cw:
                continue
            a, b = max(a, 0), min(b, cw - 1)
            for y, own in enumerate(drawn):
                if row in own:
                    styles[y, a : b + 1] = sid
                    if b == a and chars[y, a] == " ":
                        chars[y, a] = "◆"

    def _path_on_lanes(
        self, path: StepPath, drawn: list[tuple[int, ...]], chars: np.ndarray, styles: np.ndarray, t0, w
    ) -> None:
        """Mark the stretches of ``path`` on the lines that draw their rows (one per row of
        ``chars``/``styles``): an event on the path underlined, the path between events ━; the
        selection, its link and search matches keep their marks."""
        cw = chars.shape[1]
        placed = path.row >= 0
        if not placed.any():
            return
        a, b = span_columns(path.t0[placed], path.t1[placed], t0, w)
        seen = (b >= 0) & (a < cw)
        rows, a, b = path.row[placed][seen], np.maximum(a[seen], 0), np.minimum(b[seen], cw - 1)
        line = np.repeat(np.arange(len(drawn)), [len(d) for d in drawn])
        own = np.array([r for d in drawn for r in d], dtype=np.int64)
        # each stretch on every line that draws its row: a difference array per line
        order = np.argsort(own, kind="stable")
        lo = np.searchsorted(own[order], rows, side="left")
        hi = np.searchsorted(own[order], rows, side="right")
        n = hi - lo
        if not n.any():
            return
        k = np.repeat(np.arange(rows.size), n)
        y = line[order[np.arange(int(n.sum())) + np.repeat(lo - (np.cumsum(n) - n), n)]]
        diff = np.zeros((len(drawn), cw + 1), dtype=np.int64)
        np.add.at(diff, (y, a[k]), 1)
        np.add.at(diff, (y, b[k] + 1), -1)
        on = np.cumsum(diff, axis=1)[:, :cw] > 0
        on &= ~np.isin(styles, (SELECTED, LINKED, MATCH))
        empty = on & ((chars == " ") | (chars == BOUNDARY))
        chars[empty], styles[empty] = PATH_GAP_CHAR, PATH_GAP
        styles[on & ~empty] = PATH_EVENT

    def _path_line(self, path: StepPath | None, lw: int, cw: int, t0: float, w: float) -> Strip:
        """The path line under the step band: the critical path of the step in view on one
        rank (a finding's, else the cursor's), each run of one kind two cells wide or more from ├
        with its word (where it fits), the shorter ones ─."""
        st = self.state
        chars = np.full(cw, " ", dtype="<U1")
        styles = np.full(cw, PLAIN, dtype=np.int32)
        if path is None:
            why = st.path_message()[: cw - 1]
            chars[1 : 1 + len(why)] = list(why)
            styles[:] = DIM
            return _strip(
                Segment(" path"[: lw - 1].ljust(lw - 1) + "│", STYLES[LABEL_DIM]), chars, styles, lw + cw
            )
        rank = st.path_focus(path)
        mine = np.flatnonzero(path.rank == rank)
        kind = path.kind[mine]
        first = np.ones(mine.size, dtype=bool)
        first[1:] = kind[1:] != kind[:-1]
        starts = np.flatnonzero(first)  # runs of one kind: stretches [starts[j], ends[j]]
        ends = np.append(starts[1:], mine.size) - 1
        t_lo, t_hi = path.t0[mine[starts]], path.t1[mine[ends]]
        lo, hi = span_columns(t_lo, t_hi, t0, w)
        seen = (hi >= 0) & (lo < cw)
        lo, hi = np.maximum(lo, 0), np.minimum(hi, cw - 1)
        diff = np.zeros(cw + 1, dtype=np.int64)
        np.add.at(diff, lo[seen], 1)
        np.add.at(diff, hi[seen] + 1, -1)
        on = np.cumsum(diff)[:cw] > 0
        chars[on], styles[on] = PATH_RUN, PATH_LINE
        # each cell is named by the kind with the most path time in it, so that a kind whose
        # stretches alternate with short others (copies between 1 µs stream gaps) is still
        # named; a run of cells of one kind two wide or more starts ├ + word (├├├├ reads as
        # noise), a shorter one keeps ─
        top = _top_kind_per_cell(kind, path.t0[mine], path.t1[mine], len(path.kinds), t0, w, cw)
        key = np.where(on & (top >= 0), top, -1)
        first = np.ones(cw, dtype=bool)
        first[1:] = key[1:] != key[:-1]
        run_lo = np.flatnonzero(first)
        run_hi = np.append(run_lo[1:], cw)
        for a, b in zip(run_lo.tolist(), run_hi.tolist(), strict=True):
            if key[a] < 0 or b - a < 2:
                continue
            chars[a] = PATH_START
            word = kind_word(path.kinds[int(key[a])], st.words.work)
            if b - 1 - a >= len(word):
                chars[a + 1 : a + 1 + len(word)] = list(word)
        who = f" r{rank}" if rank >= 0 and len(path.ranks) > 1 else ""
        label = f" path #{path.step}{who}"[: lw - 1].ljust(lw - 1) + "│"
        return _strip(Segment(label, STYLES[LABEL_HEADER]), chars, styles, lw + cw)

    def _match_starts(
        self, styles: np.ndarray, lines: np.ndarray, drawn: list[tuple[int, ...]], t0, t1
    ) -> None:
        """Mark (MATCH) the cells of ``lines`` where search matches in their rows start."""
        ix = self.state.ix
        ms = self.state.matches_sorted
        cw = styles.shape[1]
        line = np.repeat(lines, [len(d) for d in drawn])
        rows = np.array([r for d in drawn for r in d], dtype=np.int64)
        a = np.searchsorted(ms, ix.row_start[rows])
        b = np.searchsorted(ms, ix.row_start[rows + 1])
        n = b - a
        if not n.any():
            return
        idx = np.arange(int(n.sum()), dtype=np.int64) + np.repeat(a - (np.cumsum(n) - n), n)
        c = np.floor((ix.t[ms[idx]] - t0) / ((t1 - t0) / cw)).astype(np.int64)
        y = np.repeat(line, n)
        ok = (c >= 0) & (c < cw)
        styles[y[ok], c[ok]] = MATCH

    def _subtree(self, lane_id: int) -> tuple[int, ...]:
        """Every event row of the lanes under group lane ``lane_id`` (cached)."""
        rows = self._subtree_rows.get(lane_id)
        if rows is None:
            kids = [ln for ln in self.state.lanes if ln.parent == lane_id]
            found: list[int] = []
            for ln in kids:
                found.extend(ln.rows)
                found.extend(self._subtree(ln.id))
            rows = self._subtree_rows[lane_id] = tuple(found)
        return rows

    def _cols(self, pos: int, t0: float, w: float, cw: int) -> tuple[int, int]:
        ix = self.state.ix
        a, b = span_columns(np.array([ix.t[pos]]), np.array([ix.end[pos]]), t0, w)
        return int(a[0]), int(b[0])

    def _labels(
        self, chars: np.ndarray, ev: np.ndarray, solid: np.ndarray, named: np.ndarray, written: np.ndarray
    ) -> None:
        """On the ``named`` lines, names inside solid runs of one event, after a separator where
        two events touch; marks the cells written in ``written``."""
        ix = self.state.ix
        lines = np.flatnonzero(named)
        cw = chars.shape[1]
        key = np.where(solid[lines], ev[lines], -2).ravel()
        run = np.ones(key.size, dtype=bool)
        run[1:] = key[1:] != key[:-1]
        run[::cw] = True  # every line starts a run
        starts = np.flatnonzero(run)
        ends = np.append(starts[1:], key.size)
        col = starts % cw
        keep = key[starts] >= 0
        sep = keep & (col > 0) & (key[starts - 1] >= 0)
        y = lines[starts // cw]
        chars[y[sep], col[sep]] = SEPARATOR
        written[y[sep], col[sep]] = True
        first = col + sep
        room = ends - starts - sep
        keep &= room >= 3
        texts = [
            block_label(ix.names[n], r)
            for n, r in zip(ix.name[key[starts[keep]]].tolist(), room[keep].tolist(), strict=True)
        ]
        sizes = np.array([len(t) for t in texts], dtype=np.int64)
        if not sizes.sum():
            return
        at = (
            np.repeat(first[keep], sizes)
            + np.arange(int(sizes.sum()))
            - np.repeat(np.cumsum(sizes) - sizes, sizes)
        )
        ty = np.repeat(y[keep], sizes)
        chars[ty, at] = list("".join(texts))
        written[ty, at] = True

    def _draw_link(self, rows, lines_chars, lines_styles, t0: float, w: float, cw: int) -> None:
        """A vertical line between the selected event and its linked one (launch ↔ kernel)."""
        st = self.state
        if st.selected < 0 or st.linked < 0:
            return
        ix = st.ix
        r_sel, r_lnk = ix.row_of(st.selected), ix.row_of(st.linked)
        screen = {r: i for i, vr in enumerate(rows) if vr.row is not None for r in (vr.merged or (vr.row,))}
        if r_sel not in screen and r_lnk not in screen:
            return
        device = st.linked if ix.lane_of(st.linked).kind == "stream" else st.selected
        col = int(math.floor((float(ix.t[device]) - t0) / w))
        if not 0 <= col < cw:
            return
        ys = [
            screen.get(r_sel, -1 if self._above(r_sel, rows) else len(rows)),
            screen.get(r_lnk, -1 if self._above(r_lnk, rows) else len(rows)),
        ]
        lo, hi = min(ys), max(ys)
        for y in range(max(lo + 1, 0), min(hi, len(rows))):
            lines_chars[y][col] = "│"
            lines_styles[y][col] = LINK_LINE
        for y, ch in ((lo, "╷"), (hi, "╵")):
            if 0 <= y < len(rows) and lines_chars[y][col] == " ":
                lines_chars[y][col] = ch
                lines_styles[y][col] = LINK_LINE

    def _above(self, row: int, rows: list[VisibleRow]) -> bool:
        shown = [vr.row for vr in rows if vr.row is not None]
        return bool(shown) and row < shown[0]

    # -- decorations -------------------------------------------------------------------------
    def _label(self, vr: VisibleRow, lw: int, cursor: bool) -> Segment:
        key = (vr.lane.id, vr.depth, vr.level, lw, cursor, vr.lane.id in self.state.collapsed)
        seg = self._labels_cache.get(key)
        if seg is None:
            seg = self._labels_cache[key] = self._make_label(vr, lw, cursor)
        return seg

    def _make_label(self, vr: VisibleRow, lw: int, cursor: bool) -> Segment:
        ln = vr.lane
        st = self.state
        indent = " " * min(vr.level, 6)
        if vr.depth > 0 and vr.row is not None:  # a lane's nested event row
            text = f"{indent}  · {vr.depth} {self.row_word.get(vr.row, '')}"
            style = LABEL_DIM
        else:
            foldable = (
                ln.kind in ("node", "rank", "gpu", "metrics")
                or (ln.kind == "thread" and len(ln.rows) > 1)
                or (ln.kind in ("stream", "launch") and len(ln.rows) > 1)
            )
            mark = ("▸ " if ln.id in st.collapsed else "▾ ") if foldable else "  "
            label = f"nccl {ln.stream}" if ln.id in self.comm_lanes else ln.label
            if ln.kind == "gpu" and ln.device is not None and st.words.kind != "gpu":
                label = f"{st.words.Device} {ln.device}"  # XLA on CPU: "CPU device 0", no GPU
            if ln.kind == "stream" and ln.stream is not None and ln.stream < 0:
                # device events that name no stream (CUPTI's context-wide event syncs): the
                # index keeps them on a lane numbered -1, which is no stream of the program's
                label = "no stream"
            # a label too long for the column is cut in its middle, marked (a thread's id cut at
            # its end read as another thread's)
            label = elide(label, max(lw - 2 - len(indent) - len(mark), 1), bare=False, last_word=True)
            text = f"{indent}{mark}{label}"
            style = LABEL_HEADER if ln.kind in ("node", "rank", "gpu", "metrics") else LABEL
        if cursor:
            style = LABEL_CURSOR
        # the cursor's lane is marked by a glyph too: bold or reverse alone vanish without colour
        text = ("▶" if cursor else " ") + text
        text = text[: lw - 1].ljust(lw - 1) + "│"
        return Segment(text, STYLES[style])

    def _ruler(self, lw: int, cw: int, t0: float, t1: float) -> Strip:
        w = (t1 - t0) / cw
        step = nice_step(w * 12)
        chars = np.full(cw, " ", dtype="<U1")
        styles = np.full(cw, RULER, dtype=np.int32)
        first = math.ceil(t0 / step)
        k = first
        while True:
            t = k * step
            c = int(round((t - t0) / w))
            if c >= cw or k - first > cw:
                break
            if c >= 0:
                text = "╵" + fmt_tick(t, step)
                if len(text) <= cw - c:  # a label cut at the edge would misread (╵0.0 for 0.02s)
                    chars[c : c + len(text)] = list(text)
            k += 1
        label = f" Δ {fmt_ns(t1 - t0)}"[: lw - 1].ljust(lw - 1) + "│"
        return _strip(Segment(label, STYLES[LABEL_HEADER]), chars, styles, lw + cw)

    def _step_band(self, lw: int, cw: int, t0: float, w: float) -> Strip:
        chars = np.full(cw, " ", dtype="<U1")
        styles = np.zeros(cw, dtype=np.int32)
        steps = self.state.ix.steps()
        free = 0  # the first cell a label may take: one blank after the last one drawn
        for i, s in enumerate(steps):
            # a job's step (earliest start to latest end over its ranks) overlaps the next one
            # where ranks are skewed: the band gives the overlap to the later step, as
            # ``step_index_at`` does, so a window on step 9 is labelled #9, not its tail's #8
            end = min(s.t1, steps[i + 1].t0) if i + 1 < len(steps) else s.t1
            a = int(math.floor((s.t0 - t0) / w))
            b = int(math.ceil((end - t0) / w))
            if b < 0 or a >= cw:
                continue
            a, b = max(a, 0), min(max(b, a + 1), cw)
            styles[a:b] = STEP_A if i % 2 == 0 else STEP_B
            text = f"#{s.number}" if s.number is not None else s.name
            # a label that would touch the previous one is left out (``#4#5`` reads as one)
            if b - a >= len(text) + 1 and a + 1 >= free:
                chars[a + 1 : a + 1 + len(text)] = list(text)
                free = a + 2 + len(text)
        label = " steps"[: lw - 1].ljust(lw - 1) + "│"
        return _strip(Segment(label, STYLES[LABEL_DIM]), chars, styles, lw + cw)


def _top_kind_per_cell(
    kind: np.ndarray, start: np.ndarray, end: np.ndarray, n_kinds: int, t0: float, w: float, cw: int
) -> np.ndarray:
    """Per column of a frame from ``t0`` with ``w`` ns a column: the kind (an index below
    ``n_kinds``) with the most time of the stretches ``[start, end)`` in it (one rank's path:
    they do not overlap), -1 where none has any."""
    edges = t0 + w * np.arange(cw + 1, dtype=np.float64)
    time = np.zeros((n_kinds, cw), dtype=np.float64)
    for k in np.unique(kind).tolist():
        sel = kind == k
        a, b = start[sel].astype(np.float64), end[sel].astype(np.float64)
        order = np.argsort(a, kind="stable")
        a, b = a[order], b[order]
        before = np.concatenate(([0.0], np.cumsum(b - a)))  # this kind's time before each stretch
        i = np.searchsorted(a, edges, side="right") - 1  # the stretch started last at each edge
        inside = np.where(i >= 0, np.clip(edges - a[np.maximum(i, 0)], 0, (b - a)[np.maximum(i, 0)]), 0.0)
        upto = np.where(i >= 0, before[np.maximum(i, 0)], 0.0) + inside  # its time before each edge
        time[k] = np.diff(upto)
    top = np.argmax(time, axis=0)
    return np.where(time.max(axis=0) > 0, top, -1)


def span_columns(start: np.ndarray, end: np.ndarray, t0: float, w: float) -> tuple[np.ndarray, np.ndarray]:
    """The first and last column of each span ``[start, end)`` (relative ns) in a frame from
    ``t0`` with ``w`` ns a column: every column it touches, at least one (the selection's and the
    critical path's rule; events themselves are rasterised by :class:`FrameRaster`)."""
    a = np.floor((np.asarray(start, dtype=np.float64) - t0) / w).astype(np.int64)
    b = np.ceil((np.asarray(end, dtype=np.float64) - t0) / w).astype(np.int64) - 1
    return a, np.maximum(a, b)


def _strip(label: Segment, chars: np.ndarray, styles: np.ndarray, width: int) -> Strip:
    """A line: the label, then the canvas cut into one Segment per run of equal style."""
    return _strips([label], chars[None, :], styles[None, :], width)[0]


def _strips(labels: list[Segment], chars: np.ndarray, styles: np.ndarray, width: int) -> list[Strip]:
    """One line per row of ``chars``/``styles`` (``(lines, cells)``): its label, then the row cut
    into one Segment per run of equal style (the runs of every row found at once)."""
    n, cw = chars.shape
    if n == 0:
        return []
    texts = np.ascontiguousarray(chars).view(f"<U{cw}").ravel().tolist()
    flat = styles.ravel()
    run = np.ones(flat.size, dtype=bool)
    run[1:] = flat[1:] != flat[:-1]
    run[::cw] = True  # every line starts a run
    starts = np.flatnonzero(run)
    sids = flat[starts].tolist()
    cols = (starts % cw).tolist()
    bounds = np.searchsorted(starts, np.arange(n + 1) * cw).tolist()
    out = []
    for y, label in enumerate(labels):
        text = texts[y]
        if len(text) < cw:  # a view drops trailing NULs only; never expected, but keep widths exact
            text = text.ljust(cw)
        a, b = bounds[y], bounds[y + 1]
        cut = cols[a:b]
        cut.append(len(text))
        segs = [label]
        segs.extend(Segment(text[cut[k] : cut[k + 1]], STYLES[s]) for k, s in enumerate(sids[a:b]))
        out.append(Strip(segs, width))
    return out
