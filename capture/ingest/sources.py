"""Which files a path stands for as trace sources: a file itself, or the trace files of a folder
(:func:`scan_folder`), with the files named like traces that are not, each with why.

One scan for ``open``, ``summary``, ``import`` and every command that imports a folder: the
import pipeline (:mod:`.importer`) and the import cache (:mod:`.cache`) both read it.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

from profui.capture.format import IMPORTABLE_SUFFIXES, NSYS_SUFFIXES, TraceFormatError
from profui.capture.kineto.sniff import not_a_trace


def is_source_file(path: Path) -> bool:
    """True for a file whose name ends like a trace profui imports (Kineto ``.json``/``.json.gz``,
    Nsight Systems ``.sqlite``/``.nsys-rep``)."""
    name = path.name.lower()
    return path.is_file() and name.endswith(IMPORTABLE_SUFFIXES)


_JAX_TRACES = (".trace.json.gz", ".trace.json")


@dataclass
class FolderScan:
    """What a folder (or a file) stands for as trace sources: its trace files, and the files
    named like traces that are not, each with why (:func:`~profui.capture.kineto.sniff.not_a_trace`)."""

    sources: list[Path]
    skipped: list[tuple[Path, str]] = field(default_factory=list)

    def notes(self) -> list[str]:
        """One line per skipped file, naming it and why: the import's notes."""
        return [skipped_note(f, why) for f, why in self.skipped]


def skipped_note(path: Path, why: str) -> str:
    """The one wording of a file of a folder left out of its import."""
    return f"skipped {path}: {why}"


def scan_folder(folder: Path) -> FolderScan:
    """The trace files of ``folder``, sorted, each event source once, and the files it skipped.

    - the folder's own trace files; the folders below it (hidden ones skipped) only when it
      holds none, or when it is a JAX log folder (``plugins/profile/`` inside): a folder of
      traces is not mixed with what its subfolders hold (a tool's results, other jobs). Only
      files that are traces (after the sniff) count as its own: a ``config.json`` beside
      ``rank0/`` does not stop the scan going below, and is listed as skipped;
    - of an Nsight report and its export (``run.nsys-rep``, ``run.sqlite``), the export;
    - of a JAX profile run (``plugins/profile/<run>/``), the ``<host>.trace.json.gz`` files (not
      ``perfetto_trace.json.gz``, the same events again, unless it is the only one; never the
      memory profiles), and of a JAX log folder holding several runs, the newest run only (each
      run is a separate profile, never ranks of one job);
    - a file named like a Kineto trace whose first bytes show it is something else (an
      execution trace, a memory timeline, another tool's JSON, a FIFO) is skipped, with why.
    """
    if not (folder / "plugins" / "profile").is_dir():
        # the folder holds traces itself only when a file of its own IS one (after the sniff): a
        # config.json beside rank folders sends the scan below, and is listed as skipped there
        own = _scan(folder, folder.iterdir())
        if own.sources:
            return own
    return _scan(folder, _below(folder))


def _below(folder: Path) -> Iterator[Path]:
    """Everything below ``folder`` but hidden folders, which are never walked (a home folder's
    caches hold far more files than its traces)."""
    for top, dirs, files in os.walk(folder):
        dirs[:] = sorted(d for d in dirs if not d.startswith("."))
        for name in (*dirs, *files):
            yield Path(top, name)


def _scan(folder: Path, found: Iterator[Path]) -> FolderScan:
    """:func:`scan_folder` of the files ``found`` in ``folder`` (its own, or all below it)."""
    files = sorted(
        f
        for f in found
        if _named_like_source(f) and not any(part.startswith(".") for part in f.relative_to(folder).parts)
    )
    by_dir: dict[Path, list[str]] = {}
    for f in files:
        by_dir.setdefault(f.parent, []).append(f.name.lower())
    newest: dict[Path, str] = {}  # JAX log folder -> its newest run
    for d in by_dir:
        if d.parent.name == "profile" and d.parent.parent.name == "plugins":
            newest[d.parent] = max(newest.get(d.parent, ""), d.name)
    scan = FolderScan([])
    for f in files:
        low, siblings = f.name.lower(), by_dir[f.parent]
        if low.endswith(".nsys-rep") and low.removesuffix(".nsys-rep") + ".sqlite" in siblings:
            continue
        in_run = f.parent.parent in newest
        if in_run and f.parent.name != newest[f.parent.parent]:
            continue
        # a run folder also holds <host>.memory_profile.json.gz, and the same events again as
        # perfetto_trace.json.gz: its events are the <host>.trace.json(.gz) files
        only_perfetto = low.startswith("perfetto_trace.json") and not any(
            s.endswith(_JAX_TRACES) for s in siblings
        )
        if in_run and not (low.endswith(_JAX_TRACES) or only_perfetto):
            continue
        if not in_run and low.startswith("perfetto_trace.json") and not only_perfetto:
            continue
        why = None if low.endswith(NSYS_SUFFIXES) else not_a_trace(f)
        if why is None:
            scan.sources.append(f)
        else:
            scan.skipped.append((f, why))
    return scan


def _named_like_source(path: Path) -> bool:
    """A name that ends like a trace profui imports, of anything but a folder (a FIFO or a
    device so named is skipped, with why, rather than passed over in silence)."""
    return path.name.lower().endswith(IMPORTABLE_SUFFIXES) and not path.is_dir()


def folder_sources(folder: Path) -> list[Path]:
    """The trace files of ``folder`` (:func:`scan_folder`)."""
    return scan_folder(folder).sources


def source_scan(path: str | Path) -> FolderScan:
    """The foreign trace files ``path`` stands for (itself, or :func:`scan_folder` of a folder),
    resolved, with the files of the folder it skipped. No sources when ``path`` is neither such
    a file nor a folder holding any."""
    p = Path(path)
    if p.is_file():
        return FolderScan([p.resolve()] if is_source_file(p) else [])
    if p.is_dir():
        scan = scan_folder(p)
        return FolderScan([f.resolve() for f in scan.sources], scan.skipped)
    return FolderScan([])


def trace_sources(path: str | Path) -> list[Path]:
    """The foreign trace files ``path`` stands for (:func:`source_scan`), sorted."""
    return source_scan(path).sources


def refused_folder(path: Path, scan: FolderScan, none_line: str) -> TraceFormatError:
    """The one line refusing a folder with no trace files: ``none_line``, and the files it
    skipped with why when it skipped some."""
    if not scan.skipped:
        return TraceFormatError(path, none_line)
    named = "; ".join(f"{f.name}: {why}" for f, why in scan.skipped[:3])
    more = f"; and {len(scan.skipped) - 3} more" if len(scan.skipped) > 3 else ""
    return TraceFormatError(path, f"no trace files in this folder; skipped {named}{more}")
