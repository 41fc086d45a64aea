"""Launch latency on a CUDA-graph trace: a ``cudaGraphLaunch`` starts all of its graph's device
events under one correlation id, and only the first of them measures the launch (the later ones
run in the graph's own order). The oracle reads the raw Kineto JSON with plain Python. And the
diff of the real pair from the user's walk (step time fell 346 -> 216 ms) says in its headline
that the step time improved next to what regressed."""

from __future__ import annotations

import gzip
import json
import statistics
from pathlib import Path

import polars as pl
import pytest

from profui.analysis.diff import diff, head_lines, profile_of
from profui.capture.ingest import import_trace

from realdata import shared_trace

GRAPHS = "hta-negative_queue_length_values_check-rank0.json.gz"
BASE = "hta-df_index_resolver-df_index_resolver.json.gz"
DEVICE_CATS = {"kernel", "gpu_memcpy", "gpu_memset"}


def raw_latencies(path: Path) -> tuple[list[int], list[int]]:
    """(every launch's latency in ns by the rule, the graph launches' first-event latencies)."""
    with gzip.open(path, "rt") as f:
        events = json.load(f)["traceEvents"]
    calls: dict[int, dict] = {}
    for e in events:
        corr = (e.get("args") or {}).get("correlation")
        if e.get("cat") in ("cuda_runtime", "cuda_driver") and corr is not None and e.get("ph") == "X":
            if corr not in calls or e["ts"] < calls[corr]["ts"]:
                calls[corr] = e
    device: dict[int, list[float]] = {}
    for e in events:
        corr = (e.get("args") or {}).get("correlation")
        if e.get("cat") in DEVICE_CATS and corr in calls and e.get("ph") == "X":
            device.setdefault(corr, []).append(e["ts"])
    every, graphs = [], []
    for corr, starts in device.items():
        call = calls[corr]
        lat = [round((t - call["ts"]) * 1000) for t in sorted(starts)]
        if "GraphLaunch" in call["name"]:
            graphs.append(lat[0])
            every.append(lat[0])
        else:
            every.extend(lat)
    return every, graphs


@pytest.fixture(scope="module")
def pair(tmp_path_factory) -> dict:
    d = tmp_path_factory.mktemp("graphdiff")
    import_trace([shared_trace(BASE)], d / "base")
    import_trace([shared_trace(GRAPHS)], d / "graphs")
    return {"base": profile_of(d / "base"), "graphs": profile_of(d / "graphs"), "dir": d}


def test_graph_launch_latency_is_the_first_device_event(pair) -> None:
    every, graphs = raw_latencies(shared_trace(GRAPHS))
    assert len(graphs) == 70  # the trace's 70 graph launches (345 device events)
    (links,) = (pair["dir"] / "graphs").rglob("correlate/*/launches.parquet")
    rows = pl.read_parquet(links).filter(pl.col("launch_name") == "cudaGraphLaunch")
    assert rows.height == 345  # every graph event is still joined to its launch
    measured = rows.filter(pl.col("launch_latency").is_not_null())
    assert sorted(measured["launch_latency"].to_list()) == sorted(graphs)
    assert measured["launch_delay"].null_count() == 0 and rows["launch_delay"].null_count() == 345 - 70
    # the median over every launch: the host ran ~160 ms ahead of the GPU, launches queued
    assert pair["graphs"]["numbers"]["launch_p50"] == pytest.approx(statistics.median(every), abs=1)


def test_diff_headline_names_the_step_time_improvement(pair) -> None:
    res = diff(pair["base"], pair["graphs"])
    step = res["metrics"]["step_p50"]
    assert step["verdict"] == "improvement" and step["significant"] and res["verdict"] == "regression"
    first = head_lines(res)[0]
    assert first.endswith("; step time improved 346 ms → 216 ms"), first
    regressed = [
        res["metrics"][n]["label"] for n in res["headline"] if res["metrics"][n]["verdict"] == "regression"
    ]
    assert f": regression in {', '.join(regressed[:3])}" in first, first
    assert f"(+{len(regressed) - 3} more)" in first if len(regressed) > 3 else "more)" not in first
