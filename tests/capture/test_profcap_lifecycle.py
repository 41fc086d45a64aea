"""profcap's lifecycle: exit codes, statuses, signals, SIGKILL of the job, jobs without torch,
chaining to an existing sitecustomize, metrics-only runs and refused command lines."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import psutil
import pytest
from test_profcap_support import (
    PROFCAP,
    TRAIN,
    events_files,
    kinds,
    manifest,
    read_events,
    read_metrics,
    run_profcap,
    steps_of,
)

from profui.capture import profcap
from profui.capture.daemon import perf
from profui.capture.format import open_trace_dir

from realdata import run_profui

#: Plain Python (never imports torch): annotations and steps through profui's own recorder.
PLAIN = r"""
import os, sys, time
from profui.capture import annotate, annotation_begin, annotation_end, step

@annotate("work")
def work():
    time.sleep(0.002)

for i in range(int(os.environ.get("STEPS", "20"))):
    annotation_begin("outer")
    work()
    work()
    annotation_end("outer")
    step()
print("torch imported:", "torch" in sys.modules)
sys.exit(int(os.environ.get("EXIT", "0")))
"""


def _wait_for(pred, timeout: float = 60.0) -> None:
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        if pred():
            return
        time.sleep(0.05)
    raise AssertionError("condition not reached in time")


def test_job_exit_code_3_makes_profcap_exit_3_and_failed(tmp_path):
    proc, trace = run_profcap(tmp_path, ["--no-trace"], PLAIN, env={"EXIT": "3", "STEPS": "2"})
    assert proc.returncode == 3
    m = manifest(trace)
    assert m["status"] == "failed" and m["exit_code"] == 3
    assert m["end_ns"] >= m["start_ns"]


def test_plain_python_job_gets_annotations_and_steps_without_torch(tmp_path):
    # A torch that cannot be imported shadows the real one, so the job really runs without torch.
    block = tmp_path / "block"
    (block / "torch").mkdir(parents=True)
    (block / "torch" / "__init__.py").write_text("raise ImportError('torch blocked for this test')\n")
    script = "try:\n    import torch\nexcept ImportError:\n    pass\n" + PLAIN
    proc, trace = run_profcap(tmp_path, [], script, env={"PYTHONPATH": str(block), "STEPS": "20"})
    assert proc.returncode == 0, proc.stderr
    assert "torch imported: False" in proc.stdout
    rows = read_events(trace)
    assert set(kinds(rows)) == {"annotation", "step"}
    assert kinds(rows)["annotation"] == 20 * 3  # outer + 2 x work per step
    # step n ends at the (n+1)-th step() call; step 0 (before the first call) has no start
    assert sorted(steps_of(rows)) == list(range(1, 20))
    outer = [r for r in rows if r["name"] == "outer"]
    work = [r for r in rows if r["name"] == "work"]
    assert all(r["dur"] >= 4_000_000 for r in outer) and all(r["dur"] >= 2_000_000 for r in work)
    assert manifest(trace)["status"] == "completed"
    assert read_metrics(trace), "the sampler still runs"
    assert any(
        n.startswith("no trace windows: no Python process of the job imported torch")
        for n in manifest(trace)["notes"]
    )


def test_existing_sitecustomize_still_runs(tmp_path):
    site = tmp_path / "site"
    site.mkdir()
    marker = tmp_path / "marker.txt"
    (site / "sitecustomize.py").write_text(f"open({str(marker)!r}, 'w').write('ran')\n")
    proc, trace = run_profcap(tmp_path, [], PLAIN, env={"PYTHONPATH": str(site), "STEPS": "3"})
    assert proc.returncode == 0, proc.stderr
    assert marker.read_text() == "ran"
    assert kinds(read_events(trace))["annotation"] == 9


def test_no_trace_records_metrics_only(tmp_path):
    proc, trace = run_profcap(
        tmp_path,
        ["--no-trace", "--hz", "20", "--perf-events", "context-switches"],
        PLAIN,
        env={"STEPS": "150"},
    )
    assert proc.returncode == 0
    assert events_files(trace) == []
    rows = read_metrics(trace)
    assert {r["source"] for r in rows} >= {"cpu", "mem", "proc"}
    m = manifest(trace)
    assert m["capture"]["trace"] is False and any("tracing off" in n for n in m["notes"])
    # perf: counted per CPU where this kernel permits, else said once in the notes
    working, _ = perf.probe(["context-switches"])
    switches = [r for r in rows if r["source"] == "perf" and r["metric"] == "context_switches"]
    if working:
        assert {r["device"] for r in switches} == set(range(psutil.cpu_count()))
    else:
        assert not switches and any("context-switches" in n or "perf" in n for n in m["notes"])

    # a summary of it says what it has and nothing else: no step windows, so no statistics of
    # them (one group over no rows gave a row of nulls, which the schema check warned about)
    out = run_profui("summary", trace, "--json")
    assert out.returncode == 0 and out.stderr == "", out.stderr
    doc = json.loads(out.stdout)
    assert doc["sections"]["steps"]["job_stats"] == []


def test_daemon_death_does_not_touch_the_job(tmp_path):
    pidfile = tmp_path / "job.pid"
    job = tmp_path / "job.py"
    job.write_text(TRAIN)
    trace = tmp_path / "trace"
    env = dict(os.environ, STEPS="30", SLEEP="0.05", PIDFILE=str(pidfile))
    p = subprocess.Popen(
        [*PROFCAP, "-o", str(trace), "--steps", "20-21", "--", sys.executable, str(job)],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    _wait_for(pidfile.exists)
    [daemon] = [
        c for c in psutil.Process(p.pid).children() if "profui.capture.daemon" in " ".join(c.cmdline())
    ]
    daemon.kill()
    out, err = p.communicate(timeout=120)
    assert p.returncode == 0, err
    assert "trained 30" in out
    m = manifest(trace)
    assert m["status"] == "completed"
    assert any(n.startswith("sampling daemon died") for n in m["notes"])
    # the window the daemon could not convert was converted by profcap at the end
    assert sorted(steps_of(read_events(trace))) == [20, 21]
    assert m["capture"]["windows"][0]["first"] == 20


def test_sigint_is_forwarded_and_ends_stopped(tmp_path):
    job = tmp_path / "job.py"
    ready = tmp_path / "ready"
    job.write_text(f"import time\nopen({str(ready)!r}, 'w').close()\ntime.sleep(120)\n")
    trace = tmp_path / "trace"
    p = subprocess.Popen(
        [*PROFCAP, "-o", str(trace), "--no-trace", "--", sys.executable, str(job)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    _wait_for(ready.exists)
    assert manifest(trace)["status"] == "running"
    p.send_signal(signal.SIGINT)
    _, err = p.communicate(timeout=60)
    assert p.returncode == 128 + signal.SIGINT, err
    m = manifest(trace)
    assert m["status"] == "stopped" and m["exit_code"] == 130


def test_sigkill_of_the_job_leaves_a_readable_finalised_trace(tmp_path):
    pidfile = tmp_path / "job.pid"
    job = tmp_path / "job.py"
    job.write_text(TRAIN)
    trace = tmp_path / "trace"
    env = dict(os.environ, STEPS="100000", SLEEP="0.02", PIDFILE=str(pidfile))
    # window 2-3 completes; window 6-100000 is being recorded when the job is killed
    p = subprocess.Popen(
        [*PROFCAP, "-o", str(trace), "--steps", "2-3,6-100000", "--", sys.executable, str(job)],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    _wait_for(lambda: events_files(trace) and list((trace / ".spool").glob("*.open")), timeout=120)
    os.kill(int(pidfile.read_text()), signal.SIGKILL)
    _, err = p.communicate(timeout=60)
    assert p.returncode == 128 + signal.SIGKILL, err
    m = manifest(trace)
    assert m["status"] == "failed" and m["exit_code"] == 137
    assert any("SIGKILL" in n for n in m["notes"])
    assert any("steps 6-100000" in n and "lost" in n for n in m["notes"])
    opened = open_trace_dir(trace)
    assert len(opened.events) == 1 and opened.metrics
    assert sorted(steps_of(read_events(trace))) == [2, 3]
    assert not (trace / ".spool").exists()


def test_command_not_found_exits_127(tmp_path):
    trace = tmp_path / "trace"
    proc = subprocess.run(
        [*PROFCAP, "-o", str(trace), "--", str(tmp_path / "no-such-program")],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert proc.returncode == 127
    assert manifest(trace)["status"] == "failed" and manifest(trace)["exit_code"] == 127


@pytest.mark.parametrize(
    "argv, message",
    [
        ([], "no command given"),
        (["--steps", "5-2", "--", "true"], "range ends before it starts"),
        (["--steps", "0-3", "--", "true"], "step 0 cannot be traced"),
        (["--schedule", "1,1", "--", "true"], "--schedule"),
        (["--hz", "0", "--", "true"], "--hz"),
    ],
)
def test_bad_command_lines_exit_2_with_one_line(argv, message, capsys):
    with pytest.raises(SystemExit) as exc:
        profcap.main(argv)
    assert exc.value.code == 2
    assert message in capsys.readouterr().err


def test_refuses_to_overwrite_an_existing_trace(tmp_path):
    out = tmp_path / "trace"
    out.mkdir()
    (out / "manifest.json").write_text("{}")
    with pytest.raises(SystemExit) as exc:
        profcap.main(["-o", str(out), "--", "true"])
    assert exc.value.code == 2
    assert (out / "manifest.json").read_text() == "{}"
    a_file = tmp_path / "file"
    a_file.write_text("keep")
    with pytest.raises(SystemExit) as exc:
        profcap.main(["-o", str(a_file), "--", "true"])
    assert exc.value.code == 2 and a_file.read_text() == "keep"


def test_help_teaches_with_examples(capsys):
    with pytest.raises(SystemExit):
        profcap.main(["--help"])
    out = capsys.readouterr().out
    assert "profcap --steps 40-45 -- python train.py" in out and "annotate" in out


def test_job_name_comes_from_the_script():
    assert profcap.job_name(["python", "train.py", "--lr", "1"]) == "train"
    assert profcap.job_name(["torchrun", "--nproc-per-node", "2", "bert.py"]) == "bert"
    assert (
        profcap.job_name([sys.executable, "-m", "torch.distributed.run", "--nproc-per-node", "2", "x.py"])
        == "x"
    )
    assert profcap.job_name(["./run.sh"]) == "run.sh"
    assert Path(profcap.job_name(["python", "-m", "mypkg.train"])).name == "train"


def test_profcap_killed_the_daemon_closes_the_trace_when_the_job_ends(tmp_path):
    job = tmp_path / "job.py"
    ready = tmp_path / "ready"
    done = tmp_path / "done"
    job.write_text(
        f"import time\nopen({str(ready)!r}, 'w').close()\ntime.sleep(2)\nopen({str(done)!r}, 'w').close()\n"
    )
    trace = tmp_path / "trace"
    p = subprocess.Popen(
        [*PROFCAP, "-o", str(trace), "--no-trace", "--", sys.executable, str(job)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    _wait_for(ready.exists)
    p.kill()
    p.wait()
    _wait_for(done.exists)  # the job carries on without profcap
    _wait_for(lambda: manifest(trace)["status"] != "running")
    m = manifest(trace)
    assert m["status"] == "failed" and m["exit_code"] is None
    assert any("profcap ended before the job" in n for n in m["notes"])
    assert m["end_ns"] >= os.stat(done).st_mtime_ns - 1_000_000_000
    assert open_trace_dir(trace).metrics


def test_default_output_is_named_after_the_job_and_never_reused(tmp_path):
    for _ in range(2):
        proc = subprocess.run(
            [*PROFCAP, "--no-trace", "--", "true"], cwd=tmp_path, capture_output=True, text=True, timeout=60
        )
        assert proc.returncode == 0, proc.stderr
    made = sorted(p.name for p in (tmp_path / "trace").iterdir())
    assert len(made) == 2 and all(name.startswith("true-2") for name in made)
    assert all(manifest(tmp_path / "trace" / name)["status"] == "completed" for name in made)
