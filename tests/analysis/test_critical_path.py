"""The critical-path stage against independent oracles: a real CPU run that sleeps between
steps (the script's own clock), every shared trace (raw event times read with pyarrow), a
synthetic Kineto trace whose path is worked out by hand, and the shared Nsight export."""

from __future__ import annotations

import gzip
import json
import statistics
import sys
from pathlib import Path

import numpy as np
import polars as pl
import pyarrow.parquet as pq
import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "capture"))

from test_profcap_support import run_profcap  # noqa: E402

from profui.analysis import critical_path as cp  # noqa: E402
from profui.analysis import open_trace  # noqa: E402
from profui.analysis.critical_path_graph import step_graph  # noqa: E402
from profui.analysis.critical_path_inputs import rank_inputs  # noqa: E402
from profui.capture.ingest import import_trace  # noqa: E402

from realdata import SAMPLES, nsys_export, traces_dir  # noqa: E402

US = 1000  # ns per µs


def stage_of(trace) -> dict:
    """The stage's tables of an opened trace (as the pipeline computes them), checked to have
    clamped no negative what-if saving."""
    _tables, clamped = cp.analyse(
        trace.events(),
        trace.result("steps")["windows.parquet"],
        trace.result("correlate")["launches.parquet"],
        False,
    )
    assert clamped == []
    return trace.result("critical_path")


def check_tables(out: dict) -> None:
    """by_kind sums to the length; the stretches are contiguous from start to end; no negative
    saving."""
    steps = out["steps.parquet"]
    by_kind = out["by_kind.parquet"].group_by("node", "rank", "step").agg(pl.col("ns").sum())
    joined = steps.join(by_kind, on=["node", "rank", "step"], how="left")
    for row in joined.iter_rows(named=True):
        assert (row["ns"] or 0) == row["length_ns"] == row["end_ns"] - row["start_ns"], row
    events = out["events.parquet"]
    for (node, rank, step), rows in events.sort("seq").group_by(
        ["node", "rank", "step"], maintain_order=True
    ):
        s = steps.filter(node=node, rank=rank, step=step).row(0, named=True)
        starts, ends = rows["start_ns"].to_list(), rows["end_ns"].to_list()
        assert starts[0] == s["start_ns"] and ends[-1] == s["end_ns"]
        assert starts[1:] == ends[:-1], "stretches are contiguous"
        assert all(a < b for a, b in zip(starts, ends, strict=True))
        assert rows["seq"].to_list() == list(range(rows.height))
    assert set(out["by_kind.parquet"]["kind"]) <= set(cp.KINDS)
    assert out["what_if.parquet"].filter(pl.col("saved_ns") < 0).height == 0


def raw_events(trace_dir: Path) -> pl.DataFrame:
    """Every event of a trace read with pyarrow, outside profui's reader."""
    frames = []
    for f in sorted(trace_dir.resolve().glob("node=*/rank=*/events-*.parquet")):
        t = pq.read_table(f, columns=["ts", "dur", "kind", "device", "stream", "tid", "correlation"])
        frame = pl.from_arrow(t).with_columns(pl.col("kind").cast(pl.String))
        frames.append(frame.with_columns(pl.lit(int(f.parent.name.split("=")[1])).alias("rank")))
    return pl.concat(frames, how="vertical_relaxed")


def check_replay_reproduces(trace) -> int:
    """Replay each analysed step's graph with nothing changed: every device op's start and end
    and every host anchor's start are the raw events' (read with pyarrow); returns the count."""
    raw = raw_events(Path(trace.path))
    dev = {
        (r, d, s, ts): ts + dur
        for r, d, s, ts, dur in raw.filter(pl.col("device") >= 0)
        .select("rank", "device", "stream", "ts", "dur")
        .iter_rows()
    }
    host_starts = {
        (r, tid, ts)
        for r, tid, ts in raw.filter(pl.col("device") < 0).select("rank", "tid", "ts").iter_rows()
    }
    events = trace.events()
    windows = trace.result("steps")["windows.parquet"]
    inputs = rank_inputs(events, trace.result("correlate")["launches.parquet"])
    checked = 0
    for step in cp.chosen_steps(windows):
        w = windows.filter(step=step).sort("node", "rank")
        ranks = [
            ((n, r), s, e, None)
            for n, r, s, e in w.select("node", "rank", "cpu_start_ns", "cpu_end_ns").iter_rows()
        ]
        g, parts = step_graph(step, [x for x in ranks if x[0] in inputs], inputs)
        t = g.replay(0)
        assert t == g.t
        for rs in parts:
            rank = rs.key[1]
            for (d, s, ts), (a, b) in rs.ops.items():
                assert t[a] == ts and t[b] == dev[(rank, d, s, ts)]
                checked += 1
            for (tid, ts), (a, _b, _name) in rs.host_coll.items():
                assert (rank, tid, ts) in host_starts and t[a] == ts
    return checked


