"""What a conversion hands the import pipeline, and the rules naming a source's node and rank.

Every converter (Kineto, Nsight, JAX) returns a :class:`ConvertResult` per rank it wrote; the
import pipeline (:mod:`profui.capture.ingest.importer`) writes the manifest from them.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from profui.capture.format import IMPORTABLE_SUFFIXES, safe_node_name

from .errors import KinetoFormatError

#: ``progress(done, total)``: how far a conversion is, in bytes of its source.
Progress = Callable[[int, int], None]

_RANK_IN_NAME = re.compile(r"rank[-_]?([0-9]+)", re.IGNORECASE)

#: Top-level keys too bulky or too private for the manifest; they stay in the Parquet metadata.
_NOT_IN_MANIFEST = ("INFO", "ERROR", "WARNING", "deviceProperties")


@dataclass
class ConvertResult:
    """What a converter wrote for one rank, and what it found in the source."""

    rank: int
    node: str
    num_events: int
    counts: dict[str, int]
    first_ts_ns: int | None
    last_end_ns: int | None
    devices: list[int]
    path: Path
    source: dict[str, Any] = field(default_factory=dict)
    gpus: list[dict[str, Any]] = field(default_factory=list)

    def manifest_entry(self, trace_dir: Path | None = None) -> dict[str, Any]:
        """The compact ``sources`` entry of the manifest for this file."""
        meta = self.source.get("metadata", {})
        entry = {
            "file": self.source.get("file"),
            "format": self.source.get("format", "kineto"),
            "node": self.node,
            "rank": self.rank,
            "rank_from": self.source.get("rank_from"),
            "events_file": str(self.path.relative_to(trace_dir)) if trace_dir else str(self.path),
            "num_events": self.num_events,
            "counts": self.counts,
            "devices": self.devices,
            "first_ts_ns": self.first_ts_ns,
            "last_end_ns": self.last_end_ns,
            "metadata": {k: v for k, v in meta.items() if k not in _NOT_IN_MANIFEST},
        }
        for key in ("flows", "skipped", "unknown_categories", "notes"):
            if self.source.get(key):
                entry[key] = self.source[key]
        return entry


def source_stem(path: Path) -> str:
    """File name without ``.json``/``.json.gz`` (or ``.sqlite``/``.nsys-rep``)."""
    name = path.name
    for suffix in IMPORTABLE_SUFFIXES:
        if name.endswith(suffix):
            return name[: -len(suffix)]
    return path.stem


#: Ranks are folder names and int32 in the trace format; no job has more.
MAX_RANK = (1 << 31) - 1


def detect_rank(metadata: dict[str, Any], path: Path, fallback: int | None) -> tuple[int, str]:
    """Rank of a trace: ``distributedInfo.rank``, else the file name, else ``fallback``, else 0."""
    info = metadata.get("distributedInfo")
    if isinstance(info, dict):
        rank = info.get("rank")
        if isinstance(rank, str) and rank.isascii() and rank.isdigit():  # "²" is isdigit() too
            rank = _rank_number(path, "distributedInfo.rank", rank)
        if isinstance(rank, int) and not isinstance(rank, bool) and rank >= 0:
            return _rank_number(path, "distributedInfo.rank", str(rank)), "distributedInfo"
    matches = _RANK_IN_NAME.findall(path.name)
    if matches:
        return _rank_number(path, "the rank in the file name", matches[-1]), "file name"
    if fallback is not None:
        return int(fallback), "--rank"
    return 0, "default"


def _rank_number(path: Path, what: str, digits: str) -> int:
    """The rank ``digits`` (ASCII) stand for, refused past :data:`MAX_RANK` (tested on the text:
    ``int()`` refuses more than 4,300 digits)."""
    value = digits.lstrip("0") or "0"
    if len(value) > len(str(MAX_RANK)) or int(value) > MAX_RANK:
        raise KinetoFormatError(path, f"{what} {digits[:24]} is beyond the {MAX_RANK:,} ranks a job can have")
    return int(value)


def detect_node(metadata: dict[str, Any], path: Path, node: str | None) -> str:
    """Node of a trace: the caller's ``node``, else the trace's host name, else the file stem."""
    if node:
        return safe_node_name(node)
    for key in ("host_name", "hostname", "hostName"):
        value = metadata.get(key)
        if isinstance(value, str) and value.strip():
            return safe_node_name(value)
    return safe_node_name(source_stem(path))


def source_size(src: Path) -> int:
    """A source file's size in bytes, at least 1 (what conversions report progress in)."""
    try:
        return max(src.stat().st_size, 1)
    except OSError:
        return 1
