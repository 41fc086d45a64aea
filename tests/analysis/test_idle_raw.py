"""Idle gaps, queue length and time blocked on real traces against a plain-Python computation
from the trace's events: one stream (no stream key tells rows apart), two streams of one rank,
two ranks, and device work some of whose launch calls were not recorded (the gaps then found by
a join, not read off the correlate stage's links)."""

from __future__ import annotations

from collections import defaultdict

import pytest

from profui.analysis.idle import (
    KERNEL_WAIT_NS,
    blocked_on_full_queue,
    idle_breakdown,
    queue_length,
    queue_stats,
)
from profui.analysis.launch import LAUNCH_KINDS, LAUNCHED_KINDS, kernel_launches

KEYS = ("node", "rank", "device", "stream")

TRACES = [
    ("ns_resolution_trace-rank-0.Apr_03_18_51_38.1102.pt.trace",),
    ("df_index_resolver-df_index_resolver",),
    ("trace_filter-sampled_rank-0", "trace_filter-sampled_rank-1"),
    ("negative_queue_length_values_check-rank0",),
]


def _raw(rows: list[dict]) -> tuple[dict[tuple, list[dict]], dict[tuple, int]]:
    """Device work per stream, and each (node, rank, correlation)'s earliest launch call."""
    calls: dict[tuple, int] = {}
    streams: dict[tuple, list[dict]] = defaultdict(list)
    for r in rows:
        if r["kind"] in LAUNCH_KINDS and r["correlation"] is not None:
            key = (r["node"], r["rank"], r["correlation"])
            calls[key] = min(calls.get(key, r["ts"]), r["ts"])
        elif r["kind"] in LAUNCHED_KINDS:
            streams[tuple(r[c] for c in KEYS)].append(r)
    return streams, calls


def _raw_gaps(work: list[dict], calls: dict[tuple, int]) -> dict[str, list[int]]:
    """A stream's gaps by category: in start order (ties: correlation, duration, name), each
    gap from the end of all earlier work to the next start, positive ones only."""
    order = sorted(
        work,
        key=lambda r: (r["ts"], r["correlation"] is None, r["correlation"] or 0, r["dur"], r["name"]),
    )
    gaps: dict[str, list[int]] = defaultdict(list)
    done = None
    for r in order:
        if done is not None and r["ts"] > done:
            launch = calls.get((r["node"], r["rank"], r["correlation"]))
            if launch is not None and launch > done:
                gaps["host_wait"].append(r["ts"] - done)
            elif r["ts"] - done < KERNEL_WAIT_NS:
                gaps["kernel_wait"].append(r["ts"] - done)
            else:
                gaps["other"].append(r["ts"] - done)
        done = r["ts"] + r["dur"] if done is None else max(done, r["ts"] + r["dur"])
    return gaps


def _raw_queue(work: list[dict], calls: dict[tuple, int]) -> list[tuple[int, int]]:
    """A stream's (time, queue length) after each change: +1 at the launch call, -1 when its
    work ends, launches first at one time."""
    changes = []
    for r in work:
        launch = calls.get((r["node"], r["rank"], r["correlation"]))
        if r["correlation"] is not None and launch is not None:
            changes += [(launch, 1), (r["ts"] + r["dur"], -1)]
    length, out = 0, []
    for ts, delta in sorted(changes, key=lambda c: (c[0], -c[1])):
        length += delta
        out.append((ts, length))
    return out


@pytest.mark.parametrize("names", TRACES)
def test_idle_and_queue_equal_a_raw_computation(imported_trace, names):
    ev = imported_trace(*names).events()
    streams, calls = _raw(ev.collect().to_dicts())
    launches = kernel_launches(ev).collect()
    missing = sum(len(w) for w in streams.values()) - launches.height
    # the cases: one stream, two of one rank, two ranks, device work without its launch call
    shape = (len(streams), len({k[:2] for k in streams}), missing)
    assert (
        shape
        == {
            "ns_resolution_trace-rank-0.Apr_03_18_51_38.1102.pt.trace": (1, 1, 0),
            "df_index_resolver-df_index_resolver": (2, 1, 0),
            "trace_filter-sampled_rank-0": (10, 2, 0),
            "negative_queue_length_values_check-rank0": (6, 1, 7747 - 6875),
        }[names[0]]
    )

    for fed in (None, launches):
        breakdown = idle_breakdown(ev, launches=fed).collect()
        assert breakdown.height == 3 * len(streams)
        for row in breakdown.iter_rows(named=True):
            gaps = _raw_gaps(streams[tuple(row[c] for c in KEYS)], calls)[row["category"]]
            assert (row["idle_ns"], row["count"]) == (sum(gaps), len(gaps)), row
            assert (row["min_ns"], row["max_ns"]) == ((min(gaps), max(gaps)) if gaps else (None, None))

    queue = queue_length(ev, launches).collect()
    stats = queue_stats(queue.lazy()).collect()
    raw = {k: _raw_queue(w, calls) for k, w in streams.items()}
    raw = {k: q for k, q in raw.items() if q}
    assert sorted(tuple(r[c] for c in KEYS) for r in stats.iter_rows(named=True)) == sorted(raw)
    for row in stats.iter_rows(named=True):
        q = raw[tuple(row[c] for c in KEYS)]
        values = [v for _, v in q]
        span = q[-1][0] - q[0][0]
        weighted = sum(v * (q[i + 1][0] - t) for i, (t, v) in enumerate(q[:-1]))
        assert (row["count"], row["min"], row["max"]) == (len(values), min(values), max(values))
        assert row["mean"] == pytest.approx(sum(values) / len(values), rel=1e-12)
        assert row["time_mean"] == (pytest.approx(weighted / span, rel=1e-12) if span > 0 else None)

    # blocked at the longest queue any stream reached: the time each stream stayed that long
    limit = max(v for q in raw.values() for _, v in q)
    blocked = blocked_on_full_queue(ev, limit, queue=queue.lazy()).collect()
    expect = {
        k: sum(q[i + 1][0] - t if i + 1 < len(q) else 0 for i, (t, v) in enumerate(q) if v >= limit)
        for k, q in raw.items()
        if max(v for _, v in q) >= limit
    }
    got = {tuple(r[c] for c in KEYS): r["blocked_ns"] for r in blocked.iter_rows(named=True)}
    assert got == expect and expect
