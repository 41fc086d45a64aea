"""Run records (``TRACE/.profui/runs/run-NNNN.json``) and stage metadata (``meta.json``) are
decoded against their typed schema: whatever a file holds (any JSON, any depth, bytes, a FIFO),
a reader gets a record or "damaged", never a traceback; ``profui runs`` lists a damaged record
as such, ``profui analyze`` and ``profui diff`` carry on without it. And a run whose
``profui analyze`` was killed reads as ``interrupted``, not ``executing``.

Real files on a real analysed copy of the bundled sample ``samples/synthetic_gpu``; real
``profui`` processes, one of them SIGKILLed mid-run.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from profui.analysis.pipeline import analyze
from profui.analysis.pipeline.artifacts import ArtifactMeta, read_meta, verify
from profui.analysis.pipeline.records import DamagedRecord, RunRecord, decode, read, settle

from pipeline_knobs import PROFUI_WITH_KNOBS
from realdata import SAMPLES

PROFUI = [sys.executable, "-c", "from profui.tui.cli import main; main()"]
DEEP = 50_000  # far beyond the interpreter's recursion limit (1,000)


@pytest.fixture(scope="module")
def analysed(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The sample trace, analysed once (run-0001, succeeded)."""
    dst = tmp_path_factory.mktemp("records") / "pristine"
    shutil.copytree(SAMPLES / "synthetic_gpu", dst, ignore=shutil.ignore_patterns(".profui"))
    assert analyze(dst).status == "succeeded"
    return dst


def copy_of(analysed: Path, where: Path) -> Path:
    dst = where / "trace"
    shutil.copytree(analysed, dst)  # copy2: mtimes kept, outputs stay warm
    return dst


def cli(*args: str, knobs: bool = False) -> subprocess.CompletedProcess:
    cmd = [*(PROFUI_WITH_KNOBS if knobs else PROFUI), *args]
    return subprocess.run(
        cmd, capture_output=True, text=True, timeout=120, env=dict(os.environ, COLUMNS="200")
    )


def assert_clean(r: subprocess.CompletedProcess) -> None:
    """Exit 0, or exit 2 with one line on stderr; never a traceback."""
    assert "Traceback" not in r.stderr, r.stderr
    assert r.returncode in (0, 2), r.stderr
    if r.returncode == 2:
        assert len(r.stderr.strip().splitlines()) == 1, r.stderr


def nested(depth: int, opener: str = "[") -> str:
    """JSON text nested ``depth`` deep, in arrays or objects."""
    return '{"a":' * depth + "1" + "}" * depth if opener == "{" else "[" * depth + "]" * depth


# --- the commands on a damaged record -------------------------------------------------------------


def test_record_nested_beyond_the_recursion_limit_is_listed_damaged(analysed: Path, tmp_path: Path) -> None:
    trace = copy_of(analysed, tmp_path)
    path = trace / ".profui" / "runs" / "run-0001.json"
    path.write_text('{"id": "run-0001", "params": ' + nested(DEEP) + "}")
    damaged_bytes = path.read_bytes()

    r = cli("runs", str(trace))
    assert r.returncode == 0 and "Traceback" not in r.stderr, r.stderr
    row = next(ln for ln in r.stdout.splitlines() if "run-0001" in ln and "│" in ln)
    assert "damaged" in row
    assert "run-0001: damaged run record" in r.stdout and str(path) in r.stdout.replace("\n", "")

    r = cli("runs", str(trace), "--json")
    assert r.returncode == 0
    assert [(d["id"], d["status"]) for d in json.loads(r.stdout)] == [("run-0001", "damaged")]

    r = cli("runs", str(trace), "run-0001")
    assert r.returncode == 2 and "Traceback" not in r.stderr
    assert r.stderr.strip().splitlines() == [r.stderr.strip()]
    assert str(path) in r.stderr and "damaged run record" in r.stderr

    r = cli("analyze", str(trace), "--json", "-q")
    assert r.returncode == 0, r.stderr
    rec = json.loads(r.stdout)
    assert rec["id"] == "run-0002" and rec["status"] == "succeeded"  # a new number: nothing overwritten
    assert path.read_bytes() == damaged_bytes

    r = cli("diff", str(trace), str(trace))
    assert r.returncode == 0 and "Traceback" not in r.stderr, r.stderr


