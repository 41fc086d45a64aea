"""The typed result's accessors: generated from the declared schemas, exact on real traces, and
typed so that a wrong access fails mypy.

Oracles: the declared schemas read directly (``schemas.table``, ``schemas.JSON_KEYS``) with the
dtype -> Python type map written out here by hand; the stage outputs the pipeline produced (in
memory and read back from disk), each accessor having to return that very object.
"""

from __future__ import annotations

import subprocess
import sys
import typing
from pathlib import Path

import polars as pl
import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from test_types import FLAGS  # noqa: E402

from profui.analysis import result_codegen, schemas  # noqa: E402
from profui.analysis import result_rows as rr  # noqa: E402
from profui.analysis import result_tables as rt  # noqa: E402
from profui.analysis.pipeline.answers import cached  # noqa: E402
from profui.analysis.pipeline.engine import analyze  # noqa: E402
from profui.analysis.pipeline.registry import REGISTRY  # noqa: E402
from profui.analysis.pipeline.result import OutputMissing, Result  # noqa: E402
from profui.analysis.pipeline.store import compute  # noqa: E402
from profui.analysis.summary_document import Summary  # noqa: E402

from package_root import package_root  # noqa: E402

#: By hand, from Polars' dtypes: what a row's value is in Python.
PY = {pl.Int64: int, pl.Int32: int, pl.UInt32: int, pl.Float64: float, pl.String: str, pl.Boolean: bool}

#: The declared tables (a files stage's Parquet files, the timeline's, are its own: not tables
#: of the result, read as paths).
TABLES = [
    (s.name, f) for s in REGISTRY.stages.values() if not s.files for f in s.outputs if f.endswith(".parquet")
]
TRACES = ("nccl_parser_config-nccl_data", "df_index_resolver-df_index_resolver", "trace_compare-base-base")


def _declared_type(col: schemas.Column) -> object:
    if isinstance(col.dtype, pl.List):
        inner = PY[type(col.dtype.inner) if not isinstance(col.dtype.inner, type) else col.dtype.inner]
        base: object = list[inner]  # type: ignore[valid-type]
    else:
        base = PY[type(col.dtype)]
    return base | None if col.nullable else base  # type: ignore[operator]


def test_the_committed_modules_are_what_the_generator_writes() -> None:
    assert result_codegen.TARGET.read_text(encoding="utf-8") == result_codegen.generate()
    assert result_codegen.ROWS_TARGET.read_text(encoding="utf-8") == result_codegen.generate_rows()
    assert result_codegen.main(["--check"]) == 0


@pytest.mark.parametrize("stage,file", TABLES, ids=lambda x: str(x))
def test_each_row_type_holds_the_declared_columns(stage: str, file: str) -> None:
    decl = schemas.table(stage, file)
    row = getattr(rr, result_codegen.row_class(stage, file))
    hints = typing.get_type_hints(row)
    assert list(hints) == [c.name for c in decl.columns if not c.optional] + [
        c.name for c in decl.columns if c.optional
    ]
    assert hints == {c.name: _declared_type(c) for c in decl.columns}
    assert row.__required_keys__ == {c.name for c in decl.columns if not c.optional}
    assert row.__optional_keys__ == {c.name for c in decl.columns if c.optional}


def test_each_stage_has_a_property_per_declared_output() -> None:
    for stage in REGISTRY.stages.values():
        cls = getattr(Result, stage.name).fget.__annotations__["return"]
        outputs_cls = getattr(rt, cls)
        for file in stage.outputs:
            assert isinstance(getattr(outputs_cls, file.rsplit(".", 1)[0]), property), (stage.name, file)
    declared = {name for name in vars(rt.StageAccessors) if not name.startswith("_")}
    assert declared == set(REGISTRY.stages)


def test_json_documents_type_their_declared_keys() -> None:
    for (stage, file), keys in schemas.JSON_KEYS.items():
        typ = result_codegen.JSON_TYPES[(stage, file)]
        if isinstance(typ, dict):
            doc = getattr(rr, result_codegen.doc_class(stage, file))
            nested = schemas.OVERVIEW_KEYS if (stage, file) == ("ingest", "trace.json") else ()
            assert set(typing.get_type_hints(doc)) | set(nested) == set(keys)
    assert list(typing.get_type_hints(rr.Overview)) == list(schemas.OVERVIEW_KEYS)


def _is(value: object, hint: object) -> bool:
    """``value`` is of the type ``hint`` (int, float, str, bool, list[...], X | None, Literal)."""
    origin, args = typing.get_origin(hint), typing.get_args(hint)
    if origin is typing.Literal:
        return value in args
    if origin in (typing.Union, __import__("types").UnionType):
        return any(_is(value, a) for a in args)
    if origin is list:
        return isinstance(value, list) and all(_is(v, args[0]) for v in value)
    if hint is type(None):
        return value is None
    if hint is float:
        return isinstance(value, float)
    if hint is int:
        return isinstance(value, int) and not isinstance(value, bool)
    return isinstance(value, hint)  # type: ignore[arg-type]


