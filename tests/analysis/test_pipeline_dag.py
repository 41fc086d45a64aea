"""The declaration of the pipeline (stages, parameters, DAG rules) and its parameter parsing.

The rules are checked on the real registry. Only the declaration checks use made-up stages
(a broken DAG is exactly what the real registry must never be).
"""

from __future__ import annotations

import ast
import json
import os
import shutil
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

from profui.analysis.pipeline import REGISTRY, TRACE, Param, PipelineError, Registry, Stage
from profui.analysis.pipeline.params import parse_assignments, resolve_params

from realdata import REPO


def test_registry_has_the_designed_dag() -> None:
    order = REGISTRY.order
    assert order[:3] == ["ingest", "correlate", "steps"] and order[-1] == "summary"
    assert REGISTRY.stages["ingest"].inputs == (TRACE,)
    # Every stage except ingest reads ingest's output (directly or through another stage).
    assert REGISTRY.descendants({"ingest"}) == set(order) - {"ingest"}
    # summary reads every per-topic stage, and nothing reads summary.
    topics = {"kernels", "activity", "memory", "precision", "utilization", "comm", "annotations", "steps"}
    assert topics <= REGISTRY.ancestors({"summary"})
    assert REGISTRY.children("summary") == []
    for i, name in enumerate(order):  # declaration order is a topological order
        assert all(order.index(x) < i for x in REGISTRY.stages[name].inputs if x != TRACE)
    # tables and documents, but for the timeline's index: files its body writes (arrays mapped)
    assert [s.name for s in REGISTRY.stages.values() if s.files] == ["timeline"]
    assert [s.name for s in REGISTRY.stages.values() if s.on_demand] == ["timeline"]
    assert REGISTRY.default_order == [s for s in order if s != "timeline"]
    for st in REGISTRY.stages.values():
        assert st.files or all(f.endswith((".parquet", ".json")) for f in st.outputs)
        assert st.help and st.code_version.startswith(st.version + "+")


def test_defaults_and_users_of_parameters() -> None:
    p = REGISTRY.params
    assert (p["top_n"].default, p["bucket_ms"].default, p["hta_compat"].default) == (15, 0.0, False)
    assert REGISTRY.users_of("top_n") == {"kernels", "summary"}
    # the timeline declares what changes the steps it draws (its input's), not a knob of its own
    assert REGISTRY.users_of("step_annotation") == {"steps", "timeline"}
    assert all(REGISTRY.users_of(name) for name in p)  # every parameter is some stage's


def test_test_knobs_are_not_users_parameters() -> None:
    from pipeline_knobs import KNOBBED, KNOBS

    knobs = {k.name for k in KNOBS}
    assert knobs == {"debug_fail", "debug_sleep_s", "debug_sleep_stage"}
    assert not knobs & set(REGISTRY.params)
    with pytest.raises(PipelineError, match="unknown parameter debug_fail"):
        resolve_params(REGISTRY.params, None, {"debug_fail": "kernels"})
    assert not any(KNOBBED.params[k].affects_output for k in knobs)
    assert KNOBBED.users_of("debug_fail") == set()  # engine-wide test knob
    for name, st in REGISTRY.stages.items():  # the wrapped bodies keep their code versions
        assert KNOBBED.stages[name].code_version == st.code_version


@pytest.mark.parametrize(
    ("selection", "missing"),
    [
        # summary reads every stage but correlate, which is on the paths through launch, idle and critical_path.
        (
            ["ingest", "summary"],
            "correlate, steps, kernels, activity, memory, precision, utilization, comm, annotations, launch, idle, sync, "
            "flops, allocations, critical_path, findings",
        ),
        (["correlate", "summary"], "launch, idle, critical_path, findings"),
        (["steps", "summary"], "comm, annotations, flops, allocations, critical_path, findings"),
    ],
)
def test_selection_must_be_closed_under_paths(selection: list[str], missing: str) -> None:
    with pytest.raises(PipelineError) as exc:
        REGISTRY.check_selection(selection)
    assert (
        str(exc.value)
        == f"selection is not closed under paths: also select {missing} (they lie between selected stages)"
    )


def test_closed_selections_are_accepted_in_topological_order() -> None:
    assert REGISTRY.check_selection(["summary", "findings", "kernels"]) == ["kernels", "findings", "summary"]
    assert REGISTRY.check_selection(["launch", "memory"]) == ["memory", "launch"]  # unrelated stages
    assert REGISTRY.check_selection(
        [" steps", "comm ", "flops", "annotations", "allocations", "critical_path", "findings", "summary"]
    ) == [
        "steps",
        "comm",
        "annotations",
        "flops",
        "allocations",
        "critical_path",
        "findings",
        "summary",
    ]
    with pytest.raises(PipelineError, match="--stages is empty"):
        REGISTRY.check_selection(["", " "])


