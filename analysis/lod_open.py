"""Opening a trace's timeline index with what the stage graph found in it.

The index (:mod:`.lod`) draws the events; which steps they fall in and which launch started
which device work it takes from the steps and correlate stages (:data:`TIMELINE_STAGES`) with
the default parameters: the timeline draws the exact events, so ``hta_compat`` (HTA's rounded
times and launch matching, which the Launches view shows) does not change it. Their outputs come
from the pipeline's recorded runs when this code made them with those parameters (the
dashboard's first open records them), else the stages run in memory with the same bodies, so a
running capture and a read-only trace folder open a timeline as any other (the index itself is
cached in the trace's private folder, or profui's cache for a read-only one).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import polars as pl

from profui.capture.format import TraceDir, open_trace_dir

from .launch import kernel_launches, sync_links
from .lod import LINK_COLUMNS, SYNC_LINK_COLUMNS, LodIndex, Progress, TimelineInputs, build_index
from .pipeline.answers import stage_params
from .pipeline.artifacts import load_file, verify
from .pipeline.outputs import latest_outputs
from .pipeline.registry import REGISTRY
from .steps import step_windows
from .trace import Trace

#: The stages whose outputs the timeline index reads.
TIMELINE_STAGES = ("steps", "correlate")
#: The events columns their rules read (:func:`computed`).
TIMELINE_EVENT_COLUMNS = ("ts", "dur", "kind", "name", "pid", "tid", "device", "stream", "correlation")


def inputs_key() -> dict[str, Any]:
    """What determines the index's inputs: the code version of each stage they come from (and of
    the stages upstream of them) and the parameters those stages read, at their defaults."""
    stages = sorted(set(TIMELINE_STAGES) | REGISTRY.ancestors(TIMELINE_STAGES))
    return {s: {"code": REGISTRY.stages[s].code_version, "params": stage_params(s)} for s in stages}


def _recorded(trace: TraceDir) -> TimelineInputs | None:
    """The newest recorded outputs of :data:`TIMELINE_STAGES` when this code made every one with
    the default parameters (not a ``--hta-compat`` run's), else None; none for a running capture,
    whose recorded outputs would be stale. Of the links only the columns the index reads, as
    scans of their files."""
    if trace.manifest.status == "running":
        return None
    have = latest_outputs(trace.path)
    for s in TIMELINE_STAGES:
        meta = verify(have[s]) if s in have else None
        if meta is None or meta.code_version != REGISTRY.stages[s].code_version:
            return None
        if meta.params != stage_params(s):
            return None
    steps, correlate = have["steps"], have["correlate"]
    return TimelineInputs(
        windows=pl.read_parquet(steps / "windows.parquet"),
        has_markers=bool(load_file(steps / "steps.json")["has_markers"]),
        # scans: the index reads each rank's rows when it indexes that rank
        launches=pl.scan_parquet(correlate / "launches.parquet").select(LINK_COLUMNS),
        syncs=pl.scan_parquet(correlate / "sync_links.parquet").select(SYNC_LINK_COLUMNS),
    )


def timeline_inputs(trace: TraceDir) -> TimelineInputs:
    """The steps stage's windows and the correlate stage's launch links of ``trace`` with the
    default parameters: recorded by an earlier run, else computed in memory."""
    recorded = _recorded(trace)
    return computed(trace) if recorded is None else recorded


def computed(trace: TraceDir) -> TimelineInputs:
    """The outputs the index reads of the steps and correlate stages, computed in memory by the
    rules their bodies run with the default parameters (``hta_compat`` off, no
    ``step_annotation``): ``steps.step_windows``, ``launch.kernel_launches`` and
    ``launch.sync_links``, on the events columns they read (:data:`TIMELINE_EVENT_COLUMNS`), not
    the whole stages: on a 10M-event trace their other outputs (the step breakdown, statistics)
    and the other columns (``args``) doubled the index's cold build and tripled its peak."""
    events = Trace(trace, columns=TIMELINE_EVENT_COLUMNS).cached_events()
    steps = step_windows(events)
    return TimelineInputs(
        windows=steps.windows,
        has_markers=steps.has_markers,
        launches=kernel_launches(events).select(LINK_COLUMNS).collect(),
        syncs=sync_links(events).select(SYNC_LINK_COLUMNS).collect(),
    )


def build_lod(path: str | Path | TraceDir, progress: Progress | None = None, force: bool = False) -> Path:
    """Build (or reuse when fresh) the timeline index of a trace; returns its folder."""
    trace = path if isinstance(path, TraceDir) else open_trace_dir(path)
    return build_index(trace, lambda: timeline_inputs(trace), inputs_key(), progress=progress, force=force)


def open_lod(path: str | Path | TraceDir, progress: Progress | None = None) -> LodIndex:
    """Open the timeline index of a trace, building or refreshing its cache first when needed."""
    trace = path if isinstance(path, TraceDir) else open_trace_dir(path)
    return LodIndex(trace, build_lod(trace, progress=progress))
