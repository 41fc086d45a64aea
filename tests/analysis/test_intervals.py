"""Interval mathematics: hand-checked cases, then hypothesis properties against a brute-force oracle.

Small synthetic intervals on purpose: these pin down the arithmetic, which real traces cannot
isolate (the real-trace numbers are tested in test_raw_stats / test_hta_agreement).
"""

from __future__ import annotations

import polars as pl
from hypothesis import given, settings
from hypothesis import strategies as st

from profui.analysis.intervals import (
    bucket_coverage,
    bucket_grid,
    clip_to_windows,
    gaps,
    label_coverage,
    merge_intervals,
    nice_bucket_ns,
    overlap_length,
    union_length,
)


def iv(rows: list[tuple[int, int]], **cols: list) -> pl.DataFrame:
    return pl.DataFrame(
        {"start": [r[0] for r in rows], "end": [r[1] for r in rows], **cols},
        schema_overrides={"start": pl.Int64, "end": pl.Int64},
    )


def test_merge_hand_checked() -> None:
    # [0,10) and [5,12) overlap, [12,15) touches, [20,25) is apart, [30,30) is empty
    df = iv([(5, 12), (0, 10), (12, 15), (20, 25), (30, 30)])
    out = merge_intervals(df).collect()
    assert out.rows() == [(0, 15), (20, 25)]
    assert union_length(df).collect().item() == 20
    assert gaps(df).collect().rows() == [(15, 20)]


def test_grouped_union_and_overlap_hand_checked() -> None:
    df = iv([(0, 10), (5, 12), (20, 25), (0, 2), (3, 4)], g=[1, 1, 1, 2, 2], lab=["a", "b", "a", "b", "b"])
    assert union_length(df, ["g"]).collect().sort("g").rows() == [(1, 17), (2, 3)]
    a, b = df.filter(pl.col("lab") == "a"), df.filter(pl.col("lab") == "b")
    assert overlap_length(a, b, ["g"]).collect().rows() == [(1, 5), (2, 0)]
    assert overlap_length(a, b).collect().item() == 5 + 2 + 1


def test_label_coverage_hand_checked() -> None:
    # comp [0,10), comm [5,15), mem [14,20): comp only 5, comp+comm 5, comm only 4, comm+mem 1, mem only 5
    df = iv([(0, 10), (5, 15), (14, 20)], t=["comp", "comm", "mem"])
    out = {
        tuple(r["labels"]): r["time_ns"]
        for r in label_coverage(df, "t", ["comp", "comm", "mem"]).collect().to_dicts()
    }
    assert out == {("comp",): 5, ("comp", "comm"): 5, ("comm",): 4, ("comm", "mem"): 1, ("mem",): 5}


def test_bucket_coverage_hand_checked() -> None:
    df = iv([(3, 17), (20, 21)])
    out = bucket_coverage(df, 5, 0).collect().rows()
    assert out == [(0, 2), (1, 5), (2, 5), (3, 2), (4, 1)]
    grid = bucket_grid(0, 21, 5).collect()
    assert grid["bucket_len"].to_list() == [5, 5, 5, 5, 1]


def test_nice_bucket() -> None:
    assert nice_bucket_ns(1_000_000, 100) == 10_000
    assert nice_bucket_ns(1_300_000, 100) == 20_000
    assert nice_bucket_ns(0) == 1


# --- properties -----------------------------------------------------------------------------

interval = st.tuples(st.integers(0, 60), st.integers(0, 25)).map(lambda t: (t[0], t[0] + t[1]))
rows = st.lists(st.tuples(interval, st.sampled_from(["x", "y", "z"]), st.integers(0, 2)), max_size=25)


def frame(data: list) -> pl.DataFrame:
    return iv([r[0] for r in data], lab=[r[1] for r in data], g=[r[2] for r in data]).cast(
        {"lab": pl.String, "g": pl.Int64}
    )


def covered(data: list, pred=lambda r: True) -> set[int]:
    return {t for r in data if pred(r) for t in range(r[0][0], r[0][1])}


@settings(max_examples=60, deadline=None)
@given(rows)
def test_union_matches_brute_force(data: list) -> None:
    df = frame(data)
    busy = union_length(df).collect().item()
    assert busy == len(covered(data))
    assert busy <= sum(e - s for (s, e), _, _ in data)  # busy ≤ sum of durations
    merged = merge_intervals(df).collect()
    assert union_length(merged).collect().item() == busy  # idempotent
    assert merged.rows() == merge_intervals(merged).collect().rows()
    if busy:
        lo, hi = merged["start"].min(), merged["end"].max()
        idle = sum(e - s for s, e in gaps(df).collect().rows())
        assert busy + idle == hi - lo  # busy + idle = span
        starts, ends = merged["start"].to_list(), merged["end"].to_list()
        assert all(ends[i] < starts[i + 1] for i in range(len(starts) - 1))  # disjoint, sorted


