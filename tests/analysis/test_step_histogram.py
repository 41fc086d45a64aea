"""Step-time histogram: bucket count (Freedman–Diaconis, capped) and counts, hand-checked."""

from __future__ import annotations

import polars as pl

from profui.analysis.steps import histogram_buckets, step_histogram, step_windows


def windows(durs: list[int], node: str = "n0", rank: int = 0) -> pl.DataFrame:
    return pl.DataFrame({"node": [node] * len(durs), "rank": [rank] * len(durs), "dur_ns": durs})


def test_hand_checked_freedman_diaconis() -> None:
    durs = [10, 11, 12, 13, 30, 100]
    # q1 = 11.25, q3 = 25.75 (linear), IQR 14.5; width 2·14.5·6^(-1/3) = 15.96; range 90 -> FD 6
    # buckets, but 6 steps get at most ceil(sqrt 6) + 1 = 4: edges 10 + floor(i·90/4)
    assert histogram_buckets(durs) == 4
    h = step_histogram(windows(durs))
    assert h["start_ns"].to_list() == [10, 32, 55, 77]
    assert h["end_ns"].to_list() == [32, 55, 77, 100]
    assert h["count"].to_list() == [5, 0, 0, 1]  # 100 (the max) falls in the last bucket


def test_equal_and_flat_and_capped() -> None:
    assert step_histogram(windows([7, 7, 7]))[["start_ns", "end_ns", "count"]].rows() == [(7, 7, 3)]
    # IQR 0 (all but one equal): Sturges, ceil(log2 8) + 1 = 4 buckets over [100, 200]
    h = step_histogram(windows([100] * 7 + [200]))
    assert h["count"].to_list() == [7, 0, 0, 1]
    assert h["start_ns"].to_list() == [100, 125, 150, 175]
    # one step far out (1..100 and 10^6: IQR 49.5, FD wants ~46,000 buckets): 101 steps get at
    # most ceil(sqrt 101) + 1 = 12 (under the cap of 20)
    many = step_histogram(windows([*range(1, 101), 1_000_000]))
    assert many.height == 12 and many["count"].to_list() == [100] + [0] * 10 + [1]
    assert many["end_ns"][0] == 1 + 999_999 // 12
    # and 500 steps reach the cap of 20
    assert histogram_buckets([*range(1, 500), 10**9]) == 20


def test_per_rank_and_real_trace(imported_trace) -> None:
    both = pl.concat([windows([1, 2, 3, 4]), windows([50, 60], rank=1)])
    h = step_histogram(both)
    assert h.group_by("rank").agg(pl.col("count").sum()).sort("rank").rows() == [(0, 4), (1, 2)]
    w = step_windows(imported_trace("nccl_parser_config-nccl_data").cached_events()).windows
    real = step_histogram(w)
    durs = w["dur_ns"].to_list()
    assert real["count"].sum() == len(durs)
    assert real["start_ns"].min() == min(durs) and real["end_ns"].max() == max(durs)
    for r in real.iter_rows(named=True):  # each count is the steps inside its bucket
        last = r["bucket"] == real["bucket"].max()
        inside = [d for d in durs if r["start_ns"] <= d and (d < r["end_ns"] or (last and d == r["end_ns"]))]
        assert r["count"] == len(inside)
