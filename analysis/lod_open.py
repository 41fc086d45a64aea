"""Opening a trace's timeline index with what the stage graph found in it.

The index (:mod:`.lod`) draws the events; which steps they fall in and which launch started
which device work it takes from the steps and correlate stages (:data:`TIMELINE_STAGES`), run
with the default parameters: the timeline draws the exact events, so ``hta_compat`` (HTA's
rounded times and launch matching, which the Launches view shows) does not change it. Those
stages run in memory with the same bodies as ``profui analyze``, so a running capture and a
read-only trace folder open a timeline as any other (the index itself is cached in the trace's
private folder, or profui's cache for a read-only one).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from profui.capture.format import TraceDir, open_trace_dir

from .lod import LodIndex, Progress, TimelineInputs, build_index
from .pipeline.params import typed_params
from .pipeline.registry import REGISTRY
from .pipeline.store import compute
from .trace import Trace

#: The stages whose outputs the timeline index reads.
TIMELINE_STAGES = ("steps", "correlate")


def inputs_key() -> dict[str, Any]:
    """What determines the index's inputs: the code version of each stage they come from (and of
    the stages upstream of them) and the parameters those stages read, at their defaults."""
    stages = sorted(set(TIMELINE_STAGES) | REGISTRY.ancestors(TIMELINE_STAGES))
    params = typed_params(REGISTRY.params, None)
    return {
        s: {
            "code": REGISTRY.stages[s].code_version,
            "params": {p: params[p] for p in REGISTRY.stages[s].params},
        }
        for s in stages
    }


def timeline_inputs(trace: TraceDir) -> TimelineInputs:
    """The steps stage's windows and the correlate stage's launch links of ``trace``, computed
    in memory with the default parameters."""
    out = compute(Trace(trace), TIMELINE_STAGES)
    steps, correlate = out["steps"], out["correlate"]
    return TimelineInputs(
        windows=steps["windows.parquet"],
        has_markers=bool(steps["steps.json"]["has_markers"]),
        launches=correlate["launches.parquet"],
    )


def build_lod(path: str | Path | TraceDir, progress: Progress | None = None, force: bool = False) -> Path:
    """Build (or reuse when fresh) the timeline index of a trace; returns its folder."""
    trace = path if isinstance(path, TraceDir) else open_trace_dir(path)
    return build_index(trace, lambda: timeline_inputs(trace), inputs_key(), progress=progress, force=force)


def open_lod(path: str | Path | TraceDir, progress: Progress | None = None) -> LodIndex:
    """Open the timeline index of a trace, building or refreshing its cache first when needed."""
    trace = path if isinstance(path, TraceDir) else open_trace_dir(path)
    return LodIndex(trace, build_lod(trace, progress=progress))
