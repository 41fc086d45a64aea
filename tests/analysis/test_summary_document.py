"""The summary is a Summary whether computed now or read from disk.

On every shared Kineto trace, the bundled samples and one Nsight export: the Summary the
notebook computes in memory equals, table for table (dtypes and values exactly), the one ``profui
analyze`` wrote to ``summary.json`` and the pipeline read back; and every value of the read-back
tables is the one the file holds, parsed by plain ``json``. By hand: what JSON cannot hold (NaN,
infinities: null), an empty table of either variant, and the refusals of a document that is not
a summary of this version.
"""

from __future__ import annotations

import json
import math
import shutil
from pathlib import Path

import polars as pl
import pytest
from polars.testing import assert_frame_equal

from profui.analysis import open_trace, schemas
from profui.analysis.pipeline.engine import analyze
from profui.analysis.pipeline.outputs import latest_outputs, load_output
from profui.analysis.pipeline.result import Result
from profui.analysis.summary import VERSION, Summary, stored_summary
from profui.analysis.summary_document import _clean, json_rows
from profui.capture.format import TraceFormatError
from profui.capture.ingest import import_trace

from realdata import REPO, nsys_export, require_shared_traces, traces_dir

#: Shared files that are not profiler traces (the importer refuses them).
NOT_TRACES = (
    "hta-execution_trace-benchmark_simple_add_et.json.gz",
    "hta-memory_analysis-memory_timeline.raw.gz",
)
#: Kineto traces above this size are left to the other real-data tests (run time).
MAX_BYTES = 5_000_000


def _sources() -> list[str]:
    d = traces_dir()
    shared = [
        p.name
        for p in sorted(d.glob("hta-*.json*")) if d.is_dir()
        if p.name not in NOT_TRACES and p.stat().st_size < MAX_BYTES
    ]  # fmt: skip
    return [*(shared or ["(shared traces missing)"]), "samples/mlp_cpu", "samples/jax_cpu",
            "samples/synthetic_gpu", "nsys/h100_2gpu_1s"]  # fmt: skip


def _imported(name: str, root: Path) -> Path:
    out = root / name.replace("/", "-").split(".json")[0]
    if name == "samples/jax_cpu":  # a JAX profiler log: imported, as profui open imports it
        import_trace([REPO / name], out)
    elif name.startswith("samples/"):
        shutil.copytree(REPO / name, out, ignore=shutil.ignore_patterns(".profui"))
    elif name.startswith("nsys/"):
        import_trace([nsys_export(name.removeprefix("nsys/"))], out)
    else:
        import_trace([require_shared_traces() / name], out)
    return out


def _as_json_keeps(frame: pl.DataFrame) -> pl.DataFrame:
    """``frame`` with what JSON cannot hold as it comes back: NaN and infinities null."""
    floats = [c for c, t in frame.schema.items() if t.is_float()]
    return frame.with_columns(pl.when(pl.col(c).is_finite()).then(pl.col(c)).alias(c) for c in floats)


def _assert_same(want: Summary, got: Summary) -> int:
    """``got`` equals ``want`` table for table (NaN and infinities null); the number of tables."""
    assert got.trace == want.trace and got.params == want.params
    assert got.takeaways == want.takeaways and got.notes == want.notes
    assert {s: set(t) for s, t in got.sections.items()} == {s: set(t) for s, t in want.sections.items()}
    for section, tables in want.sections.items():
        for name, frame in tables.items():
            assert_frame_equal(
                got.table(section, name), _as_json_keeps(frame), check_dtypes=True, check_exact=True
            )
    return sum(len(t) for t in want.sections.values())


@pytest.mark.parametrize("name", _sources())
def test_summary_read_from_disk_is_the_one_computed(name: str, tmp_path: Path) -> None:
    trace = _imported(name, tmp_path)
    computed = open_trace(trace).summary()
    assert analyze(trace).status == "succeeded"
    read = load_output(trace, "summary", "summary.json")
    assert isinstance(read, Summary)
    assert _assert_same(computed, read) == sum(len(t) for t in read.sections.values()) > 0
    # the file's own values, by plain json: every row of every table, every key
    written = json.loads((latest_outputs(trace)["summary"] / "summary.json").read_bytes())
    assert json.loads(json.dumps(read.to_json_dict())) == written
    # and the surfaces' one way in finds it among the stage outputs
    assert stored_summary(Result({"summary": load_output(trace, "summary")}, "cache")) is not None
    # every table's JSON rows, cleaned by Polars, are those of the rule applied value by value
    for tables in computed.sections.values():
        for frame in tables.values():
            assert json_rows(frame) == _clean(frame.to_dicts())


