"""The diff of a real pair (#37 item 8): HTA's V100 DDP trace (base) against its A100 NCCL
trace that launches CUDA graphs (new).

Oracles are the raw Kineto JSON files, read here: kernel and runtime-call totals by name,
``cudaGraphLaunch`` calls and the device events carrying their correlation ids, the
``ProfilerStep#N`` markers' starts (a step's period) and each file's ``deviceProperties`` and
``distributedInfo``.
"""

from __future__ import annotations

import asyncio
import gzip
import json
import os
import shutil
import subprocess
import sys
from collections import Counter, defaultdict
from pathlib import Path

import numpy as np
import pytest

from profui.analysis.diff import diff, normalise_name, profile_of
from profui.capture.ingest import import_trace
from profui.tui.screens.diff import DiffApp

from realdata import shared_trace

PROFUI = str(Path(sys.executable).with_name("profui"))
BASE = "hta-df_index_resolver-df_index_resolver.json.gz"  # V100, DDP rank 1 of 2
NEW = "hta-negative_queue_length_values_check-rank0.json.gz"  # A100, rank 0 of 16, CUDA graphs
DEVICE_CATS = ("kernel", "gpu_memcpy", "gpu_memset")


def _raw(name: str) -> dict:
    return json.loads(gzip.open(shared_trace(name), "rt").read())


def _facts(doc: dict) -> dict:
    """What the file says, worked out here: per-name totals (ns), runtime calls and the device
    events their correlation ids started, step periods, the GPU that ran its kernels."""
    ev = [e for e in doc["traceEvents"] if e.get("ph") == "X"]
    kernels: dict[str, int] = defaultdict(int)
    calls: Counter[str] = Counter()
    call_of: dict[int, str] = {}
    for e in ev:
        if e.get("cat") == "kernel":
            kernels[normalise_name(e["name"])] += round(e["dur"] * 1000)
        if e.get("cat") == "cuda_runtime":
            calls[e["name"]] += 1
            call_of[e["args"]["correlation"]] = e["name"]
    started: Counter[str] = Counter(
        call_of[e["args"]["correlation"]]
        for e in ev
        if e.get("cat") in DEVICE_CATS and e["args"].get("correlation") in call_of
    )
    steps = sorted(
        (int(e["name"].split("#")[1]), e["ts"], e["dur"]) for e in ev if e["name"].startswith("ProfilerStep#")
    )
    periods = [
        round(((nxt[1] - s[1]) if nxt and nxt[0] == s[0] + 1 else s[2]) * 1000)
        for s, nxt in zip(steps, [*steps[1:], None], strict=True)
    ]
    devices = {e["args"]["device"] for e in ev if e.get("cat") == "kernel"}
    gpu = {p["name"] for p in doc["deviceProperties"] if p["id"] in devices}
    return {
        "kernels": kernels,
        "calls": calls,
        "started": started,
        "periods": periods,
        "gpu": gpu,
        "world": doc["distributedInfo"]["world_size"],
    }


@pytest.fixture(scope="module")
def pair(tmp_path_factory) -> dict:
    root = tmp_path_factory.mktemp("diffpair")
    paths = []
    for name, label in ((BASE, "base"), (NEW, "new")):
        import_trace([shared_trace(name)], root / label)
        paths.append(root / label)
    env = {**os.environ, "PROFUI_CACHE": str(root / "cache"), "COLUMNS": "200"}
    run = [PROFUI, "diff", *map(str, paths), "--top", "0"]
    js = subprocess.run([*run, "--json"], capture_output=True, text=True, env=env, timeout=900)
    text = subprocess.run(run, capture_output=True, text=True, env=env, timeout=900)
    assert js.returncode == 0 and text.returncode == 0, (js.stderr, text.stderr)
    assert "Traceback" not in js.stderr + text.stderr
    return {
        "paths": paths,
        "json": json.loads(js.stdout),
        "text": text.stdout,
        "base": _facts(_raw(BASE)),
        "new": _facts(_raw(NEW)),
    }


