"""The identity rule (``capture/format/jobs.py``) on hand-made parts, for the shapes the shared
corpus lacks: job ids (only profcap writes them), world sizes and backends that disagree while
the times overlap, a running capture, a chain of overlaps. Each expected grouping is worked out
by hand in its comment; the real traces are in ``test_jobs_import.py``."""

from __future__ import annotations

from profui.capture.format.jobs import Part, group_jobs, not_one_job, why_apart

S = 1_000_000_000
DAY = 86_400 * S
T0 = 1_700_000_000 * S  # 2023-11-14 22:13:20 UTC


def part(label: str, start: int, end: int | None, **kw) -> Part:
    return Part(label=label, start_ns=T0 + start, end_ns=None if end is None else T0 + end, **kw)


def test_job_ids_decide_alone() -> None:
    # the same id a day apart: one job (a capture knows); different ids at the same time: two
    a = part("a", 0, S, job_id="x")
    assert why_apart(a, part("b", DAY, DAY + S, job_id="x")) is None
    assert why_apart(a, part("c", 0, S, job_id="y")) == "different job ids: x vs y"


def test_overlap_joins_and_stated_facts_separate() -> None:
    a = part("a", 0, 10 * S, host="h1", world_size=2, backend="nccl", ranks=frozenset({0}))
    assert why_apart(a, part("b", 5 * S, 20 * S, host="h2", world_size=2, ranks=frozenset({1}))) is None
    assert why_apart(a, part("c", 5 * S, 6 * S, world_size=4)) == "world sizes 2 vs 4"
    assert why_apart(a, part("d", 5 * S, 6 * S, backend="gloo")) == "backends nccl vs gloo"
    assert (
        why_apart(a, part("e", 11 * S, 12 * S))
        == "no overlap in time: 2023-11-14 22:13:20 vs 2023-11-14 22:13:31"
    )
    assert (
        why_apart(a, part("f", DAY, DAY + S, host="h9"))
        == "different hosts, no overlap in time: 2023-11-14 vs 2023-11-15"
    )


def test_a_running_capture_is_open_ended() -> None:
    assert why_apart(part("live", 0, None), part("later", DAY, DAY + S)) is None


def test_groups_are_connected_and_the_largest_comes_first() -> None:
    # a-b overlap, b-c overlap (a chain: one job of three); d alone, later
    parts = [part("a", 0, 2 * S), part("d", DAY, DAY + S), part("b", S, 4 * S), part("c", 3 * S, 5 * S)]
    groups = group_jobs(parts)
    assert groups == [[0, 2, 3], [1]]
    err = not_one_job(parts, groups, "do X", "d")
    assert str(err) == "d: not one job with a, b, c (no overlap in time: 2023-11-15 vs 2023-11-14); do X"
    assert err.labels == ["d"]
