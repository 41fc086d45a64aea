"""Reading what earlier runs produced, without computing anything (for the TUI and ``profui runs``)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from profui.capture.format import private_dir_for

from . import records
from .artifacts import load_file, read_outputs, verify
from .records import RunRecord


def _private(trace_path: str | Path) -> Path:
    return private_dir_for(Path(trace_path))


def list_runs(trace_path: str | Path) -> list[RunRecord]:
    """Every run recorded for the trace folder, oldest first (empty when never analysed)."""
    return records.list_runs(_private(trace_path))


def damaged_runs(trace_path: str | Path) -> list[records.Damaged]:
    """The files under the trace's ``runs/`` named like run records that are not one (each with
    its problem), oldest first: to be listed as damaged, never read as runs."""
    return records.scan(_private(trace_path))[1]


def load_run(trace_path: str | Path, run_id: str) -> RunRecord:
    """One run record by id (``run-0003``, ``3`` or ``latest``); PipelineError if unknown."""
    private = _private(trace_path)
    rid = records.normalise_id(run_id)
    if rid == "latest":
        runs = records.list_runs(private)
        if runs:
            return runs[-1]
    return records.load(private, rid)


def latest_outputs(trace_path: str | Path) -> dict[str, Path]:
    """Artifact folder of each stage's newest successful output: ``{stage: folder}``.

    Runs that succeeded are preferred, newest first; a stage none of them has (e.g. downstream
    of a selective run) comes from the newest run of any status in which that stage succeeded.
    Only folders whose files are all present are returned. Empty when the trace was never
    analysed. Nothing is computed.
    """
    private = _private(trace_path)
    runs = records.list_runs(private)
    ordered = [r for r in reversed(runs) if r.status == "succeeded"]
    ordered += [r for r in reversed(runs) if r.status != "succeeded"]
    out: dict[str, Path] = {}
    for run in ordered:
        for name, st in run.stages.items():
            if name in out or st.status != "succeeded" or not st.artifact:
                continue
            folder = private / st.artifact
            if verify(folder) is not None:
                out[name] = folder
    return out


def load_output(trace_path: str | Path, stage: str, file: str | None = None) -> Any:
    """Load a stage's newest successful output (see :func:`latest_outputs`).

    With ``file`` (e.g. ``"top_by_time.parquet"``) that one file: a Polars DataFrame for Parquet,
    the parsed value for JSON. Without, ``{file: value}`` for all the stage's files. None when
    the stage has no output yet.
    """
    folder = latest_outputs(trace_path).get(stage)
    if folder is None:
        return None
    meta = verify(folder)
    if meta is None:
        return {} if file is None else None
    if file is not None:  # that one file, as read_outputs gives it: a files stage's as its path
        return folder / file if meta.files else load_file(folder / file)
    return read_outputs({stage: (folder, meta)})[stage]


def prune(trace_path: str | Path, keep: int) -> dict[str, int]:
    """Forget all but the newest ``keep`` runs and delete the outputs no kept run uses.

    Takes the trace's lock without waiting (refuses while an analysis runs). Returns the number
    of ``runs`` and ``artifacts`` removed.
    """
    import shutil

    from .artifacts import artifacts_root
    from .errors import PipelineError
    from .lock import TraceLock, describe_holder

    if keep < 0:
        raise PipelineError(f"--prune takes the number of runs to keep (>= 0), not {keep}")
    private = _private(trace_path)
    if not private.is_dir():
        return {"runs": 0, "artifacts": 0}
    lock = TraceLock(private)
    if not lock.try_acquire():
        raise PipelineError(
            f"{trace_path}: an analysis {describe_holder(lock.holder())} is running; prune when it ends"
        )
    try:
        runs = records.list_runs(private)
        drop = runs[: max(len(runs) - keep, 0)]
        kept = runs[len(drop) :]
        used = {st.artifact for r in kept for st in r.stages.values() if st.artifact}
        for r in drop:
            (records.runs_dir(private) / f"{r.id}.json").unlink(missing_ok=True)
        removed = 0
        root = artifacts_root(private)
        for folder in sorted(root.glob("*/*")) if root.is_dir() else []:
            if folder.is_dir() and str(folder.relative_to(private)) not in used:
                shutil.rmtree(folder, ignore_errors=True)
                removed += 1
        return {"runs": len(drop), "artifacts": removed}
    finally:
        lock.release()
