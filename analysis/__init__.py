"""profui.analysis: answers computed from the trace format, as Polars (Lazy)Frames.

``t = open_trace("trace/")`` (a profui trace folder; Kineto JSON is imported into one first with
``profui import``), then ``t.events()``, ``t.kernels()``, ``t.steps()``, ``t.gpu_busy()`` ...
(:mod:`.notebook`'s facade over the data of :class:`Trace`, :mod:`.trace`).
"""

# no `from __future__ import annotations` here: it would bind `annotations` in this package's
# namespace and shadow the profui.analysis.annotations module
from typing import TYPE_CHECKING

from profui.capture.format.lazy import lazy_exports

if TYPE_CHECKING:
    from .notebook import TraceAnalyses as TraceAnalyses
    from .notebook import open_trace as open_trace
    from .trace import Trace as Trace

# Trace (and Polars with it) is imported on first use: a surface that only lays out answers
# and imports this package's light modules (formatting, catalog) pays no Polars import
__getattr__, __dir__, __all__ = lazy_exports(
    __name__, {"Trace": "trace", "TraceAnalyses": "notebook", "open_trace": "notebook"}
)