def test_a_deep_record_of_a_run_by_ranks_is_refused_in_one_line(analysed: Path, tmp_path: Path) -> None:
    trace = copy_of(analysed, tmp_path)
    path = trace / ".profui" / "ranks-runs" / "ranks-0001.json"
    path.parent.mkdir()
    path.write_text(
        '{"id": "ranks-0001", "created": "2026-01-01T00:00:00+00:00", "later": ' + nested(DEEP) + "}"
    )
    r = cli("analyze", str(trace), "--resume", "ranks-0001")
    assert r.returncode == 2 and "Traceback" not in r.stderr, r.stderr
    (line,) = r.stderr.strip().splitlines()
    assert str(path) in line and "damaged record of a run by ranks" in line


def test_a_damaged_lock_holder_is_an_unknown_holder(analysed: Path, tmp_path: Path) -> None:
    from profui.analysis.pipeline.lock import TraceLock

    trace = copy_of(analysed, tmp_path)
    lock = TraceLock(trace / ".profui")
    assert lock.try_acquire()
    try:
        lock.path.write_text(nested(DEEP))  # who holds it: unreadable
        r = cli("analyze", str(trace), "--no-wait")
    finally:
        lock.release()
    assert r.returncode == 2 and "Traceback" not in r.stderr, r.stderr
    (line,) = r.stderr.strip().splitlines()
    assert "another profui analyze" in line and str(trace) in line


def test_the_runs_view_lists_a_damaged_record(analysed: Path, tmp_path: Path) -> None:
    from profui.analysis.pipeline.records import scan
    from profui.tui.views.runs import runs_frame

    trace = copy_of(analysed, tmp_path)
    (trace / ".profui" / "runs" / "run-0002.json").write_bytes(b"\xff\xfe not json")
    frame = runs_frame(*scan(trace / ".profui"))
    assert frame.select("id", "status").rows() == [("run-0002", "damaged"), ("run-0001", "succeeded")]


def test_a_record_naming_another_run_is_damaged_and_never_rewritten(analysed: Path, tmp_path: Path) -> None:
    trace = copy_of(analysed, tmp_path)
    runs = trace / ".profui" / "runs"
    doc = json.loads((runs / "run-0001.json").read_bytes())
    # an executing record of a dead process, filed as run-0002 but saying it is run-0009: the
    # repair of stale runs rewrites a record under its id, which must never be another file's
    doc.update(id="run-0009", status="executing")
    (runs / "run-0002.json").write_text(json.dumps(doc))
    before = (runs / "run-0002.json").read_bytes()
    with pytest.raises(DamagedRecord, match="run-0009"):
        read(runs / "run-0002.json")

    r = cli("analyze", str(trace), "--json", "-q")
    assert r.returncode == 0, r.stderr
    assert json.loads(r.stdout)["id"] == "run-0003"
    assert not (runs / "run-0009.json").exists()
    assert (runs / "run-0002.json").read_bytes() == before


def test_a_fifo_named_like_a_record_is_listed_damaged_without_a_hang(analysed: Path, tmp_path: Path) -> None:
    trace = copy_of(analysed, tmp_path)
    os.mkfifo(trace / ".profui" / "runs" / "run-0002.json")
    r = cli("runs", str(trace), "--json")  # opening the FIFO would block for ever
    assert r.returncode == 0, r.stderr
    rows = {d["id"]: d for d in json.loads(r.stdout)}
    assert rows["run-0001"]["status"] == "succeeded"
    assert rows["run-0002"]["status"] == "damaged" and "FIFO" in rows["run-0002"]["error"]


# --- the decoders, over generated JSON --------------------------------------------------------------