def test_parameter_parsing_and_resolution() -> None:
    p = REGISTRY.params
    assert p["hta_compat"].parse("yes") is True and p["hta_compat"].parse("0") is False
    assert p["bucket_ms"].parse("2.5") == 2.5 and p["top_n"].parse(" 30 ") == 30
    with pytest.raises(PipelineError, match="top_n takes a int, not 'x'"):
        p["top_n"].parse("x")
    with pytest.raises(PipelineError, match="top_n must be >= 1"):
        p["top_n"].parse("0")
    with pytest.raises(PipelineError, match="hta_compat takes a bool"):
        p["hta_compat"].parse("maybe")
    for raw in ("nan", "inf", "-inf", "1e999"):  # float() reads them all; no peak or bucket is one
        with pytest.raises(PipelineError, match="peak_tflops takes a finite number"):
            p["peak_tflops"].parse(raw)
    assert parse_assignments(["top_n=3", "step_annotation=a=b"]) == {"top_n": "3", "step_annotation": "a=b"}
    with pytest.raises(PipelineError, match="--set takes name=value"):
        parse_assignments(["=3"])
    from pipeline_knobs import KNOBBED

    base = {"top_n": 30, "gone_param": 1, "debug_fail": "kernels", "bucket_ms": 2}
    values = resolve_params(KNOBBED.params, base, {"hta_compat": "true"})
    assert values["top_n"] == 30 and values["bucket_ms"] == 2.0 and values["hta_compat"] is True
    assert "gone_param" not in values and values["debug_fail"] == ""


def _stage(name: str, inputs: tuple[str, ...], params: tuple[str, ...] = ()) -> Stage:
    return Stage(name, inputs, params, ("out.json",), lambda ctx: {"out.json": {}})


def test_broken_declarations_are_rejected() -> None:
    params = [Param("n", "int", 1, "n")]
    with pytest.raises(ValueError, match="must be a stage declared before it"):
        Registry([_stage("a", ("b",)), _stage("b", (TRACE,))], params)  # a cycle can't be declared
    with pytest.raises(ValueError, match="unknown parameter 'm'"):
        Registry([_stage("a", (TRACE,), ("m",))], params)
    with pytest.raises(ValueError, match="used twice or reserved"):
        Registry([_stage("a", (TRACE,)), _stage("a", ("a",))], params)
    with pytest.raises(ValueError, match="declared twice"):
        Registry([], [*params, *params])


def test_include_last_step_only_with_hta_compat() -> None:
    p = REGISTRY.params["include_last_step"]
    assert p.default is False and p.parse("true") is True and "hta_compat" in p.help
    hta_users = REGISTRY.users_of("hta_compat")
    assert REGISTRY.users_of("include_last_step") == hta_users
    assert {"memory", "launch", "idle"} <= hta_users
    assert REGISTRY.users_of("max_queue_length") == {"idle"}
    assert "bandwidth.parquet" in REGISTRY.stages["memory"].outputs
    assert "blocked_on_full_queue.parquet" in REGISTRY.stages["idle"].outputs
    assert "aten_op_kernels.parquet" in REGISTRY.stages["launch"].outputs


def _stage_keys(site: Path) -> dict[str, str]:
    """Every stage's code version as a copy of profui at ``site`` computes it, in a fresh interpreter."""
    code = (
        "import json, sys\n"
        "from profui.analysis.pipeline import REGISTRY, dag\n"
        "assert dag.__file__.startswith(sys.argv[1])\n"
        "print(json.dumps({n: s.code_version for n, s in REGISTRY.stages.items()}))\n"
    )
    env = {**os.environ, "PYTHONPATH": str(site)}
    run = subprocess.run(
        [sys.executable, "-c", code, str(site)], env=env, capture_output=True, text=True, check=True
    )
    return json.loads(run.stdout)


