"""``manifest.json``: what the trace is, how it was made and how it ended.

Written atomically (temp file + rename). It never records environment-variable values.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field, fields
from pathlib import Path
from typing import Any, get_type_hints

from .atomic import write_bytes_atomic
from .columns import SCHEMA_VERSION
from .errors import TraceFormatError
from .jsontypes import JsonTypeError, check_type
from .layout import manifest_path
from .liveness import capture_gone
from .regular import not_regular

STATUSES = ("running", "completed", "failed", "stopped", "imported")


@dataclass
class Manifest:
    """Contents of ``manifest.json``.

    ``status`` is ``running`` while a capture writes, then ``completed``, ``failed`` or
    ``stopped`` (read as ``interrupted`` when it says ``running`` but its profcap process is
    gone from this machine); traces made by ``profui import`` are ``imported``. Times are epoch ns.
    ``notes`` records what capture skipped or lost (no NVML, disk full, ...), one line each.
    """

    name: str
    status: str = "running"
    source: str = "profcap"  # profcap | kineto-import | nsys-import | import (mixed) | synthetic
    synthetic: bool = False
    command: list[str] = field(default_factory=list)
    exit_code: int | None = None
    start_ns: int | None = None
    end_ns: int | None = None
    hosts: list[str] = field(default_factory=list)
    gpus: list[dict[str, Any]] = field(default_factory=list)
    ranks: list[int] = field(default_factory=list)
    versions: dict[str, str] = field(default_factory=dict)
    capture: dict[str, Any] = field(default_factory=dict)
    sources: list[dict[str, Any]] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    format_version: int = SCHEMA_VERSION
    extra: dict[str, Any] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        """Plain JSON-ready dict."""
        return asdict(self)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Manifest:
        """Build from a parsed ``manifest.json``; unknown keys are kept in ``extra``."""
        known = {f.name for f in fields(cls)}
        kwargs = {k: v for k, v in data.items() if k in known}
        # every field's declared type is checked here (`name` a list, `capture` a list ... made
        # the TUI and the summary crash far from the file); JsonTypeError names the field
        hints = get_type_hints(cls)
        for name, value in kwargs.items():
            check_type(value, hints[name], name)
        extra = dict(kwargs.pop("extra", {}) or {})
        extra.update({k: v for k, v in data.items() if k not in known})
        return cls(**kwargs, extra=extra)


def write_manifest(trace_dir: str | Path, manifest: Manifest) -> Path:
    """Atomically write ``manifest.json`` into ``trace_dir`` (created if needed)."""
    path = manifest_path(trace_dir)
    data = json.dumps(manifest.to_dict(), indent=2, sort_keys=False).encode() + b"\n"
    write_bytes_atomic(path, data)
    return path


def read_manifest(trace_dir: str | Path, *, as_stored: bool = False) -> Manifest:
    """Read and validate ``manifest.json``; raise :class:`TraceFormatError` naming the problem.

    A ``running`` manifest whose capture process is gone reads as ``interrupted`` (with a note
    saying so), unless ``as_stored``: for a writer that goes on to close it."""
    path = manifest_path(trace_dir)
    problem = not_regular(path)
    if problem:
        raise TraceFormatError(path, problem)
    if not path.is_file():
        raise TraceFormatError(trace_dir, "not a profui trace (no manifest.json)")
    try:
        data = json.loads(path.read_bytes())
    except PermissionError:
        raise TraceFormatError(path, "permission denied") from None
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise TraceFormatError(path, f"manifest is not valid JSON ({exc})") from None
    except RecursionError:
        raise TraceFormatError(path, "manifest nested too deeply to be a profui manifest") from None
    if not isinstance(data, dict) or "name" not in data:
        raise TraceFormatError(path, "manifest has no 'name': not a profui manifest")
    version = data.get("format_version", SCHEMA_VERSION)
    if not isinstance(version, int) or version > SCHEMA_VERSION:
        raise TraceFormatError(
            path,
            f"written by a newer profui (format version {version}, this one reads up to "
            f"{SCHEMA_VERSION}); upgrade profui",
        )
    try:
        manifest = Manifest.from_dict(data)
    except JsonTypeError as exc:
        raise TraceFormatError(path, f"manifest field of the wrong type: {exc}") from None
    if not as_stored and manifest.status == "running" and capture_gone(manifest.capture):
        # the capture was killed with all its processes: not live, and never will be
        manifest.status = "interrupted"
        manifest.notes.append(
            f"interrupted: the capture's process (pid {manifest.capture['pid']}) is gone and never "
            "closed the trace; what it wrote before is here, the rest was lost"
        )
    return manifest
