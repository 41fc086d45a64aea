"""The host threads' busy union (``utilization.host_thread_busy``), which leaves the thread key's
one-valued columns out of its sort, against a union computed in plain Python from the events;
and ``keys.constants``, the rule that finds those columns, on hand-checked frames."""

from __future__ import annotations

import polars as pl
import pytest

from profui.analysis.keys import constants
from profui.analysis.utilization import HOST_BUSY_KINDS, THREAD, host_thread_busy

from realdata import SAMPLES


def _union_in_python(events: pl.DataFrame) -> list[tuple]:
    """Per thread (sorted by its key), its busy events' intervals merged in a loop."""
    rows = events.filter(pl.col("kind").cast(pl.String).is_in(HOST_BUSY_KINDS), pl.col("device") < 0)
    by_thread: dict[tuple, list[tuple[int, int]]] = {}
    for r in rows.iter_rows(named=True):
        if r["dur"] > 0:
            by_thread.setdefault(tuple(r[c] for c in THREAD), []).append((r["ts"], r["ts"] + r["dur"]))
    out = []
    for key in sorted(by_thread):
        merged: list[list[int]] = []
        for start, end in sorted(by_thread[key]):
            if merged and start <= merged[-1][1]:
                merged[-1][1] = max(merged[-1][1], end)
            else:
                merged.append([start, end])
        out += [(*key, s, e) for s, e in merged]
    return out


@pytest.mark.parametrize(
    ("name", "sorted_by"),
    [
        ("trace_filter-sampled_rank-0", 1),  # one rank, one process: its threads sort, the rest written back
        ("synthetic_gpu", 4),  # the bundled sample: 2 nodes x 2 ranks, every key column sorts
        ("mlp_cpu", 0),  # a real CPU run whose busy events are all on one thread: no key sorts
    ],
)
def test_thread_busy_against_python(imported_trace, name: str, sorted_by: int) -> None:
    from profui.analysis import open_trace

    t = imported_trace(name) if name.startswith("trace_filter") else open_trace(SAMPLES / name)
    events = t.cached_events().collect()
    host = events.filter(pl.col("kind").cast(pl.String).is_in(HOST_BUSY_KINDS), pl.col("device") < 0)
    one_valued = {c for c in THREAD if host[c].n_unique() == 1}  # n_unique counts a null as a value
    assert len(THREAD) - len(one_valued) == sorted_by
    assert set(constants([host], THREAD)) == one_valued
    got = host_thread_busy(t.cached_events()).collect()
    assert got.columns == [*THREAD, "start", "end"]
    assert got.schema == pl.Schema(
        {**{c: events.schema[c] for c in THREAD}, "start": pl.Int64, "end": pl.Int64}
    )
    expected = _union_in_python(events)
    assert expected
    assert got.rows() == expected


def test_thread_busy_of_no_host_events() -> None:
    events = pl.DataFrame(
        {
            "kind": ["kernel"],
            "device": [0],
            "node": ["n"],
            "rank": [0],
            "pid": [1],
            "tid": [2],
            "ts": [5],
            "dur": [3],
        }
    )
    got = host_thread_busy(events.lazy()).collect()
    assert got.height == 0
    assert got.columns == [*THREAD, "start", "end"]
    assert got.schema["node"] == pl.String


def test_constants_hand_checked() -> None:
    one = pl.DataFrame({"node": ["n", "n"], "rank": [0, 0], "tid": [1, 2]})
    other = pl.DataFrame({"node": ["m"], "rank": [0], "tid": [1]})
    nulls = pl.DataFrame({"node": [None, None], "rank": [None, 0], "tid": [1, 1]}, schema=one.schema)
    assert constants([one], ["node", "rank", "tid"]) == {"node": "n", "rank": 0}
    assert constants([one.lazy()], ["node", "rank", "tid"]) == {"node": "n", "rank": 0}  # lazy: computed
    assert constants([one, other], ["node", "rank", "tid"]) == {"rank": 0}  # one value each, not one value
    assert constants([nulls], ["node", "rank", "tid"]) == {"node": None, "tid": 1}  # all null is one value
    assert constants([one.head(0), other], ["node", "tid"]) == {"node": "m", "tid": 1}  # no rows: no value
    assert constants([one.head(0)], ["node"]) == {"node": None}
    assert constants([one], []) == {}
