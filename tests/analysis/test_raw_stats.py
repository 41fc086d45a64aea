"""Default semantics against ``independent_raw_stats`` of the HTA reference files.

Those numbers were computed straight from each shared JSON trace with exact decimal → integer-ns
arithmetic over the whole trace (no step trimming, no rounding), so our default mode must match
them to the nanosecond. Every shared trace with such a block is checked.
"""

from __future__ import annotations

import polars as pl
import pytest

from profui.analysis.busy import device_work, gpu_busy
from profui.analysis.intervals import overlap_length
from profui.analysis.kernels import kernel_stats, kernel_type_totals

from realdata import hta_reference, traces_dir

WORK = ("kernel", "memcpy", "memset")

SINGLE = [
    "amd_trace-mi250_minitoy_train_ROCm6_2_kineto",
    "call_stack-backward_thread",
    "cpu_only-rank-34.Jul_15_10_52_41.1074.pt.trace",
    "critical_path-cuda_event_sync_multi_stream-event_sync_trace",
    "critical_path-simple_add-benchmark_result_493459_1694039959_trace",
    "cupti_profiler-benchmark_result_924719_1679055439_trace",
    "df_index_resolver-df_index_resolver",
    "distributed_info_unavailable-distributed_info_not_found",
    "execution_trace-benchmark_simple_add_trace",
    "mtia_inference_trace-mtia_inference_rank_0",
    "mtia_trace_single_rank-mtia_rank_0",
    "nccl_parser_config-nccl_data",
    "negative_queue_length_values_check-rank0",
    "ns_resolution_trace-rank-0.Apr_03_18_51_38.1102.pt.trace",
    "rank_non_gpu-rank_non_gpu",
    "rank_unavailable-rank_not_found",
    "trace_compare-base-base",
    "trace_file_list-inference_rank_1",
    "trace_filter-sampled_rank-0",
    "trace_filter-sampled_rank-1",
    "triton_example-triton_example",
]


def ns(us: float) -> int:
    """The reference's µs (3 decimals, exact ns) as integer ns."""
    return round(us * 1000)


def raw_stats(stem: str) -> dict:
    irs = hta_reference(f"hta-{stem}")["independent_raw_stats"]
    assert len(irs) == 1
    return next(iter(irs.values()))


