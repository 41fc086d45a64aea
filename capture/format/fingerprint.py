"""What identifies a set of files without reading them: one fingerprint for every cache.

The Kineto import cache, the analysis pipeline's stage outputs and the timeline index all key
their caches on :func:`files_fingerprint` (each file's path, size and modification time), so a
file that changes on disk invalidates every cache built from it, and nothing else does.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable
from pathlib import Path
from typing import Any


def files_fingerprint(paths: Iterable[Path], root: Path | None = None) -> list[list[Any]]:
    """``[[path, size, mtime_ns], ...]`` sorted by path; paths relative to ``root`` when given."""
    out = []
    for p in paths:
        st = Path(p).stat()
        out.append(
            [str(Path(p).relative_to(root)) if root is not None else str(p), st.st_size, st.st_mtime_ns]
        )
    return sorted(out)


def trace_fingerprint(
    trace_dir: Any, tables: tuple[str, ...] = ("events", "metrics"), manifest: bool = True
) -> dict:
    """The fingerprint of an opened trace (a :class:`TraceDir`): its data files of ``tables``
    (with their row counts) and, with ``manifest``, the manifest's sha256."""
    files = [f for f in (*trace_dir.events, *trace_dir.metrics) if f.table in tables]
    rows = {str(f.path.relative_to(trace_dir.path)): f.num_rows for f in files}
    entries = [[*e, rows[e[0]]] for e in files_fingerprint([f.path for f in files], trace_dir.path)]
    out: dict[str, Any] = {"files": entries}
    if manifest:
        m = trace_dir.path / "manifest.json"
        h = hashlib.sha256(m.read_bytes()) if m.is_file() else None
        # a multi-node capture's nodes each keep their own manifest (merged on read)
        for node_manifest in sorted(trace_dir.path.glob("node=*/manifest.json")):
            if h is not None and node_manifest.is_file():
                h.update(node_manifest.read_bytes())
        out["manifest_sha256"] = h.hexdigest() if h is not None else None
    return out


def digest(fingerprint: Any) -> str:
    """A short stable hash of a fingerprint (24 hex digits)."""
    return hashlib.sha256(json.dumps(fingerprint, sort_keys=True).encode()).hexdigest()[:24]
