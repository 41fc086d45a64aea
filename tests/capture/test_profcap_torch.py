"""profcap on real CPU torch training: requested windows and steps, CPU ops inside them, user
annotations, metrics at about the requested rate, DataLoader workers not traced."""

from __future__ import annotations

from test_profcap_support import (
    TRAIN,
    events_files,
    inside,
    kinds,
    manifest,
    read_events,
    read_metrics,
    run_profcap,
    sample_rate,
    steps_of,
)

from profui.capture.format import open_trace_dir


def test_requested_windows_hold_their_steps_ops_and_annotations(tmp_path):
    proc, trace = run_profcap(
        tmp_path,
        ["--steps", "3-5,8-9", "--hz", "10"],
        TRAIN,
        env={"STEPS": "12", "WORKERS": "1", "SLEEP": "0.15"},
    )
    assert proc.returncode == 0, proc.stderr
    m = manifest(trace)
    assert m["status"] == "completed" and m["exit_code"] == 0
    assert m["ranks"] == [0]
    # one events file per window, both of rank 0; the DataLoader worker is never traced
    files = events_files(trace)
    assert [f.parent.name for f in files] == ["rank=0", "rank=0"]
    assert [(w["first"], w["last"]) for w in m["capture"]["windows"]] == [(3, 5), (8, 9)]
    rows = read_events(trace)
    assert len({r["pid"] for r in rows if r["kind"] == "cpu_op"}) == 1
    steps = steps_of(rows)
    assert sorted(steps) == [3, 4, 5, 8, 9]
    for n, step in steps.items():
        ops = [r for r in rows if r["kind"] == "cpu_op" and inside(r, step)]
        names = {r["name"] for r in ops}
        assert "aten::addmm" in names and "aten::mm" in names, (n, names)
        notes = [r for r in rows if r["kind"] == "annotation" and r["name"] == "fwd_bwd" and inside(r, step)]
        assert len(notes) == 1, n
        loads = [
            r for r in rows if r["kind"] == "annotation" and r["name"] == "load_batch" and inside(r, step)
        ]
        assert len(loads) == 1, n
        # record_shapes stays on: op arguments carry input dtypes
        addmm = next(r for r in ops if r["name"] == "aten::addmm")
        assert "float" in (addmm["args"] or "")
    # steps are consecutive: step n+1 starts where step n ends (within the hook's own time)
    for n in (3, 4, 8):
        gap = steps[n + 1]["ts"] - (steps[n]["ts"] + steps[n]["dur"])
        assert 0 <= gap < 5_000_000
    # metrics at about 10 Hz over the run
    metrics = read_metrics(trace)
    rate = sample_rate(metrics, "cpu")
    assert 5.0 <= rate <= 11.0, rate  # 10 Hz asked; a loaded CI box may delay some samples
    per_sample = kinds([{"kind": (r["source"], r["metric"])} for r in metrics])
    n_samples = per_sample[("mem", "used_bytes")]
    assert per_sample[("proc", "rss_bytes")] >= n_samples - 12  # job tree followed from the start
    # the trace opens through the validating opener
    opened = open_trace_dir(trace)
    assert opened.num_events == len(rows)


def test_default_traces_steps_10_to_14(tmp_path):
    proc, trace = run_profcap(tmp_path, [], TRAIN, env={"STEPS": "17"})
    assert proc.returncode == 0, proc.stderr
    rows = read_events(trace)
    assert sorted(steps_of(rows)) == [10, 11, 12, 13, 14]
    assert kinds(rows)["cpu_op"] > 5 * 20


def test_schedule_option_repeats_cycles(tmp_path):
    # wait 1, warmup 1, active 2, repeat 2 -> cycles start at step 1: traced 3-4 and 7-8
    proc, trace = run_profcap(tmp_path, ["--schedule", "1,1,2,2"], TRAIN, env={"STEPS": "12"})
    assert proc.returncode == 0, proc.stderr
    assert len(events_files(trace)) == 2
    assert sorted(steps_of(read_events(trace))) == [3, 4, 7, 8]


def test_run_shorter_than_its_window_exports_what_it_has(tmp_path):
    proc, trace = run_profcap(tmp_path, ["--steps", "4-50"], TRAIN, env={"STEPS": "8"})
    assert proc.returncode == 0, proc.stderr
    # steps 4..7 complete; the loop ends during step 8's data fetch, which is exported at exit
    assert sorted(steps_of(read_events(trace)))[:4] == [4, 5, 6, 7]
    assert manifest(trace)["capture"]["windows"][0]["first"] == 4


