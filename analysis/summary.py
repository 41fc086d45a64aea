"""Everything at once: :func:`summarize` runs the stage graph in memory for a trace's
:class:`Summary` (what ``profui summary`` prints).

The document itself (:class:`Summary`, its :data:`SECTIONS`, its JSON keys, the trace overview)
is :mod:`profui.analysis.summary_document`'s, which the stage bodies import; it is named here too
for the surfaces that read summaries.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from .result_tables import OutputMissing
from .summary_document import (
    JSON_KEYS,
    PARAM_KEYS,
    SECTIONS,
    VERSION,
    Summary,
    source_notes,
    trace_overview,
)

if TYPE_CHECKING:
    from .pipeline.result import Result
    from .trace import Trace

__all__ = [
    "JSON_KEYS",
    "PARAM_KEYS",
    "SECTIONS",
    "VERSION",
    "Summary",
    "source_notes",
    "stored_summary",
    "summarize",
    "trace_overview",
]


def summarize(trace: Trace, params: Mapping[str, Any] | None = None, **kwargs: Any) -> Summary:
    """Every answer for ``trace`` (an opened :class:`profui.analysis.trace.Trace`), as one Summary.

    The analysis pipeline's stage graph runs in memory (nothing is written): the same stages,
    parameters and schemas as ``profui analyze``. ``params`` and ``kwargs`` are pipeline
    parameters by name (``top_n=30``, ``hta_compat=True``, ``bucket_ms=5`` …; ``profui analyze
    --plan`` lists them).
    """
    from .notebook import stage_run

    return stage_run(trace, "summary", {**(params or {}), **kwargs}).summary.summary


def stored_summary(result: Result) -> Summary | None:
    """The summary stage's Summary in ``result`` (computed in memory or read from disk, it is
    one), or None when it holds none."""
    try:
        value = result.summary.summary
    except OutputMissing:
        return None
    return value if isinstance(value, Summary) else None
