"""Column headers come from column names, the unit dropped (the cells carry it); a time column
beside the column its header would repeat is that column's "time": the Comm view's straggler
table read ``cause  cause`` for ``cause`` (the class) and ``cause_ns`` (its extra time)."""

from __future__ import annotations

from profui.tui.widgets.frame_table import header_of

STRAGGLERS = ["step", "straggler_rank", "lateness_ns", "wait_ns", "cause", "cause_ns", "recurs", "ranks"]


def test_headers_drop_units() -> None:
    assert [header_of(c) for c in ("total_ns", "algbw_gbps", "launch_count", "saved_ns_per_step")] == [
        "total",
        "algbw",
        "launch count",
        "saved per step",
    ]


def test_a_time_column_beside_its_namesake_is_its_time() -> None:
    headers = [header_of(c, STRAGGLERS) for c in STRAGGLERS]
    assert headers == ["step", "straggler rank", "lateness", "wait", "cause", "cause time", "recurs", "ranks"]
    assert header_of("cause_ns") == "cause"  # alone, the unit goes as anywhere
