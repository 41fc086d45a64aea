"""profui.analysis: answers computed from the trace format, as Polars (Lazy)Frames.

``t = open_trace("trace/")`` (a profui trace folder; Kineto JSON is imported into one first with
``profui import``), then ``t.events()``, ``t.kernels()``, ``t.steps()``, ``t.gpu_busy()`` ...
"""

from .trace import Trace, open_trace

__all__ = ["Trace", "open_trace"]