def test_code_versions_follow_real_edits(tmp_path: Path) -> None:
    """A copy of profui edited for real: a body's edit moves its stage's key alone (the body is
    keyed by its bytecode, not by bodies.py's source); an edit of an analysis module moves the
    stages that load it; an edit of the declared schemas, which every output is conformed to
    before it is kept, moves every stage."""
    site = tmp_path / "site"
    for folder in ("capture", "analysis", "tui"):
        shutil.copytree(REPO / folder, site / "profui" / folder, ignore=shutil.ignore_patterns("__pycache__"))
    before = _stage_keys(site)

    bodies = site / "profui" / "analysis" / "pipeline" / "bodies.py"
    source = bodies.read_text()
    fn = next(
        f
        for f in ast.parse(source).body
        if isinstance(f, ast.FunctionDef) and f.name == REGISTRY.stages["sync"].run.__name__
    )
    lines = source.splitlines(keepends=True)
    first = fn.body[0]
    lines.insert(first.lineno - 1, " " * first.col_offset + "_edited = 1\n")
    bodies.write_text("".join(lines))
    after_body = _stage_keys(site)
    assert {n for n in before if after_body[n] != before[n]} == {"sync"}

    with open(site / "profui" / "analysis" / "sync.py", "a") as fh:
        fh.write("\nSYNC_EDITED = 1\n")
    after_module = _stage_keys(site)
    moved = {n for n in before if after_module[n] != after_body[n]}
    assert "sync" in moved and "kernels" not in moved

    with open(site / "profui" / "analysis" / "schemas.py", "a") as fh:
        fh.write("\nSCHEMAS_EDITED = 1\n")
    after_schemas = _stage_keys(site)
    assert all(after_schemas[n] != after_module[n] for n in before)


def _insert_statement(path: Path, qualname: str) -> None:
    """Edit function ``qualname`` (``f`` or ``Class.f``) of ``path`` for real: a statement before
    its first."""
    source = path.read_text()
    scope: list[ast.stmt] = ast.parse(source).body
    for part in qualname.split("."):
        node = next(n for n in scope if isinstance(n, (ast.FunctionDef, ast.ClassDef)) and n.name == part)
        scope = node.body
    first = scope[0]
    lines = source.splitlines(keepends=True)
    lines.insert(first.lineno - 1, " " * first.col_offset + "_edited = 1\n")
    path.write_text("".join(lines))


def _callers_in_source(bodies: Path, helper: str) -> set[str]:
    """The stages whose body reaches ``helper`` through the functions of bodies.py: read from its
    source (the names each function loads, followed through bodies.py's functions), not from
    the bytecode the key reads."""
    functions = {f.name: f for f in ast.parse(bodies.read_text()).body if isinstance(f, ast.FunctionDef)}

    def reaches(name: str, seen: set[str]) -> bool:
        loads = {
            n.id for n in ast.walk(functions[name]) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load)
        }
        if helper in loads:
            return True
        return any(reaches(f, seen | {f}) for f in loads & functions.keys() - seen)

    return {n for n, s in REGISTRY.stages.items() if reaches(s.run.__name__, {s.run.__name__})}


def test_code_versions_cover_the_helpers_and_the_trace_reader(tmp_path: Path) -> None:
    """A copy of profui edited for real: an edit of a bodies.py helper moves exactly the stages
    whose body calls it (directly or through another helper); an edit of the Trace every stage
    reads its events through, or of the check of the files it reads (readcheck.py), moves every
    stage: the later stages are keyed by ingest's output hash, which such an edit need not move.
    An edit of code no stage runs moves none."""
    site = tmp_path / "site"
    for folder in ("capture", "analysis", "tui"):
        shutil.copytree(REPO / folder, site / "profui" / folder, ignore=shutil.ignore_patterns("__pycache__"))
    pkg = site / "profui"
    bodies = pkg / "analysis" / "pipeline" / "bodies.py"
    keys = _stage_keys(site)

    def moved_by(edit: Callable[[], None]) -> set[str]:
        nonlocal keys
        edit()
        before, keys = keys, _stage_keys(site)
        return {n for n in before if keys[n] != before[n]}

    # read through _bucket_ns by utilization, and by summary_doc, which summary calls (hand-checked)
    assert _callers_in_source(bodies, "bucket_ns_of") == {"utilization", "summary"}
    assert moved_by(lambda: _insert_statement(bodies, "bucket_ns_of")) == {"utilization", "summary"}
    # read through _events by most stages, not by those that take the trace's events themselves
    callers = _callers_in_source(bodies, "stage_events")
    assert {"kernels", "sync", "critical_path"} <= callers and not callers & {"ingest", "flops", "summary"}
    assert moved_by(lambda: _insert_statement(bodies, "stage_events")) == callers

    # a class of bodies.py is keyed by its methods' code, as a helper: the summary body reads
    # its inputs through _Given (hand-checked), and no other stage moves with it
    assert moved_by(lambda: _insert_statement(bodies, "_Files.__getitem__")) == {"summary"}

    every = set(REGISTRY.stages)
    assert (
        moved_by(lambda: _insert_statement(pkg / "analysis" / "trace.py", "Trace._collected_events")) == every
    )
    assert (
        moved_by(lambda: _append(pkg / "capture" / "format" / "readcheck.py", "\nREADCHECK_EDITED = 1\n"))
        == every
    )
    assert moved_by(lambda: _append(pkg / "tui" / "timeline" / "view.py", "\nVIEW_EDITED = 1\n")) == set()


def _append(path: Path, text: str) -> None:
    with open(path, "a") as fh:
        fh.write(text)
