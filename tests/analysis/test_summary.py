"""summarize(): every section over real traces, equal to the module functions, JSON-able."""

from __future__ import annotations

import gzip
import json

import polars as pl
from polars.testing import assert_frame_equal

from profui.analysis import comm, idle, launch
from profui.analysis.summary import SECTIONS, Summary, summarize

from realdata import hta_reference, require_shared_traces, same_numbers


def test_sections_equal_the_module_functions(imported_trace):
    t = imported_trace("nccl_parser_config-nccl_data")
    s = summarize(t, top_n=5)
    assert isinstance(s, Summary) and list(s.sections) == list(SECTIONS)
    ev = t.events()
    assert_frame_equal(s.table("launch", "stats"), launch.launch_stats(launch.kernel_launches(ev)).collect())
    assert_frame_equal(s.table("idle", "breakdown"), idle.idle_breakdown(ev).collect())
    assert_frame_equal(s.table("comm", "overlap"), comm.comm_comp_overlap(ev).collect())
    assert s.table("launch", "by_kernel").height == 5
    assert s.table("kernels", "top_by_time").height == 6  # 5 + "(other)"
    assert s.trace["events"] == ev.select(pl.len()).collect().item()
    assert s.trace["gpus"] == 1 and s.trace["ranks"] == [0]
    doc = s.to_json_dict()
    assert json.loads(json.dumps(doc, allow_nan=False)) == doc
    assert (
        doc["sections"]["launch"]["overall"][0]["launches"] == s.table("launch", "overall")["launches"].item()
    )
    assert set(doc["takeaways"]) >= {
        "gpu_active",
        "kernel_total",
        "top_time",
        "steps",
        "memory",
        "comm",
        "launch",
    }
    assert same_numbers(
        json.loads(json.dumps(t.summary(top_n=5).to_json_dict())), json.loads(json.dumps(doc))
    )  # the facade gives the same


def test_triton_default_vs_hta_compat(imported_trace):
    """HTA counts the Triton CPU op (args.stream) as a ~94 µs GPU kernel; the real kernel is
    1.76 µs, launched by cuLaunchKernel, which HTA's launch statistics do not see."""
    t = imported_trace("triton_example-triton_example")
    exact = summarize(t)
    hta = summarize(t, hta_compat=True)
    assert exact.table("kernels", "stats").select("count", "total_ns").rows() == [(1, 1_760)]
    assert hta.table("kernels", "stats")["count"].sum() == 2
    assert exact.table("launch", "overall")["launches"].item() == 1
    ref = hta_reference("hta-triton_example-triton_example")["cuda_kernel_launch_stats"]["0"]
    assert hta.table("launch", "overall")["launches"].item() == ref["n_correlated_launches"] == 0
    assert any("hta_compat" in n for n in hta.notes)


def _raw_events(stem: str, name: str) -> list[dict]:
    """The trace's Kineto events called ``name``, read with the standard library."""
    path = next(require_shared_traces().glob(f"hta-{stem}*.json*"))
    with gzip.open(path, "rt") if path.suffix == ".gz" else path.open() as f:
        return [e for e in json.load(f)["traceEvents"] if e.get("name") == name and e.get("ph") == "X"]


def test_traces_without_gpu_or_steps_still_summarize(imported_trace):
    cpu_only = summarize(imported_trace("cpu_only-rank-34.Jul_15_10_52_41.1074.pt.trace"))
    assert cpu_only.trace["gpus"] == 0
    assert cpu_only.table("launch", "overall")["launches"].item() == 0
    # its gloo all-reduces are host collectives: 10 ranges over 1-D float buckets (raw trace events)
    raw = _raw_events("cpu_only-rank-34.Jul_15_10_52_41.1074.pt.trace", "gloo:all_reduce")
    row = cpu_only.table("comm", "by_collective").row(0, named=True)
    assert cpu_only.table("comm", "by_collective").height == 1
    assert (row["source"], row["collective"], row["count"]) == ("host op", "AllReduce", len(raw))
    assert row["total_ns"] == sum(round(e["dur"] * 1000) for e in raw)
    assert row["bytes"] == sum(4 * e["args"]["Input Dims"][0][0] for e in raw)  # floats, 1-D
    json.dumps(cpu_only.to_json_dict(), allow_nan=False)
    no_steps = summarize(imported_trace("critical_path-simple_add-benchmark_result_493459_1694039959_trace"))
    assert any("no step markers" in n for n in no_steps.notes)
    assert no_steps.takeaways["steps"] == "No step markers: the trace is analysed as one window."
    assert no_steps.table("sync", "device")["count"].sum() == 41