RUN_FIELDS = [*RunRecord.__struct_fields__, "seconds", "counts"]
META_FIELDS = list(ArtifactMeta.__struct_fields__)
scalars = st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=12)


def json_values(keys: list[str]) -> st.SearchStrategy:
    return st.recursive(
        scalars,
        lambda inner: (
            st.lists(inner, max_size=4)
            | st.dictionaries(st.sampled_from(keys) | st.text(max_size=8), inner, max_size=5)
        ),
        max_leaves=24,
    )


def valid_record(analysed: Path) -> dict:
    return json.loads((analysed / ".profui" / "runs" / "run-0001.json").read_bytes())


def check_record(data: bytes) -> None:
    """The decoder's whole contract: a typed record or DamagedRecord, nothing else."""
    try:
        rec = settle(decode(data))
    except DamagedRecord as exc:
        assert str(exc) and "\n" not in str(exc)
        return
    assert isinstance(rec, RunRecord)
    # what every reader then does with a record works on it
    json.dumps(rec.to_dict())
    assert rec.seconds is None or isinstance(rec.seconds, float)
    rec.counts(), rec.bad_input()
    for s in rec.stages.values():
        assert s.seconds is None or isinstance(s.seconds, float)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(doc=json_values(RUN_FIELDS + ["name", "status", "params", "stages"]))
def test_any_json_decodes_to_a_record_or_damaged(doc: object) -> None:
    check_record(json.dumps(doc).encode())


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=st.data())
def test_a_real_record_with_any_field_replaced_decodes_or_is_damaged(
    analysed: Path, data: st.DataObject
) -> None:
    doc = valid_record(analysed)
    field = data.draw(st.sampled_from(RUN_FIELDS))
    value = data.draw(json_values(RUN_FIELDS))
    if field == "stages" and data.draw(st.booleans()):  # or one field of one stage
        stage = data.draw(st.sampled_from(range(len(doc["stages"]))))
        key = data.draw(st.sampled_from(sorted(doc["stages"][stage])))
        doc["stages"][stage][key] = value
    else:
        doc[field] = value
    check_record(json.dumps(doc).encode())


@settings(max_examples=20, deadline=None)
@given(
    depth=st.integers(1_000, 200_000),
    opener=st.sampled_from(["[", "{"]),
    where=st.sampled_from(["top", "params", "stage", "unknown"]),
)
def test_nesting_deeper_than_the_recursion_limit_is_damaged(depth: int, opener: str, where: str) -> None:
    deep = nested(depth, opener)
    text = {
        "top": deep,
        "params": '{"id": "run-0001", "created": "2026-01-01T00:00:00+00:00", "params": {"a": ' + deep + "}}",
        "stage": '{"id": "run-0001", "created": "2026-01-01T00:00:00+00:00", "stages": [{"name": "x", "inputs": '
        + deep
        + "}]}",
        "unknown": '{"id": "run-0001", "created": "2026-01-01T00:00:00+00:00", "later": ' + deep + "}",
    }[where]
    with pytest.raises(DamagedRecord):
        decode(text.encode())
    with tempfile.TemporaryDirectory() as d:
        (Path(d) / "meta.json").write_text(text)
        assert read_meta(Path(d)) is None and verify(Path(d)) is None


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=st.data())
def test_stage_metadata_of_any_json_is_a_meta_or_a_miss(analysed: Path, data: st.DataObject) -> None:
    (folder,) = (analysed / ".profui" / "artifacts" / "steps").iterdir()
    doc = json.loads((folder / "meta.json").read_bytes())
    if data.draw(st.booleans()):
        doc[data.draw(st.sampled_from(META_FIELDS + ["later"]))] = data.draw(json_values(META_FIELDS))
    else:
        doc = data.draw(json_values(META_FIELDS))
    with tempfile.TemporaryDirectory() as d:
        copy = Path(d) / "steps"
        shutil.copytree(folder, copy)
        (copy / "meta.json").write_text(json.dumps(doc))
        meta = read_meta(copy)
        assert meta is None or isinstance(meta, ArtifactMeta)
        got = verify(copy)
        # served only when every file it lists is there with its recorded sha256
        if got is not None:
            assert got.outputs and all((copy / name).is_file() for name in got.outputs)


