"""Distribution statistics shared by several analyses."""

from __future__ import annotations

import polars as pl


def int_std(v: pl.Expr) -> pl.Expr:
    """Sample standard deviation of an integer column, the same to the last bit on every run.

    Polars' float ``std`` sums in parallel chunks, so its last digits vary run to run (and with
    them a stage output's hash and everything cached downstream). Here the sums of ``x`` and
    ``x²`` are exact Int128, so ``n·Σx² − (Σx)²`` is exact and only the final division rounds.
    Null for fewer than two values.
    """
    x = v.cast(pl.Int128)
    n = x.count().cast(pl.Int128)
    num = n * (x * x).sum() - x.sum() * x.sum()
    return pl.when(n > 1).then((num.cast(pl.Float64) / (n * (n - 1)).cast(pl.Float64)).sqrt())


def stable_mean(v: pl.Expr) -> pl.Expr:
    """Mean of a float column in a group, the same to the last bit on every run.

    Float sums depend on the order parallel partial sums meet; as 18-digit decimals (integers
    underneath) the sum is exact and order-free, so only the final division rounds. For values
    whose magnitude fits 20 integer digits (shares, utilization fractions, ns).
    """
    return (v.cast(pl.Decimal(38, 18)).sum().cast(pl.Float64) / v.count()).cast(pl.Float64)


def describe(v: pl.Expr, integer: bool = False, suffix: str = "") -> list[pl.Expr]:
    """mean, std, min, p25, p50, p75, max of ``v`` — pandas ``describe()`` without the count,
    which is what HTA reports (linear quantiles, sample std). ``integer``: ``v`` holds integers,
    whose std is computed exactly (:func:`int_std`). ``suffix`` ends every name (``_ns`` for
    durations)."""
    return [
        v.mean().alias(f"mean{suffix}"),
        (int_std(v) if integer else v.std()).alias(f"std{suffix}"),
        v.min().alias(f"min{suffix}"),
        v.quantile(0.25, "linear").alias(f"p25{suffix}"),
        v.quantile(0.5, "linear").alias(f"p50{suffix}"),
        v.quantile(0.75, "linear").alias(f"p75{suffix}"),
        v.max().alias(f"max{suffix}"),
    ]
