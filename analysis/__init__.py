"""profui.analysis: answers computed from the trace format, as Polars (Lazy)Frames."""
