"""The timeline's frame rasteriser (all of a frame's rows in one pass) against a per-event oracle,
on the shared df_index trace imported in a tmp dir (and the CPU sample, copied, whose instants
stand alone): hundreds of random windows, from the whole trace down to cells of 2 ns, over random
sets of rows and folded groups of rows. A frame's metric lines (all searched at once) and the
rows left out as empty (all rows' windows searched at once) against per-sample and per-event
oracles too.

The oracle is written here from the rules, event by event, as a dense events × cells table:
a cell's busy fraction is the time the row's events cover in it; the event drawn is the one
covering the cell's centre (the latest-starting of those starting at or before it), else the
first that starts inside the cell; an instant drawn is a trace (0.01). At coarse zoom (more than
4 events per cell, cells at least two tile buckets wide) the cell is the busy time of its
whole tile buckets over their length, in the kind busiest there, with no event. A folded line is
its rows' highest busy fraction, in the kind and event of the innermost row busy in the cell.
"""

from __future__ import annotations

import bisect
import copy
import math
import random
import shutil
from dataclasses import replace

import numpy as np
import pytest

from profui.analysis.lod_open import open_lod
from profui.analysis.lod_raster import FrameRaster
from profui.capture.ingest import import_trace
from profui.tui.timeline.render import DIM, PLAIN, STYLES, Renderer
from profui.tui.timeline.state import TimelineState

from realdata import SAMPLES, shared_trace

DF_INDEX = "hta-df_index_resolver-df_index_resolver.json.gz"
WINDOWS = 300


@pytest.fixture(scope="module")
def ix(tmp_path_factory):
    out = tmp_path_factory.mktemp("tlraster") / "dfi"
    import_trace([shared_trace(DF_INDEX)], out)
    return open_lod(out)


def _sample(tmp_path_factory, name: str):
    out = tmp_path_factory.mktemp("tlraster") / name
    shutil.copytree(SAMPLES / name, out, ignore=shutil.ignore_patterns(".profui"))
    return open_lod(out)


@pytest.fixture(scope="module")
def cpu_sample(tmp_path_factory):
    return _sample(tmp_path_factory, "mlp_cpu")


@pytest.fixture(scope="module")
def gpu_sample(tmp_path_factory):
    return _sample(tmp_path_factory, "synthetic_gpu")


def _events(ix, row: int, t0: float, t1: float):
    """The row's events a frame over ``[t0, t1)`` considers: positions, start, end. Those starting
    before ``t1``, from the first whose end passes ``t0`` — or follows one whose end does: a row's
    events may overlap, and then one that ended before ``t0`` still counts (and can be the event
    drawn at the left edge, or leave a busy cell without an event)."""
    a, b = int(ix.row_start[row]), int(ix.row_start[row + 1])
    t = ix.t[a:b].astype(np.float64)
    end = ix.end[a:b].astype(np.float64)
    reached = np.maximum.accumulate(end) > np.floor(t0) if end.size else end > 0
    keep = reached & (t < np.ceil(t1))
    return np.arange(a, b)[keep], t[keep], end[keep]


