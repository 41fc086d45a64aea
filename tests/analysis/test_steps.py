"""Steps: windows from ProfilerStep markers mapped to the device; traces without markers."""

from __future__ import annotations

import polars as pl
import pytest

from profui.analysis.steps import step_breakdown, step_outliers, step_stats, step_windows

from realdata import hta_reference


def test_nccl_steps_mapped_to_device(imported_trace) -> None:
    t = imported_trace("nccl_parser_config-nccl_data")
    s = t.steps()
    assert s.has_markers and s.windows["step"].to_list() == [4, 5, 6]
    raw = next(iter(hta_reference("hta-nccl_parser_config-nccl_data")["independent_raw_stats"].values()))
    assert s.windows["cpu_dur_ns"].to_list() == [round(p["dur_us"] * 1000) for p in raw["profiler_steps"]]
    w = s.windows
    assert w["mapped"].all()
    # the device window starts at the step's first launch and ends after it, within the trace
    assert (w["start_ns"] >= w["cpu_start_ns"]).all() and (w["start_ns"] < w["cpu_end_ns"]).all()
    assert (w["end_ns"] > w["start_ns"]).all()
    ev = t.cached_events()
    first_launch = (
        ev.filter(
            pl.col("kind") == "runtime",
            pl.col("ts") >= w["cpu_start_ns"][0],
            pl.col("ts") < w["cpu_end_ns"][0],
        )
        .select(pl.col("ts").min())
        .collect()
        .item()
    )
    assert w["start_ns"][0] == first_launch
    stats = step_stats(w).collect().row(0, named=True)
    assert stats["count"] == 3 and stats["min_ns"] <= stats["p50_ns"] <= stats["max_ns"]
    bd = step_breakdown(ev, s.windows).collect()
    assert (bd["busy_ns"] + bd["idle_ns"] == bd["dur_ns"]).all()
    assert (bd["computation_ns"] <= bd["busy_ns"]).all()


def test_no_markers_gives_one_window_and_says_so(imported_trace) -> None:
    t = imported_trace("critical_path-simple_add-benchmark_result_493459_1694039959_trace")
    s = t.steps()
    assert not s.has_markers and "no step markers" in s.note
    assert s.windows.height == 1
    w = s.windows.row(0, named=True)
    ev = t.cached_events().collect()
    assert w["cpu_start_ns"] == ev["ts"].min() and w["cpu_end_ns"] == (ev["ts"] + ev["dur"]).max()
    assert w["mapped"] and w["n_device_events"] > 0
    assert s.to_json_dict()["has_markers"] is False


def test_multirank_steps_per_rank(imported_trace) -> None:
    t = imported_trace("trace_filter-sampled_rank-0", "trace_filter-sampled_rank-1")
    w = t.steps().windows
    assert w.select("rank", "step").rows() == [(0, 551), (0, 552), (1, 551), (1, 552)]


def test_outliers_hand_checked() -> None:
    w = pl.DataFrame({"node": ["n"] * 6, "rank": [0] * 6, "dur_ns": [100, 101, 99, 100, 102, 180]})
    out = step_outliers(w).collect()
    assert out["outlier"].to_list() == [False] * 5 + [True]
    assert out["vs_rank_median"][5] == pytest.approx(180 / 100.5)
    few = step_outliers(w.head(3)).collect()
    assert not few["outlier"].any()  # too few steps to judge


def test_step_numbers_from_names(make_events) -> None:
    ev = make_events(
        [
            {"ts": 0, "dur": 100, "kind": "step", "name": "ProfilerStep#7"},
            {"ts": 100, "dur": 50, "kind": "step", "name": "ProfilerStep#8"},
            {"ts": 10, "dur": 5, "kind": "runtime", "correlation": 1},
            {"ts": 20, "dur": 30, "kind": "kernel", "correlation": 1, "device": 0, "stream": 7},
            {
                "ts": 200,
                "dur": 30,
                "kind": "kernel",
                "correlation": 99,
                "device": 0,
                "stream": 7,
            },  # unlaunched
        ]
    )
    s = step_windows(ev)
    assert s.windows.select("step", "start_ns", "end_ns", "mapped").rows() == [
        (7, 10, 50, True),
        (8, 100, 150, False),
    ]
