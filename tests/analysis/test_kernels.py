"""Kernel breakdown: per-name statistics, top-N, kernel types and the by-type breakdown."""

from __future__ import annotations

import polars as pl
import pytest

from profui.analysis.busy import gpu_busy
from profui.analysis.kernels import kernel_stats, kernel_type_breakdown, kernel_type_totals, top_kernels


def k(ts, dur, name, kind="kernel", device=0) -> dict:
    return {"ts": ts, "dur": dur, "kind": kind, "name": name, "device": device, "stream": 7}


def test_stats_hand_checked(make_events) -> None:
    ev = make_events(
        [
            k(0, 1, "a"),
            k(10, 2, "a"),
            k(20, 3, "a"),
            k(30, 4, "a"),
            k(40, 10, "ncclKernel_x"),
            k(60, 5, "Memcpy DtoD", kind="memcpy"),
        ]
    )
    s = {r["name"]: r for r in kernel_stats(ev).collect().to_dicts()}
    assert set(s) == {"a", "ncclKernel_x"}  # real kernels only by default
    a = s["a"]
    assert (a["count"], a["total_ns"], a["min_ns"], a["max_ns"], a["mean_ns"], a["p50_ns"]) == (
        4,
        10,
        1,
        4,
        2.5,
        2.5,
    )
    assert a["std_ns"] == pytest.approx((5 / 3) ** 0.5)  # sample std of 1..4
    assert a["p95_ns"] == pytest.approx(3.85)
    assert a["share"] == 0.5 and s["ncclKernel_x"]["kernel_type"] == "COMMUNICATION"
    assert a["kernel_type"] == "COMPUTATION"
    with_mem = kernel_stats(ev, kinds=("kernel", "memcpy", "memset")).collect()
    assert with_mem.filter(pl.col("name") == "Memcpy DtoD")["kernel_type"].item() == "MEMORY"


def test_type_breakdown_hand_checked(make_events) -> None:
    ev = make_events(
        [k(0, 10, "gemm"), k(5, 10, "ncclKernel_AllReduce"), k(14, 6, "Memset (Device)", kind="memset")]
    )
    rows = {r["kernel_type"]: r["time_ns"] for r in kernel_type_breakdown(ev).collect().to_dicts()}
    assert rows == {
        "COMPUTATION": 5,
        "COMPUTATION overlapping COMMUNICATION": 5,
        "COMMUNICATION": 4,
        "COMMUNICATION overlapping MEMORY": 1,
        "MEMORY": 5,
    }
    tot = {
        r["kernel_type"]: (r["sum_dur_ns"], r["busy_ns"]) for r in kernel_type_totals(ev).collect().to_dicts()
    }
    assert tot == {"COMPUTATION": (10, 10), "COMMUNICATION": (10, 10), "MEMORY": (6, 6)}


@pytest.mark.parametrize("name", ["nccl_parser_config-nccl_data", "df_index_resolver-df_index_resolver"])
def test_real_trace_consistency(imported_trace, name) -> None:
    t = imported_trace(name)
    ev = t.cached_events()
    s = kernel_stats(ev).collect()
    kernels = ev.filter(pl.col("kind") == "kernel")
    assert s["count"].sum() == kernels.select(pl.len()).collect().item()
    assert s["total_ns"].sum() == kernels.select(pl.col("dur").sum()).collect().item()
    assert s["share"].sum() == pytest.approx(1.0)
    assert (
        (s["min_ns"] <= s["p50_ns"]).all()
        and (s["p50_ns"] <= s["p95_ns"]).all()
        and (s["p95_ns"] <= s["max_ns"]).all()
    )
    assert s["total_ns"].is_sorted(descending=True)
    # top-N by time and by count keep the total in an "(other)" row
    for by in ("total_ns", "count"):
        top = top_kernels(s, 15, by).collect()
        assert top.height == 16 and top["name"][-1] == "(other)"
        assert top["total_ns"].sum() == s["total_ns"].sum() and top["count"].sum() == s["count"].sum()
        assert top[by][:15].is_sorted(descending=True)
        assert top[by][:15].min() >= s.sort(by, descending=True)[by][15]
    # the exclusive by-type rows add up to the busy time of the device work
    bd = kernel_type_breakdown(ev).collect()
    assert bd["time_ns"].sum() == gpu_busy(ev).collect()["busy_ns"].sum()
    assert bd["share"].sum() == pytest.approx(1.0)


def test_top_kernels_per_rank(imported_trace) -> None:
    t = imported_trace("trace_filter-sampled_rank-0", "trace_filter-sampled_rank-1")
    s = kernel_stats(t.cached_events(), by=("rank",)).collect()
    top = top_kernels(s, 3, group=("rank",)).collect()
    assert top.group_by("rank").len().sort("rank")["len"].to_list() == [4, 4]
    for rank in (0, 1):
        assert (
            top.filter(pl.col("rank") == rank)["total_ns"].sum()
            == s.filter(pl.col("rank") == rank)["total_ns"].sum()
        )
    assert s.group_by("rank").agg(pl.col("share").sum())["share"].to_list() == pytest.approx([1.0, 1.0])


def test_top_kernels_of_a_trace_without_kernels_is_empty() -> None:
    # CPU-only traces: no "(other)" row of zeros
    empty = pl.DataFrame(
        schema={
            "name": pl.String,
            "kernel_type": pl.String,
            "count": pl.UInt32,
            "total_ns": pl.Int64,
            "min_ns": pl.Int64,
            "max_ns": pl.Int64,
            "share": pl.Float64,
        }
    )
    for by in ("total_ns", "count"):
        assert top_kernels(empty, 15, by).collect().height == 0