def check_against(ev: pl.LazyFrame, raw: dict) -> None:
    work = device_work(ev).collect()
    # counts and plain sums per source category
    cat_of = {"kernel": "kernel", "memcpy": "gpu_memcpy", "memset": "gpu_memset"}
    by_kind = {
        cat_of[k]: (c, s) for k, c, s in work.group_by("kind").agg(pl.len(), pl.col("dur").sum()).rows()
    }
    want = {c: (v["count"], ns(v["sum_us"])) for c, v in raw["gpu_by_cat"].items()}
    if "mtia_ccp_events" in want:  # MTIA device work (kernels and DMA copies) shares one category
        assert sum(c for c, _ in by_kind.values()) == sum(c for c, _ in want.values())
        assert sum(s for _, s in by_kind.values()) == sum(s for _, s in want.values())
    else:
        assert by_kind == {("kernel" if c == "Kernel" else c): v for c, v in want.items()}
    assert work["name"].n_unique() == raw["n_unique_gpu_event_names"]
    per_stream = {f"dev{d}/stream{s}": n for d, s, n in work.group_by("device", "stream").len().rows()}
    want_streams = raw["gpu_events_per_device_stream"]
    if any(k.startswith("devNone/") for k in want_streams):
        # MTIA events carry no args.device (the reference says None); the importer takes the pid
        per_stream = {k.split("/")[1]: n for k, n in per_stream.items()}
        want_streams = {k.split("/")[1]: n for k, n in want_streams.items()}
    if "streamNone" in want_streams:  # no args.stream either: the importer takes the tid
        assert sorted(per_stream.values()) == sorted(want_streams.values())
    else:
        assert per_stream == want_streams

    # per-name statistics of the top events
    stats = kernel_stats(ev, kinds=WORK).collect()
    rows = {r["name"]: r for r in stats.to_dicts()}
    for top in raw["top_gpu_events_by_sum"]:
        r = rows[top["name"]]
        assert r["count"] == top["count"]
        assert r["total_ns"] == ns(top["sum_us"])
        assert r["min_ns"] == ns(top["min_us"]) and r["max_ns"] == ns(top["max_us"])
        assert abs(r["mean_ns"] / 1000 - top["mean_us"]) <= 0.0005 + 1e-9

    if "gpu_span_us" in raw:
        # busy = union over every device and stream, as the reference defines it
        b = gpu_busy(ev, by=()).collect().row(0, named=True)
        assert b["span_ns"] == ns(raw["gpu_span_us"])
        assert b["busy_ns"] == ns(raw["gpu_busy_us_merged"])
        assert b["idle_ns"] == ns(raw["gpu_idle_us"])
        assert round(b["busy_share"] + b["idle_ns"] / b["span_ns"], 8) == 1
        assert abs(100 * b["idle_ns"] / b["span_ns"] - raw["gpu_idle_pct"]) < 0.006
        types = {r["kernel_type"]: r for r in kernel_type_totals(ev).collect().to_dicts()}
        assert {t: r["busy_ns"] for t, r in types.items()} == {
            t: ns(v) for t, v in raw["busy_by_type_merged_us"].items()
        }
        assert {t: r["sum_dur_ns"] for t, r in types.items()} == {
            t: ns(v) for t, v in raw["sum_dur_by_type_us"].items()
        }
    if "comm_comp_overlap_us" in raw:
        w = device_work(ev)
        ov = (
            overlap_length(
                w.filter(pl.col("kernel_type") == "COMPUTATION"),
                w.filter(pl.col("kernel_type") == "COMMUNICATION"),
            )
            .collect()
            .item()
        )
        assert ov == ns(raw["comm_comp_overlap_us"])

    # host side: CPU ops and ProfilerSteps
    cpu = ev.filter(pl.col("kind") == "cpu_op").select(pl.len(), pl.col("dur").sum()).collect().row(0)
    assert cpu[0] == raw["n_cpu_op"]
    assert (cpu[1] or 0) == ns(raw["cpu_op_sum_dur_us"])
    steps = ev.filter(pl.col("kind") == "step").sort("ts").select("name", "ts", "dur").collect().rows()
    assert [s[0] for s in steps] == [s["name"] for s in raw["profiler_steps"]]
    assert [s[2] for s in steps] == [ns(s["dur_us"]) for s in raw["profiler_steps"]]


@pytest.mark.parametrize("stem", SINGLE)
def test_default_mode_matches_independent_raw_stats(stem: str, imported_trace) -> None:
    raw = raw_stats(stem)
    t = imported_trace(stem)
    check_against(t.cached_events(), raw)


def test_multirank_per_rank_matches_each_file(imported_trace) -> None:
    """Two ranks imported as one trace: each rank's slice matches its own file's raw stats."""
    t = imported_trace("trace_filter-sampled_rank-0", "trace_filter-sampled_rank-1")
    ev = t.cached_events()
    assert sorted(ev.select("rank").unique().collect()["rank"].to_list()) == [0, 1]
    ref = hta_reference("hta-trace_filter-sampled_rank-0+1_multirank")["independent_raw_stats"]
    for rank in (0, 1):
        check_against(ev.filter(pl.col("rank") == rank), ref[f"sampled_rank-{rank}.json.gz"])
    per_gpu = gpu_busy(ev).collect()
    assert per_gpu.height == 2  # one row per (node, rank, device)
    for rank in (0, 1):
        raw = ref[f"sampled_rank-{rank}.json.gz"]
        row = per_gpu.filter(pl.col("rank") == rank).row(0, named=True)
        assert row["busy_ns"] == ns(raw["gpu_busy_us_merged"]) and row["span_ns"] == ns(raw["gpu_span_us"])


def test_every_reference_with_raw_stats_is_covered() -> None:
    stems = {
        p.name[len("hta-") : -len(".json")]
        for p in (traces_dir() / "reference").glob("hta-*.json")
        if "independent_raw_stats" in p.read_text()
    }
    stems.discard("trace_filter-sampled_rank-0+1_multirank")  # covered per rank above
    stems.discard("memory_analysis-memory_timeline.raw")  # not a Kineto trace
    assert stems <= set(SINGLE)