def _check_result(result: Result, store: dict) -> int:
    """Every accessor returns the stored object itself; every row and document is of its type.
    Returns the number of rows checked."""
    rows = 0
    for stage in REGISTRY.stages.values():
        got = getattr(result, stage.name)
        for file in stage.outputs:
            stem = file.rsplit(".", 1)[0]
            assert getattr(got, stem) is store[stage.name][file], (stage.name, file)
            if stage.files:  # a file the stage wrote, handed on as its path
                assert isinstance(store[stage.name][file], Path) and store[stage.name][file].is_file()
            elif file.endswith(".parquet"):
                hints = typing.get_type_hints(getattr(rr, result_codegen.row_class(stage.name, file)))
                typed = getattr(got, f"{stem}_rows")()
                assert typed == store[stage.name][file].to_dicts()
                for row in typed:
                    assert set(row) <= set(hints), (stage.name, file)
                    for k, v in row.items():
                        assert _is(v, hints[k]), (stage.name, file, k, v)
                rows += len(typed)
    overview = result.ingest.trace["overview"]
    hints = typing.get_type_hints(rr.Overview)
    assert set(overview) == set(hints)
    assert all(_is(overview[k], hints[k]) for k in hints), overview
    for stage, file in (("steps", "steps.json"), ("allocations", "allocations.json")):
        doc = store[stage][file]
        hints = typing.get_type_hints(getattr(rr, result_codegen.doc_class(stage, file)))
        assert set(doc) == set(hints) and all(_is(doc[k], hints[k]) for k in hints), (stage, doc)
    assert isinstance(result.summary.summary, Summary)
    assert all(isinstance(k, str) and isinstance(v, str) for k, v in result.summary.takeaways.items())
    return rows


@pytest.mark.parametrize("name", TRACES)
@pytest.mark.parametrize("hta", [False, True], ids=["exact", "hta"])
def test_accessors_return_what_the_pipeline_computed(imported_trace, name: str, hta: bool) -> None:
    trace = imported_trace(name)
    store = compute(trace, list(REGISTRY.order), {"hta_compat": hta})
    assert _check_result(Result(store, "computed in memory"), store) > 0


def test_accessors_return_what_was_read_back_from_disk(imported_trace) -> None:
    trace = imported_trace("nccl_parser_config-nccl_data")
    rec = analyze(trace.path, stages=list(REGISTRY.order))
    assert rec.status == "succeeded"
    got = cached(trace.path, REGISTRY.order)
    assert got is not None
    assert _check_result(Result(got.outputs, got.source), got.outputs) > 0


def test_a_stage_not_run_or_an_output_not_held_is_named() -> None:
    result = Result({"sync": {"host.parquet": pl.DataFrame()}}, "computed in memory")
    with pytest.raises(OutputMissing, match="the comm stage was not run \\(stages run: sync\\)"):
        result.comm.stragglers  # noqa: B018
    with pytest.raises(OutputMissing, match="the sync stage's result holds no totals.parquet"):
        result.sync.totals  # noqa: B018
    assert result.ran("sync") and not result.ran("comm")
    assert result.sync.has("host.parquet") and not result.sync.has("device.parquet")


SNIPPET = """\
from profui.analysis.pipeline.result import Result


def read(result: Result) -> None:
    result.sync.host  # right
    result.sync.hots  # a misspelt output
    result.synk.host  # a misspelt stage
    row = result.sync.host_rows()[0]
    row["total_ns"] + 1  # right
    row["totl_ns"]  # a misspelt column
    row["name"] + 1  # a str column used as a number
    result.ingest.trace["overview"]["gpus"] + 1  # right
    result.ingest.trace["overview"]["gpu"]  # a misspelt key
    result.steps.steps["has_markers"] + ""  # a bool used as a str
"""


def test_a_wrong_access_fails_mypy(tmp_path: Path) -> None:
    root = package_root(tmp_path / "root")
    (root / "snippet.py").write_text(SNIPPET)
    mypy = Path(sys.executable).with_name("mypy")
    proc = subprocess.run(
        [
            str(mypy),
            *FLAGS,
            "--strict",
            "--follow-imports=silent",
            "--cache-dir",
            str(tmp_path / "c"),
            "snippet.py",
        ],
        cwd=root,
        capture_output=True,
        text=True,
        timeout=600,
    )
    out = proc.stdout + proc.stderr
    wrong = {i for i, line in enumerate(SNIPPET.splitlines(), 1) if "# right" not in line and "  # " in line}
    flagged = {
        int(line.split(":")[1])
        for line in out.splitlines()
        if line.startswith("snippet.py:") and ": error:" in line
    }
    assert flagged == wrong, out


def test_results_compare_by_identity() -> None:
    """A field-wise ``==`` would ask a table for one truth value, which Polars refuses: two
    results of equal tables (two runs of one trace) compared in a notebook raised."""
    a = Result({"kernels": {"stats.parquet": pl.DataFrame({"count": [1]})}}, "computed in memory")
    b = Result({"kernels": {"stats.parquet": pl.DataFrame({"count": [1]})}}, "computed in memory")
    assert a == a and a != b and len({a, b}) == 2


def test_a_missing_stage_is_no_missing_key() -> None:
    """A reader that catches a missing key of its own lets a stage that was not run through."""
    result = Result({}, "computed in memory")
    with pytest.raises(OutputMissing, match="the sync stage was not run"):
        try:
            _ = result.sync.host
        except KeyError:
            pass