def test_backs_off_when_the_job_runs_its_own_profiler(tmp_path):
    script = (
        TRAIN.replace(
            "for i, batch in enumerate(loader):",
            "own = torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CPU])\n"
            "own.start()\n"
            "for i, batch in enumerate(loader):",
        )
        + "own.stop()\nown.export_chrome_trace('own.json')\n"
    )
    proc, trace = run_profcap(tmp_path, ["--steps", "3-4"], script, env={"STEPS": "8"})
    assert proc.returncode == 0, proc.stderr
    assert events_files(trace) == []
    assert (tmp_path / "own.json").stat().st_size > 1000
    assert any("backed off" in n and "its own torch.profiler" in n for n in manifest(trace)["notes"])
    assert not any(n.startswith("no trace windows") for n in manifest(trace)["notes"])


def test_manual_start_stop_and_user_steps_without_optimizer(tmp_path):
    script = r"""
import torch
from profui.capture import annotate, start_profiling, step, stop_profiling
w = torch.randn(64, 64)
for i in range(10):
    if i == 2:
        start_profiling()
    with annotate("matmul_loop"):
        x = w @ w
    step()
    if i == 5:
        stop_profiling()
"""
    proc, trace = run_profcap(tmp_path, ["--steps", "100-101"], script)
    assert proc.returncode == 0, proc.stderr
    rows = read_events(trace)
    # started during step 2, step() calls at the end of iterations 2..5 -> steps 2..5 complete;
    # stop_profiling() right after step() leaves at most a sliver of step 6, which holds none of
    # the loop's work (a sliver's length is the scheduler's: on a loaded machine it can outlast
    # a whole step of one 64x64 matmul, so lengths are not compared)
    steps = steps_of(rows)
    assert sorted(steps)[:4] == [2, 3, 4, 5] and len(steps) <= 5
    loop = [r for r in rows if r["name"] in ("matmul_loop", "aten::mm")]
    assert all(any(inside(r, steps[n]) for n in (2, 3, 4, 5)) for r in loop)
    assert 6 not in steps or not any(inside(r, steps[6]) for r in loop)
    assert [(w["first"], w["last"]) for w in manifest(trace)["capture"]["windows"]] == [(2, 5)]
    assert sum(1 for r in rows if r["name"] == "matmul_loop") == 4
    assert sum(1 for r in rows if r["name"] == "aten::mm") == 4


def test_only_the_first_optimizer_counts_steps(tmp_path):
    # two optimizers stepping every iteration (a GAN-like loop): still one step per iteration
    script = r"""
import torch
from profui.capture import annotate
a, b = torch.nn.Linear(16, 16), torch.nn.Linear(16, 16)
opt_a, opt_b = torch.optim.SGD(a.parameters(), lr=0.1), torch.optim.Adam(b.parameters())
for i in range(10):
    with annotate(f"iter{i}"):
        a(torch.randn(8, 16)).sum().backward()
        b(torch.randn(8, 16)).sum().backward()
    opt_a.step()
    opt_b.step()
"""
    proc, trace = run_profcap(tmp_path, ["--steps", "3-4"], script)
    assert proc.returncode == 0, proc.stderr
    rows = read_events(trace)
    steps = steps_of(rows)
    assert sorted(steps) == [3, 4]
    for n in (3, 4):
        inner = [
            r["name"]
            for r in rows
            if r["kind"] == "annotation" and r["name"].startswith("iter") and inside(r, steps[n])
        ]
        assert inner == [f"iter{n}"]


def test_yields_its_window_when_the_job_starts_a_profiler_mid_window(tmp_path):
    script = TRAIN.replace(
        "    opt.step()\n",
        "    opt.step()\n"
        "    if i == 5:\n"
        "        own = torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CPU])\n"
        "        own.start()\n"
        "    if i == 7:\n"
        "        own.stop()\n"
        "        own.export_chrome_trace('own.json')\n",
    )
    proc, trace = run_profcap(tmp_path, ["--steps", "2-50"], script, env={"STEPS": "10"})
    assert proc.returncode == 0, proc.stderr
    # ours stopped when the job's profiler started (end of step 5): steps 2..5 kept, then no more
    steps = steps_of(read_events(trace))
    assert sorted(steps)[:4] == [2, 3, 4, 5] and max(steps) <= 6
    assert len(events_files(trace)) == 1
    assert (tmp_path / "own.json").stat().st_size > 1000
    assert any("backed off" in n for n in manifest(trace)["notes"])


def test_a_run_too_short_for_its_window_says_so(tmp_path):
    proc, trace = run_profcap(tmp_path, [], TRAIN, env={"STEPS": "6"})
    assert proc.returncode == 0, proc.stderr
    assert events_files(trace) == []
    notes = manifest(trace)["notes"]
    assert (
        "no trace windows: the job ran 6 steps and ended before its first window (steps 10-14); "
        "choose earlier steps with --steps"
    ) in notes
    assert sum(n.startswith("no trace windows") for n in notes) == 1
