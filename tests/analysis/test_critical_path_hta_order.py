"""HTA's critical path (``--hta-compat``) is a function of the events, not of the order their
rows come in: two imports of one trace may hold its rows in different orders, and on
``samples/synthetic_gpu`` two runs gave different ``critical_path`` tables (by_kind, events,
steps). The events are numbered in a stated total order (``TRACE_ORDER``); shuffled rows give
identical tables, row for row."""

from __future__ import annotations

import shutil

import polars as pl

from profui.analysis import critical_path_hta as cph
from profui.analysis import open_trace

from realdata import SAMPLES


def test_shuffled_rows_give_identical_tables(tmp_path):
    trace = tmp_path / "synthetic_gpu"
    shutil.copytree(SAMPLES / "synthetic_gpu", trace, ignore=shutil.ignore_patterns(".profui"))
    ev = open_trace(trace).hta_events()
    ev = ev.collect() if isinstance(ev, pl.LazyFrame) else ev
    base = cph.stage(ev)
    assert base["steps.parquet"].height > 1 and base["events.parquet"].height > 1000  # something to order
    for seed in (1, 2):
        shuffled = ev.sample(fraction=1.0, shuffle=True, seed=seed)
        assert not shuffled["hta_order"].equals(ev["hta_order"])  # the rows did move
        got = cph.stage(shuffled)
        for f in ("steps.parquet", "by_kind.parquet", "events.parquet"):
            assert got[f].equals(base[f]), (seed, f)


def test_the_order_is_total_up_to_identical_events():
    """By hand: two events at one instant are ordered by their fields (the longer first, then
    the rest), whatever their rows' order; identical rows tie, and either first is the same."""
    rows = {
        "node": ["n"] * 3,
        "rank": [0] * 3,
        "ts": [5, 5, 5],
        "dur": [1, 3, 3],
        "kind": ["cpu_op"] * 3,
        "name": ["b", "b", "a"],
        "hta_order": [0, 1, 2],
    }
    ev = pl.DataFrame(rows)
    for perm in ([0, 1, 2], [2, 1, 0], [1, 2, 0]):
        out = cph.in_trace_order(ev[perm])
        assert out.select("dur", "name").rows() == [(3, "a"), (3, "b"), (1, "b")]
        assert out["hta_order"].to_list() == [0, 1, 2]
