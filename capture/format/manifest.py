"""``manifest.json``: what the trace is, how it was made and how it ended.

Written atomically (temp file + rename). It never records environment-variable values.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field, fields
from pathlib import Path
from types import UnionType
from typing import Any, Union, get_args, get_origin, get_type_hints

from .atomic import write_bytes_atomic
from .columns import SCHEMA_VERSION
from .errors import TraceFormatError
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
    source: str = "profcap"  # profcap | kineto-import | synthetic
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
        # the TUI and the summary crash far from the file); ManifestTypeError names the field
        hints = get_type_hints(cls)
        for name, value in kwargs.items():
            _check(value, hints[name], name)
        extra = dict(kwargs.pop("extra", {}) or {})
        extra.update({k: v for k, v in data.items() if k not in known})
        return cls(**kwargs, extra=extra)


class ManifestTypeError(ValueError):
    """A manifest field whose value is not of its declared type; ``str()`` names the field."""


_JSON_NAMES = {
    str: "a string",
    bool: "true or false",
    int: "an integer",
    float: "a number",
    list: "a list",
    dict: "an object",
}


def _json_name(value: Any) -> str:
    if value is None:
        return "null"
    for t in (bool, int, float, str, list, dict):
        if isinstance(value, t):
            return _JSON_NAMES[t]
    return type(value).__name__


def _check(value: Any, hint: Any, where: str) -> None:
    """Raise :class:`ManifestTypeError` unless ``value`` is of the type ``hint`` (the types a
    manifest's fields use: str, bool, int, float, Any, ``X | None``, ``list[X]``, ``dict[str, X]``)."""
    if hint is Any:
        return
    args = get_args(hint)
    origin = get_origin(hint)
    if origin in (Union, UnionType):
        if value is None and type(None) in args:
            return
        inner = [a for a in args if a is not type(None)]
        if len(inner) == 1:
            return _check(value, inner[0], where)
        if any(_fits(value, a) for a in inner):
            return
    elif origin in (list, dict) or hint in (list, dict):
        container = origin or hint
        if isinstance(value, container):
            if container is list:
                for i, item in enumerate(value):
                    _check(item, args[0] if args else Any, f"{where}[{i}]")
            else:
                for key, item in value.items():
                    _check(item, args[1] if len(args) == 2 else Any, f"{where}.{key}")
            return
    elif _fits(value, hint):
        return
    raise ManifestTypeError(f"'{where}' must be {_describe(hint)}, not {_json_name(value)}")


def _describe(hint: Any) -> str:
    origin = get_origin(hint)
    if origin in (Union, UnionType):
        return " or ".join(_describe(a) for a in get_args(hint) if a is not type(None))
    return _JSON_NAMES.get(origin or hint, "any value")


def _fits(value: Any, hint: Any) -> bool:
    if hint is bool:
        return isinstance(value, bool)
    if hint is int:
        return isinstance(value, int) and not isinstance(value, bool)
    if hint is float:
        return isinstance(value, (int, float)) and not isinstance(value, bool)
    return isinstance(value, hint) if isinstance(hint, type) else True


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
    except ManifestTypeError as exc:
        raise TraceFormatError(path, f"manifest field of the wrong type: {exc}") from None
    if not as_stored and manifest.status == "running" and capture_gone(manifest.capture):
        # the capture was killed with all its processes: not live, and never will be
        manifest.status = "interrupted"
        manifest.notes.append(
            f"interrupted: the capture's process (pid {manifest.capture['pid']}) is gone and never "
            "closed the trace; what it wrote before is here, the rest was lost"
        )
    return manifest
