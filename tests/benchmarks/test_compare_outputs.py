"""benchmarks/compare_outputs.py: a dump of the smallest shared trace is identical to itself, and
the comparison names each kind of difference (schema, rows, a value, NaN, null, JSON, a file
missing) with exit 1."""

from __future__ import annotations

import importlib.util
import json
import sys

import polars as pl
import pytest

from realdata import REPO, shared_trace

TINY = "hta-call_stack-backward_thread.json"


def _module():
    spec = importlib.util.spec_from_file_location(
        "compare_outputs", REPO / "benchmarks" / "compare_outputs.py"
    )
    mod = importlib.util.module_from_spec(spec)
    sys.modules.setdefault("compare_outputs", mod)
    spec.loader.exec_module(mod)
    return sys.modules["compare_outputs"]


co = _module()


def test_table_diff_is_exact_with_nan_equal_to_nan() -> None:
    a = pl.DataFrame({"x": [1.0, float("nan"), None], "s": ["a", "b", "c"]})
    assert co._table_diff(a, a.clone()) is None
    changed = a.with_columns(pl.Series("s", ["a", "b", "d"]))
    assert co._table_diff(a, changed) == "row 2 column s: A 'c', B 'd' (1 column(s) differ)"
    assert "row 2 column x" in co._table_diff(a, a.with_columns(pl.Series("x", [1.0, float("nan"), 0.0])))
    assert co._table_diff(a, a.head(2)) == "row count A 3, B 2"
    assert co._table_diff(a, a.cast({"x": pl.Float32})).startswith("schema differs: x: A Float64, B Float32")


def test_json_diff_names_the_place() -> None:
    assert co._json_diff({"a": [1, float("nan")]}, {"a": [1, float("nan")]}) is None
    assert co._json_diff({"a": [1, 2]}, {"a": [1, 2.0]}) == "at /a[1]: A 2, B 2.0"
    assert co._json_diff({"a": 1}, {"b": 1}).startswith("keys at /")


def test_dump_of_a_trace_compares_identical_and_differences_are_named(
    tmp_path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("PROFUI_TRACES", str(shared_trace(TINY).parent))
    for var in ("PROFUI_CACHE", "XDG_CACHE_HOME", "COLUMNS"):  # the dump sets them; restored after
        monkeypatch.setenv(var, str(tmp_path / "unused"))
    a, b = tmp_path / "a", tmp_path / "b"
    for out in (a, b):
        assert co.main(["dump", str(out), "--trace", "call_stack"]) == 0
    trace = a / TINY.removesuffix(".json")
    assert (trace / "default" / "kernels" / "stats.parquet").is_file()
    assert (trace / "hta_compat" / "summary" / "summary.json").is_file()
    assert (trace / "import" / "events.parquet").is_file() and (trace / "timeline" / "meta.json").is_file()
    assert (trace / "analyze" / "kernels" / "stats.parquet").is_file()
    assert json.loads((trace / "cli" / "info_json.json").read_text())["exit"] == 0
    capsys.readouterr()
    assert co.main(["compare", str(a), str(b)]) == 0
    last = capsys.readouterr().out.splitlines()[-1]
    assert last.endswith("tables identical, 0 differ, 0 only in A, 0 only in B")

    events = trace / "import" / "events.parquet"
    pl.read_parquet(events).with_columns(pl.col("dur") + 1).write_parquet(events)
    summary = trace / "default" / "summary" / "summary.json"
    doc = json.loads(summary.read_text())
    doc["trace"]["events"] += 1
    summary.write_text(json.dumps(doc))
    (trace / "default" / "sync" / "host.parquet").unlink()
    assert co.main(["compare", str(a), str(b)]) == 1
    lines = capsys.readouterr().out.splitlines()
    name = trace.name
    assert f"{name}/default/summary/summary.json: at /trace/events: A 8, B 7" in lines
    assert any(line.startswith(f"{name}/import/events.parquet: row 0 column dur: ") for line in lines)
    assert f"{name}/default/sync/host.parquet: only in B" in lines
    assert lines[-1].endswith("2 differ, 0 only in A, 1 only in B")
    capsys.readouterr()
    assert co.main(["compare", str(a), str(b), "--stage", "kernels"]) == 0
