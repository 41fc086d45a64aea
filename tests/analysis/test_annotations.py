"""Annotations: names, HTA-style breakdown and time per step; hand-checked, then real traces vs HTA."""

from __future__ import annotations

import polars as pl
import pytest
from eventrows import events_frame

from profui.analysis.annotations import annotation_breakdown, annotation_names, annotation_per_step
from profui.analysis.hta_variants import hta_annotation_breakdown

from realdata import hta_reference


def ev(rows: list[dict]) -> pl.LazyFrame:
    return events_frame(rows, node="n")


def a(ts, dur, name, kind="annotation"):
    return {"ts": ts, "dur": dur, "kind": kind, "name": name, "device": 0 if kind == "gpu_annotation" else -1}


SMALL = [
    {"ts": 0, "dur": 1000, "kind": "step", "name": "ProfilerStep#1"},
    {"ts": 1000, "dur": 1000, "kind": "step", "name": "ProfilerStep#2"},
    a(100, 300, "fwd"),
    a(200, 100, "fwd"),  # nested in itself: 300 ns in step 1, not 400
    a(900, 300, "bwd"),  # crosses steps: 100 in step 1, 200 in step 2
    a(1100, 200, "fwd"),
    a(150, 500, "fwd", kind="gpu_annotation"),
]
WINDOWS = pl.LazyFrame(
    {"node": ["n", "n"], "rank": [0, 0], "step": [1, 2], "start": [0, 1000], "end": [1000, 2000]}
)


def test_names_and_breakdown():
    names = annotation_names(ev(SMALL)).collect()
    assert names.select("side", "name", "count", "total_ns").rows() == [
        ("cpu", "fwd", 3, 600),
        ("gpu", "fwd", 1, 500),
        ("cpu", "bwd", 1, 300),
    ]
    b = annotation_breakdown(ev(SMALL)).collect()
    fwd = b.filter((pl.col("side") == "cpu") & (pl.col("name") == "fwd")).row(0, named=True)
    assert (fwd["count"], fwd["sum_ns"], fwd["max_ns"], fwd["min_ns"]) == (3, 600, 300, 100)
    assert fwd["std_ns"] == pytest.approx(100.0)
    assert b.filter(pl.col("name") == "bwd")["std_ns"].item() == 0.0
    hb = annotation_breakdown(ev(SMALL), include_steps=True).collect()
    assert hb.filter(pl.col("name").str.starts_with("ProfilerStep")).height == 2


def test_time_per_step_is_a_full_grid():
    p = annotation_per_step(ev(SMALL), WINDOWS, side="cpu").collect()
    assert p.select("step", "name", "time_ns", "count").rows() == [
        (1, "bwd", 100, 1),
        (1, "fwd", 300, 2),
        (2, "bwd", 200, 1),
        (2, "fwd", 200, 1),
    ]
    assert p["share"].to_list() == [0.1, 0.3, 0.2, 0.2]
    only = annotation_per_step(ev(SMALL), WINDOWS, names=["bwd"]).collect()
    assert only["time_ns"].to_list() == [100, 200]


# -- real traces vs HTA -----------------------------------------------------------------------


@pytest.mark.parametrize(
    "name",
    [
        "nccl_parser_config-nccl_data",
        "ns_resolution_trace-rank-0.Apr_03_18_51_38.1102.pt.trace",
        "df_index_resolver-df_index_resolver",
        "amd_trace-mi250_minitoy_train_ROCm6_2_kineto",
        "trace_filter-sampled_rank-1",
    ],
)
def test_breakdown_matches_hta_user_annotation_breakdowns(imported_trace, name):
    ref = hta_reference(f"hta-{name}")
    b = hta_annotation_breakdown(imported_trace(name).hta_events()).collect()
    for side, key in (("cpu", "cpu_user_annotation_breakdown"), ("gpu", "gpu_user_annotation_breakdown")):
        rows = ref.get(key) or []
        assert b.filter(pl.col("side") == side).height == len(rows)
        for r in rows:
            ours = b.filter(
                (pl.col("side") == side) & (pl.col("name") == r["name"]) & (pl.col("rank") == r["rank"])
            )
            o = ours.row(0, named=True)
            for col, hta_col in (
                ("sum_ns", "sum (us)"),
                ("max_ns", "max (us)"),
                ("min_ns", "min (us)"),
                ("mean_ns", "mean (us)"),
                ("std_ns", "stddev"),
            ):
                assert abs(o[col] / 1000 - r[hta_col]) <= max(1.0, 1e-3 * abs(r[hta_col])), (
                    side,
                    r["name"],
                    col,
                )


def test_time_per_step_on_real_trace(imported_trace):
    """nccl_parser_config, 3 ProfilerSteps: the '## forward ##' range runs once per step and is
    never longer than the step; the frame has one row per step for every annotation name."""
    ev = imported_trace("nccl_parser_config-nccl_data").events()
    windows = ev.filter(pl.col("kind") == "step").select(
        "node",
        "rank",
        pl.col("name").str.extract(r"#(\d+)").cast(pl.Int64).alias("step"),
        pl.col("ts").alias("start"),
        (pl.col("ts") + pl.col("dur")).alias("end"),
    )
    p = annotation_per_step(ev, windows).collect()
    names = annotation_names(ev).collect()
    assert p.height == 3 * names.height
    fwd = p.filter((pl.col("name") == "## forward ##") & (pl.col("side") == "cpu")).sort("step")
    assert fwd["step"].to_list() == [4, 5, 6]
    assert fwd["count"].to_list() == [1, 1, 1]
    ranges = ev.filter(pl.col("name") == "## forward ##").sort("ts").collect()["dur"].to_list()
    assert fwd["time_ns"].to_list() == ranges
    assert ((fwd["share"] > 0.4) & (fwd["share"] < 0.6)).all()


def test_step_windows_frame_cpu_and_device_windows():
    """With steps.step_windows' columns, host annotations use the CPU window and device
    annotations the device window of each step."""
    windows = pl.LazyFrame(
        {
            "node": ["n"],
            "rank": [0],
            "step": [1],
            "cpu_start_ns": [0],
            "cpu_end_ns": [1000],
            "start_ns": [500],
            "end_ns": [2000],
        }
    )
    rows = [a(100, 300, "fwd"), a(150, 500, "fwd", kind="gpu_annotation")]  # gpu range [150, 650)
    p = annotation_per_step(ev(rows), windows).collect()
    assert p.select("side", "time_ns", "step_ns").rows() == [("cpu", 300, 1000), ("gpu", 150, 1500)]
