"""What profcap costs a CPU training run, against running alone and against plain torch.profiler.

In one run, interleaving repetitions of each configuration (so machine load hits all alike):
  alone          python train.py
  no-trace       profcap --no-trace -- python train.py               (sampler only)
  profcap        profcap --steps A-B -- python train.py              (outside and inside the window)
  torch.profiler python train.py with torch.profiler on steps A-B, same settings (CPU activity,
                 record_shapes), exported by export_chrome_trace
  memory         profcap --memory --steps A-B -- python train.py     (profile_memory in the window)
and prints median step times (wall, and the training thread's CPU time) and their ratios, the CPU
the capture itself uses (profcap + daemon + conversion) as a share of the job's, bytes per traced
step (profui events file vs torch.profiler's JSON of the same steps), and the training stall at
the window's end. The last line is the headline ratio: the training thread's CPU time per step
outside windows under profcap / alone (wall-time ratios are printed too; on a shared machine they
carry the load of everything else running).

    .venv/bin/python benchmarks/capture_overhead.py [--steps 200] [--reps 3] [--window 80-89]
"""

from __future__ import annotations

import argparse
import json
import resource
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

from precompile import compile_sources

TRAIN = r"""
import json, os, sys, time
import torch

torch.manual_seed(0)
torch.set_num_threads(1)
steps = int(os.environ["BENCH_STEPS"])
first, last = (int(x) for x in os.environ["BENCH_WINDOW"].split("-"))
mode = os.environ["BENCH_MODE"]
model = torch.nn.Sequential(torch.nn.Linear(512, 1024), torch.nn.ReLU(), torch.nn.Linear(1024, 1024), torch.nn.ReLU(),
                            torch.nn.Linear(1024, 10))
opt = torch.optim.SGD(model.parameters(), lr=0.01)
x, y = torch.randn(128, 512), torch.randint(0, 10, (128,))
prof = None
if mode == "torchprof":
    from torch.profiler import ProfilerActivity, profile, schedule

    def ready(p):
        t0 = time.perf_counter()
        p.export_chrome_trace(os.environ["BENCH_JSON"])
        ready.export_s = time.perf_counter() - t0

    # prof.step() at the end of iteration i starts step i+1: record steps first..last
    prof = profile(activities=[ProfilerActivity.CPU], record_shapes=True, on_trace_ready=ready,
                   schedule=schedule(skip_first=first, wait=0, warmup=0, active=last - first + 1, repeat=1))
    prof.start()
times, cpu = [], []
for i in range(steps):
    t0, c0 = time.perf_counter(), time.thread_time()
    loss = torch.nn.functional.cross_entropy(model(x), y)
    opt.zero_grad()
    loss.backward()
    opt.step()
    if prof is not None:
        prof.step()
    times.append(time.perf_counter() - t0)
    cpu.append(time.thread_time() - c0)
if prof is not None:
    prof.stop()
json.dump({"times": times, "cpu": cpu, "process_cpu_s": time.process_time(), "export_s": getattr(globals().get("ready"), "export_s", None)},
          open(os.environ["BENCH_OUT"], "w"))
"""

PROFCAP = [sys.executable, "-m", "profui.capture.profcap"]


def run(kind: str, work: Path, rep: int, steps: int, window: str) -> dict:
    """One run of one configuration; returns the step times and what it wrote."""
    script = work / "train.py"
    out = work / f"{kind}-{rep}.json"
    trace = work / f"trace-{kind}-{rep}"
    env = {
        "BENCH_STEPS": str(steps),
        "BENCH_WINDOW": window,
        "BENCH_OUT": str(out),
        "BENCH_MODE": "torchprof" if kind == "torch.profiler" else "plain",
        "BENCH_JSON": str(work / f"torchprof-{rep}.json"),
    }
    import os

    full_env = {**os.environ, **env}
    job = [sys.executable, str(script)]
    if kind == "alone" or kind == "torch.profiler":
        cmd = job
    elif kind == "no-trace":
        cmd = [*PROFCAP, "-o", str(trace), "--no-trace", "--", *job]
    elif kind == "memory":
        cmd = [*PROFCAP, "-o", str(trace), "--memory", "--steps", window, "--", *job]
    else:
        cmd = [*PROFCAP, "-o", str(trace), "--steps", window, "--", *job]
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    subprocess.run(cmd, env=full_env, check=True, capture_output=True)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    result = json.loads(out.read_text())
    result["trace"] = trace
    # CPU of everything the run started (profcap, daemon, converters, the job) minus the job's own
    total = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    result["capture_cpu_s"] = total - result["process_cpu_s"]
    return result


