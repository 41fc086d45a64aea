"""What a run by ranks and the whole-trace run of the same trace may differ in, and why (the
tests of runs by ranks compare through it).

:data:`ULP`: float columns that are a quotient of the same integers in both runs, but on a rank
alone the denominator is one value (one GPU's span, one rank's window) and Polars divides by it
as a scalar, through its reciprocal (``pl.col("a") / pl.lit(b)`` differs from ``a / b`` in the
last bit): at most 1 ulp apart. Everything else is equal to the bit, rows in the same order.
"""

from __future__ import annotations

import math

#: (stage, table) → its float columns a run by ranks may give 1 ulp apart.
ULP: dict[tuple[str, str], set[str]] = {("activity", "shares"): {"share"}, ("sync", "host"): {"share"}}


def ulps(a: float, b: float) -> float:
    """How many units in the last place ``a`` and ``b`` are apart (0 when equal)."""
    return 0 if a == b else abs(a - b) / math.ulp(max(abs(a), abs(b)))
