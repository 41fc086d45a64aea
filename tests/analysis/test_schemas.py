"""``schemas.conform`` holds a table to its declared nulls: a null (a float's NaN or infinity, a
list's null item) only in a column declared nullable. Hand-made frames of declared tables."""

from __future__ import annotations

import math

import polars as pl
import pytest

from profui.analysis.schemas import STRICT_ENV, TABLES, SchemaError, SchemaWarning, conform, table


def _frame(stage: str, file: str, **values: list) -> pl.DataFrame:
    """One row of ``stage/file`` per value list entry: ``values`` by column, the rest 1 / "x"."""
    tbl = table(stage, file)
    n = len(next(iter(values.values())))
    cols = {}
    for c in tbl.columns:
        if c.optional:
            continue
        if c.name in values:
            cols[c.name] = pl.Series(c.name, values[c.name], dtype=c.dtype)
        elif isinstance(c.dtype, pl.List):
            cols[c.name] = pl.Series(c.name, [[1] if c.dtype.inner.is_numeric() else ["x"]] * n, c.dtype)
        else:
            fill = "x" if c.dtype == pl.String else True if c.dtype == pl.Boolean else 1
            cols[c.name] = pl.Series(c.name, [fill] * n).cast(c.dtype)
    return pl.DataFrame(cols)


def test_a_null_in_a_column_not_declared_nullable_is_refused() -> None:
    frame = _frame("steps", "stats", count=[3, 4], mean_ns=[1.0, None])
    with pytest.raises(SchemaError) as err:
        conform("steps", "stats.parquet", frame)
    assert str(err.value) == (
        "steps/stats.parquet: column mean_ns holds 1 null, NaN or infinite value(s) "
        "but is not declared nullable"
    )


def test_outside_the_tests_an_undeclared_null_warns_and_keeps_the_table(monkeypatch) -> None:
    """A user's trace unlike every shared one must still be analysed: the null is a profui bug,
    said on stderr as a warning, and the table is kept as the stage wrote it."""
    monkeypatch.delenv(STRICT_ENV, raising=False)
    frame = _frame("steps", "stats", count=[3, 4], mean_ns=[1.0, None])
    with pytest.warns(SchemaWarning, match="steps/stats.parquet: column mean_ns holds 1 null"):
        out = conform("steps", "stats.parquet", frame)
    assert out["mean_ns"].to_list() == [1.0, None]


def test_a_null_in_a_nullable_column_passes() -> None:
    """``steps/stats.std_ns`` is null for a rank with a single step."""
    frame = _frame("steps", "stats", count=[1, 2], std_ns=[None, 5.0])
    out = conform("steps", "stats.parquet", frame)
    assert out["std_ns"].to_list() == [None, 5.0]


@pytest.mark.parametrize("bad", [math.nan, math.inf, -math.inf])
def test_nan_or_infinity_in_a_float_column_not_nullable_is_refused(bad: float) -> None:
    """JSON prints NaN and infinities as null: a column that may not be null may not hold them."""
    frame = _frame("steps", "stats", count=[2, 2], mean_ns=[1.0, bad])
    with pytest.raises(SchemaError, match="column mean_ns holds 1 null, NaN or infinite"):
        conform("steps", "stats.parquet", frame)
    assert (
        conform("steps", "stats.parquet", _frame("steps", "stats", count=[2], std_ns=[bad]))["std_ns"].len()
        == 1
    )


def test_a_null_item_in_a_list_column_is_refused() -> None:
    frame = _frame("findings", "findings", ranks=[[0, 1], [0, None]])
    with pytest.raises(SchemaError, match="column ranks holds 1 null"):
        conform("findings", "findings.parquet", frame)
    assert (
        conform("findings", "findings.parquet", _frame("findings", "findings", ranks=[[0, 1], []])).height
        == 2
    )


def test_a_column_cast_to_its_dtype_is_still_checked() -> None:
    """A frame that needs a cast (Int64 count into UInt32) goes through the same null check."""
    frame = _frame("steps", "stats", count=[3, 4], p50_ns=[2.0, None]).with_columns(
        pl.col("count").cast(pl.Int64)
    )
    with pytest.raises(SchemaError, match="column p50_ns"):
        conform("steps", "stats.parquet", frame)


def test_nullable_is_declared_not_defaulted() -> None:
    """Hand-checked: of the critical path's events only the lane's other side is null (a host
    stretch has no device or stream, a device one no thread); the step tables' std for one step."""
    assert table("critical_path", "events").nullable == ("tid", "device", "stream")
    assert table("steps", "stats").nullable == ("std_ns",)
    assert table("findings", "evidence").nullable == ()
    assert table("kernels", "stats").nullable == ()
    assert table("kernels", "top_by_time").nullable == ("node", "rank", "std_ns", "p50_ns", "p95_ns")
    assert not any(isinstance(c.dtype, pl.List) and c.nullable for t in TABLES.values() for c in t.columns)
