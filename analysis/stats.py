"""Distribution statistics shared by several analyses."""

from __future__ import annotations

import polars as pl


def describe(v: pl.Expr) -> list[pl.Expr]:
    """mean, std, min, p25, p50, p75, max of ``v`` — pandas ``describe()`` without the count,
    which is what HTA reports (linear quantiles, sample std)."""
    return [
        v.mean().alias("mean"),
        v.std().alias("std"),
        v.min().alias("min"),
        v.quantile(0.25, "linear").alias("p25"),
        v.quantile(0.5, "linear").alias("p50"),
        v.quantile(0.75, "linear").alias("p75"),
        v.max().alias("max"),
    ]