@pytest.mark.parametrize("name", ["samples/mlp_cpu", "hta-trace_filter-sampled_rank-0.json.gz"])
def test_hta_compat_summary_round_trips(name: str, tmp_path: Path) -> None:
    """The other variant: per-rank tables (``device`` absent, ``node``/``rank`` in kernel stats)."""
    computed = open_trace(_imported(name, tmp_path)).summary(hta_compat=True)
    assert computed.params["hta_compat"] is True
    _assert_same(computed, Summary.from_json_dict(json.loads(json.dumps(computed.to_json_dict()))))


def _overlap(share: list[float]) -> pl.DataFrame:
    n = len(share)
    return schemas.conform(
        "comm",
        "overlap.parquet",
        pl.DataFrame(
            {
                "node": ["n0"] * n,
                "rank": list(range(n)),
                "comm_ns": [10] * n,
                "compute_ns": [20] * n,
                "overlap_ns": [0] * n,
                "overlap_share": share,
                "exposed_comm_ns": [10] * n,
                "source": ["kernel"] * n,
            }
        ),
    )


def test_hand_checked_nan_infinity_and_empty_tables() -> None:
    params = {"top_n": 5, "bucket_ns": None, "hta_compat": False}
    summary = Summary(
        {"path": "/t", "events": 3}, params, {"comm": {"overlap": _overlap([0.25, math.nan, math.inf])}}
    )
    doc = json.loads(json.dumps(summary.to_json_dict(), allow_nan=False))
    back = Summary.from_json_dict(doc)
    got = back.table("comm", "overlap")
    assert got.schema == schemas.table("comm", "overlap").empty(False).schema  # source kept: not hta_compat
    assert got["overlap_share"].to_list() == [0.25, None, None]  # NaN and inf: null, as written
    assert got["rank"].dtype == pl.Int64 and got["rank"].to_list() == [0, 1, 2]
    # both float widths, both infinities, nulls, and a column JSON holds as a list (findings')
    odd = pl.DataFrame(
        {
            "f64": [1.5, -math.inf, None, math.nan],
            "f32": pl.Series([math.nan, 2.0, math.inf, None], dtype=pl.Float32),
            "ids": [[1], [], None, [2, 3]],
            "s": ["a", None, "b", "c"],
        }
    )
    want = [
        {"f64": 1.5, "f32": None, "ids": [1], "s": "a"},
        {"f64": None, "f32": 2.0, "ids": [], "s": None},
        {"f64": None, "f32": None, "ids": None, "s": "b"},
        {"f64": None, "f32": None, "ids": [2, 3], "s": "c"},
    ]
    assert json_rows(odd) == want
    assert json_rows(odd.drop("ids")) == [{k: v for k, v in r.items() if k != "ids"} for r in want]
    # a table without rows: its declared columns of the variant the params name
    empty = {"comm": {"overlap": _overlap([]).drop("source")}}
    for hta_compat, frame in ((False, _overlap([])), (True, empty["comm"]["overlap"])):
        s = Summary({}, {**params, "hta_compat": hta_compat}, {"comm": {"overlap": frame}})
        assert_frame_equal(Summary.from_json_dict(s.to_json_dict()).table("comm", "overlap"), frame)


@pytest.mark.parametrize(
    ("edit", "problem"),
    [
        (
            lambda d: d.update(version=VERSION + 1),
            f"summary version {VERSION + 1}; this profui reads version",
        ),
        (lambda d: d.pop("takeaways"), "not a summary document: no takeaways"),
        (lambda d: d["params"].pop("hta_compat"), "summary params: hta_compat true or false expected"),
        (lambda d: d["sections"]["comm"].update(bogus=[]), "summary section comm: no schema declared"),
        (lambda d: d["sections"]["comm"]["overlap"][0].update(rank="x"), "summary table comm/overlap:"),
    ],
    ids=["version", "missing-key", "no-variant", "unknown-table", "wrong-type"],
)
def test_not_a_summary_of_this_version_is_refused_naming_the_file(edit, problem: str, tmp_path: Path) -> None:
    summary = Summary(
        {}, {"top_n": 5, "bucket_ns": None, "hta_compat": False}, {"comm": {"overlap": _overlap([0.5])}}
    )
    doc = summary.to_json_dict()
    edit(doc)
    path = tmp_path / "summary.json"
    with pytest.raises(TraceFormatError) as refused:
        Summary.from_json_dict(doc, path)
    line = str(refused.value)
    assert line.startswith(f"{path}: {problem}") and "\n" not in line