def _footer_size(path: Path) -> int:
    import pyarrow.parquet as pq

    return pq.read_metadata(path).serialized_size


def sampler_cost(reps: int, short: float = 1.0, long: float = 6.0) -> tuple[float, float]:
    """CPU of ``profcap --no-trace -- sleep S`` for two S: (fixed seconds, CPU fraction of one core)."""
    costs: dict[float, list[float]] = {short: [], long: []}
    with tempfile.TemporaryDirectory(prefix="profui-bench-") as tmp:
        for rep in range(reps):
            for secs in (short, long):
                before = resource.getrusage(resource.RUSAGE_CHILDREN)
                subprocess.run(
                    [*PROFCAP, "-o", f"{tmp}/s{rep}-{secs}", "--no-trace", "--", "sleep", str(secs)],
                    check=True,
                    capture_output=True,
                )
                after = resource.getrusage(resource.RUSAGE_CHILDREN)
                costs[secs].append(after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime)
    c_short, c_long = statistics.median(costs[short]), statistics.median(costs[long])
    per_s = max(c_long - c_short, 0.0) / (long - short)
    return c_short - per_s * short, per_s


def median_ms(values: list[float]) -> float:
    """Median in milliseconds."""
    return statistics.median(values) * 1e3


def main() -> None:
    """Run every configuration ``--reps`` times, interleaved, and print the comparison."""
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--steps", type=int, default=200)
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--window", default="80-89")
    args = ap.parse_args()
    compile_sources()
    first, last = (int(x) for x in args.window.split("-"))
    warm = 20  # first iterations: allocator and caches warming up
    kinds = ["alone", "no-trace", "profcap", "torch.profiler", "memory"]
    times: dict[str, dict[str, list[float]]] = {k: {"outside": [], "inside": [], "stop": []} for k in kinds}
    cpu: dict[str, list[float]] = {k: [] for k in kinds}
    stalls_ms: list[float] = []
    events: list[int] = []
    profui_bytes: list[int] = []
    json_bytes: list[int] = []
    torch_export_ms: list[float] = []
    capture_cpu: dict[str, list[float]] = {"no-trace": [], "profcap": []}
    job_cpu: dict[str, list[float]] = {"no-trace": [], "profcap": []}
    footer_bytes: list[int] = []
    memory_stalls_ms: list[float] = []
    cpu_inside: dict[str, list[float]] = {"profcap": [], "memory": []}
    memory_bytes: list[int] = []
    with tempfile.TemporaryDirectory(prefix="profui-bench-") as tmp:
        work = Path(tmp)
        (work / "train.py").write_text(TRAIN)
        for rep in range(args.reps):
            for kind in kinds:
                r = run(kind, work, rep, args.steps, args.window)
                t = r["times"]
                # iterations first-1 (window start) and last (window end) carry the start/stop costs
                times[kind]["outside"] += [
                    v for i, v in enumerate(t) if i >= warm and not first - 1 <= i <= last + 1
                ]
                times[kind]["inside"] += t[first + 1 : last]
                times[kind]["stop"].append(t[last])
                cpu[kind] += [
                    v for i, v in enumerate(r["cpu"]) if i >= warm and not first - 1 <= i <= last + 1
                ]
                if kind in capture_cpu:
                    capture_cpu[kind].append(r["capture_cpu_s"])
                    job_cpu[kind].append(r["process_cpu_s"])
                if kind == "profcap":
                    manifest = json.loads((r["trace"] / "manifest.json").read_text())
                    [w] = manifest["capture"]["windows"]
                    stalls_ms.append(w["stall_ms"])
                    events.append(w["events"])
                    for f in r["trace"].glob("node=*/rank=*/events-*.parquet"):
                        profui_bytes.append(f.stat().st_size)
                        footer_bytes.append(_footer_size(f))
                if kind in cpu_inside:
                    cpu_inside[kind] += r["cpu"][first + 1 : last]
                if kind == "memory":
                    manifest = json.loads((r["trace"] / "manifest.json").read_text())
                    memory_stalls_ms += [w["stall_ms"] for w in manifest["capture"]["windows"]]
                    memory_bytes += [
                        f.stat().st_size for f in r["trace"].glob("node=*/rank=*/events-*.parquet")
                    ]
                if kind == "torch.profiler":
                    json_bytes.append((work / f"torchprof-{rep}.json").stat().st_size)
                    torch_export_ms.append(r["export_s"] * 1e3)
    k = last - first + 1
    med = {kind: {part: median_ms(v) for part, v in parts.items() if v} for kind, parts in times.items()}
    alone = med["alone"]["outside"]
    print(f"median step time over {args.reps} interleaved runs of {args.steps} steps (window {args.window}):")
    for kind in kinds:
        print(
            f"  {kind:15s} outside windows {med[kind]['outside']:8.3f} ms   inside {med[kind]['inside']:8.3f} ms"
        )
    cpu_alone = median_ms(cpu["alone"])
    print(
        "  (training thread CPU time per step outside windows: "
        + ", ".join(f"{kind} {median_ms(cpu[kind]):.3f} ms" for kind in kinds)
        + ")"
    )
    print(
        f"in-process CPU per step outside windows, profcap / alone: {median_ms(cpu['profcap']) / cpu_alone:.3f}x"
    )
    print(f"sampler only (profcap --no-trace) / alone:        {med['no-trace']['outside'] / alone:.3f}x")
    print(f"profcap outside its window / alone:                {med['profcap']['outside'] / alone:.3f}x")
    print(
        f"inside the window, profcap / torch.profiler:       "
        f"{med['profcap']['inside'] / med['torch.profiler']['inside']:.3f}x"
    )
    per_step_profui = statistics.median(profui_bytes) / k
    per_step_json = statistics.median(json_bytes) / k
    per_step_data = (statistics.median(profui_bytes) - statistics.median(footer_bytes)) / k
    print(
        f"bytes per traced step: profui {per_step_profui:,.0f} (of which data {per_step_data:,.0f}; the rest is "
        f"the file's fixed footer)  torch.profiler JSON {per_step_json:,.0f}"
    )
    print(
        f"  -> JSON / profui = {per_step_json / per_step_profui:.1f}x (data only: {per_step_json / per_step_data:.1f}x)"
    )
    for kind in capture_cpu:
        share = sum(capture_cpu[kind]) / sum(job_cpu[kind])
        print(
            f"CPU used by the capture itself ({kind}: profcap + daemon + conversion) / the job's CPU: {share:.1%} "
            "(these short runs are dominated by start-up; see the steady state below)"
        )
    fixed, per_s = sampler_cost(args.reps)
    print(
        f"sampler cost at 10 Hz: {fixed:.2f} s CPU once (start-up, final flush) + {per_s:.2%} of one core while "
        "the job runs"
    )
    stall = statistics.median(stalls_ms)
    n_events = statistics.median(events)
    stop_extra = statistics.median(times["profcap"]["stop"]) * 1e3 - med["profcap"]["inside"]
    torch_stop_extra = (
        statistics.median(times["torch.profiler"]["stop"]) * 1e3 - med["torch.profiler"]["inside"]
    )
    print(
        f"stall at window end: profcap {stall:.1f} ms for {n_events:,.0f} events "
        f"= {stall / n_events * 1e4:.1f} ms per 10k events (step grew by {stop_extra:.1f} ms); "
        f"torch.profiler step grew by {torch_stop_extra:.1f} ms (export {statistics.median(torch_export_ms):.1f} ms)"
    )
    print(
        f"profcap --memory (profile_memory) inside the window / profcap: "
        f"{med['memory']['inside'] / med['profcap']['inside']:.3f}x step time; stall at window end "
        f"{statistics.median(memory_stalls_ms):.1f} ms vs {stall:.1f} ms; bytes per traced step "
        f"{statistics.median(memory_bytes) / k:,.0f} vs {per_step_profui:,.0f}; outside its window / alone "
        f"{med['memory']['outside'] / alone:.3f}x"
    )
    print(
        f"  training-thread CPU per step inside the window, profcap --memory / profcap: "
        f"{median_ms(cpu_inside['memory']) / median_ms(cpu_inside['profcap']):.3f}x "
        f"({median_ms(cpu_inside['memory']):.3f} ms vs {median_ms(cpu_inside['profcap']):.3f} ms)"
    )
    # Wall time on a shared, overloaded box swings by tens of percent between runs; the training
    # thread's CPU time per step shows what profcap adds to the training process itself.
    print(
        f"headline: training-thread CPU per step outside windows, profcap / alone = "
        f"{median_ms(cpu['profcap']) / cpu_alone:.3f}x"
    )


if __name__ == "__main__":
    main()
