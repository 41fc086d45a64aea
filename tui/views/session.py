"""One opened trace as the views see it: the single place where the TUI calls analysis.

Every answer comes from :mod:`profui.analysis` (or the analysis pipeline's cached stage outputs
when a run exists); the session only memoises them per *generation* (a live trace that grows
starts a new generation) and serialises the calls, so two views never compute the same frame
twice at once on a small machine. Methods are called from worker threads, never the UI thread.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

from profui.capture.format import Manifest, TraceDir, open_trace_dir


class TraceSession:
    """An opened trace plus memoised analysis results."""

    def __init__(self, path: Path) -> None:
        self.path = Path(path)
        self.generation = 0
        self._lock = threading.RLock()  # serialises computations (worker threads only)
        self._state_lock = threading.Lock()  # guards generation/cache swaps (never held long)
        self._cache: dict[str, Any] = {}
        self._trace: Any = None
        self._dir: TraceDir | None = None
        #: Where the last stage outputs came from (``cache``, ``computed (run-0003)``, ...).
        self.source = ""

    # -- metadata (cheap) ---------------------------------------------------------------
    @property
    def dir(self) -> TraceDir:
        """The validated trace directory (re-read on every new generation)."""
        if self._dir is None:
            self._dir = open_trace_dir(self.path, require_data=False)
        return self._dir

    @property
    def manifest(self) -> Manifest:
        """The trace's manifest."""
        return self.dir.manifest

    def fingerprint(self) -> tuple:
        """What changes when a running capture lands a file or finishes (status, files, rows)."""
        d = open_trace_dir(self.path, require_data=False)
        files = tuple((str(f.path), f.num_rows) for f in (*d.events, *d.metrics))
        return (d.manifest.status, d.manifest.end_ns, files)

    def new_generation(self) -> None:
        """Forget every memoised answer: the trace changed on disk.

        Never waits for a computation in progress (the UI thread calls this); that computation
        finishes for the old generation and its answer is not kept.
        """
        with self._state_lock:
            self.generation += 1
            self._cache = {}
            self._trace = None
            self._dir = None

    # -- analysis -----------------------------------------------------------------------
    def memo(self, key: str, compute: Callable[[], Any]) -> Any:
        """``compute()`` once per generation; computations run one at a time."""
        with self._lock:
            with self._state_lock:
                cache, generation = self._cache, self.generation
            if key not in cache:
                value = compute()
                with self._state_lock:
                    if generation == self.generation:
                        cache[key] = value
                return value
            return cache[key]

    def trace(self) -> Any:
        """The analysis facade (``profui.analysis.open_trace``) of this trace."""
        with self._lock:
            if self._trace is None:
                from profui.analysis import open_trace

                self._trace = open_trace(self.path)
            return self._trace

    def step_breakdown(self, windows: Any) -> Any:
        """Per step: busy, idle and busy by kernel type (``profui.analysis.steps.step_breakdown``)."""

        def compute() -> Any:
            from profui.analysis.steps import Steps, step_breakdown

            ev = self.trace().cached_events()
            return step_breakdown(ev, Steps(windows=windows, has_markers=True, note="")).collect()

        return self.memo("step_breakdown", compute)

    # -- the dashboard's stage outputs --------------------------------------------------
    def stage_outputs(
        self,
        stages: tuple[str, ...],
        on_stage: Callable[[str, dict[str, Any]], None] | None = None,
        on_progress: Callable[[str], None] | None = None,
    ) -> dict[str, dict[str, Any]]:
        """``{stage: {output file: frame or dict}}`` of the analysis pipeline's ``stages``.

        Warm: the pipeline's newest successful outputs, read without computing anything.
        Cold: ``profui analyze`` of just these stages (so the next open is warm and the run is
        listed in the Runs view). A running trace, or one whose folder the pipeline cannot use
        (read-only, locked), is computed in memory by the same stage bodies, recording nothing.
        ``on_stage`` receives each stage's outputs as soon as they are computed (not called for
        cached outputs, which are all returned at once).
        """
        return self.memo(
            f"stages:{','.join(stages)}", lambda: self._stage_outputs(stages, on_stage, on_progress)
        )

    def _stage_outputs(self, stages, on_stage, on_progress) -> dict[str, dict[str, Any]]:
        from profui.analysis.pipeline import REGISTRY, latest_outputs
        from profui.analysis.pipeline.artifacts import load_file, verify

        say = on_progress or (lambda _line: None)
        got: dict[str, dict[str, Any]] = {}

        def take(stage: str, folder: Path, notify: bool = True) -> None:
            meta = verify(folder) or {}
            got[stage] = {name: load_file(folder / name) for name in meta.get("outputs", {})}
            if on_stage is not None and notify:
                on_stage(stage, got[stage])

        running = self.manifest.status == "running"
        if not running:
            have = latest_outputs(self.path)
            # outputs made by other analysis code (profui upgraded since) are not reused as is
            have = {
                s: f
                for s, f in have.items()
                if s not in REGISTRY.stages
                or (verify(f) or {}).get("code_version") == REGISTRY.stages[s].code_version
            }
            if all(s in have for s in stages):
                say("reading cached analysis outputs")
                # all there at once: no per-stage calls (each is a round trip to the UI thread
                # and a layout pass); the caller draws everything from the returned outputs
                for s in stages:
                    take(s, have[s], notify=False)
                self.source = "cache"
                return got
            try:
                return self._analyze(stages, take, say, got)
            except Exception as exc:  # the pipeline refused (read-only folder, lock, ...): compute here
                first = (str(exc).strip().splitlines() or [""])[0]
                say(f"analysis pipeline unavailable ({first}); computing in memory")
                got.clear()
        return self._compute_in_memory(stages, on_stage, say, got)

    def _analyze(self, stages, take, say, got) -> dict[str, dict[str, Any]]:
        from profui.analysis.pipeline import analyze, load_run

        def progress(ev) -> None:
            if ev.status == "running":
                say(f"[{ev.index}/{ev.total}] {ev.stage} …")
            elif ev.status == "succeeded":
                rec = load_run(self.path, ev.run_id)
                take(ev.stage, self.dir.private_dir / rec.stages[ev.stage].artifact)

        selection = ["ingest", *[s for s in stages if s != "ingest"]]
        rec = analyze(self.path, stages=selection, wait=False, progress=progress)
        failed = [s for s in selection if rec.stages[s].status != "succeeded"]
        if failed:
            error = (rec.stages[failed[0]].error or "").strip().splitlines()
            say(f"stage {failed[0]} failed: {error[0] if error else 'see profui runs'}")
        self.source = f"computed ({rec.id})"
        return got

    def _compute_in_memory(self, stages, on_stage, say, got) -> dict[str, dict[str, Any]]:
        from profui.analysis.pipeline import REGISTRY
        from profui.analysis.pipeline.context import RunShared, StageContext

        params = {name: p.default for name, p in REGISTRY.params.items()}
        shared = RunShared(self.path)
        shared._trace = self.trace()
        for i, name in enumerate(stages, 1):
            if name == "annotations":
                continue  # its body reads the steps stage from disk; done below from memory
            say(f"[{i}/{len(stages)}] {name} …")
            try:
                out = REGISTRY.stages[name].run(StageContext(name, shared, params, {}, "tui"))
            except Exception as exc:
                say(f"{name}: {type(exc).__name__}: {(str(exc).strip().splitlines() or [''])[0]}")
                continue
            got[name] = out
            if on_stage is not None:
                on_stage(name, out)
        if "annotations" in stages and "steps" in got:
            from profui.analysis import annotations as a

            ev = self.trace().cached_events()
            windows = got["steps"]["windows.parquet"].lazy()
            out = {
                "names.parquet": a.annotation_names(ev).collect(),
                "breakdown.parquet": a.annotation_breakdown(ev).collect(),
                "per_step.parquet": a.annotation_per_step(ev, windows).collect(),
            }
            got["annotations"] = out
            if on_stage is not None:
                on_stage("annotations", out)
        self.source = "computed in memory"
        return got
