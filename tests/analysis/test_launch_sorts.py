"""The launch analysis' shortcuts against plain Python: the packed descending sort of the
outliers, the keys that vary, the per-rank statistics of a one-rank trace, and op instances
alike in their keys but not in their rows."""

from __future__ import annotations

import random
import statistics

import polars as pl
import pytest
from eventrows import events_frame

from profui.analysis.keys import varying
from profui.analysis.launch import aten_op_kernels, kernel_launches, launch_stats, sort_descending

from realdata import SAMPLES


def _descending_order(a: list[int | None], b: list[int | None]) -> list[int]:
    """Row indices by ``a`` then ``b``, each descending with nulls first, ties in row order."""

    def key(v: int | None) -> tuple[int, int]:
        return (0, 0) if v is None else (1, -v)

    return sorted(range(len(a)), key=lambda i: (key(a[i]), key(b[i])))


@pytest.mark.parametrize(
    ("lo", "hi"),
    [(-5, 5), (0, 10**9), (-(2**62), 2**62)],  # the last: ranges too wide to pack, sorted by columns
)
def test_sort_descending_against_python(lo: int, hi: int) -> None:
    rng = random.Random(7)
    n = 2_000
    a = [None if rng.random() < 0.1 else rng.choice([lo, hi, rng.randint(lo, hi)]) for _ in range(n)]
    b = [None if rng.random() < 0.1 else rng.randint(lo, lo + 3) for _ in range(n)]
    rows = pl.DataFrame(
        {"a": a, "b": b, "i": list(range(n))}, schema={"a": pl.Int64, "b": pl.Int64, "i": pl.Int64}
    )
    got = sort_descending(rows, ["a", "b"]).collect()
    assert got["i"].to_list() == _descending_order(a, b)
    assert got.columns == ["a", "b", "i"]


def test_sort_descending_all_null_and_empty() -> None:
    rows = pl.DataFrame({"a": [None, None, None], "b": [1, 3, 2]}, schema={"a": pl.Int64, "b": pl.Int64})
    assert sort_descending(rows, ["a", "b"]).collect()["b"].to_list() == [3, 2, 1]
    assert sort_descending(rows.head(0), ["a", "b"]).collect().height == 0


def test_varying_hand_checked() -> None:
    one = pl.DataFrame({"node": ["n", "n"], "rank": [0, 0], "tid": [1, 2]})
    other = pl.DataFrame({"node": ["m"], "rank": [0], "tid": [1]})
    nulls = pl.DataFrame({"node": [None, None], "rank": [None, 0], "tid": [1, 1]}, schema=one.schema)
    assert varying([one], ["node", "rank", "tid"]) == ["tid"]
    assert varying([one, other], ["node", "rank", "tid"]) == ["node", "tid"]  # one value each, not one value
    assert varying([nulls], ["node", "rank", "tid"]) == ["rank"]  # all null is one value; null and 0 two
    assert varying([one.head(0), other], ["node", "rank", "tid"]) == []  # an empty frame holds no value
    assert varying([one], []) == []


def _linear_quantile(values: list[int], q: float) -> float:
    s = sorted(values)
    pos = q * (len(s) - 1)
    i = int(pos)
    return s[i] + (s[min(i + 1, len(s) - 1)] - s[i]) * (pos - i)


@pytest.mark.parametrize(
    ("name", "split"),
    [
        ("trace_filter-sampled_rank-0", []),  # one rank: no group-by, node and rank beside
        ("synthetic_gpu", ["node", "rank"]),  # the bundled sample: 2 nodes x 2 ranks
    ],
)
def test_launch_stats_against_python(imported_trace, name: str, split: list[str]) -> None:
    """Each rank's row against the statistics computed in Python from its launch rows."""
    from profui.analysis import open_trace

    t = open_trace(SAMPLES / name) if name == "synthetic_gpu" else imported_trace(name)
    launches = kernel_launches(t.cached_events()).collect()
    assert varying([launches], ["node", "rank"]) == split
    got = launch_stats(launches.lazy()).collect()
    ranks = sorted(set(launches.select("node", "rank").rows()))
    assert got.select("node", "rank").rows() == ranks
    for row in got.iter_rows(named=True):
        mine = launches.filter(pl.col("node") == row["node"], pl.col("rank") == row["rank"])
        assert row["launches"] == mine.height
        assert row["launch_bound"] == sum(mine["launch_bound"].to_list())
        for col, out in (("launch_dur", "cpu"), ("dur", "gpu"), ("launch_delay", "delay")):
            values = [v for v in mine[col].to_list() if v is not None]
            assert row[f"{out}_sum_ns"] == sum(values)
            assert (row[f"{out}_min_ns"], row[f"{out}_max_ns"]) == (min(values), max(values))
            assert row[f"{out}_mean_ns"] == pytest.approx(statistics.fmean(values), rel=1e-12)
            for q, p in ((0.5, "p50"), (0.9, "p90"), (0.99, "p99")):
                assert row[f"{out}_{p}_ns"] == pytest.approx(_linear_quantile(values, q), rel=1e-12)


def test_launch_stats_of_two_ranks_groups_by_rank() -> None:
    """Two ranks: one row each, the counts of each rank's launch rows."""
    rows = [
        {
            "ts": 0,
            "dur": 5,
            "kind": "runtime",
            "name": "cudaLaunchKernel",
            "correlation": 1,
            "rank": r,
            "tid": 1,
        }
        for r in (0, 1)
    ] + [
        {
            "ts": 10 + r,
            "dur": 2,
            "kind": "kernel",
            "name": "k",
            "correlation": 1,
            "rank": r,
            "device": 0,
            "stream": 7,
        }
        for r in (0, 1)
    ]
    got = launch_stats(kernel_launches(events_frame(rows, node="n"))).collect()
    assert got.select("node", "rank", "launches", "delay_sum_ns").rows() == [("n", 0, 1, 5), ("n", 1, 1, 6)]


def test_alike_ops_are_one_instance() -> None:
    """Two aten::mm ops of one thread start at 100 µs and differ in end (200, 300 µs): a launch
    at 120 goes to the shorter, one at 250 to the longer only. Alike in node, rank, thread,
    name and start they are one op instance: one row, K1 then K2, the first launch's delays."""
    rows = [
        {"ts": 100_000, "dur": 200_000, "kind": "cpu_op", "name": "aten::mm", "tid": 1, "rank": 0},
        {"ts": 100_000, "dur": 100_000, "kind": "cpu_op", "name": "aten::mm", "tid": 1, "rank": 0},
        {"ts": 120_000, "dur": 5_000, "kind": "runtime", "name": "cudaLaunchKernel", "correlation": 1, "tid": 1, "rank": 0},
        {"ts": 250_000, "dur": 5_000, "kind": "runtime", "name": "cudaLaunchKernel", "correlation": 2, "tid": 1, "rank": 0},
        {"ts": 130_000, "dur": 1_000, "kind": "kernel", "name": "K1", "correlation": 1, "rank": 0, "device": 0, "stream": 7},
        {"ts": 260_000, "dur": 1_000, "kind": "kernel", "name": "K2", "correlation": 2, "rank": 0, "device": 0, "stream": 7},
    ]  # fmt: skip
    got = aten_op_kernels(events_frame(rows, node="n")).collect()
    assert got.select(
        "aten_op", "kernel_sequence", "count", "mean_aten_op_delay_ns", "mean_runtime_delay_ns"
    ).rows() == [("aten::mm", "K1 -> K2", 1, 20_000, 10_000)]
