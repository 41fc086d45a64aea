"""The trace catalogue: every trace folder under a root, one row each, newest first.

Rows come from each trace's ``manifest.json`` and its files' sizes (metadata only: no event file
is opened), so a folder of many traces is listed quickly. ``profui open runs/`` shows this
catalogue as its jobs list; in a notebook, ``scan_jobs("runs/")`` gives the same rows.
"""

from __future__ import annotations

import os
import time
from dataclasses import dataclass
from pathlib import Path

from profui.capture.format import Manifest, TraceFormatError, find_trace_dirs, read_manifest


@dataclass(frozen=True)
class JobRow:
    """One trace of the catalogue."""

    path: Path
    name: str
    created_ns: int | None
    status: str
    duration_ns: int | None
    nodes: int
    gpus: int
    size_bytes: int
    problem: str | None = None


def display_name(manifest: Manifest) -> str:
    """What to call a trace: its name, or for a trace imported into the cache under a
    temporary name (``.<key>.<random>``), the file(s) it was imported from."""
    sources = [s.get("file") for s in (manifest.sources or []) if isinstance(s, dict) and s.get("file")]
    if manifest.name.startswith(".") and sources:
        stem = str(sources[0]).rsplit("/", 1)[-1].removesuffix(".gz").removesuffix(".json")
        return stem + (f" +{len(sources) - 1}" if len(sources) > 1 else "")
    return manifest.name


def folder_size(path: Path) -> int:
    """Bytes of every file under ``path`` (files that vanish meanwhile count 0)."""
    total = 0
    for root, _dirs, files in os.walk(path):
        for f in files:
            try:
                total += os.stat(os.path.join(root, f)).st_size
            except OSError:
                pass
    return total


def job_row(path: Path) -> JobRow:
    """The row of one trace folder; an unreadable manifest gives a row with ``problem`` set.

    A running trace's duration runs up to now.
    """
    try:
        m = read_manifest(path)
    except TraceFormatError as exc:
        return JobRow(path, path.name, None, "unreadable", None, 0, 0, folder_size(path), str(exc))
    node_dirs = [p for p in path.glob("node=*") if p.is_dir()]
    nodes = len(m.hosts) or len(node_dirs)
    end = m.end_ns if m.end_ns else (time.time_ns() if m.status == "running" and m.start_ns else None)
    duration = end - m.start_ns if (end and m.start_ns) else None
    return JobRow(
        path, display_name(m), m.start_ns, m.status, duration, nodes, len(m.gpus), folder_size(path)
    )


def scan_jobs(root: str | Path) -> list[JobRow]:
    """Rows of every trace folder at or below ``root``, newest first."""
    rows = [job_row(p) for p in find_trace_dirs(Path(root))]
    rows.sort(key=lambda r: r.created_ns or 0, reverse=True)
    return rows
