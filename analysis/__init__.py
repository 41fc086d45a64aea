"""profui.analysis: answers computed from the trace format, as Polars (Lazy)Frames.

``t = open_trace("trace/")`` (a profui trace folder, or Kineto JSON which is imported into a
cache first), then ``t.events()``, ``t.kernels()``, ``t.steps()``, ``t.gpu_busy()`` ...
"""

from .sources import resolve_trace
from .trace import Trace, open_trace

__all__ = ["Trace", "open_trace", "resolve_trace"]
