"""profui.capture: getting data into the trace format (profcap, Kineto import, annotations).

Never imports polars, textual or analysis: it runs inside or beside a training job. Importing
this package is cheap (standard library only); the trace format and the daemon load on demand.

The annotation API, for training scripts (works with or without torch)::

    from profui.capture import annotate, step

    @annotate("load_batch")
    def load(): ...

    with annotate("forward"):
        loss = model(x)
"""

from .annotations import annotate, annotation_begin, annotation_end, start_profiling, step, stop_profiling

__all__ = ["annotate", "annotation_begin", "annotation_end", "start_profiling", "step", "stop_profiling"]