def oracle_row(ix, row: int, t0: float, t1: float, width: int):
    """(exact, busy, kind, event) of one row, event by event."""
    w = (t1 - t0) / width
    pos, t, end = _events(ix, row, t0, t1)
    bucket = ix.bucket_ns
    if pos.size > 4 * width and w >= 2 * bucket and row in ix.tile_cum:
        # whole tile buckets under each cell; busy ns per kind from the events themselves
        edges = np.clip(np.rint((t0 + w * np.arange(width + 1)) / bucket), 0, ix.n_buckets) * bucket
        lo, hi = edges[:-1, None], edges[1:, None]
        a, b = int(ix.row_start[row]), int(ix.row_start[row + 1])
        ta, ea = ix.t[a:b].astype(np.float64), ix.end[a:b].astype(np.float64)
        near = (ea > edges[0]) & (ta < edges[-1])
        ta, ea, kinds = ta[near], ea[near], ix.kind[a:b][near].astype(np.int64)
        cover = np.maximum(np.minimum(ea[None, :], hi) - np.maximum(ta[None, :], lo), 0)  # cells × events
        per_kind = np.stack([cover[:, kinds == k].sum(axis=1) for k in range(int(kinds.max()) + 1)])
        total = per_kind.sum(axis=0)
        busy = np.minimum(total / np.maximum(hi[:, 0] - lo[:, 0], 1), 1.0)
        kind = np.where(total > 0, per_kind.argmax(axis=0), -1)
        return False, busy, kind, np.full(width, -1)
    s = np.clip((t - t0) / w, 0, width)
    e = np.clip((end - t0) / w, 0, width)
    cells = np.arange(width)[None, :]
    cover = np.maximum(np.minimum(e[:, None], cells + 1) - np.maximum(s[:, None], cells), 0)  # events × cells
    busy = np.minimum(cover.sum(axis=0), 1.0)
    centres = cells[0] + 0.5
    order = np.arange(pos.size)[:, None]  # the row's order: by start, the outer of equal starts first
    latest = np.where(s[:, None] <= centres, order, -1).max(axis=0, initial=-1)
    covers = (latest >= 0) & (e[np.maximum(latest, 0)] > centres) if pos.size else latest >= 0
    first_in = np.where((s[:, None] >= cells) & (s[:, None] < cells + 1), order, pos.size).min(
        axis=0, initial=pos.size
    )
    event = np.where(covers, pos[np.maximum(latest, 0)] if pos.size else -1, -1)
    event = np.where(
        ~covers & (first_in < pos.size), pos[np.minimum(first_in, pos.size - 1)] if pos.size else -1, event
    )
    kind = np.where(event >= 0, ix.kind[np.maximum(event, 0)], -1)
    busy[(event >= 0) & (busy == 0)] = 0.01
    return True, busy, kind, event


def oracle_line(ix, rows: tuple[int, ...], t0: float, t1: float, width: int):
    """A folded line: the highest busy fraction of its rows; kind and event of the innermost busy row."""
    exact, busy, kind, event = oracle_row(ix, rows[0], t0, t1, width)
    for r in rows[1:]:
        x, b, k, ev = oracle_row(ix, r, t0, t1, width)
        exact = exact and x
        take = b > 0
        busy = np.maximum(busy, b)
        kind, event = np.where(take, k, kind), np.where(take, ev, event)
    return exact, busy, kind, event


def random_window(rng: random.Random, ix, width: int) -> tuple[float, float]:
    """A viewport anywhere (a little past the trace's ends too), of any zoom; some with whole-ns
    bounds (as after a fit or a step), some with cells of a whole, even number of ns placed so
    an event starts on a cell edge (cell edges and centres on event boundaries)."""
    span = ix.span_ns
    centre = rng.uniform(-0.05, 1.05) * span
    x = rng.random()
    if x < 0.2 and ix.n_events:
        cell = 2 * rng.randint(1, 8)
        t0 = float(ix.t[rng.randrange(ix.n_events)] - cell * rng.randrange(width))
        return t0, t0 + cell * width
    size = span * 10 ** rng.uniform(-6.5, 0.1)
    if x < 0.4:
        return float(round(centre - size / 2)), float(round(centre + size / 2))
    return centre - size / 2, centre + size / 2


@pytest.mark.parametrize("trace", ["ix", "cpu_sample"])
def test_frame_cells_match_the_per_event_oracle(trace: str, request) -> None:
    ix = request.getfixturevalue(trace)
    rng = random.Random(40)
    raster = FrameRaster(ix)
    event_rows = [r for r in range(ix.row_start.size - 1) if ix.row_start[r + 1] > ix.row_start[r]]
    seen = {"exact": 0, "tiles": 0, "folded": 0, "instant": 0}
    for _ in range(WINDOWS):
        width = rng.choice([7, 54, 120, 174])
        t0, t1 = random_window(rng, ix, width)
        groups, skip = [], []
        for _ in range(rng.randint(1, 12)):
            if rng.random() < 0.25:
                a = rng.randrange(len(event_rows))
                groups.append(tuple(event_rows[a : a + rng.randint(2, 6)]))
            else:
                groups.append((rng.choice(event_rows),))
            skip.append(False)
        cells = raster.lines(groups, skip, t0, t1, width)
        for i, rows in enumerate(groups):
            exact, busy, kind, event = oracle_line(ix, rows, t0, t1, width)
            where = f"rows {rows} over [{t0}, {t1}) in {width} cells"
            assert cells.exact[i] == exact, where
            np.testing.assert_allclose(cells.busy[i], busy, rtol=1e-5, atol=1e-6, err_msg=where)
            assert cells.kind[i].tolist() == kind.tolist(), where
            assert cells.event[i].tolist() == event.tolist(), where
            seen["exact"] += exact
            seen["tiles"] += not exact
            seen["folded"] += len(rows) > 1
            seen["instant"] += int(((busy == 0.01) & (event >= 0)).sum())
    # every path drawn often: tiles on the large trace, lone instants on the sample
    assert seen["exact"] > 500 and seen["folded"] > 200, seen
    assert seen["tiles"] > 100 if trace == "ix" else seen["instant"] > 20, seen


