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

from profui.capture.format.lazy import lazy_exports

# The annotation API loads on first use: analysis and the TUI import profui.capture.format,
# which imports this package, and should not pay ~10 ms for the recorder they never use.
__getattr__, __dir__, __all__ = lazy_exports(
    __name__,
    dict.fromkeys(
        ["annotate", "annotation_begin", "annotation_end", "start_profiling", "step", "stop_profiling"],
        "annotations",
    ),
)
