"""Opening a trace's timeline index: the timeline stage's outputs, from wherever they are.

The index is a stage of the graph (``timeline``, on demand; its body writes
:func:`.lod.write_index` from the steps and correlate stages' outputs), asked for with the
default parameters: the timeline draws the exact events, so ``hta_compat`` (HTA's rounded times
and launch matching, which the Launches view shows) never changes what it shows. Its files come
from where every surface's answers come from (:func:`.pipeline.answers.answers`): a recorded
run's, else a recorded run made now (kept for the next open), else a run in memory for a running
capture or a folder the pipeline cannot write (its files in a scratch folder of this process).
"""

from __future__ import annotations

from pathlib import Path

from profui.capture.format import TraceDir, open_trace_dir

from .lod import LodIndex, Progress
from .pipeline.answers import answers
from .trace import Trace

#: The stage that writes the index.
TIMELINE = "timeline"


def build_lod(path: str | Path | TraceDir, progress: Progress | None = None, force: bool = False) -> Path:
    """The folder of the timeline index of a trace, built (or taken from an earlier run) with
    the default parameters; ``force`` builds it again, with the stages it reads, as a recorded
    run that takes nothing from the cache (a benchmark's cold build)."""
    trace = path if isinstance(path, TraceDir) else open_trace_dir(path)

    def tell(_stage: str, fraction: float, message: str) -> None:
        if progress is not None:
            progress(fraction, message)

    if force:
        from .pipeline.engine import StageEvent, analyze
        from .pipeline.errors import PipelineError
        from .pipeline.registry import REGISTRY

        defaults = {name: str(p.default) for name, p in REGISTRY.params.items()}

        def heard(ev: StageEvent) -> None:
            if ev.status == "progress":
                tell(ev.stage, ev.fraction or 0.0, ev.message or "")

        try:  # the index alone, from the outputs of its inputs an earlier run holds
            analyze(trace.path, stages=[TIMELINE], overrides=defaults, use_cache=False, progress=heard)
        except PipelineError:  # no run holds them: they are built too
            needed = [s for s in REGISTRY.order if s in {TIMELINE} | REGISTRY.ancestors([TIMELINE])]
            analyze(trace.path, stages=needed, overrides=defaults, use_cache=False, progress=heard)
    # the stages it reads say when they run (a cold open: "[1/4] ingest …"), then the index
    got = answers(
        trace.path,
        [TIMELINE],
        lambda: Trace(trace),
        params={},
        on_progress=tell,
        say=None if progress is None else lambda line: progress(0.0, line),
    )
    return got.timeline.index.parent


def open_lod(path: str | Path | TraceDir, progress: Progress | None = None) -> LodIndex:
    """Open the timeline index of a trace, building it first when no run holds it."""
    trace = path if isinstance(path, TraceDir) else open_trace_dir(path)
    return LodIndex(trace, build_lod(trace, progress=progress))
