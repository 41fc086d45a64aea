"""How numbers read on screen: durations, sizes, shares, dates. Formatting only, no analysis."""

from __future__ import annotations

import math
from datetime import datetime


def fmt_ns(ns: float | int | None) -> str:
    """A duration in ns as a short human string (``812 ns``, ``3.41 µs``, ``12.3 ms``, ``4.20 s``)."""
    if ns is None or (isinstance(ns, float) and math.isnan(ns)):
        return "-"
    v = float(ns)
    a = abs(v)
    if a < 1e3:
        return f"{v:.0f} ns"
    if a < 1e6:
        return f"{v / 1e3:.3g} µs" if a < 1e5 else f"{v / 1e3:.0f} µs"
    if a < 1e9:
        return f"{v / 1e6:.3g} ms" if a < 1e8 else f"{v / 1e6:.0f} ms"
    if a < 60e9:
        return f"{v / 1e9:.3g} s"
    minutes, seconds = divmod(v / 1e9, 60)
    if minutes < 60:
        return f"{minutes:.0f}m{seconds:02.0f}s"
    hours, minutes = divmod(minutes, 60)
    return f"{hours:.0f}h{minutes:02.0f}m"


def fmt_bytes(n: float | int | None) -> str:
    """A size in bytes (``1.2 MB``); decimal units like ``du --si``."""
    if n is None:
        return "-"
    v = float(n)
    for unit in ("B", "kB", "MB", "GB", "TB"):
        if abs(v) < 1000 or unit == "TB":
            return f"{v:.0f} {unit}" if unit == "B" else f"{v:.3g} {unit}"
        v /= 1000
    return f"{v:.3g} TB"  # pragma: no cover


def fmt_pct(share: float | None, digits: int = 1) -> str:
    """A share in [0, 1] as a percentage (``46.2%``)."""
    if share is None or (isinstance(share, float) and math.isnan(share)):
        return "-"
    return f"{100.0 * share:.{digits}f}%"


def fmt_count(n: int | float | None) -> str:
    """A count with thousands separators."""
    if n is None:
        return "-"
    return f"{int(n):,}"


def fmt_epoch(ns: int | None) -> str:
    """An epoch-ns instant as local ``YYYY-MM-DD HH:MM``."""
    if not ns:
        return "-"
    return datetime.fromtimestamp(ns / 1e9).strftime("%Y-%m-%d %H:%M")


def fmt_short_count(n: int) -> str:
    """A count in at most ~4 characters (``151k``, ``2.3M``)."""
    if n < 1000:
        return str(n)
    if n < 1_000_000:
        return f"{n / 1000:.3g}k" if n < 10_000 else f"{n // 1000}k"
    return f"{n / 1e6:.3g}M"