def test_kernels_ranked_by_size_of_change(pair) -> None:
    """New and gone kernels are marked, not put first: the elementwise add that lost 83 ms ranks
    above every gone kernel that took less."""
    b, n = pair["base"]["kernels"], pair["new"]["kernels"]
    expected = {k: n.get(k, 0) - b.get(k, 0) for k in set(b) | set(n)}
    rows = pair["json"]["kernels"]
    assert len(rows) == len(expected)
    assert {r["name"]: r["delta_ns"] for r in rows} == expected
    assert [abs(r["delta_ns"]) for r in rows] == sorted((abs(d) for d in expected.values()), reverse=True)
    for r in rows:
        assert r["status"] == ("new" if r["name"] not in b else "gone" if r["name"] not in n else "both")
    first_both = next(i for i, r in enumerate(rows) if r["status"] == "both")
    smaller_gone = [i for i, r in enumerate(rows) if r["status"] == "gone" and i > first_both]
    assert first_both < 5 and smaller_gone  # a changed kernel above gone ones


def test_runtime_calls_and_cuda_graphs(pair) -> None:
    b, n = pair["base"], pair["new"]
    rows = {r["name"]: r for r in pair["json"]["runtime"]}
    for name in set(b["calls"]) | set(n["calls"]):
        r = rows[normalise_name(name)]
        assert (r["base_count"], r["new_count"]) == (b["calls"][name], n["calls"][name])
        assert (r["base_device_events"], r["new_device_events"]) == (b["started"][name], n["started"][name])
    graph = rows["cudaGraphLaunch"]
    assert graph["status"] == "new" and graph["new_count"] == 70 and graph["new_device_events"] == 345
    setup = {c["what"]: c for c in pair["json"]["setup"]}
    assert setup["cuda_graphs"]["base"] == "none"
    assert setup["cuda_graphs"]["new"] == "70 graph launches (345 device events)"
    table = [[c.strip() for c in ln.split("│")[1:-1]] for ln in pair["text"].splitlines() if "│" in ln]
    assert ["cudaMemcpyAsync", "", "+736 ms", "31 ms", "767 ms", "2,040→1,250", "2,040→1,250"] in table
    assert ["cudaGraphLaunch", "new", "+5.29 ms", "0 ns", "5.29 ms", "0→70", "0→345"] in table


def test_step_time_is_the_step_period(pair) -> None:
    """The new run's device windows overlap the next step by ~160 ms (368-375 ms windows for a
    ~216 ms period); the step time compared is the period."""
    m = pair["json"]["metrics"]["step_p50"]
    assert m["base"] == float(np.median(pair["base"]["periods"]))
    assert m["new"] == float(np.median(pair["new"]["periods"]))
    assert m["new"] < 220e6 and m["verdict"] == "improvement" and m["significant"] is True


def test_device_and_world_size_change_lead(pair) -> None:
    b, n = pair["base"], pair["new"]
    setup = {c["what"]: c for c in pair["json"]["setup"]}
    assert (setup["devices"]["base"], setup["devices"]["new"]) == (*b["gpu"], *n["gpu"])
    assert (setup["world_size"]["base"], setup["world_size"]["new"]) == (str(b["world"]), str(n["world"]))
    head = pair["text"].split("\n\n")[0].splitlines()
    assert head[1] == f"GPU changed: {next(iter(b['gpu']))} → {next(iter(n['gpu']))}"
    assert f"world size changed: {b['world']} → {n['world']}" in head


def test_diff_app_shows_setup_first_and_runtime_calls(pair) -> None:
    base, new = pair["paths"]
    result = diff(profile_of(base), profile_of(new))
    assert result["setup"] == pair["json"]["setup"]

    async def go() -> None:
        app = DiffApp(base, new, result)
        async with app.run_test(size=(120, 40)) as pilot:
            await pilot.pause()
            head = app.query_one("#diff-headline")
            labels = [str(head.get_row_at(i)[0]) for i in range(head.row_count)]
            assert labels[: len(result["setup"])] == [c["label"] for c in result["setup"]]
            assert labels[0] == "GPU"
            takeaway = str(app.query_one("#diff-takeaway").render())
            assert "GPU changed from Tesla V100" in takeaway
            rows = app.query_one("#diff-kernels")
            names = [str(rows.get_row_at(i)[4]) for i in range(rows.row_count)]
            assert "[new] call cudaGraphLaunch" in names
            assert "[gone] ncclKernel_AllReduce_RING_LL_Sum_float(ncclWorkElem)" in names
            await pilot.press("q")

    asyncio.run(go())


