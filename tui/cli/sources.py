"""What the commands accept: a profui trace folder, or a foreign trace (Kineto JSON, an Nsight
Systems export) imported on the fly.

The command line is where importing is composed with analysis (analysis never writes traces):
a trace folder is used as is; anything else goes to the capture side's cached import,
:func:`profui.capture.ingest.cache.resolve_trace`, which is only loaded then (the importer
brings pyarrow and numpy with it).
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path


def resolve_source(path: str | Path, progress: Callable[[str], None] | None = None) -> Path:
    """A trace folder for ``path``: itself, or its foreign trace files imported into the cache.

    Raises :class:`~profui.capture.format.TraceFormatError` (one line) for anything else.
    """
    from profui.capture.format import is_trace_dir

    p = Path(path).expanduser()
    if is_trace_dir(p):
        return p
    from profui.capture.ingest.cache import resolve_trace

    return resolve_trace(p, progress=progress)


def resolve_sources(paths: list[Path], progress: Callable[[str], None] | None = None) -> Path:
    """One trace for ``paths``: :func:`resolve_source` of one path; several trace folders of one
    job (a multi-node job written one folder per node) combined into one trace in the cache.

    Folders of several jobs, or several paths that are not all trace folders, raise one line.
    """
    if len(paths) == 1:
        return resolve_source(paths[0], progress)
    from profui.capture.format import TraceFormatError, is_trace_dir
    from profui.capture.ingest.combine import combined_trace

    folders = [Path(p).expanduser() for p in paths]
    for f in folders:
        if not f.exists():
            raise TraceFormatError(f, "no such file or directory")
        if not is_trace_dir(f):
            raise TraceFormatError(
                f,
                "not a profui trace folder: several paths are the folders of one job; "
                "import trace files first (profui import FILES -o trace/)",
            )
    return combined_trace(folders)


def scan_sources(path: Path):  # -> tuple[FolderScan, Path | None]
    """The foreign trace files ``path`` stands for and the files of it skipped, with why
    (:func:`profui.capture.ingest.sources.source_scan`, the scan every import makes), and the
    cache's finished import of those files when they were imported before (else None)."""
    from profui.capture.ingest.cache import cached_import
    from profui.capture.ingest.sources import source_scan

    scan = source_scan(path)
    return scan, cached_import(scan.sources) if scan.sources else None
