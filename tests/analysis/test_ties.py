"""Device events that start at the same ns (µs-rounded traces): idle gaps and launch latency
follow the stated tie rules (idle.DEVICE_ORDER, launch.TIE_ORDER), so their tables are a
function of the events and not of the rows' order. Oracles are worked out by hand."""

from __future__ import annotations

import random

import polars as pl
from eventrows import events_frame, kernel

from profui.analysis.idle import gaps_of, host_calls, idle_breakdown, idle_intervals
from profui.analysis.launch import kernel_launches


def call(ts, corr, name="cudaLaunchKernel", dur=10):
    return {"ts": ts, "dur": dur, "kind": "runtime", "name": name, "correlation": corr, "tid": 3}


# A ends at 100; then a gap; b (corr 3, launched at 50, before A ended) and c (corr 2,
# launched at 500, after A ended) both start at 1000.
TIED = [
    call(-50, 1),
    kernel(0, 100, 1, "a"),
    call(50, 3),
    call(500, 2),
    kernel(1000, 200, 3, "b"),
    kernel(1000, 100, 2, "c"),
]


def test_tied_starts_the_lowest_correlation_follows_the_gap():
    # rule: at equal ts the lower correlation id (2: c) comes first, so the gap 100 -> 1000
    # is c's; c's launch (500) came after the stream's work ended (100): host_wait. b then
    # starts before c's end (1100): no gap of its own.
    for rows in (TIED, TIED[::-1]):
        got = idle_intervals(events_frame(rows)).collect()
        assert got.select("start", "end", "idle_ns", "category", "name").rows() == [
            (100, 1000, 900, "host_wait", "c")
        ]


def test_tied_starts_hta_previous_end():
    # HTA's rule (previous event's end, every gap): c after a (900, host_wait), then b after
    # c's end 1100: -100, its launch (50) before that end, under 30 µs: kernel_wait.
    for rows in (TIED, TIED[::-1]):
        ev = events_frame(rows)
        dev = ev.filter(pl.col("kind") == "kernel")
        got = gaps_of(dev, host_calls(ev), after_all_earlier=False).collect()
        assert got.select("start", "end", "idle_ns", "category", "name").rows() == [
            (100, 1000, 900, "host_wait", "c"),
            (1100, 1000, -100, "kernel_wait", "b"),
        ]


def test_tied_starts_without_correlation_shorter_then_name_first():
    # no correlation ids: at equal ts the shorter event first, of equal durations the name;
    # no launch, a gap under 30 µs: kernel_wait
    rows = [
        kernel(0, 100, None, "a"),
        kernel(1000, 300, None, "long"),
        kernel(1000, 50, None, "z"),
        kernel(1000, 50, None, "y"),
    ]
    for order in (rows, rows[::-1]):
        got = idle_intervals(events_frame(order)).collect()
        assert got.select("start", "end", "category", "name").rows() == [(100, 1000, "kernel_wait", "y")]


def _shuffles(rows: list[dict], n: int = 12) -> list[list[dict]]:
    rng = random.Random(7)
    out = [rows, rows[::-1]]
    for _ in range(n):
        out.append(rng.sample(rows, len(rows)))
    return out


def _tie_heavy() -> list[dict]:
    """µs-rounded kernels on two streams, many starting together, some launched late, and a
    graph launch whose events tie."""
    rng = random.Random(1)
    rows, corr = [], 0
    for stream in (1, 2):
        for _ in range(40):
            corr += 1
            ts = rng.randrange(0, 60) * 1000
            rows.append(call(ts - rng.randrange(0, 3) * 1000, corr))
            rows.append(kernel(ts, rng.randrange(0, 3) * 1000, corr, f"k{rng.randrange(3)}", stream))
    rows.append(call(0, 999, name="cudaGraphLaunch"))
    for name, dur in (("g1", 2000), ("g0", 2000), ("g2", 1000)):
        rows.append(kernel(70_000, dur, 999, name, 1))
    return rows


def test_idle_tables_do_not_depend_on_row_order():
    tables = [
        (idle_intervals(events_frame(rows)).collect(), idle_breakdown(events_frame(rows)).collect())
        for rows in _shuffles(_tie_heavy())
    ]
    for gaps, breakdown in tables[1:]:
        assert gaps.equals(tables[0][0])
        assert breakdown.equals(tables[0][1])


def test_launch_table_does_not_depend_on_row_order():
    tables = [kernel_launches(events_frame(rows)).collect() for rows in _shuffles(_tie_heavy())]
    for t in tables[1:]:
        assert t.equals(tables[0])


def test_graph_launch_tied_first_event_by_rule():
    # a graph launch (call 0..10) whose events start together at 100: by duration, then name,
    # the first is x (20, "x" < "y"); only it measures the launch: latency 100, delay 90
    rows = [
        call(0, 5, name="cudaGraphLaunch"),
        kernel(100, 50, 5, "z"),
        kernel(100, 20, 5, "y"),
        kernel(100, 20, 5, "x", stream=2),
        kernel(200, 5, 5, "w"),
    ]
    for order in _shuffles(rows, 6):
        got = kernel_launches(events_frame(order)).collect()
        assert got.select("name", "launch_latency", "launch_delay").rows() == [
            ("x", 100, 90),
            ("y", None, None),
            ("z", None, None),
            ("w", None, None),
        ]
