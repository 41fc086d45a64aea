"""profui.analysis: answers computed from the trace format, as Polars (Lazy)Frames.

``t = open_trace("trace/")`` (a profui trace folder; Kineto JSON is imported into one first with
``profui import``), then ``t.events()``, ``t.kernels()``, ``t.steps()``, ``t.gpu_busy()`` ...
"""

# no `from __future__ import annotations` here: it would bind `annotations` in this package's
# namespace and shadow the profui.analysis.annotations module
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .trace import Trace, open_trace

__all__ = ["Trace", "open_trace"]


def __getattr__(name: str) -> Any:
    # Trace (and Polars with it) is imported on first use: a surface that only lays out answers
    # and imports this package's light modules (formatting, catalog) pays no Polars import
    if name in __all__:
        from . import trace

        return getattr(trace, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
