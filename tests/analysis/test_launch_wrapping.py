"""``launch._last_wrapping``, the search behind each launch's innermost wrapping op, against a
plain-Python scan of every candidate (random groups of short and long spans; ``deepest_ops``
calls it with one op at least)."""

from __future__ import annotations

import random

import polars as pl
import pytest

from profui.analysis.launch import _last_wrapping


def _scan(op_end: list[int], start: list[int], cur: list[int], e: list[int]) -> list[int]:
    """The largest ``i`` in ``[start, cur)`` with ``op_end[i] >= e``, else -1: every index looked at."""
    out = []
    for s, c, x in zip(start, cur, e, strict=True):
        out.append(next((i for i in range(c - 1, s - 1, -1) if op_end[i] >= x), -1))
    return out


@pytest.mark.parametrize("seed", range(40))
def test_the_search_finds_what_a_scan_of_every_candidate_finds(seed: int) -> None:
    rng = random.Random(seed)
    op_end, start, cur, e = [], [], [], []
    for _ in range(rng.randint(1, 6)):
        first, n = len(op_end), rng.randint(0 if op_end else 1, rng.choice([3, 40, 700]))
        # a long span now and then: a query far from the op that wraps it needs the high levels
        op_end += [rng.choice([rng.randint(0, 100), rng.randint(0, 10_000)]) for _ in range(n)]
        for _ in range(rng.randint(0, 60)):
            start.append(first)
            cur.append(rng.randint(first, first + n))
            e.append(rng.randint(0, 10_000))
    got = _last_wrapping(
        pl.Series(op_end, dtype=pl.Int64),
        pl.Series(start, dtype=pl.Int64),
        pl.Series(cur, dtype=pl.Int64),
        pl.Series(e, dtype=pl.Int64),
    )
    assert got.to_list() == _scan(op_end, start, cur, e)