def test_a_folded_thread_leaves_its_outer_row_out_unless_nothing_nested_is_in_view(ix) -> None:
    rng = random.Random(41)
    raster = FrameRaster(ix)
    threads = [ln for ln in ix.lanes() if ln.kind == "thread" and len(ln.rows) > 1]
    assert threads
    fallback = 0
    for _ in range(100):
        ln = rng.choice(threads)
        t0, t1 = random_window(rng, ix, 90)
        cells = raster.lines([ln.rows], [True], t0, t1, 90)
        inner = oracle_line(ix, ln.rows[1:], t0, t1, 90)
        expected = inner if (inner[1] > 0).any() else oracle_row(ix, ln.rows[0], t0, t1, 90)
        fallback += expected is not inner
        np.testing.assert_allclose(cells.busy[0], expected[1], rtol=1e-5, atol=1e-6)
        assert cells.event[0].tolist() == expected[3].tolist()
        assert cells.kind[0].tolist() == expected[2].tolist()
    assert fallback > 0


def test_rendered_cells_are_blank_exactly_where_no_event_is(ix) -> None:
    """The frame as drawn: on a row's line, a cell is left plain (a space, or a dim step
    boundary) exactly where the oracle finds no event."""
    rng = random.Random(42)
    st = TimelineState(ix)
    st.set_all(False)
    r = Renderer(st)
    width, height = 140, 40
    cw = width - r.label_width(width)
    blank = (STYLES[PLAIN], STYLES[DIM])
    for _ in range(60):
        st.set_window(*random_window(rng, ix, cw))
        st.top = rng.randrange(len(st.visible_rows()))
        st.cursor = st.top
        frame = r.render(width, height)
        rows = st.visible_rows()[st.top : st.top + r.rows_height(height)]
        for vr, strip in zip(rows, frame[2:], strict=False):
            if vr.row is None or vr.series is not None:
                continue
            cell_styles = [seg.style for seg in list(strip)[1:] for _ in seg.text]
            assert len(cell_styles) == cw
            _, busy, _, event = oracle_row(ix, vr.row, st.t0, st.t1, cw)
            drawn = np.array([style not in blank for style in cell_styles])
            assert drawn.tolist() == ((busy > 0) | (event >= 0)).tolist(), (vr.row, st.t0, st.t1)


def oracle_metric(series, t0: float, t1: float, width: int) -> np.ndarray:
    """A metric per cell, sample by sample: the max of the samples in the cell, else the last
    one before it; NaN before any."""
    edges = t0 + (t1 - t0) / width * np.arange(width + 1)
    ts, value = series.ts.astype(np.float64), series.value.astype(np.float64)
    inside = (ts[:, None] >= edges[None, :-1]) & (ts[:, None] < edges[None, 1:])  # samples × cells
    before = ts[:, None] < edges[None, :-1]
    last = np.where(before, np.arange(ts.size)[:, None], -1).max(axis=0, initial=-1)
    out = np.where(last >= 0, value[np.maximum(last, 0)] if ts.size else np.nan, np.nan)
    top = np.where(inside, value[:, None], -np.inf).max(axis=0, initial=-np.inf)
    return np.where(inside.any(axis=0), top, out)


