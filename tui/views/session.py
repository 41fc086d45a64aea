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
        self._lock = threading.RLock()
        self._cache: dict[str, Any] = {}
        self._trace: Any = None
        self._dir: TraceDir | None = None

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
        """Forget every memoised answer: the trace changed on disk."""
        with self._lock:
            self.generation += 1
            self._cache.clear()
            self._trace = None
            self._dir = None

    # -- analysis -----------------------------------------------------------------------
    def memo(self, key: str, compute: Callable[[], Any]) -> Any:
        """``compute()`` once per generation under the session lock."""
        with self._lock:
            if key not in self._cache:
                self._cache[key] = compute()
            return self._cache[key]

    def trace(self) -> Any:
        """The analysis facade (``profui.analysis.open_trace``) of this trace."""
        with self._lock:
            if self._trace is None:
                from profui.analysis import open_trace

                self._trace = open_trace(self.path)
            return self._trace
