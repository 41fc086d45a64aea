"""The findings stage on real runs: a recorded CPU training loop that sleeps 20 ms between steps
outside any op (the top finding is ``host``, and its recoverable time agrees with the gain the
script's own clock measures without the sleep), and the shared Nsight export of a copy-bound
2-GPU run (the top finding is ``transfer``; no finding calls it launch-bound)."""

from __future__ import annotations

import json
import os
import sqlite3
import statistics
import subprocess
import sys
from pathlib import Path

import polars as pl
import pytest

from profui.analysis import open_trace

from realdata import REPO, nsys_export

sys.path.insert(0, str(REPO / "tests" / "capture"))
from test_profcap_support import run_profcap  # noqa: E402

#: A small CPU training loop timing each whole iteration with its own clock; SLEEP seconds of
#: time.sleep after the optimizer step (outside any op). Prints as JSON the median iteration after
#: 3 warm-up iterations, each iteration's sleep, and the wall and thread CPU clocks after each
#: optimizer step.
SLEEPY = r"""
import json, os, statistics, time
import torch

torch.manual_seed(0)
torch.set_num_threads(1)
sleep = float(os.environ.get("SLEEP", "0"))
model = torch.nn.Sequential(
    torch.nn.Linear(256, 1024), torch.nn.ReLU(), torch.nn.Linear(1024, 1024), torch.nn.ReLU(),
    torch.nn.Linear(1024, 10),
)
opt = torch.optim.SGD(model.parameters(), lr=0.01)
x, y = torch.randn(32, 256), torch.randint(0, 10, (32,))
times, slept, marks = [], [], []
for _ in range(12):
    t0 = time.perf_counter()
    loss = torch.nn.functional.cross_entropy(model(x), y)
    opt.zero_grad()
    loss.backward()
    opt.step()
    marks.append((time.perf_counter_ns(), time.thread_time_ns()))
    if sleep:
        time.sleep(sleep)
    slept.append(time.perf_counter_ns() - marks[-1][0])
    times.append(time.perf_counter() - t0)
out = {"median_step_ns": round(statistics.median(times[3:]) * 1e9), "slept_ns": slept, "marks": marks}
print(json.dumps(out))
"""
SLEEP_S = "0.02"
#: The traced steps (of 12; the first ones pay for warm-up).
TRACED = "4-9"


def record_sleepy(tmp: Path) -> Path:
    """The sleepy loop recorded under profcap (steps 4-9)."""
    return record_sleepy_with_clock(tmp)[0]


