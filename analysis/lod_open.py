"""Opening a trace's timeline index: the timeline stage's outputs, from wherever they are.

The index is a stage of the graph (``timeline``, on demand; its body writes
:func:`.lod.write_index` from the steps and correlate stages' outputs). Its files come from
where the dashboard's answers come from, by the same rule (:func:`.pipeline.answers.answers`,
parameters as the newest run had them): a run's, else a recorded run made now that reuses that
run's steps and links (kept for the next open), else a run in memory for a running capture or a
folder the pipeline cannot write (its files in a scratch folder of this process). So the
timeline draws the steps the Steps view lists and the links the Launches view counts, under
``--hta-compat`` too (HTA's steps, without its last one, and HTA's launch matching), and
drawing it never records a run with other parameters than the user's last.
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
    """The folder of the timeline index of a trace, built or taken from an earlier run (see the
    module); ``force`` builds it again first, as a recorded run of the stage alone that takes
    nothing from the cache, its inputs from the newest run holding them (a benchmark's cold
    build; with them when no run holds them)."""
    trace = path if isinstance(path, TraceDir) else open_trace_dir(path)

    indexing = []  # once the index says how far it is, the run's lines about it are not said

    def tell(_stage: str, fraction: float, message: str) -> None:
        indexing.append(True)
        if progress is not None:
            progress(fraction, message)

    def say(line: str) -> None:
        if progress is not None and not indexing:
            progress(0.0, line)

    if force:
        from .pipeline.engine import StageEvent, analyze
        from .pipeline.errors import PipelineError
        from .pipeline.registry import REGISTRY

        def heard(ev: StageEvent) -> None:
            if ev.status == "progress":
                tell(ev.stage, ev.fraction or 0.0, ev.message or "")

        try:
            analyze(trace.path, stages=[TIMELINE], use_cache=False, progress=heard)
        except PipelineError:  # no run holds its inputs: they are built too
            analyze(trace.path, stages=REGISTRY.with_ancestors([TIMELINE]), use_cache=False, progress=heard)
    # the stages it reads say when they run (a cold open: "[1/4] ingest …"), then the index
    got = answers(
        trace.path,
        [TIMELINE],
        lambda: Trace(trace),
        on_progress=tell,
        say=None if progress is None else say,
    )
    return got.timeline.index.parent


def open_lod(path: str | Path | TraceDir, progress: Progress | None = None) -> LodIndex:
    """Open the timeline index of a trace, building it first when no run holds it."""
    trace = path if isinstance(path, TraceDir) else open_trace_dir(path)
    return LodIndex(trace, build_lod(trace, progress=progress))
