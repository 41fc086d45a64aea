"""``profui explain`` as a user runs it: bad input and bad options are one line and exit 2; the
JSON carries the documented keys and exactly the findings stage's rows; ``--top``, ``--step`` and
``--rank`` choose what they say; the text fits 80 columns without colour under ``NO_COLOR``; and
on every shared trace and sample it runs and agrees with the stage."""

from __future__ import annotations

import json
import re
import shutil
import sys
from pathlib import Path

import polars as pl
import pytest

from profui.analysis import open_trace
from profui.analysis.findings import VERSION
from profui.analysis.findings_doc import EVENT_KEYS, FINDING_KEYS, KEYS
from profui.capture.ingest import import_trace

from realdata import REPO, SAMPLES, nsys_export, run_profui, shared_trace, traces_dir

sys.path.insert(0, str(REPO / "tests" / "analysis"))
from test_findings import record_sleepy  # noqa: E402

sys.path.insert(0, str(REPO / "tests" / "capture"))
from test_profcap_support import TRAIN, run_profcap  # noqa: E402

#: Shared files that are not profiler traces (the importer refuses them).
NOT_TRACES = (
    "hta-execution_trace-benchmark_simple_add_et.json.gz",
    "hta-memory_analysis-memory_timeline.raw.gz",
)


def one_line_error(proc, *words: str) -> None:
    assert proc.returncode == 2, (proc.returncode, proc.stderr[-1500:])
    assert proc.stdout == ""
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in proc.stderr, proc.stderr
    for w in words:
        assert w in lines[0], lines[0]


