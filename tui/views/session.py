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
from typing import TYPE_CHECKING, Any, cast

from profui.analysis.result_tables import OutputMissing
from profui.capture.format import Manifest, TraceDir, open_trace_dir

if TYPE_CHECKING:
    from profui.analysis.pipeline.result import Result


class ViewerGone(KeyboardInterrupt):
    """The view following an analysis can no longer be told of it (the user quit, the screen
    closed). A KeyboardInterrupt, so the pipeline records its run ``stopped``, as for Ctrl-C,
    not ``failed`` with the viewer's errors as its cause."""


class AnalysisStopped(Exception):
    """:meth:`TraceSession.stage_outputs` was stopped because its viewer went away; the run is
    recorded ``stopped`` and a later call computes (or resumes from the cache) again."""


def _followed(tell: Callable[..., None] | None) -> Callable[..., None] | None:
    """``tell`` (a view's callback, run on the UI) raising :class:`ViewerGone` when it fails:
    an error of the viewer is never an error of the analysis it follows."""
    if tell is None:
        return None

    from textual.css.query import NoMatches

    def follow(*args: Any) -> None:
        try:
            tell(*args)
        except (NoMatches, RuntimeError) as exc:
            # what a view that is gone raises: its widgets unmounted (NoMatches), its app ended
            # ("App is not running"); any other error is a bug of the view, told as one
            raise ViewerGone(f"stopped: its view could not be told ({type(exc).__name__}: {exc})") from exc

    return follow


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
        #: The ingest stage's overview of the trace, once any stage outputs were read.
        self.overview: dict[str, Any] | None = None

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
            self.overview = None

    # -- analysis -----------------------------------------------------------------------
    def memo(self, key: str, compute: Callable[[], Any], wait: bool = True) -> Any:
        """``compute()`` once per generation; computations run one at a time. With
        ``wait=False`` (the UI thread): None at once while another computation runs, and a
        ``compute()`` that gives None (nothing cheap to give) is not kept."""
        if not self._lock.acquire(blocking=wait):
            return None
        try:
            with self._state_lock:
                cache, generation = self._cache, self.generation
            if key not in cache:
                value = compute()
                with self._state_lock:
                    if generation == self.generation and value is not None:
                        cache[key] = value
                return value
            return cache[key]
        finally:
            self._lock.release()

    def trace(self) -> Any:
        """The analysis facade (``profui.analysis.open_trace``) of this trace."""
        with self._lock:
            if self._trace is None:
                from profui.analysis import open_trace

                self._trace = open_trace(self.path)
            return self._trace

    # -- the dashboard's stage outputs --------------------------------------------------
    def stage_outputs(
        self,
        stages: tuple[str, ...],
        on_stage: Callable[[str, dict[str, Any]], None] | None = None,
        on_progress: Callable[[str], None] | None = None,
    ) -> Result:
        """The typed result of the analysis pipeline's ``stages``.

        Analysis chooses where they come from (:func:`profui.analysis.pipeline.answers.answers`:
        cached outputs, a recorded run, or the in-memory store); this session only memoises them
        per generation. ``on_stage`` receives each stage's outputs as soon as they are computed.
        """
        return self.memo(
            f"stages:{','.join(stages)}",
            lambda: self._stage_outputs(stages, _followed(on_stage), _followed(on_progress)),
        )

    def cached_stage_outputs(self, stages: tuple[str, ...], max_bytes: int) -> Result | None:
        """The result :meth:`stage_outputs` would give, when they are memoised already or the
        pipeline's cache holds them all in no more than ``max_bytes``; else None.

        For the UI thread: it never waits (None while another computation holds the session), so
        a warm open draws its first frame with the answers in it, not a frame of placeholders.
        """
        from profui.analysis.pipeline.answers import cached

        def from_cache() -> Result | None:
            got = cached(self.path, stages, max_bytes=max_bytes)
            return None if got is None else self._keep(got)

        return self.memo(f"stages:{','.join(stages)}", from_cache, wait=False)

    def _stage_outputs(self, stages, on_stage, on_progress) -> Result:
        from profui.analysis.pipeline.answers import answers

        try:
            got = answers(self.path, stages, self.trace, on_stage=on_stage, say=on_progress)
        except ViewerGone as gone:  # the run is recorded stopped; the worker sees an ordinary error
            raise AnalysisStopped(str(gone)) from None
        return self._keep(got)

    def _keep(self, got: Result) -> Result:
        """Note where ``got`` came from and the trace's overview it holds; ``got``."""
        self.source = got.source
        try:
            self.overview = cast("dict[str, Any] | None", got.ingest.trace.get("overview"))
        except OutputMissing:
            self.overview = None
        if not self.overview and got.ran("summary"):
            # the summary carries the overview too (a cached read may not include ingest's outputs);
            # imported only here: it loads polars, which importing this module does not
            from profui.analysis.summary import stored_summary

            summary = stored_summary(got)
            self.overview = summary.trace if summary is not None else None
        return got
