"""Closing a capture's manifest: status, exit code, ranks found, windows traced, notes."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

from .format import Manifest
from .format.layout import parse_partition


def ranks_on_disk(trace_dir: Path) -> list[int]:
    """Ranks that have a ``node=*/rank=*`` folder with at least one events file (``trace_dir``
    a node's own folder, ``node=<host>/``: that node's ranks only)."""
    ranks: set[int] = set()
    nodes = [trace_dir] if trace_dir.name.startswith("node=") else trace_dir.glob("node=*")
    for node in nodes:
        for rank in node.glob("rank=*"):
            value = parse_partition(rank.name, "rank")
            if value is not None and value.lstrip("-").isdigit() and any(rank.glob("events-*.parquet")):
                ranks.add(int(value))
    return sorted(ranks)


def finish_manifest(
    manifest: Manifest, trace_dir: Path, result: dict[str, Any] | None, *, status: str, exit_code: int | None
) -> Manifest:
    """Fill the end-of-run fields of ``manifest`` in place (and return it)."""
    manifest.status = status
    manifest.exit_code = exit_code
    manifest.end_ns = time.time_ns()
    manifest.ranks = ranks_on_disk(trace_dir)
    if result:
        for note in result.get("notes", []):
            if note not in manifest.notes:
                manifest.notes.append(note)
        windows = sorted(result.get("windows", []), key=lambda w: (w.get("rank") or 0, w.get("first") or 0))
        # GPUs as the traces describe them, where NVML could not say (no NVML library, ...)
        from_traces = not manifest.gpus
        for w in windows:
            for gpu in w.pop("gpus", []):
                if from_traces and gpu not in manifest.gpus:
                    manifest.gpus.append(gpu)
        manifest.capture["windows"] = windows
        manifest.capture["metrics_samples"] = result.get("samples", 0)
    return manifest
