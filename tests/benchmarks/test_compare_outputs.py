"""benchmarks/compare_outputs.py: a dump of the smallest shared trace is identical to itself, and
the comparison names each kind of difference (schema, rows, a value, NaN, null, the sign of a
zero, JSON, a file missing, a Parquet file's bytes) with exit 1; a dump of some stages keeps the
others' outputs."""

from __future__ import annotations

import json

import polars as pl
import pytest

from benchscripts import load
from realdata import shared_trace

TINY = "hta-call_stack-backward_thread.json"


co = load("compare_outputs")


def test_table_diff_is_exact_with_nan_equal_to_nan() -> None:
    a = pl.DataFrame({"x": [1.0, float("nan"), None], "s": ["a", "b", "c"]})
    assert co._table_diff(a, a.clone()) is None
    changed = a.with_columns(pl.Series("s", ["a", "b", "d"]))
    assert co._table_diff(a, changed) == "row 2 column s: A 'c', B 'd' (1 column(s) differ)"
    assert "row 2 column x" in co._table_diff(a, a.with_columns(pl.Series("x", [1.0, float("nan"), 0.0])))
    assert co._table_diff(a, a.head(2)) == "row count A 3, B 2"
    assert co._table_diff(a, a.cast({"x": pl.Float32})).startswith("schema differs: x: A Float64, B Float32")


def test_floats_compare_by_their_bits() -> None:
    a = pl.DataFrame(
        {
            "x": [0.0, float("nan"), None],
            "f": pl.Series([0.0, 1.0, 2.0], dtype=pl.Float32),
            "l": [[0.0], [1.0], None],
            "st": [{"f": 0.0}, {"f": 1.0}, {"f": None}],
        }
    )
    assert co._table_diff(a, a.clone()) is None
    for col in a.columns:
        flipped = a.with_columns(
            (pl.col(col) * -1)
            if col != "st"
            else pl.struct(f=pl.col("st").struct.field("f") * -1).alias("st")
        )
        assert co._table_diff(a, flipped).startswith(f"row 0 column {col}: "), col  # 0.0 vs -0.0
    assert not co._same(0.0, -0.0) and co._same(float("nan"), float("nan"))
    assert co._json_diff({"a": [0.0]}, {"a": [-0.0]}) == "at /a[0]: A 0.0, B -0.0"


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
    (layout,) = (trace / "import" / "files").rglob("events-*.parquet.json")
    stored = json.loads(layout.read_text())
    assert (
        stored["row_groups"] == len(stored["rows_per_row_group"]) == len(stored["columns_per_row_group"]) >= 1
    )
    assert set(stored["columns_per_row_group"][0]["ts"]) == {"compression", "encodings", "statistics"}
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
    layout.write_text(json.dumps({**stored, "sha256": "0" * 64}))
    assert co.main(["compare", str(a), str(b)]) == 1
    lines = capsys.readouterr().out.splitlines()
    name = trace.name
    assert any(line.startswith(f"{name}/import/files/") and "at /sha256: A '0000" in line for line in lines)
    assert f"{name}/default/summary/summary.json: at /trace/events: A 8, B 7" in lines
    assert any(line.startswith(f"{name}/import/events.parquet: row 0 column dur: ") for line in lines)
    assert f"{name}/default/sync/host.parquet: only in B" in lines
    assert lines[-1].endswith("3 differ, 0 only in A, 1 only in B")
    capsys.readouterr()
    assert co.main(["compare", str(a), str(b), "--stage", "kernels"]) == 0

    # a dump of one stage rewrites that stage only: the other changes stay
    assert co.main(["dump", str(a), "--trace", "call_stack", "--stage", "import"]) == 0
    capsys.readouterr()
    assert co.main(["compare", str(a), str(b)]) == 1
    assert capsys.readouterr().out.splitlines()[-1].endswith("1 differ, 0 only in A, 1 only in B")