@settings(max_examples=60, deadline=None)
@given(rows)
def test_grouped_union_and_overlap_match_brute_force(data: list) -> None:
    df = frame(data)
    got = dict(union_length(df, ["g"]).collect().rows())
    for g in {r[2] for r in data}:
        assert got[g] == len(covered(data, lambda r, g=g: r[2] == g))
    a, b = df.filter(pl.col("lab") == "x"), df.filter(pl.col("lab") != "x")
    ov = overlap_length(a, b).collect().item()
    assert ov == len(covered(data, lambda r: r[1] == "x") & covered(data, lambda r: r[1] != "x"))


@settings(max_examples=60, deadline=None)
@given(rows)
def test_label_coverage_partitions_union(data: list) -> None:
    df = frame(data)
    cov = label_coverage(df, "lab", ["x", "y", "z"]).collect()
    assert cov["time_ns"].sum() == len(covered(data))  # exclusive shares sum to busy
    for r in cov.to_dicts():
        want = {
            t for t in range(0, 100) if {lab for (s, e), lab, _ in data if s <= t < e} == set(r["labels"])
        }
        assert r["time_ns"] == len(want)


@settings(max_examples=60, deadline=None)
@given(rows)
def test_grouped_label_coverage_matches_brute_force(data: list) -> None:
    """Per group, each combination's exclusive time is the instants where exactly those labels
    of the group run (the groups' rows interleave in time)."""
    df = frame(data)
    cov = label_coverage(df, "lab", ["x", "y", "z"], ["g"]).collect()
    for g in {r[2] for r in data}:
        mine = cov.filter(pl.col("g") == g)
        assert mine["time_ns"].sum() == len(covered(data, lambda r, g=g: r[2] == g))
        for r in mine.to_dicts():
            want = {
                t
                for t in range(0, 100)
                if {lab for (s, e), lab, grp in data if grp == g and s <= t < e} == set(r["labels"])
            }
            assert r["time_ns"] == len(want)


@settings(max_examples=60, deadline=None)
@given(rows, st.integers(1, 17), st.integers(-10, 10))
def test_bucket_shares_sum_to_busy(data: list, bucket: int, origin: int) -> None:
    df = frame(data)
    out = bucket_coverage(df, bucket, origin).collect()
    cov = covered(data)
    assert out["covered_ns"].sum() == len(cov)  # bucket shares sum to busy
    for k, c in out.rows():
        lo = origin + k * bucket
        assert c == len([t for t in cov if lo <= t < lo + bucket])
        assert 0 < c <= bucket


def brute_merge(points: set[int]) -> list[tuple[int, int]]:
    """Disjoint [start, end) runs of a set of covered unit cells."""
    out: list[tuple[int, int]] = []
    for t in sorted(points):
        if out and out[-1][1] == t:
            out[-1] = (out[-1][0], t + 1)
        else:
            out.append((t, t + 1))
    return out


@settings(max_examples=60, deadline=None)
@given(st.lists(st.tuples(interval, st.sampled_from(["x", "y", None]), st.integers(0, 2)), max_size=25))
def test_grouped_merge_matches_brute_force_with_null_keys(data: list) -> None:
    # two group columns, one a string with nulls: each group is merged on its own, null a group too
    df = frame([(r[0], r[1], r[2]) for r in data])
    out = merge_intervals(df, ["lab", "g"]).collect()
    assert out.columns == ["lab", "g", "start", "end"]
    assert out.rows() == out.sort(["lab", "g", "start"]).rows()  # sorted by the groups, then start
    for lab, g in {(r[1], r[2]) for r in data}:
        part = out.filter(pl.col("lab").eq_missing(lab), pl.col("g") == g)
        want = brute_merge(covered(data, lambda r, lab=lab, g=g: r[1] == lab and r[2] == g))
        assert part.select("start", "end").rows() == want


_span = st.tuples(st.integers(0, 60), st.integers(0, 25)).map(lambda t: (t[0], t[0] + t[1]))


@settings(max_examples=80, deadline=None)
@given(
    st.lists(st.tuples(_span, st.integers(0, 1)), max_size=25),
    st.lists(st.tuples(_span, st.integers(0, 1)), max_size=8),
)
def test_clip_to_windows_matches_brute_force(ivs: list, wins: list) -> None:
    """Every (interval, window) pair of one key that overlaps, cut to the window — windows that
    nest, overlap, repeat or are empty included — as a loop over all pairs finds them."""
    df = iv([r[0] for r in ivs], g=[r[1] for r in ivs], tag=list(range(len(ivs)))).cast(
        {"g": pl.Int64, "tag": pl.Int64}
    )
    w = pl.DataFrame(
        {
            "g": [r[1] for r in wins],
            "step": list(range(len(wins))),
            "w_start": [r[0][0] for r in wins],
            "w_end": [r[0][1] for r in wins],
        },
        schema={"g": pl.Int64, "step": pl.Int64, "w_start": pl.Int64, "w_end": pl.Int64},
    )
    got = sorted(clip_to_windows(df, w, ["g"]).select("tag", "g", "step", "start", "end").collect().rows())
    want = sorted(
        (tag, g, step, max(s, ws), min(e, we))
        for tag, ((s, e), g) in enumerate(ivs)
        for step, ((ws, we), wg) in enumerate(wins)
        if wg == g and s < we and e > ws
    )
    assert got == want