@pytest.mark.parametrize("trace", ["ix", "gpu_sample"])
def test_metric_lines_match_the_per_sample_oracle(trace: str, request) -> None:
    ix = request.getfixturevalue(trace)
    assert len(ix.series) > 1
    rng = random.Random(43)
    drawn = 0
    for _ in range(150):
        width = rng.choice([1, 7, 54, 174])
        t0, t1 = random_window(rng, ix, width)
        series = [rng.randrange(len(ix.series)) for _ in range(rng.randint(1, 20))]
        got = ix.metric_lines(series, t0, t1, width)
        for line, s in zip(got, series, strict=True):
            want = oracle_metric(ix.series[s], t0, t1, width)
            assert np.array_equal(line, want, equal_nan=True), (s, t0, t1, width)
            drawn += int((~np.isnan(want)).sum())
        assert np.array_equal(ix.metric_cells(series[0], t0, t1, width), got[0], equal_nan=True)
    assert drawn > 10_000


def bisect_metric(series, t0: float, t1: float, width: int) -> list[float]:
    """A metric per cell, one series searched on its own: a sample (an integer) is in a cell
    when it is before the cell's end and not before its start, i.e. before their ceilings."""
    ts, value = [int(t) for t in series.ts], [float(v) for v in series.value]
    cut = [bisect.bisect_left(ts, math.ceil(t0 + (t1 - t0) / width * i)) for i in range(width + 1)]
    return [
        max(value[lo:hi]) if hi > lo else value[lo - 1] if lo else math.nan
        for lo, hi in zip(cut, cut[1:], strict=False)
    ]


@pytest.mark.parametrize("damaged", [9_200_000_000_000_000_000, -9_200_000_000_000_000_000])
def test_metric_lines_with_a_sample_far_beyond_int64_keys_search_each_series(gpu_sample, damaged) -> None:
    """A damaged sample ~9.2e18 ns from the others: one key space for all series would wrap
    int64, so each series is searched on its own, still equal to bisect per series."""
    ix = copy.copy(gpu_sample)
    ix.__dict__.pop("_series_flat", None)
    bad = ix.series[0]
    at = np.searchsorted(bad.ts, damaged)
    ix.series = [
        replace(
            bad,
            ts=np.insert(bad.ts.astype(np.int64), at, damaged),
            value=np.insert(bad.value.astype(np.float64), at, 7.0),
        ),
        *ix.series[1:],
    ]
    assert ix._series_flat[0] is None
    rng = random.Random(45)
    windows = [(0.0, float(ix.span_ns)), (float(min(damaged, 0)), float(max(damaged, ix.span_ns)) + 1)]
    windows += [random_window(rng, ix, 60) for _ in range(40)]
    windows += [(damaged - 1000.0, damaged + 1000.0), (-1e19, 1e19)]
    for t0, t1 in windows:
        width = rng.choice([1, 7, 60])
        series = [rng.randrange(len(ix.series)) for _ in range(rng.randint(1, 6))] + [0]
        got = ix.metric_lines(series, t0, t1, width)
        for line, s in zip(got, series, strict=True):
            assert np.array_equal(line, bisect_metric(ix.series[s], t0, t1, width), equal_nan=True), (
                s,
                t0,
                t1,
            )


def test_hide_empty_leaves_out_exactly_the_rows_with_nothing_in_view(ix) -> None:
    """With empty rows hidden, an event row is shown when any of its rows has an event starting
    before the window's end whose row reached (by then) past its start — or holds the selection."""
    rng = random.Random(44)
    st = TimelineState(ix)
    st.hide_empty = True
    hidden = 0
    for i in range(80):
        st.set_all(i % 2 == 0)  # folded lines merge a lane's rows
        width = 120
        st.set_window(*random_window(rng, ix, width))
        st.selected = rng.randrange(ix.n_events) if i % 3 == 0 else -1
        lo, hi = int(st.t0), int(st.t1) + 1
        shown = []
        for vr in st._rows:
            own = (vr.merged or (vr.row,)) if vr.row is not None else ()
            seen = False
            for r in own:
                a, b = int(ix.row_start[r]), int(ix.row_start[r + 1])
                reached = np.maximum.accumulate(ix.end[a:b]) > lo if b > a else np.zeros(0, dtype=bool)
                seen |= bool((reached & (ix.t[a:b] < hi)).any())
            if not own or seen or (st.selected >= 0 and ix.row_of(st.selected) in own):
                shown.append(vr)
        assert st.visible_rows() == shown, (st.t0, st.t1, st.selected)
        hidden += len(st._rows) - len(shown)
    assert hidden > 100
