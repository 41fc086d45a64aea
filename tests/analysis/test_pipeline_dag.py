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
    for st in REGISTRY.stages.values():
        assert all(f.endswith((".parquet", ".json")) for f in st.outputs)
        assert st.help and st.code_version.startswith(st.version + "+")


def test_defaults_and_users_of_parameters() -> None:
    p = REGISTRY.params
    assert (p["top_n"].default, p["bucket_ms"].default, p["hta_compat"].default) == (15, 0.0, False)
    assert REGISTRY.users_of("top_n") == {"kernels", "summary"}
    assert REGISTRY.users_of("step_annotation") == {"steps"}
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