# -- (1) a real CPU run sleeping between steps --------------------------------------------------

SLEEPY = r"""
import os, time
import torch

torch.manual_seed(0)
torch.set_num_threads(1)
model = torch.nn.Sequential(torch.nn.Linear(64, 128), torch.nn.ReLU(), torch.nn.Linear(128, 10))
opt = torch.optim.SGD(model.parameters(), lr=0.01)
data = torch.utils.data.TensorDataset(torch.randn(32 * 14, 64), torch.randint(0, 10, (32 * 14,)))
slept, marks = [], []
for i, (x, y) in enumerate(torch.utils.data.DataLoader(data, batch_size=32)):
    loss = torch.nn.functional.cross_entropy(model(x), y)
    opt.zero_grad()
    loss.backward()
    opt.step()
    marks.append((time.time_ns(), time.thread_time_ns()))
    t0 = time.time_ns()
    time.sleep(0.02)  # a blocking stall outside any op
    slept.append((t0, time.time_ns()))
open(os.environ["SLEPT"], "w").write("\n".join(f"{a} {b}" for a, b in slept))
open(os.environ["SLEPT"] + ".marks", "w").write("\n".join(f"{a} {b}" for a, b in marks))
"""


def off_cpu_besides(sleep: tuple[int, int], marks: list[tuple[int, int]]) -> int:
    """The time the script's thread was off the CPU from the end of the optimizer step before
    ``sleep`` to the end of the next one (wall minus thread CPU time; the step's window), the sleep
    itself left out: on a loaded host, other processes holding the CPU (0 idle, give or take µs)."""
    (w0, c0) = [m for m in marks if m[0] <= sleep[0]][-1]
    (w1, c1) = next(m for m in marks if m[0] >= sleep[1])
    return max(0, (w1 - w0) - (c1 - c0) - (sleep[1] - sleep[0]))


