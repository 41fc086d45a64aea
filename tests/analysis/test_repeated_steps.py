"""Step numbers that repeat on a rank (a profiler restarted in one process writes
``ProfilerStep#2`` again): every step is still one window, and no share runs above 100%.

Synthetic scale from real data, on purpose: the corpus has no trace whose step numbers repeat,
so the shared df_index trace is replicated three times along time
(``benchmarks/replicate_trace.py``: copies shifted in time, ids offset), once with the step
numbers going on and once repeating. The oracle is the single real trace: each copy is an exact
shift of it, so every window of either replica must be the original's, three times over.
"""

from __future__ import annotations

import importlib.util
import json
import sys

import polars as pl
import pytest

from profui.analysis import open_trace
from profui.analysis.lod_open import open_lod
from profui.analysis.pipeline.store import compute
from profui.capture.ingest import import_trace

from realdata import REPO, shared_trace

DF_INDEX = "hta-df_index_resolver-df_index_resolver.json.gz"
COPIES = 3


def _replicate_module():
    spec = importlib.util.spec_from_file_location(
        "replicate_trace", REPO / "benchmarks" / "replicate_trace.py"
    )
    mod = importlib.util.module_from_spec(spec)
    sys.modules.setdefault("replicate_trace", mod)
    spec.loader.exec_module(mod)
    return sys.modules["replicate_trace"]


@pytest.fixture(scope="module")
def replicas(tmp_path_factory: pytest.TempPathFactory) -> dict[str, dict]:
    src = shared_trace(DF_INDEX)
    root = tmp_path_factory.mktemp("replicas")
    rep = _replicate_module()
    out: dict[str, dict] = {"folders": {}}
    one = root / "one"
    import_trace([src], one)
    out["one"] = compute(open_trace(one), ["summary"])
    for mode in ("distinct", "repeated"):
        js = root / f"{mode}.json"
        rep.replicate(src, COPIES, mode, js)
        folder = root / mode
        import_trace([js], folder)
        js.unlink()
        out[mode] = compute(open_trace(folder), ["summary"])
        out["folders"][mode] = folder
    return out


def _windows(store: dict) -> pl.DataFrame:
    return store["steps"]["windows.parquet"].sort("cpu_start_ns")


def test_every_step_is_one_window_per_copy(replicas: dict[str, dict]) -> None:
    one = _windows(replicas["one"])
    numbers = one["step"].to_list()
    assert numbers == [2, 3, 4, 5, 6]  # the real trace's ProfilerStep#2..#6
    for mode in ("distinct", "repeated"):
        w = _windows(replicas[mode])
        assert w.height == COPIES * one.height
        for col in ("cpu_dur_ns", "dur_ns", "n_launches", "n_device_events"):
            assert w[col].to_list() == one[col].to_list() * COPIES, (mode, col)
    # distinct: the numbers go on; repeated: numbered in time order from the first, said so
    expected = list(range(2, 2 + COPIES * len(numbers)))
    assert _windows(replicas["distinct"])["step"].to_list() == expected
    assert _windows(replicas["repeated"])["step"].to_list() == expected
    info = replicas["repeated"]["steps"]["steps.json"]
    assert info["renumbered"] is True and "repeat on rank 1" in info["note"]
    assert info["note"] in replicas["repeated"]["summary"]["summary.json"].notes
    assert replicas["distinct"]["steps"]["steps.json"]["renumbered"] is False


def test_per_step_answers_equal_the_original_three_times(replicas: dict[str, dict]) -> None:
    """Per step: the annotations' time, communication and memory floor of every copy are the
    single trace's (a many-to-many join on repeated numbers made them 3-9× too large)."""
    tables = {
        ("annotations", "per_step.parquet"): ["time_ns", "step_ns", "count"],
        ("comm", "per_step.parquet"): ["step_ns", "comm_ns", "compute_ns", "overlap_ns"],
        ("allocations", "per_step.parquet"): ["events", "min_allocated_bytes", "peak_allocated_bytes"],
    }
    for (stage, table), cols in tables.items():
        one = replicas["one"][stage][table]
        rep = replicas["repeated"][stage][table]
        assert rep.height == COPIES * one.height, (stage, table)
        sort = [c for c in ("device", "side", "name") if c in one.columns]
        base = one.sort("step", *sort).select(cols)
        for k in range(COPIES):
            lo = 2 + k * 5
            part = rep.filter(pl.col("step").is_between(lo, lo + 4)).sort("step", *sort).select(cols)
            assert part.equals(base), (stage, table, k)


def test_no_share_above_one(replicas: dict[str, dict]) -> None:
    """Every share of every summary table is a 0-1 fraction on the repeated-number trace."""
    doc = replicas["repeated"]["summary"]["summary.json"].to_json_dict()
    shares: list[float] = []

    def walk(value: object, key: str = "") -> None:
        if isinstance(value, dict):
            for k, v in value.items():
                walk(v, k)
        elif isinstance(value, list):
            for v in value:
                walk(v, key)
        elif isinstance(value, float) and (key == "share" or key.endswith("_share")):
            shares.append(value)

    walk(doc["sections"])
    assert len(shares) > 50
    assert max(shares) <= 1.0 + 1e-12, max(shares)
    # the annotation's share of a step is the single trace's (it read 140% before)
    one = replicas["one"]["summary"]["summary.json"].to_json_dict()
    assert "of a step" in doc["takeaways"]["annotation"]
    assert doc["takeaways"]["annotation"] == one["takeaways"]["annotation"]
    json.dumps(doc)  # the document stays JSON


def test_timeline_numbers_steps_as_the_steps_view(replicas: dict[str, dict]) -> None:
    """The timeline's steps are the Steps view's: ProfilerStep#2..#6 three times on rank 1 are
    steps 2..16 in time order, each its own window (the timeline grouped the job's steps by name,
    so its step 2 spanned all three copies' ProfilerStep#2 and the copies' numbers repeated)."""
    for mode in ("distinct", "repeated"):
        ix = open_lod(replicas["folders"][mode])
        w = _windows(replicas[mode]).with_columns(
            (pl.col("cpu_start_ns") - ix.base_ns).alias("t0"), (pl.col("cpu_end_ns") - ix.base_ns).alias("t1")
        )
        expected = list(range(2, 2 + COPIES * 5))
        own = ix.steps(rank=1)
        assert [s.number for s in own] == expected, mode
        assert [(s.t0, s.t1) for s in own] == list(zip(w["t0"], w["t1"], strict=True)), mode
        job = ix.steps()  # one rank: the job's steps are its own
        assert [(s.number, s.t0, s.t1) for s in job] == [(s.number, s.t0, s.t1) for s in own], mode
