"""Where a surface's answers come from: one choice, made here, for the dashboard and its views.

:func:`answers` returns the outputs of the stages a surface shows, taking them from the cheapest
place that holds them for this trace: the pipeline's newest outputs when every one is there
(warm), else a recorded ``profui analyze`` run of those stages and everything upstream (cold, so
the next open is warm), else — for a running capture, or a folder the pipeline cannot write —
the in-memory store (:func:`profui.analysis.pipeline.store.compute`), which records nothing.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from profui.capture.format import TraceFormatError, open_trace_dir, private_dir_for

from .artifacts import ArtifactMeta, load_files, verify
from .errors import PipelineError
from .outputs import latest_outputs
from .registry import REGISTRY
from .store import Store, compute

OnStage = Callable[[str, dict[str, Any]], None]
Say = Callable[[str], None]


@dataclass
class Answers:
    """The outputs of the stages asked for, and where they came from (``cache``,
    ``computed (run-0003)``, ``computed in memory``)."""

    outputs: Store
    source: str


def _load(folder: Path) -> dict[str, Any] | None:
    meta = verify(folder)
    return None if meta is None else _load_all({"": (folder, meta)})[""]


def _load_all(found: dict[str, tuple[Path, ArtifactMeta]]) -> dict[str, dict[str, Any]]:
    """``{stage: {output file: value}}`` of ``{stage: (artifact folder, its meta)}``, read in one go."""
    paths = {s: [folder / n for n in meta.outputs] for s, (folder, meta) in found.items()}
    got = load_files([p for ps in paths.values() for p in ps])
    return {s: {p.name: got[p] for p in ps} for s, ps in paths.items()}


def _running(path: Path) -> bool:
    return open_trace_dir(path, require_data=False).manifest.status == "running"


def cached(path: str | Path, stages: Iterable[str], max_bytes: int | None = None) -> Answers | None:
    """The pipeline's newest outputs of ``stages`` when every one is there and was made by this
    code (a running capture has none: its outputs would be stale), else None. With
    ``max_bytes``, also None when their files are larger than that in all (a caller that reads
    them where it must not wait long, like the UI thread, says how much it can afford)."""
    path = Path(path)
    return None if _running(path) else _from_cache(path, tuple(stages), max_bytes)


def _from_cache(path: Path, stages: tuple[str, ...], max_bytes: int | None) -> Answers | None:
    have = latest_outputs(path)
    found: dict[str, tuple[Path, ArtifactMeta]] = {}
    for s in stages:
        # outputs made by other analysis code (profui upgraded since) are not reused as they are
        meta = verify(have[s]) if s in have and s in REGISTRY.stages else None
        if meta is None or meta.code_version != REGISTRY.stages[s].code_version:
            return None
        found[s] = (have[s], meta)
    size = sum(sum(meta.sizes.values()) for _, meta in found.values())
    if max_bytes is not None and size > max_bytes:
        return None
    return Answers(_load_all(found), "cache")


def answers(
    path: str | Path,
    stages: Iterable[str],
    trace: Callable[[], Any],
    on_stage: OnStage | None = None,
    say: Say | None = None,
) -> Answers:
    """The outputs of ``stages`` for the trace folder ``path`` (see the module docstring).

    ``trace()`` gives the opened analysis Trace (only called when something is computed in
    memory). ``on_stage`` receives each stage's outputs as soon as they are computed (not for
    cached outputs, which come back all at once); ``say`` receives progress lines.
    """
    path = Path(path)
    stages = tuple(stages)
    say = say or (lambda _line: None)
    running = _running(path)
    got = None if running else _from_cache(path, stages, None)
    if got is not None:
        say("reading cached analysis outputs")
        return got
    if not running:
        try:
            return _recorded_run(path, stages, on_stage, say)
        except TraceFormatError:
            raise
        except Exception as exc:  # the pipeline refused (read-only folder, lock, ...): compute here
            first = (str(exc).strip().splitlines() or [""])[0]
            say(f"analysis pipeline unavailable ({first}); computing in memory")
    store: Store = {}

    def done(name: str, outputs: dict[str, Any]) -> None:
        say(f"{name} ✓")
        if on_stage is not None:
            on_stage(name, outputs)

    compute(trace(), stages, store=store, on_stage=done)
    return Answers(store, "computed in memory")


def _recorded_run(path: Path, stages: tuple[str, ...], on_stage: OnStage | None, say: Say) -> Answers:
    from .engine import StageEvent, analyze
    from .outputs import load_run

    got: Store = {}

    def progress(ev: StageEvent) -> None:
        if ev.status == "running":
            say(f"[{ev.index}/{ev.total}] {ev.stage} …")
        elif ev.status == "succeeded":
            rec = load_run(path, ev.run_id)
            artifact = rec.stages[ev.stage].artifact
            if artifact is None:  # a record damaged between its writing and this read
                raise PipelineError(f"{path}: run {ev.run_id} names no output of stage {ev.stage}")
            folder = private_dir_for(path) / artifact
            outputs = _load(folder)
            if outputs is None:  # damaged between its writing and this read: never served
                raise PipelineError(f"{folder}: stage output damaged as it was read")
            got[ev.stage] = outputs
            if on_stage is not None and ev.stage in stages:
                on_stage(ev.stage, got[ev.stage])

    needed = set(stages) | REGISTRY.ancestors(stages)
    rec = analyze(path, stages=[s for s in REGISTRY.order if s in needed], wait=False, progress=progress)
    bad = rec.bad_input()
    if bad is not None:  # a file no stage can read: the surface says so, as for all bad input
        raise bad
    failed = [s for s in REGISTRY.order if s in needed and rec.stages[s].status != "succeeded"]
    if failed:
        error = (rec.stages[failed[0]].error or "").strip().splitlines()
        say(f"stage {failed[0]} failed: {error[0] if error else 'see profui runs'}")
    return Answers(got, f"computed ({rec.id})")
