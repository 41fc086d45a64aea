"""``profui analyze`` / ``profui runs`` as a user runs them: real processes on a real trace.

Interruption, concurrency and the executing-reference refusal need a stage that is running while
something else happens: the test knobs ``--set debug_sleep_s=N --set debug_sleep_stage=STAGE``
make that stage sleep after it starts (they never enter a cache key). They are not the users'
parameters: those runs go through ``tests/pipeline_knobs.py``, ``profui`` with a test registry.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import pytest
from typer.testing import CliRunner

from profui.analysis.pipeline import REGISTRY, analyze, list_runs
from profui.analysis.pipeline.artifacts import verify
from profui.analysis.pipeline.lock import TraceLock
from profui.capture.ingest import import_trace
from profui.tui.cli import app, main

from pipeline_knobs import KNOBBED, PROFUI_WITH_KNOBS
from realdata import shared_trace

TRACE_FILE = "hta-nccl_parser_config-nccl_data.json.gz"
PROFUI = [sys.executable, "-c", "from profui.tui.cli import main; main()"]


@pytest.fixture(scope="module")
def imported(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("analyze_cmd") / "nccl"
    import_trace([shared_trace(TRACE_FILE)], out)
    return out


@pytest.fixture()
def trace(imported: Path, tmp_path: Path) -> Path:
    dst = tmp_path / "trace"
    shutil.copytree(imported, dst, ignore=shutil.ignore_patterns(".profui"))
    return dst


def start(args: list[str], tmp: Path, tag: str, knobs: bool = False) -> tuple[subprocess.Popen, Path]:
    err = tmp / f"{tag}.stderr"
    proc = subprocess.Popen(
        [*(PROFUI_WITH_KNOBS if knobs else PROFUI), *args],
        stdout=subprocess.DEVNULL,
        stderr=open(err, "wb"),
        env=dict(os.environ, COLUMNS="200"),
    )
    return proc, err


def run(args: list[str], knobs: bool = False) -> subprocess.CompletedProcess:
    cmd = [*(PROFUI_WITH_KNOBS if knobs else PROFUI), *args]
    return subprocess.run(cmd, capture_output=True, text=True, timeout=120)


def wait_for(cond: Callable[[], bool], what: str, timeout: float = 60) -> None:
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        if cond():
            return
        time.sleep(0.05)
    raise AssertionError(f"timed out waiting for {what}")


def record(trace: Path, run_id: str) -> dict:
    p = trace / ".profui" / "runs" / f"{run_id}.json"
    try:
        return json.loads(p.read_text())
    except (OSError, ValueError):
        return {}


def stage_status(trace: Path, run_id: str, stage: str) -> str | None:
    for s in record(trace, run_id).get("stages", []):
        if s["name"] == stage:
            return s["status"]
    return None


def no_half_outputs(trace: Path) -> None:
    arts = trace / ".profui" / "artifacts"
    assert not list(arts.glob("*/.tmp-*")), "a half-written stage output is visible"
    for folder in arts.glob("*/*"):
        assert verify(folder) is not None, folder


def test_sigint_stops_the_run_and_other_analyses_wait_or_refuse(trace: Path, tmp_path: Path) -> None:
    first = analyze(trace)  # run-0001, a finished reference
    slow, slow_err = start(
        [
            "analyze",
            str(trace),
            "-q",
            "--no-cache",
            "--set",
            "debug_sleep_s=120",
            "--set",
            "debug_sleep_stage=correlate",
        ],
        tmp_path,
        "slow",
        knobs=True,
    )
    try:
        wait_for(
            lambda: stage_status(trace, "run-0002", "correlate") == "running", "run-0002 to run correlate"
        )

        # An executing run cannot be a reference.
        r = run(["analyze", str(trace), "--stages", "launch", "--reference", "run-0002"])
        assert r.returncode == 2
        assert r.stderr.strip().splitlines() == [
            f"profui: {trace}: reference run run-0002 is still executing; wait for it or pick another --reference"
        ]
        # --no-wait refuses while the lock is held, naming who holds it.
        r = run(["analyze", str(trace), "--no-wait"])
        assert r.returncode == 2
        assert "another profui analyze (run run-0002, pid" in r.stderr and "Traceback" not in r.stderr

        # Without --no-wait a second analysis waits for the lock.
        waiter, waiter_err = start(
            ["analyze", str(trace), "-q", "--stages", "launch", "--reference", first.id], tmp_path, "waiter"
        )
        wait_for(lambda: b"waiting" in waiter_err.read_bytes(), "the second analyze to say it waits")
        assert waiter.poll() is None
        assert record(trace, "run-0002")["status"] == "executing"

        slow.send_signal(signal.SIGINT)
        assert slow.wait(timeout=60) == 130
        # one line, its own (which run stopped), not the entry point's "interrupted" as well
        said = [ln for ln in slow_err.read_text().splitlines() if "interrupted" in ln]
        assert len(said) == 1 and "run-0002" in said[0], said
        rec = record(trace, "run-0002")
        assert rec["status"] == "stopped" and "interrupted" in rec["error"]
        st = {s["name"]: s for s in rec["stages"]}
        assert st["correlate"]["status"] == "stopped" and st["correlate"]["end"]
        assert st["ingest"]["status"] == "succeeded"
        order = REGISTRY.order
        assert all(st[n]["status"] == "skipped" for n in order[order.index("correlate") + 1 :])
        no_half_outputs(trace)

        assert waiter.wait(timeout=60) == 0
        third = record(trace, "run-0003")
        assert third["status"] == "succeeded" and third["reference"] == first.id
        st3 = {s["name"]: s for s in third["stages"]}
        assert st3["correlate"]["provenance"] == "reused" and st3["correlate"]["source_run"] == first.id

        # The stopped run resumes from its stopped stage.
        resumed = analyze(trace, resume="run-0002")
        assert resumed.status == "succeeded" and resumed.selection[0] == "correlate"
        assert resumed.stages["correlate"].attempt == 2
        assert (
            resumed.stages["ingest"].provenance == "reused"
            and resumed.stages["ingest"].source_run == "run-0002"
        )
    finally:
        for p in (slow,):
            if p.poll() is None:
                p.kill()
                p.wait()


def test_two_concurrent_full_analyses_do_not_corrupt(trace: Path, tmp_path: Path) -> None:
    # Hold the trace's lock (the real one) while both start, so both must queue behind it and
    # then behind each other, whatever the machine's speed.
    gate = TraceLock(trace / ".profui")
    assert gate.try_acquire()
    gate.set_holder(run="test-gate")
    procs = []
    try:
        for tag in ("a", "b"):
            procs.append(start(["analyze", str(trace), "-q"], tmp_path, tag))
        for _, err in procs:
            wait_for(lambda err=err: b"waiting" in err.read_bytes(), f"{err.name} to wait for the lock")
        assert b"(run test-gate, pid" in procs[0][1].read_bytes()
    finally:
        gate.release()
    for p, _ in procs:
        assert p.wait(timeout=120) == 0
    runs = list_runs(trace)
    assert [r.id for r in runs] == ["run-0001", "run-0002"]
    assert all(r.status == "succeeded" for r in runs)
    c1, c2 = runs[0].counts(), runs[1].counts()
    assert c1["computed"] == c2["cache"] == len(REGISTRY.default_order) and c2["computed"] == 0
    assert {r.pid for r in runs} == {p.pid for p, _ in procs}
    no_half_outputs(trace)


def test_killed_run_is_repaired_to_interrupted_by_the_next_analysis(trace: Path, tmp_path: Path) -> None:
    p, _ = start(
        ["analyze", str(trace), "-q", "--set", "debug_sleep_s=120", "--set", "debug_sleep_stage=correlate"],
        tmp_path,
        "killed",
        knobs=True,
    )
    wait_for(lambda: stage_status(trace, "run-0001", "correlate") == "running", "run-0001 to run correlate")
    p.kill()
    p.wait()
    assert record(trace, "run-0001")["status"] == "executing"  # nobody could record the end
    rec = analyze(trace)
    assert rec.status == "succeeded" and rec.id == "run-0002"
    dead = record(trace, "run-0001")
    assert dead["status"] == "interrupted" and "killed" in dead["error"]
    assert {s["name"]: s["status"] for s in dead["stages"]}["correlate"] == "stopped"
    # ingest finished in the killed run; the new run found it in the cache.
    assert rec.stages["ingest"].provenance == "cache" and rec.stages["ingest"].origin_run == "run-0001"
    # And the killed run can be resumed from where it died.
    resumed = analyze(trace, resume="run-0001", registry=KNOBBED)
    assert resumed.selection[0] == "correlate" and resumed.stages["ingest"].provenance == "reused"
    assert resumed.status == "succeeded" and resumed.params["debug_sleep_s"] == 0  # knobs are not inherited


def test_plan_lists_every_stage_input_and_parameter_default(trace: Path) -> None:
    res = CliRunner().invoke(app, ["analyze", str(trace), "--plan"], env={"COLUMNS": "250"})
    assert res.exit_code == 0, res.output
    for name, st in REGISTRY.stages.items():
        line = next(ln for ln in res.output.splitlines() if ln.startswith(f"│ {name} "))
        for i in st.inputs:
            assert (i if i != "trace" else "TRACE") in res.output
        assert st.params[0] in line if st.params else True
    for name, p in REGISTRY.params.items():
        line = next(ln for ln in res.output.splitlines() if ln.startswith(f"│ {name} "))
        assert json.dumps(p.default) if isinstance(p.default, str) else str(p.default) in line
    assert not (trace / ".profui" / "runs").exists()  # --plan runs nothing
    analyze(trace)
    res = CliRunner().invoke(
        app,
        ["analyze", str(trace), "--plan", "--stages", "launch", "--set", "top_n=30"],
        env={"COLUMNS": "250"},
    )
    rows = {
        ln.split("│")[1].strip(): ln.split("│")[5].strip()
        for ln in res.output.splitlines()
        if ln.startswith("│ ") and ln.count("│") == 6
    }
    assert (
        rows["launch"].startswith("run")
        and rows["summary"] == "skip"
        and rows["correlate"] == "reuse run-0001"
    )
    assert len(list_runs(trace)) == 1


def test_runs_lists_runs_and_one_run_with_provenance_as_json(trace: Path) -> None:
    runner = CliRunner()
    assert "no analysis runs yet" in runner.invoke(app, ["runs", str(trace)]).output
    r1 = runner.invoke(app, ["analyze", str(trace), "-q", "--json"])
    assert r1.exit_code == 0
    first = json.loads(r1.stdout)
    r2 = runner.invoke(
        app, ["analyze", str(trace), "-q", "--stages", "launch,summary", "--set", "slow_launch_us=5"]
    )
    assert r2.exit_code == 0 and "run-0002 succeeded" in r2.stdout
    listing = json.loads(runner.invoke(app, ["runs", str(trace), "--json"]).stdout)
    assert [r["id"] for r in listing] == ["run-0001", "run-0002"]
    assert (
        listing[0]["counts"]["computed"]
        == first["counts"]["computed"]
        == len([s for s in first["stages"] if s["status"] == "succeeded"])
    )
    assert listing[1]["counts"] == {**listing[1]["counts"], "computed": 2, "cache": 0}
    assert listing[1]["counts"]["reused"] == listing[0]["counts"]["computed"] - 2
    assert listing[1]["selection"] == ["launch", "summary"] and listing[1]["reference"] == "run-0001"
    one = json.loads(runner.invoke(app, ["runs", str(trace), "2", "--json"]).stdout)
    st = {s["name"]: s for s in one["stages"]}
    assert st["launch"]["provenance"] == "computed" and st["launch"]["params"]["slow_launch_us"] == 5.0
    assert st["correlate"]["provenance"] == "reused" and st["correlate"]["source_run"] == "run-0001"
    text = runner.invoke(app, ["runs", str(trace), "run-0002"], env={"COLUMNS": "250"}).stdout
    assert "reused run-0001" in text and "slow_launch_us=5.0" in text
    table = runner.invoke(app, ["runs", str(trace)], env={"COLUMNS": "250"}).stdout
    assert "launch,summary" in table and "run-0002" in table
    pruned = runner.invoke(app, ["runs", str(trace), "--prune", "1"])
    assert pruned.exit_code == 0 and "removed 1 run record(s) and 2 stage output folder(s)" in pruned.stdout
    assert [r.id for r in list_runs(trace)] == ["run-0002"]


def test_refusals_are_one_line_with_exit_2(trace: Path, monkeypatch, capsys) -> None:
    analyze(trace)
    r = run(["analyze", str(trace), "--stages", "correlate,summary"])  # once as a real process
    assert r.returncode == 2 and r.stderr.strip().splitlines() == [
        "profui: selection is not closed under paths: also select launch, idle, critical_path, findings (they lie between selected stages)"
    ]
    for args, expect in [
        (["--set", "topn=3"], "unknown parameter topn; valid parameters: "),
        (["--set", "debug_fail=kernels"], "unknown parameter debug_fail"),  # test knobs are not users'
        (["--set", "debug_sleep_s=1"], "unknown parameter debug_sleep_s"),
        (["--set", "top_n"], "--set takes name=value"),
        (["--stages", "launch", "--reference", "run-0042"], "no run run-0042"),
        (["--resume", "run-0001"], "nothing to resume"),
    ]:
        monkeypatch.setattr(sys, "argv", ["profui", "analyze", str(trace), *args])
        with pytest.raises(SystemExit) as exc:
            main()
        assert exc.value.code == 2, args
        lines = capsys.readouterr().err.strip().splitlines()
        assert len(lines) == 1 and lines[0].startswith("profui: ") and expect in lines[0], lines
    assert len(list_runs(trace)) == 1


def test_failed_run_exits_1_and_resume_finishes_it(trace: Path) -> None:
    r = run(["analyze", str(trace), "-q", "--set", "debug_fail=launch"], knobs=True)
    assert r.returncode == 1
    assert "run run-0001 failed: stage launch failed: RuntimeError: stage launch made to fail" in r.stderr
    r = run(
        ["analyze", str(trace), "-q", "--resume", "run-0001", "--set", "debug_fail=", "--json"], knobs=True
    )
    assert r.returncode == 0, r.stderr
    rec = json.loads(r.stdout)
    st = {s["name"]: s for s in rec["stages"]}
    assert rec["resume_of"] == "run-0001" and st["launch"]["attempt"] == 2
    assert st["launch"]["provenance"] == "computed" and st["correlate"]["provenance"] == "reused"


def test_a_kineto_file_is_imported_once_and_analysed_in_the_cache(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setenv("PROFUI_CACHE", str(tmp_path / "cache"))
    src = shared_trace("hta-trace_compare-base-base.json.gz")
    runner = CliRunner()
    first = runner.invoke(app, ["analyze", str(src), "-q", "--json"])
    assert first.exit_code == 0, first.output
    again = runner.invoke(app, ["analyze", str(src), "-q", "--json"])
    rec1, rec2 = json.loads(first.stdout), json.loads(again.stdout)
    assert (rec1["id"], rec2["id"]) == ("run-0001", "run-0002")  # both runs on the one cached import
    assert rec2["counts"]["cache"] == rec1["counts"]["computed"] == len(REGISTRY.default_order)
    listing = json.loads(runner.invoke(app, ["runs", str(src), "--json"]).stdout)
    assert [r["id"] for r in listing] == ["run-0001", "run-0002"]
    (imported,) = (tmp_path / "cache" / "imports").iterdir()
    assert len(list_runs(imported)) == 2


def test_readme_example_passes_after_open_and_a_partial_run(trace: Path) -> None:
    """The README's ``--stages kernels,summary --set top_n=30`` after the dashboard analysed the
    trace and a later ``--stages steps`` run left the stages below steps out: the default
    reference is the latest run that holds every output the selection reads, not the latest run."""
    from profui.tui.views import dashboard_charts as dc
    from profui.tui.views.session import TraceSession

    TraceSession(trace).stage_outputs(dc.STAGES)  # what `profui open` computes
    assert run(["analyze", str(trace), "-q", "--stages", "steps"]).returncode == 0
    r = run(["analyze", str(trace), "-q", "--stages", "kernels,summary", "--set", "top_n=30", "--json"])
    assert r.returncode == 0, r.stderr
    rec = json.loads(r.stdout)
    assert rec["reference"] == "run-0001"  # the dashboard's run holds comm, launch, ...; run-0002 does not
    st = {s["name"]: s for s in rec["stages"]}
    assert st["kernels"]["provenance"] == "computed" and st["comm"]["provenance"] == "reused"
    assert rec["params"]["top_n"] == 30
    # the oracle: the trace's distinct kernel names, counted from the raw Kineto JSON
    import gzip

    raw = json.loads(gzip.decompress(shared_trace(TRACE_FILE).read_bytes()))
    kernels = {e["name"] for e in raw["traceEvents"] if e.get("cat") == "kernel"}
    summary = json.loads(run(["summary", str(trace), "--json", "--set", "top_n=30"]).stdout)
    top = summary["sections"]["kernels"]["top_by_time"]
    assert len(top) == min(30, len(kernels)) + (1 if len(kernels) > 30 else 0)


def test_runs_tables_fit_80_columns_with_ids_and_times_whole(trace: Path) -> None:
    """``profui runs`` in an 80-column terminal: every line fits, and what a user types next (the
    run id) and reads (its time, counts, each stage's name) is whole, never cut to 'run-0…'. The
    oracle is the run records themselves."""
    import io

    from rich.console import Console

    from profui.analysis.pipeline import damaged_runs
    from profui.tui.cli.analyze_cmd import runs_table, stage_table

    runner = CliRunner()
    assert runner.invoke(app, ["analyze", str(trace), "-q"]).exit_code == 0
    assert runner.invoke(app, ["analyze", str(trace), "-q", "--stages", "launch,summary"]).exit_code == 0
    runs = list_runs(trace)
    for kind, table in (("runs", runs_table(runs, damaged_runs(trace))), ("stages", stage_table(runs[-1]))):
        buf = io.StringIO()
        Console(file=buf, width=80, force_terminal=False).print(table)
        lines = buf.getvalue().splitlines()
        assert all(len(line) <= 80 for line in lines), max(lines, key=len)
        cells = {c.strip() for line in lines for c in line.split("│")}
        if kind == "runs":
            for r in runs:
                assert {r.id, r.created.replace("T", " ")[:19], r.status} <= cells, r.id
        else:
            assert set(runs[-1].stages) <= {c.split()[0] for c in cells if c}


def _in_terminal(args: list[str], columns: int = 80) -> str:
    """What ``profui ARGS`` prints on a terminal of ``columns`` (a pseudo-terminal of that size)."""
    import fcntl
    import pty
    import struct
    import termios

    main_fd, sub_fd = pty.openpty()
    fcntl.ioctl(sub_fd, termios.TIOCSWINSZ, struct.pack("HHHH", 24, columns, 0, 0))
    env = {k: v for k, v in os.environ.items() if k not in ("COLUMNS", "LINES")}
    proc = subprocess.Popen(
        [*PROFUI, *args], stdout=sub_fd, stderr=subprocess.PIPE, env={**env, "NO_COLOR": "1"}
    )
    os.close(sub_fd)
    out = b""
    while True:
        try:
            chunk = os.read(main_fd, 65536)
        except OSError:  # the terminal closed: the command is done
            break
        if not chunk:
            break
        out += chunk
    assert proc.wait(timeout=120) == 0, proc.stderr.read() if proc.stderr else ""
    os.close(main_fd)
    import re

    return re.sub(r"\x1b\[[0-9;]*m", "", out.decode()).replace("\r\n", "\n")  # styles off


def test_one_runs_header_wraps_under_its_values_on_an_80_column_terminal(trace: Path) -> None:
    """``profui runs T 1`` on an 80-column terminal: its header lines (run, selection, params)
    wrap at spaces under their values, never past the edge (the terminal broke 'durati|on'
    mid-word); every parameter of the run record is printed whole."""
    runner = CliRunner()
    assert runner.invoke(app, ["analyze", str(trace), "-q"]).exit_code == 0
    shown = _in_terminal(["runs", str(trace), "1"])
    lines = shown.splitlines()
    assert all(len(line) <= 80 for line in lines), max(lines, key=len)
    head = shown.split("┏")[0]
    rec = list_runs(trace)[0]
    words = head.split()
    assert "duration" in words and "params" in words
    for k in rec.params:
        assert any(w.startswith(f"{k}=") for w in words), k