def test_a_baseline_without_runtime_calls_does_not_make_them_all_new(tmp_path: Path) -> None:
    """A baseline saved before runtime calls were kept (its JSON has no ``runtime``): they are not
    compared, said in a note, and no CUDA-graph change is claimed."""
    from realdata import SAMPLES

    env = {**os.environ, "PROFUI_CACHE": str(tmp_path / "cache")}
    trace = tmp_path / "s"
    shutil.copytree(SAMPLES / "synthetic_gpu", trace, ignore=shutil.ignore_patterns(".profui"))
    saved = subprocess.run(
        [PROFUI, "diff", "--save-baseline", "old", str(trace)], capture_output=True, text=True, env=env
    )
    assert saved.returncode == 0, saved.stderr
    file = tmp_path / "cache" / "baselines" / "old.json"
    doc = json.loads(file.read_text())
    assert doc["runtime"]["cudaLaunchKernel"]["count"] > 0  # kept by this version
    del doc["runtime"]
    file.write_text(json.dumps(doc))
    p = subprocess.run(
        [PROFUI, "diff", "baseline:old", str(trace), "--json"], capture_output=True, text=True, env=env
    )
    assert p.returncode == 0 and "Traceback" not in p.stderr, p.stderr
    res = json.loads(p.stdout)
    assert res["runtime"] == [] and res["setup"] == []
    assert any("runtime calls not compared" in n for n in res["notes"])


def test_a_baseline_of_device_window_steps_is_not_compared_with_periods(tmp_path: Path) -> None:
    """A baseline saved before step periods (version 1, no runtime calls; its steps the device
    windows of ``steps/job.parquet``, as that code wrote them) against the sample's periods: a
    note says so, and no step-time number, interval, verdict or per-step change is made of it."""
    from profui.analysis import open_trace
    from profui.analysis.pipeline.answers import answers

    from realdata import SAMPLES

    env = {**os.environ, "PROFUI_CACHE": str(tmp_path / "cache")}
    trace = tmp_path / "s"
    shutil.copytree(SAMPLES / "synthetic_gpu", trace, ignore=shutil.ignore_patterns(".profui"))
    saved = subprocess.run(
        [PROFUI, "diff", "--save-baseline", "old", str(trace)], capture_output=True, text=True, env=env
    )
    assert saved.returncode == 0, saved.stderr
    file = tmp_path / "cache" / "baselines" / "old.json"
    doc = json.loads(file.read_text())
    assert doc["version"] == 2
    opened = open_trace(trace)
    job = answers(trace, ("steps",), trace=lambda: opened).outputs["steps"]["job.parquet"]
    windows = [{"step": r["step"], "dur_ns": r["dur_ns"]} for r in job.iter_rows(named=True)]
    assert len(windows) == 10 and windows != doc["steps"]  # device windows, not periods
    del doc["runtime"]
    file.write_text(json.dumps({**doc, "version": 1, "steps": windows}))
    runs = [
        subprocess.run(
            [PROFUI, "diff", "baseline:old", str(trace), *extra], capture_output=True, text=True, env=env
        )
        for extra in (["--json"], [])
    ]
    for p in runs:
        assert p.returncode == 0 and "Traceback" not in p.stderr, p.stderr
    res, text = json.loads(runs[0].stdout), runs[1].stdout
    note = "step time not compared: the base baseline was saved before step periods were kept"
    assert any(n.startswith(note) and "device windows" in n for n in res["notes"]), res["notes"]
    assert not any(k.startswith("step_") for k in res["metrics"]) and res["steps"] == []
    assert res["step_time_significant"] is False
    assert not any(n.startswith("step_") for n in res["headline"])
    assert f"note: {note}" in text
    assert "95% interval" not in text and "Steps by change" not in text
    # the same baseline as the new side says so of the new one
    p = subprocess.run([PROFUI, "diff", str(trace), "old", "--json"], capture_output=True, text=True, env=env)
    assert p.returncode == 0, p.stderr
    assert any("the new baseline was saved before step periods" in n for n in json.loads(p.stdout)["notes"])