def test_sleep_between_steps_is_host_overhead_and_what_if_host_removes_it(tmp_path):
    slept_file = tmp_path / "slept.txt"
    proc, trace_dir = run_profcap(
        tmp_path, ["--steps", "4-9"], SLEEPY, env={"SLEPT": str(slept_file), "OMP_NUM_THREADS": "1"}
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    # the script's own clock: when each sleep ran and how long it really took (a loaded host
    # oversleeps 20 ms by up to 10)
    sleeps = [tuple(map(int, line.split())) for line in slept_file.read_text().splitlines()]
    marks = [tuple(map(int, line.split())) for line in Path(f"{slept_file}.marks").read_text().splitlines()]
    out = stage_of(open_trace(trace_dir))
    check_tables(out)
    steps = out["steps.parquet"].sort("step")
    assert steps.height == 6
    events = out["events.parquet"]
    saved = dict(out["what_if.parquet"].filter(change="host").select("step", "saved_ns").iter_rows())
    for step, lo, hi in steps.select("step", "start_ns", "end_ns").iter_rows():
        # the sleep that ran in this step: its middle inside the step's window
        (a, b) = next((a, b) for a, b in sleeps if lo <= (a + b) // 2 < hi)
        slept = b - a
        # a loaded host's preemption between two ops is a stretch outside any op too, which the
        # trace cannot tell from a stall: allowed above the sleep, never below it
        other = off_cpu_besides((a, b), marks)
        stretch = events.filter(step=step, kind="host_overhead")
        longest = (stretch["end_ns"] - stretch["start_ns"]).max()
        # the sleep is one stretch of the path outside any op (with the few µs of Python
        # around it); the host what-if gives it back
        assert -2_000_000 < longest - slept < 2_000_000 + other, (step, longest, slept, other)
        assert -0.25 * slept <= saved[step] - slept <= 0.25 * slept + other, (step, saved[step], slept, other)
    by_kind = out["by_kind.parquet"]
    # a CPU-only run: no device lane on the path, no device kind
    assert set(out["events.parquet"]["lane"]) == {"host"}
    assert not set(by_kind["kind"]) & {"device_compute", "transfer", "launch_delay", "sync_wait"}


# -- (2) every shared trace and sample ------------------------------------------------------------

SHARED = sorted(
    p.name
    for p in traces_dir().glob("hta-*.json*")
    if "execution_trace-benchmark_simple_add_et" not in p.name and "memory_timeline" not in p.name
)


@pytest.mark.parametrize("name", SHARED)
def test_shared_trace_paths_partition_their_steps_and_replay_reproduces_the_trace(imported_trace, name):
    trace = imported_trace(name)
    out = stage_of(trace)
    check_tables(out)
    steps = out["steps.parquet"]
    assert steps.height > 0
    # the analysed steps are the trace's windows, the same numbers on every rank
    windows = trace.result("steps")["windows.parquet"]
    assert set(steps["step"]) == set(cp.chosen_steps(windows))
    chosen = windows.filter(pl.col("step").is_in(steps["step"].implode())).sort("node", "rank", "step")
    assert steps.sort("node", "rank", "step")["start_ns"].to_list() == chosen["cpu_start_ns"].to_list()
    check_replay_reproduces(trace)


@pytest.mark.parametrize("sample", ["mlp_cpu", "synthetic_gpu", "jax_cpu"])
def test_sample_paths(sample, tmp_path, monkeypatch):
    from profui.tui.cli.sources import resolve_source

    monkeypatch.setenv("PROFUI_CACHE", str(tmp_path / "cache"))
    # jax_cpu is a JAX profiler log: imported as profui open imports it (XLA ops, no correlation)
    trace = open_trace(resolve_source(SAMPLES / sample))
    out = stage_of(trace)
    check_tables(out)
    assert check_replay_reproduces(trace) >= 0


def test_at_most_sixteen_steps_median_and_longest_kept():
    lens = [5, 9, 1, 7, 3, 8, 2, 6, 4, 100, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19]
    windows = pl.DataFrame(
        {
            "node": ["n"] * 20,
            "rank": [0] * 20,
            "step": list(range(20)),
            "cpu_start_ns": [0] * 20,
            "cpu_end_ns": lens,
            "end_ns": [0] * 20,
        }
    )
    got = cp.chosen_steps(windows)
    assert len(got) == 16 and 9 in got and 0 in got and 19 in got
    # median of 20 lengths (sorted, index 9): 10 -> step 10
    assert 10 in got


# -- (3) a synthetic trace computed by hand -------------------------------------------------------


def synthetic(tmp: Path) -> Path:
    """SYNTHETIC (hand-made) Kineto trace, times in µs from 0: one step [0, 90] on thread 100,
    ``aten::op`` [0, 38]; three launch-bound kernels (launch at 5/15/25, start 7 µs later,
    2 µs each); an async H2D copy launched at 30 (call 2 µs) that waits on the stream for the
    third kernel and copies 34-80; ``cudaStreamSynchronize`` 40-82; the step ends at 90."""
    base = 1_700_000_000_000_000
    ev = [
        {
            "ph": "X",
            "cat": "user_annotation",
            "name": "ProfilerStep#1",
            "pid": 1,
            "tid": 100,
            "ts": 0,
            "dur": 90,
        },
        {"ph": "X", "cat": "cpu_op", "name": "aten::op", "pid": 1, "tid": 100, "ts": 0, "dur": 38},
    ]
    for i, (launch, start) in enumerate([(5, 12), (15, 22), (25, 32)], start=1):
        ev.append(
            {
                "ph": "X",
                "cat": "cuda_runtime",
                "name": "cudaLaunchKernel",
                "pid": 1,
                "tid": 100,
                "ts": launch,
                "dur": 5,
                "args": {"correlation": i},
            }
        )
        ev.append(
            {
                "ph": "X",
                "cat": "kernel",
                "name": f"k{i}",
                "pid": 0,
                "tid": 7,
                "ts": start,
                "dur": 2,
                "args": {"correlation": i, "device": 0, "stream": 7},
            }
        )
    ev += [
        {
            "ph": "X",
            "cat": "cuda_runtime",
            "name": "cudaMemcpyAsync",
            "pid": 1,
            "tid": 100,
            "ts": 30,
            "dur": 2,
            "args": {"correlation": 4},
        },
        {
            "ph": "X",
            "cat": "gpu_memcpy",
            "name": "Memcpy HtoD (Pinned -> Device)",
            "pid": 0,
            "tid": 7,
            "ts": 34,
            "dur": 46,
            "args": {"correlation": 4, "device": 0, "stream": 7, "bytes": 1 << 20},
        },
        {
            "ph": "X",
            "cat": "cuda_runtime",
            "name": "cudaStreamSynchronize",
            "pid": 1,
            "tid": 100,
            "ts": 40,
            "dur": 42,
            "args": {"correlation": 5},
        },
    ]
    for e in ev:
        e["ts"] += base
    src = tmp / "synthetic.json.gz"
    with gzip.open(src, "wt") as f:
        json.dump(
            {
                "traceEvents": ev,
                "distributedInfo": {"rank": 0},
                "deviceProperties": [{"id": 0, "name": "GPU"}],
            },
            f,
        )
    out = tmp / "trace"
    import_trace([src], out)
    return out


def test_synthetic_path_by_hand(tmp_path):
    trace = open_trace(synthetic(tmp_path))
    out = stage_of(trace)
    check_tables(out)
    assert out["steps.parquet"]["length_ns"].to_list() == [90 * US]
    # by hand: [0,25] host_compute (thread up to the 3rd launch), [25,32] launch_delay (k3),
    # [32,34] device_compute (k3), [34,80] transfer (the copy queued behind k3),
    # [80,82] sync_wait, [82,90] host_overhead
    path = [
        (k, (b - a) // US)
        for k, a, b in out["events.parquet"].sort("seq").select("kind", "start_ns", "end_ns").iter_rows()
    ]
    assert path == [
        ("host_compute", 25),
        ("launch_delay", 7),
        ("device_compute", 2),
        ("transfer", 46),
        ("sync_wait", 2),
        ("host_overhead", 8),
    ]
    saved = dict(out["what_if.parquet"].select("change", "saved_ns").iter_rows())
    # transfer -> 0: copy ends at 34, the sync keeps its 2 µs after it (36) but the thread only
    # reaches it at 40; +8 -> 48: saves 42. sync removed: host ends at 48, the copy at 80: 10.
    # host: the thread's stretches outside any op are 2 µs before the sync call and 8 µs after
    # it, both far under a stall (1 ms): dispatch, kept: 0. compute halved: 13.5 (see the
    # module's hand sums).
    assert saved["transfer"] == 42 * US
    assert saved["sync"] == 10 * US
    assert saved["host"] == 0
    assert saved["launch"] == 0  # every launch already at the floor (7 µs)
    assert saved["compute"] == 13_500
    assert saved["input"] == saved["straggler"] == saved["communication"] == 0


# -- (4) the shared Nsight export -----------------------------------------------------------------


def test_nsight_h100_path_is_mostly_transfer(tmp_path, monkeypatch):
    from profui.tui.cli.sources import resolve_source

    monkeypatch.setenv("PROFUI_CACHE", str(tmp_path / "cache"))
    trace = open_trace(resolve_source(nsys_export("h100_2gpu_1s")))
    out = stage_of(trace)
    check_tables(out)
    by_kind = out["by_kind.parquet"].group_by("kind").agg(pl.col("ns").sum())
    total = by_kind["ns"].sum()
    transfer = by_kind.filter(kind="transfer")["ns"].sum()
    assert transfer > 0.5 * total
    assert by_kind.sort("ns", descending=True)["kind"][0] == "transfer"
    assert by_kind.filter(kind="launch_delay")["ns"].sum() < 0.01 * total


# -- a real 3-rank gloo job with one late rank ------------------------------------------------------

LATE = r"""
import os, time
import torch
import torch.distributed as dist

dist.init_process_group("gloo")
rank = dist.get_rank()
torch.manual_seed(rank)
torch.set_num_threads(1)
model = torch.nn.parallel.DistributedDataParallel(torch.nn.Linear(32, 8))
opt = torch.optim.SGD(model.parameters(), lr=0.01)
slept = []
for i in range(9):
    x, y = torch.randn(16, 32), torch.randn(16, 8)
    loss = ((model(x) - y) ** 2).mean()
    opt.zero_grad()
    if rank == 1:
        t0 = time.perf_counter_ns()
        time.sleep(0.05)  # late to every all-reduce, outside any op
        slept.append(time.perf_counter_ns() - t0)
    loss.backward()
    opt.step()
if rank == 1:
    open(os.environ["SLEPT"], "w").write(" ".join(map(str, slept)))
dist.destroy_process_group()
os._exit(0)  # torch CPU + gloo aborts now and then in its exit-time destructors
"""


def test_gloo_late_rank_is_the_others_rank_wait_and_the_straggler_change_removes_its_lateness(tmp_path):
    slept_file = tmp_path / "slept.txt"
    launcher = [sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc-per-node", "3"]
    proc, trace_dir = run_profcap(
        tmp_path,
        ["--steps", "2-7"],
        LATE,
        cmd=[*launcher, str(tmp_path / "job.py")],
        env={"OMP_NUM_THREADS": "1", "SLEPT": str(slept_file)},
        timeout=300,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    slept = statistics.median(int(x) for x in slept_file.read_text().split())
    out = stage_of(open_trace(trace_dir))
    check_tables(out)
    assert set(out["steps.parquet"]["rank"]) == {0, 1, 2}
    saved = out["what_if.parquet"].filter(change="straggler")
    waits = out["by_kind.parquet"].filter(kind="rank_wait")
    # the late rank waits for nobody; the others wait for it in the all-reduce
    assert waits.filter(rank=1).height == 0
    assert waits.filter(pl.col("rank") != 1).height > 0
    # removing its lateness shortens the job's step (its slowest rank's path) by the sleep:
    # within 25% in most steps (a step whose marker ends before its all-reduce does is waited
    # for later), and the late rank's own path by as much
    lengths = out["steps.parquet"].select("rank", "step", "length_ns")
    after = saved.join(lengths, on=["rank", "step"], suffix="_before")
    job = after.group_by("step").agg(pl.col("length_ns_before").max() - pl.col("length_ns").max())
    close = [abs(s - slept) <= 0.25 * slept for s in job["length_ns_before"]]
    assert sum(close) >= 4, (job.rows(), slept)
    late = [abs(s - slept) <= 0.25 * slept for s in saved.filter(rank=1)["saved_ns"]]
    assert sum(late) >= 4, (saved.filter(rank=1)["saved_ns"].to_list(), slept)
    # the late rank's own path holds its sleep, outside any op
    overhead = out["by_kind.parquet"].filter(rank=1, kind="host_overhead")["ns"]
    assert statistics.median(overhead) >= 0.9 * slept


def test_stalls_are_gaps_outside_ops_of_a_millisecond_or_more():
    """By hand: ops [0, 10] µs, [10.5, 20] µs, [1020, 1030] µs, [1030.9, 1040] µs on a thread
    whose events span [0, 1100] µs: the 0.5 µs and 0.9 µs gaps are dispatch, the 1000 µs one a
    stall, the 60 µs after the last op (to the thread's last event) too short to be one."""
    from profui.analysis.critical_path_inputs import STALL, STALL_MIN_NS, _thread_time

    assert STALL_MIN_NS == 1000 * US
    starts = np.array([0, 10_500, 1_020_000, 1_030_900], dtype=np.int64)
    ends = np.array([10_000, 20_000, 1_030_000, 1_040_000], dtype=np.int64)
    names = (starts, ends, ["a", "b", "c", "d"])
    tt = _thread_time(starts, ends, np.zeros(4, dtype=bool), names, (0, 1_100_000))
    at = tt.at(np.array([0, 1_100_000], dtype=np.int64))
    overhead, stall = (at[:, 1] - at[:, 0])[[2, STALL]]
    assert overhead == 500 + 1_000_000 + 900 + 60_000
    assert stall == 1_000_000
    # half of the stall: what lies inside [500 µs, 1100 µs)
    part = tt.at(np.array([500_000, 1_100_000], dtype=np.int64))
    assert part[STALL, 1] - part[STALL, 0] == 520_000