@pytest.fixture(scope="module")
def sleepy(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return record_sleepy(tmp_path_factory.mktemp("explain-sleepy"))


@pytest.fixture(scope="module")
def sleepy_doc(sleepy: Path, tmp_path_factory: pytest.TempPathFactory) -> dict:
    proc = run_profui("explain", sleepy, "--json", cache=tmp_path_factory.mktemp("cache"))
    assert proc.returncode == 0, proc.stderr[-2000:]
    return json.loads(proc.stdout)


def test_bad_input_is_one_line_naming_the_file(tmp_path: Path) -> None:
    one_line_error(run_profui("explain", tmp_path / "missing.json", cache=tmp_path), "missing.json")
    bad = tmp_path / "notes.json"
    bad.write_text('{"traceEvents": [')
    one_line_error(run_profui("explain", bad, cache=tmp_path / "c"), "notes.json")
    memory = traces_dir() / "hta-memory_analysis-memory_timeline.raw.gz"
    if memory.is_file():
        one_line_error(run_profui("explain", memory, cache=tmp_path / "c2"), memory.name)


def test_bad_options_are_one_line(tmp_path: Path) -> None:
    mlp = SAMPLES / "mlp_cpu"
    one_line_error(run_profui("explain", mlp, "--top", "0", cache=tmp_path), "--top")
    steps = "steps: " + ", ".join(map(str, sorted(step_names(mlp))))  # 3, 4, 5, 6
    one_line_error(run_profui("explain", mlp, "--step", "999", cache=tmp_path), "--step 999", steps)
    one_line_error(run_profui("explain", mlp, "--rank", "7", cache=tmp_path), "--rank 7")
    one_line_error(run_profui("explain", mlp, "--annotation", "fwd", cache=tmp_path), "--instance")
    one_line_error(
        run_profui("explain", mlp, "--annotation", "no such thing", "--instance", "0", cache=tmp_path),
        "no such thing",
    )


def test_json_has_the_documented_keys_and_the_stages_findings(sleepy: Path, sleepy_doc: dict) -> None:
    doc = sleepy_doc
    assert tuple(doc) == KEYS and doc["version"] == VERSION
    assert doc["trace"]["device_type"] == "none"
    assert doc["findings"], "a run sleeping 20 ms a step has findings"
    for f in doc["findings"]:
        assert tuple(f) == FINDING_KEYS
        assert all(set(e) == {"label", "value", "unit", "source"} for e in f["evidence"])
        assert set(f["timeline"]) == {"rank", "step", "ts_ns"}
    assert all(tuple(e) == EVENT_KEYS for e in doc["critical_path"]["events"])
    # the oracle: the stage's own tables, computed apart from the command
    out = open_trace(sleepy).result("findings")
    assert_same_findings(doc["findings"], out["findings.parquet"], out["evidence.parquet"])


def assert_same_findings(found: list[dict], findings: pl.DataFrame, evidence: pl.DataFrame) -> None:
    """``found`` (the JSON's) holds exactly the rows of the stage's tables, in position order."""
    rows = findings.sort("position").to_dicts()
    assert len(found) == len(rows)
    for f, r in zip(found, rows, strict=True):
        for k in (
            "category",
            "title",
            "severity",
            "recoverable_ns_per_step",
            "ranks",
            "steps",
            "look_at",
            "next_step",
        ):
            assert f[k] == r[k], k
        assert f["recoverable_share"] == pytest.approx(r["recoverable_share"], rel=1e-12)
        assert f["timeline"] == {"rank": r["at_rank"], "step": r["at_step"], "ts_ns": r["at_ns"]}
        ev = evidence.filter(pl.col("position") == r["position"]).to_dicts()
        assert [(e["label"], e["unit"], e["source"]) for e in f["evidence"]] == [
            (e["label"], e["unit"], e["source"]) for e in ev
        ]
        assert [e["value"] for e in f["evidence"]] == pytest.approx([e["value"] for e in ev], rel=1e-12)


def test_the_default_step_is_the_median_and_step_rank_choose(
    sleepy: Path, sleepy_doc: dict, tmp_path: Path
) -> None:
    steps = open_trace(sleepy).result("critical_path")["steps.parquet"]
    assert steps.height >= 3
    # the oracle: the job's path per step is its slowest rank's; the median of the sorted lengths
    job: dict[int, tuple[int, int]] = {}
    for r in steps.iter_rows(named=True):
        if r["step"] not in job or (r["length_ns"], -r["rank"]) > (job[r["step"]][0], -job[r["step"]][1]):
            job[r["step"]] = (r["length_ns"], r["rank"])
    ordered = sorted(job.items(), key=lambda kv: (kv[1][0], kv[0]))
    median_step, (median_len, median_rank) = ordered[(len(ordered) - 1) // 2]
    assert (sleepy_doc["step"], sleepy_doc["rank"]) == (median_step, median_rank)
    assert sleepy_doc["critical_path"]["length_ns"] == median_len
    assert sum(sleepy_doc["critical_path"]["by_kind"].values()) == median_len

    other = next(s for s in job if s != median_step)
    proc = run_profui("explain", sleepy, "--json", "--step", other, "--rank", 0, cache=tmp_path)
    doc = json.loads(proc.stdout)
    assert (doc["step"], doc["rank"]) == (other, 0)
    row = steps.filter(pl.col("step") == other, pl.col("rank") == 0)
    assert doc["critical_path"]["length_ns"] == row["length_ns"][0]
    ev = doc["critical_path"]["events"]
    assert [e["seq"] for e in ev] == sorted(e["seq"] for e in ev)
    assert ev[0]["start_ns"] == row["start_ns"][0] and ev[-1]["end_ns"] == row["end_ns"][0]


def test_top_keeps_the_first_k(sleepy: Path, sleepy_doc: dict, tmp_path: Path) -> None:
    doc = json.loads(run_profui("explain", sleepy, "--json", "--top", "1", cache=tmp_path).stdout)
    assert doc["findings"] == sleepy_doc["findings"][:1]
    text = run_profui("explain", sleepy, "--top", "1", cache=tmp_path, NO_COLOR="1").stdout
    assert "\n1. " in text and "\n2. " not in text


def test_path_events_keeps_the_longest_stretches_in_path_order(
    sleepy: Path, sleepy_doc: dict, tmp_path: Path
) -> None:
    """The oracle: the whole path of the default (all stretches), its N longest by duration
    (ties: the earlier), put back in path order."""
    full = sleepy_doc["critical_path"]
    assert full["events_total"] == len(full["events"]) > 3 and not full["events_truncated"]
    proc = run_profui("explain", sleepy, "--json", "--path-events", "3", cache=tmp_path)
    assert proc.returncode == 0, proc.stderr[-2000:]
    cut = json.loads(proc.stdout)["critical_path"]
    longest = sorted(full["events"], key=lambda e: (e["start_ns"] - e["end_ns"], e["seq"]))[:3]
    assert cut["events"] == sorted(longest, key=lambda e: e["seq"])
    assert cut["events_total"] == full["events_total"] and cut["events_truncated"]
    assert {k: cut[k] for k in ("length_ns", "by_kind")} == {k: full[k] for k in ("length_ns", "by_kind")}
    none = json.loads(run_profui("explain", sleepy, "--json", "--path-events", "0", cache=tmp_path).stdout)
    assert none["critical_path"]["events"] == [] and none["critical_path"]["events_truncated"]
    one_line_error(run_profui("explain", sleepy, "--path-events", "-1", cache=tmp_path), "--path-events")


def test_text_fits_80_columns_without_colour_and_leads_with_the_top_finding(
    sleepy: Path, sleepy_doc: dict, tmp_path: Path
) -> None:
    proc = run_profui("explain", sleepy, cache=tmp_path, NO_COLOR="1", COLUMNS="200")
    assert proc.returncode == 0, proc.stderr
    lines = proc.stdout.splitlines()
    assert max(len(line) for line in lines) <= 80
    assert "\x1b[" not in proc.stdout
    top = sleepy_doc["findings"][0]
    # the headline is the top finding's title, which says its time per step as "X per step (Y%)"
    head = " ".join(line.strip() for line in lines[1:4])
    assert head.startswith("Top finding: " + top["title"][:40])
    assert re.search(r"\d[\d.]* (ns|µs|ms|s) per step \(\d+% of step time\)", top["title"])
    assert "GPU" not in proc.stdout  # a CPU-only run
    assert f"Critical path of step {sleepy_doc['step']} on rank {sleepy_doc['rank']}" in proc.stdout


def test_the_copy_bound_nsys_export_leads_with_transfer_and_never_says_launch_bound(tmp_path: Path) -> None:
    proc = run_profui("explain", nsys_export("h100_2gpu_1s"), "--json", cache=tmp_path)
    assert proc.returncode == 0, proc.stderr[-2000:]
    doc = json.loads(proc.stdout)
    assert doc["findings"][0]["category"] == "transfer"
    text = run_profui("explain", nsys_export("h100_2gpu_1s"), cache=tmp_path, NO_COLOR="1").stdout
    assert "launch-bound" not in text.lower() and "launch bound" not in text.lower()


def _everything() -> list[str]:
    d = traces_dir()
    shared = sorted(p.name for p in d.glob("hta-*.json*") if p.name not in NOT_TRACES) if d.is_dir() else []
    nsys = sorted(f"nsys/{p.name}" for p in (d / "nsys").glob("*.sqlite")) if d.is_dir() else []
    return [*shared, *nsys, "samples/mlp_cpu", "samples/synthetic_gpu", "samples/jax_cpu"]


@pytest.mark.parametrize("name", _everything())
def test_every_shared_trace_and_sample_explains_as_the_stage_says(
    name: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("PROFUI_CACHE", str(tmp_path / "cache"))  # the command's and the oracle's import
    if name.startswith("samples/"):
        path = tmp_path / Path(name).name
        shutil.copytree(REPO / name, path, ignore=shutil.ignore_patterns(".profui"))
        folder = path if (path / "manifest.json").is_file() else None  # jax_cpu: a JAX log folder
    elif name.startswith("nsys/"):
        path = nsys_export(Path(name).stem)
        folder = None
    else:
        path = shared_trace(name)
        folder = tmp_path / "imported"
        import_trace([path], folder)
    proc = run_profui("explain", path, "--json", cache=tmp_path / "cache")
    assert proc.returncode == 0, proc.stderr[-2000:]
    doc = json.loads(proc.stdout)
    if folder is None:
        from profui.tui.cli.sources import resolve_source

        folder = resolve_source(path)
    out = open_trace(folder).result("findings")
    assert_same_findings(doc["findings"], out["findings.parquet"], out["evidence.parquet"])
    text = run_profui("explain", path, cache=tmp_path / "cache", NO_COLOR="1")
    assert text.returncode == 0 and max(map(len, text.stdout.splitlines())) <= 80


def test_annotation_instance_is_the_critical_path_of_that_window(tmp_path: Path) -> None:
    import pyarrow.parquet as pq

    mlp = tmp_path / "mlp"
    shutil.copytree(SAMPLES / "mlp_cpu", mlp, ignore=shutil.ignore_patterns(".profui"))
    # the oracle: the annotation's rows read in plain Python, the second (instance 1) in start order
    every = [
        r
        for f in sorted(mlp.glob("node=*/rank=*/events-*.parquet"))
        for r in pq.read_table(f, columns=["kind", "name", "ts", "dur", "tid"]).to_pylist()
    ]
    rows = [r for r in every if str(r["kind"]) == "annotation" and r["name"] == "forward_backward"]
    ann = sorted(rows, key=lambda r: r["ts"])[1]
    lo, hi = ann["ts"], ann["ts"] + ann["dur"]
    # the ops on the annotation's thread inside the window, their union (nested ops once)
    ops = sorted(
        (max(r["ts"], lo), min(r["ts"] + r["dur"], hi))
        for r in every
        if str(r["kind"]) == "cpu_op" and r["tid"] == ann["tid"] and r["ts"] < hi and r["ts"] + r["dur"] > lo
    )
    op_time, end = 0, lo
    for a, b in ops:
        op_time += max(0, b - max(a, end))
        end = max(end, b)
    assert op_time > 0
    proc = run_profui(
        "explain", mlp, "--json", "--annotation", "forward_backward", "--instance", "1", cache=tmp_path
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    cp = json.loads(proc.stdout)["critical_path"]
    # a CPU-only run: the window is the annotation's own span, every ns of it one kind
    assert cp["length_ns"] == ann["dur"] == sum(cp["by_kind"].values())
    assert cp["events"][0]["start_ns"] == ann["ts"] and cp["events"][-1]["end_ns"] == ann["ts"] + ann["dur"]
    # the annotation's thread is the path's host thread: its ops are host compute, the rest outside ops
    assert cp["by_kind"]["host_compute"] == op_time
    assert cp["by_kind"]["host_overhead"] == ann["dur"] - op_time
    assert json.loads(proc.stdout)["annotation"] == {"name": "forward_backward", "instance": 1}
    text = run_profui(
        "explain", mlp, "--annotation", "forward_backward", "--instance", "1", cache=tmp_path, NO_COLOR="1"
    ).stdout
    # the path is named for the annotation's instance, and one note says whose the findings are
    assert "Critical path of 'forward_backward' instance 1 on rank 0:" in text
    assert "Critical path of step" not in text
    assert " ".join(text.split()).count("the findings are the analysed steps'") == 1
    one_line_error(
        run_profui("explain", mlp, "--annotation", "forward_backward", "--instance", "4", cache=tmp_path),
        "4 instance(s)",
    )
    # --step with --annotation would be ignored: refused
    one_line_error(
        run_profui(
            "explain",
            mlp,
            "--annotation",
            "forward_backward",
            "--instance",
            "0",
            "--step",
            "4",
            cache=tmp_path,
        ),
        "--step 4",
        "--annotation",
    )


def test_hta_compat_annotation_instance_is_htas_window(tmp_path: Path) -> None:
    name = "hta-ns_resolution_trace-rank-0.Apr_03_18_51_38.1102.pt.trace.json.gz"
    args = ("--annotation", "## forward ##", "--instance", "1", "--hta-compat")
    proc = run_profui("explain", shared_trace(name), "--json", *args, cache=tmp_path)
    assert proc.returncode == 0, proc.stderr[-2000:]
    doc = json.loads(proc.stdout)
    cp = doc["critical_path"]
    # HTA's reference holds no '## forward ##' window: a path of HTA's kinds that sum to its length
    assert cp["length_ns"] and cp["length_ns"] == sum(cp["by_kind"].values())
    assert set(cp["by_kind"]) <= {
        "cpu_bound",
        "data_loading",
        "gpu_compute_bound",
        "gpu_communication_bound",
        "gpu_kernel_kernel_overhead",
        "gpu_kernel_launch_overhead",
    }
    assert doc["annotation"] == {"name": "## forward ##", "instance": 1}
    # an annotation HTA's reference has: its instance 1 as HTA 0.5.0 measured it
    ref = json.loads(
        (REPO / "tests/analysis/reference" / f"critical_path-{name[:-8]}@Optimizer_step.json").read_text()
    )
    want = next(w for w in ref["windows"] if w["instance"] == 1)
    args = ("--annotation", want["name"], "--instance", "1", "--hta-compat")
    proc = run_profui("explain", shared_trace(name), "--json", *args, cache=tmp_path)
    assert proc.returncode == 0, proc.stderr[-2000:]
    cp = json.loads(proc.stdout)["critical_path"]
    assert (cp["length_ns"], cp["by_kind"]) == (want["length_ns"], want["by_kind_ns"])


def step_names(folder: Path) -> dict[int, tuple[int, int]]:
    """The recorded step markers read in plain Python: ``{N: (ts, dur)}`` of ``ProfilerStep#N``."""
    import pyarrow.parquet as pq

    return {
        int(r["name"].split("#")[1]): (r["ts"], r["dur"])
        for f in sorted(folder.glob("node=*/rank=*/events-*.parquet"))
        for r in pq.read_table(f, columns=["kind", "name", "ts", "dur"]).to_pylist()
        if str(r["kind"]) == "step" and r["name"].startswith("ProfilerStep#")
    }


def test_a_step_not_analysed_has_its_path_computed_and_a_missing_step_is_refused(tmp_path: Path) -> None:
    # 20 traced steps: the stage analyses at most 16, so at least 4 exist and are not analysed
    proc, trace = run_profcap(
        tmp_path, ["--steps", "2-21"], TRAIN, env={"STEPS": "24", "OMP_NUM_THREADS": "1"}
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    marked = step_names(trace)
    assert sorted(marked) == list(range(2, 22))
    analysed = set(open_trace(trace).result("critical_path")["steps.parquet"]["step"].to_list())
    left = sorted(set(marked) - analysed)
    assert left, analysed
    step = left[0]
    proc = run_profui("explain", trace, "--json", "--step", step, cache=tmp_path / "c")
    assert proc.returncode == 0, proc.stderr[-2000:]
    doc = json.loads(proc.stdout)
    assert (doc["step"], doc["rank"]) == (step, 0)
    # a CPU-only run: the path is the step marker's own span, every ns of it one kind
    ts, dur = marked[step]
    cp = doc["critical_path"]
    assert cp["length_ns"] == dur == sum(cp["by_kind"].values())
    assert cp["events"][0]["start_ns"] == ts and cp["events"][-1]["end_ns"] == ts + dur
    assert any("not among the analysed steps" in n for n in doc["notes"])
    # a step that does not exist: one line naming the steps there are (2 to 21)
    one_line_error(run_profui("explain", trace, "--step", "40", cache=tmp_path / "c"), "--step 40", "2 to 21")


def test_the_headline_is_the_summarys_first_line(sleepy: Path, sleepy_doc: dict, tmp_path: Path) -> None:
    summary = run_profui("summary", sleepy, cache=tmp_path, COLUMNS="300", NO_COLOR="1")
    assert summary.returncode == 0, summary.stderr[-2000:]
    first = summary.stdout.splitlines()[0]
    assert first.startswith("Top finding: ") and sleepy_doc["headline"] == first
    # the text says it wrapped: the lines after the trace's line up to the first note
    text = run_profui("explain", sleepy, cache=tmp_path, NO_COLOR="1", COLUMNS="80").stdout.splitlines()
    end = next(i for i, line in enumerate(text) if line.startswith("note: "))
    assert " ".join(line.strip() for line in text[1:end]) == first