def record_sleepy_with_clock(tmp: Path) -> tuple[Path, dict]:
    """The sleepy loop recorded under profcap (steps 4-9), and its JSON line."""
    proc, trace = run_profcap(
        tmp, ["--steps", TRACED], SLEEPY, env={"SLEEP": SLEEP_S, "OMP_NUM_THREADS": "1"}
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    return trace, json.loads(proc.stdout.strip().splitlines()[-1])


def median_step_ns(script: Path, sleep: str) -> int:
    """One plain run's median iteration by the script's own clock."""
    env = {**os.environ, "SLEEP": sleep, "OMP_NUM_THREADS": "1"}
    out = subprocess.run([sys.executable, str(script)], env=env, capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr[-2000:]
    return json.loads(out.stdout.strip().splitlines()[-1])["median_step_ns"]


def measured_gain(script: Path, repeats: int = 3) -> int:
    """Median step with the sleep minus without it, runs alternating, medians of the runs'."""
    runs: dict[str, list[int]] = {SLEEP_S: [], "0": []}
    for _ in range(repeats):
        for sleep in runs:
            runs[sleep].append(median_step_ns(script, sleep))
    return round(statistics.median(runs[SLEEP_S]) - statistics.median(runs["0"]))


@pytest.fixture(scope="module")
def sleepy(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, int, dict]:
    """The recorded sleepy run, the gain its own clock measures without the sleep, and the
    recorded run's JSON line."""
    tmp = tmp_path_factory.mktemp("sleepy")
    trace, own = record_sleepy_with_clock(tmp)
    return trace, measured_gain(tmp / "job.py"), own


def test_a_sleep_between_steps_is_the_top_finding_host_with_the_measured_gain(sleepy) -> None:
    trace, gain, own = sleepy
    out = open_trace(trace).result("findings")
    assert out["findings.parquet"].height, "no finding on a run that sleeps 20 ms a step"
    top = out["findings.parquet"].row(0, named=True)
    assert top["category"] == "host", out["findings.parquet"].select("category", "title")
    assert gain > 15_000_000, f"the sleep is 20 ms: the script measured {gain} ns"
    got = top["recoverable_ns_per_step"]
    # the plain runs' gain is a floor: a loaded host only adds to the traced run's stalls
    assert got >= 0.75 * gain, (got, gain)
    # the traced run's own sleeps: ProfilerStep#N ends in iteration N's optimizer step, so it
    # holds iteration N-1's sleep; a loaded host oversleeps, more in one run than another, and
    # its preemptions between two ops are stretches outside any op that the trace cannot tell
    # from a stall: allowed above, the thread's time off the CPU besides the sleep (wall minus
    # thread CPU time between the optimizer steps' ends; ~0 idle)
    steps = open_trace(trace).result("critical_path")["steps.parquet"]["step"].to_list()
    marks, slept = own["marks"], own["slept_ns"]
    off = [(marks[n][0] - marks[n - 1][0]) - (marks[n][1] - marks[n - 1][1]) - slept[n - 1] for n in steps]
    traced = statistics.mean(slept[n - 1] for n in steps)
    other = max(0, statistics.mean(off))
    assert -0.25 * traced <= got - traced <= 0.25 * traced + other, (got, traced, other, gain)
    # a CPU-only run: no device word anywhere in the findings
    text = " ".join(
        out["findings.parquet"]["title"].to_list() + out["findings.parquet"]["next_step"].to_list()
    )
    assert "GPU" not in text and "kernel" not in text.lower()
    # one finding per cause
    cats = out["findings.parquet"]["category"].to_list()
    assert len(cats) == len(set(cats))


def test_the_copy_bound_nsys_export_is_a_transfer_problem_not_a_launch_problem() -> None:
    from profui.tui.cli.sources import resolve_source

    t = open_trace(resolve_source(nsys_export("h100_2gpu_1s")))
    f = t.result("findings")["findings.parquet"]
    assert f.height and f["category"][0] == "transfer", f.select("category", "title")
    assert "launch" not in f["category"].to_list()
    words = " ".join(f["title"].to_list() + f["next_step"].to_list()).lower()
    assert "launch-bound" not in words and "launch bound" not in words
    # the evidence of each finding carries its title's numbers (their source tables named)
    ev = t.result("findings")["evidence.parquet"]
    assert ev.filter(pl.col("source") == "").height == 0
    # the copies' bandwidth, against the export's own rows: host->device (copyKind 1) bytes over time
    with sqlite3.connect(nsys_export("h100_2gpu_1s")) as db:
        nbytes, ns = db.execute(
            "SELECT sum(bytes), sum(end - start) FROM CUPTI_ACTIVITY_KIND_MEMCPY WHERE copyKind = 1"
        ).fetchone()
    bw = ev.filter(pl.col("position") == 1, pl.col("label") == "HtoD bandwidth")
    assert bw["value"].to_list() == pytest.approx([nbytes / ns], rel=1e-9) and bw["unit"][0] == "GB/s"


def test_compute_looks_at_the_ops_and_kernels_not_the_runtime_calls_on_a_gpu_trace(tmp_path: Path) -> None:
    """On HTA's negative-queue trace the compute finding looks at the ops and kernels whose
    compute time is on the path, never a runtime call (launch overhead)."""
    from profui.capture.ingest import import_trace

    from realdata import shared_trace

    folder = tmp_path / "t"
    import_trace([shared_trace("hta-negative_queue_length_values_check-rank0.json.gz")], folder)
    t = open_trace(folder)
    found = t.result("findings")["findings.parquet"].filter(pl.col("category") == "compute")
    assert found.height == 1, t.result("findings")["findings.parquet"].select("category", "title")
    looked = found["look_at"][0].to_list()
    # the oracle: the trace's runtime and driver calls by kind, and the path's compute stretches
    calls = t.events().filter(pl.col("kind").is_in(["runtime", "driver"])).select("name").collect()
    runtime = set(calls["name"])
    path = t.result("critical_path")["events.parquet"]
    compute = path.filter(pl.col("kind").is_in(["host_compute", "device_compute"]), pl.col("name") != "")
    ops = compute.filter(~pl.col("name").is_in(list(runtime)))
    time = {}
    for r in ops.iter_rows(named=True):
        time[r["name"]] = time.get(r["name"], 0) + r["end_ns"] - r["start_ns"]
    assert looked == sorted(time, key=lambda n: (-time[n], n))[:5]
    assert not set(looked) & runtime


def test_look_at_names_of_a_recorded_run_carry_no_addresses(tmp_path: Path) -> None:
    """mlp_cpu's path has host stretches named by Python events with object addresses ('<built-in
    method ... at 0x7f...>'): look_at names them without, their time summed per name, as the
    path's stretches read in plain Python and stripped by hand say."""
    import re
    import shutil

    from profui.analysis.findings_path import look_at, stretches

    mlp = tmp_path / "mlp"
    shutil.copytree(REPO / "samples" / "mlp_cpu", mlp, ignore=shutil.ignore_patterns(".profui"))
    ev = open_trace(mlp).result("critical_path")["events.parquet"]
    raw = [r for r in ev.to_dicts() if r["kind"] == "host_overhead" and r["name"]]
    assert any(" at 0x" in r["name"] for r in raw)  # the premise: the run has such names on its path
    want: dict[str, int] = {}
    for r in raw:
        name = re.sub(r" at 0x[0-9a-f]+", "", r["name"])
        want[name] = want.get(name, 0) + r["end_ns"] - r["start_ns"]
    got = look_at(stretches(ev.filter(pl.col("name") != "")), ("host_overhead",), most=len(want) + 1)
    assert not any(" at 0x" in n for n in got)
    assert sorted(got) == sorted(want)
    assert got[0] == min(want, key=lambda n: (-want[n], n))  # the most time (ties: by name)