@settings(max_examples=2, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(doc=json_values(RUN_FIELDS), deep=st.booleans())
def test_the_commands_on_generated_records_and_metadata(analysed: Path, doc: object, deep: bool) -> None:
    text = nested(DEEP) if deep else json.dumps(doc)
    with tempfile.TemporaryDirectory() as d:
        trace = copy_of(analysed, Path(d))
        (trace / ".profui" / "runs" / "run-0001.json").write_text(text)
        (folder,) = (trace / ".profui" / "artifacts" / "kernels").iterdir()
        (folder / "meta.json").write_text(text)
        for args in (("runs", str(trace)), ("analyze", str(trace), "-q"), ("diff", str(trace), str(trace))):
            assert_clean(cli(*args))


# --- a run whose process is gone ------------------------------------------------------------------


def raw_status(trace: Path, run_id: str, stage: str | None = None) -> str | None:
    try:
        doc = json.loads((trace / ".profui" / "runs" / f"{run_id}.json").read_bytes())
    except (OSError, ValueError):
        return None
    if stage is None:
        return doc["status"]
    return next((s["status"] for s in doc["stages"] if s["name"] == stage), None)


def test_a_killed_analyze_reads_as_interrupted(analysed: Path, tmp_path: Path) -> None:
    trace = tmp_path / "fresh"
    shutil.copytree(analysed, trace, ignore=shutil.ignore_patterns(".profui"))
    proc = subprocess.Popen(
        [
            *PROFUI_WITH_KNOBS,
            "analyze",
            str(trace),
            "-q",
            "--set",
            "debug_sleep_s=120",
            "--set",
            "debug_sleep_stage=steps",
        ],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        end = time.monotonic() + 60
        while raw_status(trace, "run-0001", "steps") != "running":
            assert time.monotonic() < end, "run-0001 never ran steps"
            time.sleep(0.05)
        # alive: it is executing
        (live,) = json.loads(cli("runs", str(trace), "--json").stdout)
        assert live["status"] == "executing" and live["pid"] == proc.pid
        os.kill(proc.pid, signal.SIGKILL)
        assert proc.wait(timeout=30) == -signal.SIGKILL
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert raw_status(trace, "run-0001") == "executing"  # nobody could record the end

    r = cli("runs", str(trace), "--json")
    assert r.returncode == 0, r.stderr
    (dead,) = json.loads(r.stdout)
    assert dead["status"] == "interrupted" and str(proc.pid) in dead["error"]
    r = cli("runs", str(trace), "run-0001", "--json")
    stages = {s["name"]: s for s in json.loads(r.stdout)["stages"]}
    assert stages["steps"]["status"] == "stopped" and stages["ingest"]["status"] == "succeeded"
    r = cli("runs", str(trace))
    assert "interrupted" in r.stdout and "executing" not in r.stdout
    # reading wrote nothing; the next analysis records the interruption and resumes from it
    assert raw_status(trace, "run-0001") == "executing"
    r = cli("analyze", str(trace), "--resume", "run-0001", "--json", "-q")
    assert r.returncode == 0, r.stderr
    resumed = json.loads(r.stdout)
    assert resumed["status"] == "succeeded" and resumed["selection"][0] == "steps"
    assert raw_status(trace, "run-0001") == "interrupted"


def test_a_run_of_another_host_is_not_judged_by_this_hosts_processes(analysed: Path) -> None:
    gone = subprocess.Popen(["true"])
    gone.wait()
    doc = valid_record(analysed)
    doc.update(status="executing", pid=gone.pid, host="not-" + socket.gethostname())
    assert settle(decode(json.dumps(doc).encode())).status == "executing"  # unknown, not gone
    doc["host"] = socket.gethostname()
    assert settle(decode(json.dumps(doc).encode())).status == "interrupted"
