"""What a stage body sees: the trace, its parameters and its inputs' outputs."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from .artifacts import load_file

#: ``(stage, fraction done, what it is doing)``, called from the thread running the stage.
StageProgress = Callable[[str, float, str], None]


class RunShared:
    """State shared by the stages of one run in one process (the opened trace, read once)."""

    def __init__(self, trace_path: Path, trace: Any = None, progress: StageProgress | None = None) -> None:
        """``trace``: an already opened Trace of ``trace_path`` to reuse (else opened on first use);
        ``progress(stage, fraction, message)``: hears how far a long stage is."""
        self.trace_path = trace_path
        self._trace: Any = trace
        self.progress = progress

    @property
    def trace(self) -> Any:
        """The :class:`profui.analysis.trace.Trace` of this run, opened on first use."""
        if self._trace is None:
            from profui.analysis.trace import open_trace

            self._trace = open_trace(self.trace_path)
        return self._trace


class StageContext:
    """Passed to a stage body: ``ctx.trace``, ``ctx.params``, ``ctx.input(stage, file)``.

    ``inputs`` maps each available input stage to its outputs: an artifact folder on disk (a
    recorded run) or ``{file: value}`` already in memory (the in-memory store). Bodies cannot tell
    the two apart.
    """

    def __init__(
        self,
        name: str,
        shared: RunShared,
        params: Mapping[str, Any],
        inputs: Mapping[str, Path | Mapping[str, Any]],
        run_id: str,
        input_files: Mapping[str, tuple[str, ...]] | None = None,
        scratch: Path | None = None,
    ) -> None:
        self.name = name
        self._scratch = scratch
        self._shared = shared
        self.params = dict(params)
        self._inputs = dict(inputs)
        self.run_id = run_id
        #: Declared output files of each input stage, in declaration order.
        self.input_files = dict(input_files or {})

    @property
    def trace(self) -> Any:
        """The opened trace (shared with the other stages of this run)."""
        return self._shared.trace

    @property
    def trace_path(self) -> Path:
        """Folder of the trace."""
        return self._shared.trace_path

    @property
    def scratch(self) -> Path:
        """The folder a files stage (:attr:`.dag.Stage.files`) writes its outputs in; the run
        moves them into place once the body returns their paths."""
        if self._scratch is None:
            raise RuntimeError(f"stage {self.name} writes no files: it has no scratch folder")
        return self._scratch

    def progress(self, fraction: float, message: str) -> None:
        """Say how far this stage is (``fraction`` of its work done, what it is doing now)."""
        if self._shared.progress is not None:
            self._shared.progress(self.name, fraction, message)

    def has_input(self, stage: str) -> bool:
        """Whether input stage ``stage``'s outputs are available to this stage."""
        return stage in self._inputs

    def _source(self, stage: str) -> Path | Mapping[str, Any]:
        """Input stage ``stage``'s outputs: its artifact folder, or its outputs in memory."""
        if stage not in self._inputs:
            raise KeyError(f"stage {self.name} did not declare {stage!r} as an input")
        return self._inputs[stage]

    def input(self, stage: str, file: str) -> Any:
        """Output ``file`` of input stage ``stage``: a DataFrame (Parquet) or a dict (JSON)."""
        source = self._source(stage)
        if isinstance(source, Path):
            return load_file(source / file)
        return source[file]

    def input_scan(self, stage: str, file: str) -> Any:
        """Table ``file`` of input stage ``stage`` as a body reads part of it: a scan of the
        recorded Parquet file (its rows read when collected, filters pushed into the read), or
        the frame already in memory."""
        source = self._source(stage)
        if isinstance(source, Path):
            import polars as pl

            return pl.scan_parquet(source / file)
        return source[file]
