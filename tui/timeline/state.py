"""What the timeline shows and where: viewport, lane tree, cursor, selection, search.

Plain Python over a :class:`~profui.analysis.lod.LodIndex`; the widget only maps keys to these
methods and draws the result, so navigation is testable without a terminal.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from profui.analysis.devices import manifest_words
from profui.analysis.formatting import short_name
from profui.analysis.lod import EVENT_KINDS, Lane, LodIndex

if TYPE_CHECKING:
    from .critical import CriticalPaths, StepPath

#: Lane kinds that are headers (no events of their own).
GROUP_KINDS = ("node", "rank", "gpu", "metrics")
#: Host threads with more nesting rows than this start folded.
FOLD_DEEPER_THAN = 4
#: With this many ranks or fewer, each rank's busiest host thread starts unfolded.
UNFOLD_BUSIEST_UP_TO_RANKS = 4


@dataclass(frozen=True)
class VisibleRow:
    """One screen row of the lane tree: a header, an event row (``row``) or a metric (``series``)."""

    lane: Lane
    level: int  # indentation in the tree
    row: int | None = None  # event row of the index
    depth: int = 0  # position among the lane's rows
    series: int | None = None
    merged: tuple[int, ...] = ()  # a folded lane: all its rows drawn as one (the deepest event wins)

    @property
    def is_header(self) -> bool:
        return self.lane.kind in GROUP_KINDS


class TimelineState:
    """Viewport ``[t0, t1)`` (relative ns), the visible rows, cursor row and selected event."""

    MIN_SPAN = 1_000  # 1 µs: zoom stops here

    def __init__(self, index: LodIndex) -> None:
        self.ix = index
        #: what the trace's devices are called (a JAX run on CPU has CPU devices, not GPUs)
        self.words = manifest_words(index.trace.manifest)
        self.lanes = index.lanes()
        self.children: dict[int | None, list[Lane]] = {}
        for ln in self.lanes:
            self.children.setdefault(ln.parent, []).append(ln)
        self.collapsed: set[int] = set()
        # Metric groups and deep host threads start folded so the GPU lanes fit on screen (a
        # folded thread is one row showing its activity) — except each rank's busiest thread,
        # the one a user looks at first, while there are few ranks.
        busiest: dict[int | None, Lane] = {}
        for ln in self.lanes:
            if ln.kind == "thread" and (
                ln.parent not in busiest or self._weight(ln) > self._weight(busiest[ln.parent])
            ):
                busiest[ln.parent] = ln
        keep = {ln.id for ln in busiest.values()} if len(busiest) <= UNFOLD_BUSIEST_UP_TO_RANKS else set()
        for ln in self.lanes:
            deep = ln.kind == "thread" and len(ln.rows) > FOLD_DEEPER_THAN and ln.id not in keep
            if ln.kind == "metrics" or deep:
                self.collapsed.add(ln.id)
        self.hide_empty = False
        #: whether any event links a launch to its device work (Enter follows it)
        self.has_links = bool(index.link.size) and bool((np.asarray(index.link) >= 0).any())
        self.t0 = 0.0
        self.t1 = float(max(index.span_ns, 1))
        self.cursor = 0  # index into visible rows
        self.top = 0  # first visible row on screen
        self.selected = -1  # event position
        self.linked = -1  # the event the selection links to (launch <-> device activity)
        self.matches = np.zeros(0, dtype=np.int64)
        self.matches_sorted = self.matches
        self.match_i = -1
        self.pattern = ""
        self.message = ""
        self.version = 0  # bumped on every change; the renderer caches on it
        self.peak_mark: tuple[int, int] | None = None  # (memory series, t) shown after a jump
        #: the critical_path stage's paths (loaded when first asked for) and whether they are drawn
        self.paths: CriticalPaths | None = None
        self.path_on = False
        #: the rank whose path the path line shows (a finding's rank); else the cursor's
        self.path_rank: int | None = None
        self._rows: list[VisibleRow] = []
        self._rebuild()

    def _weight(self, lane: Lane) -> tuple[bool, int]:
        """How much a thread matters at first sight: the training loop's (it holds the step
        markers) first, then the one with the most events."""
        first = int(self.ix.row_start[lane.rows[0]]) if lane.rows else -1
        has_steps = first >= 0 and EVENT_KINDS[int(self.ix.kind[first])] == "step"
        return has_steps, lane.n_events

    # -- tree ------------------------------------------------------------------------------
    def _rebuild(self) -> None:
        rows: list[VisibleRow] = []

        def walk(parent: int | None, level: int) -> None:
            for ln in self.children.get(parent, []):
                folded = ln.id in self.collapsed
                if ln.kind in GROUP_KINDS:
                    rows.append(VisibleRow(ln, level))
                    if not folded:
                        walk(ln.id, level + 1)
                elif ln.kind == "metric":
                    rows.append(VisibleRow(ln, level, series=ln.series))
                else:
                    if folded and len(ln.rows) > 1:
                        rows.append(VisibleRow(ln, level, row=ln.rows[0], merged=ln.rows))
                        continue
                    for d, r in enumerate(ln.rows):
                        rows.append(VisibleRow(ln, level, row=r, depth=d))

        walk(None, 0)
        self._rows = rows
        self.cursor = min(self.cursor, max(len(rows) - 1, 0))
        self.version += 1

    def visible_rows(self) -> list[VisibleRow]:
        """The rows of the tree as shown (folded lanes and, when asked, empty rows left out)."""
        if not self.hide_empty:
            return self._rows
        # a screen row's event rows (none for headers and metrics), searched all at once
        owned = [(vr.merged or (vr.row,)) if vr.row is not None else () for vr in self._rows]
        rows = np.array([r for own in owned for r in own], dtype=np.int64)
        lo, hi = self.ix.windows(rows, int(self.t0), int(self.t1) + 1)
        line = np.repeat(np.arange(len(owned)), [len(own) for own in owned])
        in_view = np.zeros(len(owned), dtype=bool)
        in_view[line[hi > lo]] = True
        keep = self.ix.row_of(self.selected) if self.selected >= 0 else -1
        return [
            vr
            for vr, own, seen in zip(self._rows, owned, in_view.tolist(), strict=True)
            if not own or seen or keep in own
        ]

    def current(self) -> VisibleRow | None:
        """The row under the cursor."""
        rows = self.visible_rows()
        if not rows:
            return None
        self.cursor = min(self.cursor, len(rows) - 1)
        return rows[self.cursor]

    def toggle(self) -> None:
        """Fold or unfold the lane under the cursor (a header folds its subtree, a thread its depth rows)."""
        vr = self.current()
        if vr is None:
            return
        lane = vr.lane
        if lane.kind not in GROUP_KINDS and len(lane.rows) <= 1 and lane.kind != "thread":
            return
        anchor = lane.id
        if anchor in self.collapsed:
            self.collapsed.discard(anchor)
        else:
            self.collapsed.add(anchor)
        self._rebuild()
        self._cursor_to(lambda r: r.lane.id == anchor)

    def set_all(self, folded: bool) -> None:
        """Fold every rank (``folded``) or unfold everything."""
        if folded:
            self.collapsed = {ln.id for ln in self.lanes if ln.kind in ("rank", "metrics")}
        else:
            self.collapsed = set()
        self._rebuild()

    def toggle_hide_empty(self) -> None:
        """Leave out (or show again) event rows with nothing in view."""
        self.hide_empty = not self.hide_empty
        self.cursor = 0
        self.version += 1

    def _cursor_to(self, pred) -> bool:
        for i, vr in enumerate(self.visible_rows()):
            if pred(vr):
                self.cursor = i
                self.version += 1
                return True
        return False

    def move_cursor(self, delta: int) -> None:
        """Move the cursor ``delta`` rows; the selection follows to the nearest event in view."""
        rows = self.visible_rows()
        if not rows:
            return
        self.cursor = max(0, min(len(rows) - 1, self.cursor + delta))
        vr = rows[self.cursor]
        if vr.row is not None and self.selected >= 0:
            p = self.ix.at(vr.row, self.cursor_time())
            if p >= 0 and self.ix.t[p] < self.t1 and self.ix.end[p] > self.t0:
                self._select(p, keep_row=True)
        self.version += 1

    # -- viewport --------------------------------------------------------------------------
    @property
    def span(self) -> float:
        return self.t1 - self.t0

    def cursor_time(self) -> float:
        """Where zoom centres: the selected event's middle when in view, else the window's middle."""
        if self.selected >= 0:
            s, e = float(self.ix.t[self.selected]), float(self.ix.end[self.selected])
            mid = (s + e) / 2
            if self.t0 <= mid <= self.t1:
                return mid
        return (self.t0 + self.t1) / 2

    def set_window(self, t0: float, t1: float) -> None:
        """Show ``[t0, t1)``, kept inside the trace (with a margin) and at least MIN_SPAN wide."""
        span = max(t1 - t0, self.MIN_SPAN)
        full = float(max(self.ix.span_ns, 1))
        span = min(span, full * 1.1)
        lo, hi = -0.05 * full, full * 1.05
        t0 = min(max(t0, lo), hi - span)
        self.t0, self.t1 = t0, t0 + span
        self.version += 1

    def zoom(self, factor: float) -> None:
        """Zoom by ``factor`` (> 1 zooms in) keeping the cursor time at the same screen column."""
        c = self.cursor_time()
        frac = (c - self.t0) / self.span if self.span else 0.5
        span = self.span / factor
        self.set_window(c - frac * span, c - frac * span + span)

    def pan(self, fraction: float) -> None:
        """Move the window by ``fraction`` of its width (negative: earlier)."""
        d = self.span * fraction
        self.set_window(self.t0 + d, self.t1 + d)

    def fit(self) -> None:
        """Show the whole trace."""
        self.t0, self.t1 = 0.0, float(max(self.ix.span_ns, 1))
        self.version += 1

    def show_event(self, pos: int, fill: bool = False) -> None:
        """Bring event ``pos`` into view: centred; zoomed so it fills a third of the screen when
        ``fill`` or when it is wider than the window."""
        s, e = float(self.ix.t[pos]), float(self.ix.end[pos])
        d = max(e - s, 1.0)
        if fill or d > self.span:
            span = max(d * 3, self.MIN_SPAN)
            self.set_window((s + e) / 2 - span / 2, (s + e) / 2 + span / 2)
        elif not (self.t0 <= s and e <= self.t1):
            self.set_window((s + e) / 2 - self.span / 2, (s + e) / 2 + self.span / 2)

    def zoom_to_selected(self) -> bool:
        """``z``: the window is the selected event with a small margin on each side (in or
        out, whatever that takes); with nothing selected, says so."""
        if self.selected < 0:
            self.message = "no event selected: ←/→ select one, then z"
            self.version += 1
            return False
        s, e = float(self.ix.t[self.selected]), float(self.ix.end[self.selected])
        pad = max(e - s, 1.0) * 0.05
        self.set_window(s - pad, e + pad)
        return True

    # -- steps -----------------------------------------------------------------------------
    def step_index_at(self, t: float) -> int:
        """Index of the step whose window holds ``t`` (else the last one starting before it); -1 when none."""
        steps = self.ix.steps()
        best = -1
        for i, s in enumerate(steps):
            if s.t0 <= t:
                best = i
        return best

    def goto_step(self, number: int | str, rank: int | None = None, node: str | None = None) -> bool:
        """Fill the screen with step ``number`` (a ``ProfilerStep#N`` number or name): the job's
        window, or with ``rank`` that rank's own window with its lanes under the cursor."""
        steps = self.ix.steps(rank=rank, node=node) if rank is not None else self.ix.steps()
        for s in steps:
            if (
                (isinstance(number, str) and s.name == number)
                or s.number == number
                or str(s.number) == str(number)
            ):
                pad = (s.t1 - s.t0) * 0.01
                self.set_window(s.t0 - pad, s.t1 + pad)
                self._drop_offscreen_selection()
                who = f" (rank {rank})" if rank is not None else ""
                self.message = f"{s.name}{who}: {_fmt(s.t1 - s.t0)}"
                if rank is not None:
                    self._show_rank(rank, node)
                return True
        self.message = (
            f"no step {number}{' on rank ' + str(rank) if rank is not None else ''}" + _valid_steps(steps)
        )
        self.version += 1
        return False

    def _show_rank(self, rank: int, node: str | None) -> None:
        """Unfold ``rank``'s lanes and put the cursor on its header, at the top of the screen."""
        for lane in self.ix.lanes():
            if lane.kind == "rank" and lane.rank == rank and (node is None or lane.node == node):
                self._reveal(lane)
                if self._cursor_to(lambda r, lid=lane.id: r.lane.id == lid):
                    self.top = self.cursor
                return

    def next_step(self, direction: int) -> bool:
        """Show the next (``direction`` 1) or previous (-1) step after/before the one in view."""
        steps = self.ix.steps()
        if not steps:
            self.message = "no step markers in this trace"
            self.version += 1
            return False
        if direction > 0:
            after = [x for x in steps if x.t0 > self.t0 + 0.02 * self.span]
            target = after[0] if after else None
        else:
            before = [x for x in steps if x.t0 < self.t0 + 0.005 * self.span]
            target = before[-1] if before else None
        if target is None:
            self.message = "no later step" if direction > 0 else "no earlier step"
            self.version += 1
            return False
        return self.goto_step(target.number if target.number is not None else target.name)

    # -- selection -------------------------------------------------------------------------
    def _select(self, pos: int, keep_row: bool = False) -> None:
        self.selected = int(pos)
        link = int(self.ix.link[pos]) if pos >= 0 else -1
        self.linked = link
        if not keep_row and pos >= 0:
            row = self.ix.row_of(pos)
            lane = self.ix.lane_of(pos)
            self._reveal(lane)
            self._cursor_to(lambda r: r.row == row)
        self.version += 1

    def _reveal(self, lane: Lane) -> None:
        """Unfold the ancestors of ``lane`` (and the lane itself when its row is folded away)."""
        changed = False
        p: int | None = lane.id
        while p is not None:
            if p in self.collapsed:
                self.collapsed.discard(p)
                changed = True
            p = self.ix.lane(p).parent
        if changed:
            self._rebuild()

    def select(self, pos: int, fill: bool = False) -> None:
        """Select event ``pos``, move the cursor to its row and bring it into view."""
        if pos < 0:
            return
        self._select(pos)
        self.show_event(pos, fill=fill)

    def step_event(self, direction: int) -> bool:
        """Select the next/previous event on the cursor's row (the one at the cursor time first)."""
        vr = self.current()
        if vr is None or vr.row is None:
            self.pan(0.25 * direction)
            return False
        if self.selected >= 0 and self.ix.row_of(self.selected) == vr.row:
            p = self.ix.neighbour(vr.row, float(self.ix.t[self.selected]), direction)
        else:
            t = self.t0 if direction > 0 else self.t1
            p = self.ix.neighbour(vr.row, t - 1 if direction > 0 else t, direction)
            if direction > 0 and p >= 0 and self.ix.t[p] > self.t1:
                p = self.ix.at(vr.row, self.t0)
        if p < 0:
            self.message = "no more events on this row"
            self.version += 1
            return False
        self._select(p, keep_row=True)
        self.show_event(p)
        return True

    def _drop_offscreen_selection(self) -> None:
        """After a jump, a selected event out of view is let go (the details panel would
        otherwise describe something the screen no longer shows)."""
        if self.selected >= 0:
            a, b = float(self.ix.t[self.selected]), float(self.ix.end[self.selected])
            if b < self.t0 or a > self.t1:
                self.selected = self.linked = -1
                self.version += 1

    def clear_selection(self) -> bool:
        """Forget the selection, the link, the search and a memory peak's mark; False when
        there was none of them (Esc then goes back to the view the user came from)."""
        had = self.selected >= 0 or self.linked >= 0 or bool(self.pattern) or self.peak_mark is not None
        self.peak_mark = None
        self.selected = self.linked = -1
        self.matches = self.matches_sorted = np.zeros(0, dtype=np.int64)
        self.match_i = -1
        self.pattern = ""
        self.message = ""
        self.version += 1
        return had

    def follow(self) -> bool:
        """Jump from a launch to the device activity it started, or from a kernel back to its launch."""
        if self.selected < 0:
            self.message = "select a launch or a kernel first (←/→)"
            self.version += 1
            return False
        link = int(self.ix.link[self.selected])
        if link < 0:
            self.message = "no launch/kernel link for this event"
            self.version += 1
            return False
        came_from = self.selected
        self._select(link)
        self.linked = came_from
        self.show_event(link)
        # Keep both ends on screen when they fit.
        lo = min(self.ix.t[link], self.ix.t[came_from])
        hi = max(self.ix.end[link], self.ix.end[came_from])
        if lo < self.t0 or hi > self.t1:
            pad = max((hi - lo) * 0.5, self.MIN_SPAN)
            self.set_window(float(lo - pad), float(hi + pad))
        self.message = f"→ {self.ix.kind_of(link)} {short_name(self.ix.name_of(link))}"
        return True

    # -- memory --------------------------------------------------------------------------
    def goto_memory_peak(self, series: int | None = None) -> bool:
        """Show the allocated peak of memory lane ``series`` (else the highest of all): the
        window centred on it (at most 1/20 of the trace wide), the cursor on its lane, the peak
        cell marked ▲."""
        from profui.analysis.formatting import fmt_bytes

        order = self.ix.memory_series()
        if not order:
            self.message = "no memory events in this trace (the allocator's [memory] events)"
            self.version += 1
            return False
        i = series if series in self.ix.memory_peak else order[0]
        t, value = self.ix.memory_peak[i]
        lane = next(ln for ln in self.lanes if ln.kind == "metric" and ln.series == i)
        self._reveal(lane)
        self._cursor_to(lambda r: r.series == i)
        span = min(self.span, max(self.ix.span_ns / 20, self.MIN_SPAN))
        self.set_window(t - span / 2, t + span / 2)
        self.peak_mark = (i, t)
        self.message = f"memory peak {fmt_bytes(value)} on {lane.label.removeprefix('mem ')} at {_fmt(t)}"
        self.version += 1
        return True

    # -- critical path -----------------------------------------------------------------------
    def step_in_view(self) -> int | None:
        """The number of the job's step at the middle of the window (None: no numbered step);
        where the index has no step markers, the critical-path stage's step there."""
        mid = (self.t0 + self.t1) / 2
        if not self.ix.steps():
            return self.paths.step_at(mid) if self.paths is not None else None
        i = self.step_index_at(mid)
        return self.ix.steps()[i].number if i >= 0 else None

    def goto_path_step(self, number: int, rank: int | None) -> bool:
        """Where the index has no step ``number`` (no step markers), show the window the
        critical-path stage took for it (``rank``'s); False when it has none either."""
        if self.step_in_view() == number or self.paths is None:
            return self.step_in_view() == number
        window = self.paths.window(number, rank)
        if window is None:
            return False
        pad = (window[1] - window[0]) * 0.01
        self.set_window(window[0] - pad, window[1] + pad)
        if rank is not None:
            self._show_rank(rank, None)
        return True

    def path_in_view(self) -> StepPath | None:
        """The critical path of the step in view, when it is drawn and the stage has one."""
        if not self.path_on or self.paths is None:
            return None
        number = self.step_in_view()
        return None if number is None else self.paths.step(number)

    def path_focus(self, path: StepPath) -> int:
        """The rank whose path the path line shows: the one asked for (a finding's), else the
        cursor's, else the first with a path (-1: a path that names no rank)."""
        ranks = path.ranks
        vr = self.current()
        for rank in (self.path_rank, vr.lane.rank if vr is not None else None):
            if rank is not None and rank in ranks:
                return rank
        return ranks[0] if ranks else -1

    def show_path(self, on: bool, rank: int | None = None) -> None:
        """Draw (or stop drawing) the critical path of the step in view; say what it is."""
        self.path_on = on
        if rank is not None:
            self.path_rank = rank
        self.message = self.path_message() if on else "critical path hidden"
        self.version += 1

    def path_message(self) -> str:
        """The status line's words for the path of the step in view (or why none is drawn)."""
        if self.paths is None or self.paths.empty:
            return "no critical path in this trace (the critical_path stage found none)"
        number = self.step_in_view()
        path = self.paths.step(number) if number is not None else None
        if path is None:
            return "no critical path for the step in view" + (f" ({number})" if number is not None else "")
        return path.summary(self.path_focus(path), self.words.work)

    # -- search ----------------------------------------------------------------------------
    def search(self, pattern: str) -> int:
        """Find events by name: text (case, ``_``, ``:``, ``-`` and spaces ignored, so
        ``allreduce`` finds ``gloo:all_reduce``), or a regex written ``/regex/``.
        Selects the first match at or after the window start; returns the number of matches."""
        pattern = pattern.strip()
        self.pattern = pattern
        if not pattern:
            self.matches = self.matches_sorted = np.zeros(0, dtype=np.int64)
            self.match_i = -1
            self.version += 1
            return 0
        regex = len(pattern) > 2 and pattern.startswith("/") and pattern.endswith("/")
        try:
            self.matches = self.ix.search(pattern[1:-1] if regex else loose_name(pattern), regex=True)
        except ValueError as exc:
            self.message = str(exc)
            self.matches = self.matches_sorted = np.zeros(0, dtype=np.int64)
            self.version += 1
            return 0
        self.matches_sorted = np.sort(self.matches)
        if self.matches.size == 0:
            self.match_i = -1
            self.message = f"no event matches {pattern!r}"
            self.version += 1
            return 0
        starts = self.ix.t[self.matches]
        i = int(np.searchsorted(starts, self.t0, side="left"))
        self.match_i = min(i, self.matches.size - 1) - 1
        self.next_match(1)
        return int(self.matches.size)

    def next_match(self, direction: int) -> bool:
        """Select the next/previous search match."""
        if self.matches.size == 0:
            return False
        self.match_i = (self.match_i + direction) % self.matches.size
        p = int(self.matches[self.match_i])
        self.select(p)
        self.message = f"match {self.match_i + 1}/{self.matches.size}"
        return True

    # -- scrolling -------------------------------------------------------------------------
    def scroll_to_cursor(self, height: int) -> None:
        """Keep the cursor row within ``height`` screen rows."""
        if self.cursor < self.top:
            self.top = self.cursor
        elif self.cursor >= self.top + height:
            self.top = self.cursor - height + 1
        self.top = max(0, min(self.top, max(len(self.visible_rows()) - height, 0)))


#: What a typed search ignores between letters: names spell one op ``AllReduce``,
#: ``all_reduce``, ``c10d::allreduce_``, ``gloo:all_reduce``.
_NAME_SEPARATORS = "_:- "


def loose_name(text: str) -> str:
    """A regex finding ``text`` in a name with case and separators (``_``, ``:``, ``-``, space)
    ignored: ``"all_reduce"`` and ``"AllReduce"`` both find ``gloo:all_reduce``. Text of
    separators only is found as written."""
    core = [c for c in text if c not in _NAME_SEPARATORS]
    if not core:
        return re.escape(text)
    gap = "[" + re.escape(_NAME_SEPARATORS) + "]*"
    return gap.join(re.escape(c) for c in core)


def _valid_steps(steps: list) -> str:
    """``" (steps 3–42)"``: the step numbers there are, for a message about a missing one."""
    numbers = sorted({s.number for s in steps if s.number is not None})
    if not numbers:
        return " (no step markers in this trace)" if not steps else ""
    if numbers == list(range(numbers[0], numbers[-1] + 1)):
        return f" (steps {numbers[0]}–{numbers[-1]})" if len(numbers) > 1 else f" (only step {numbers[0]})"
    shown = ", ".join(map(str, numbers[:8])) + (", …" if len(numbers) > 8 else "")
    return f" (steps {shown})"


def _fmt(ns: float) -> str:
    from profui.analysis.formatting import fmt_ns

    return fmt_ns(ns)
