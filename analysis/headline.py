"""The headline: one line saying the top finding, or truthfully why there is none.

``profui summary`` prints it first, the dashboard shows it above the charts and ``profui
explain`` leads with it: one function, so the three say the same words. It reads the
``findings`` stage's ``findings.parquet`` (the top finding is position 1) and the ``steps``
stage's ``windows.parquet`` (whether the trace has step markers at all), nothing else.
"""

from __future__ import annotations

import polars as pl

from .findings_base import MIN_SHARE, has_step_markers, unit_of
from .formatting import fmt_ns, fmt_pct

__all__ = ["finding_line", "has_step_markers", "headline"]


def finding_line(row: dict, unit: str = "step") -> str:
    """One finding (a ``findings.parquet`` row) in words: its title, which for a time finding
    ends with what it would recover per step (``X per step (Y%)``, added where the title does not
    say it); a risk with no time to recover says its severity instead. ``unit``: what the time is
    per (:func:`~.findings_base.unit_of`: ``trace`` without step markers)."""
    title = str(row["title"]).rstrip(".")
    ns = row["recoverable_ns_per_step"] or 0
    if ns <= 0:
        return f"{title} ({row['severity']} risk, no time to recover per {unit})"
    per_step = f"{fmt_ns(ns)} per {unit}"
    if per_step in title:
        return title
    share = row["recoverable_share"]
    return f"{title}: {per_step}" + (f" ({fmt_pct(share, 0)})" if share is not None else "")


def headline(
    findings: pl.DataFrame, windows: pl.DataFrame | None = None, cp_steps: pl.DataFrame | None = None
) -> str:
    """The line a summary starts with: ``Top finding: <the top finding>``; without one, why:
    no step was analysed (without step markers: none, so no critical path), or nothing on the
    path worth :data:`~profui.analysis.findings_base.MIN_SHARE` of a step and no risk (without
    step markers the path taken is the whole trace's, one window, and the times are per trace). ``windows`` is the steps
    stage's ``windows.parquet`` and ``cp_steps`` the critical path's ``steps.parquet``; a reason
    that needs a table not given is not said."""
    if findings.height:
        top = findings.sort("position").row(0, named=True)
        return f"Top finding: {finding_line(top, unit_of(windows))}"
    markers = windows is None or has_step_markers(windows)
    analysed = None if cp_steps is None else bool(cp_steps.height)
    if not markers and not analysed:
        return "No finding: no step markers, so no critical path to rank changes on."
    if analysed is False:
        return "No finding: no step was analysed, so no critical path to rank changes on."
    if not markers:
        return (
            "No finding: nothing on the critical path of the whole trace (no step markers: one window) "
            f"would save ≥ {fmt_pct(MIN_SHARE, 0)} of its time, and no risk was found."
        )
    return (
        f"No finding: nothing on the critical path would save ≥ {fmt_pct(MIN_SHARE, 0)} of a step, "
        "and no risk was found."
    )
