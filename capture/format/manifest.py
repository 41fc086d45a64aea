"""``manifest.json``: what the trace is, how it was made and how it ended.

Written atomically (temp file + rename). It never records environment-variable values, but
for the job id a user sets to make several profcap runs one job (``capture.job_id``).

The nodes of a multi-node capture sharing one folder each keep their own manifest in
``node=<host>/manifest.json``; the folder's own says so (``capture.per_node``) and
:func:`read_manifest` returns them merged (:func:`merge_manifests`), so no node ever writes
another's.
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


def gpu_index(gpu: dict[str, Any]) -> Any:
    """The device number of a manifest GPU (``gpus`` entry): NVML (profcap, the synthetic
    sample) writes it as ``index``, Kineto's ``deviceProperties`` (and imports) as ``id``;
    None when neither is there. The one rule for reading it."""
    return gpu.get("index", gpu.get("id"))


def gpu_key(gpu: dict[str, Any]) -> tuple[Any, Any]:
    """``(node, device number)`` of a manifest GPU (:func:`gpu_index`)."""
    return gpu.get("node"), gpu_index(gpu)


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

    def source_notes(self) -> list[str]:
        """What the importers say the reader should know (the sources' ``notes``, then an
        import's own: the files of a folder it skipped), once each."""
        notes: list[str] = []
        own = self.notes if self.status == "imported" else []
        for source in [*self.sources, {"notes": own}]:
            for note in source.get("notes", []) if isinstance(source, dict) else []:
                if isinstance(note, str) and note not in notes:
                    notes.append(note)
        return notes

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
    if manifest.capture.get("per_node") is True:
        nodes = sorted(p.parent for p in Path(trace_dir).glob("node=*/" + path.name) if p.is_file())
        if nodes:
            return merge_manifests([read_manifest(n, as_stored=as_stored) for n in nodes], manifest)
        return manifest
    if not as_stored and manifest.status == "running" and capture_gone(manifest.capture):
        # the capture was killed with all its processes: not live, and never will be
        manifest.status = "interrupted"
        manifest.notes.append(
            f"interrupted: the capture's process (pid {manifest.capture['pid']}) is gone and never "
            "closed the trace; what it wrote before is here, the rest was lost"
        )
    return manifest


#: How the statuses of a job's parts add up: the first one any part has is the job's.
_STATUS_ORDER = ("running", "interrupted", "failed", "stopped", "completed", "imported")


def merge_manifests(parts: list[Manifest], base: Manifest | None = None) -> Manifest:
    """One job's manifest from its parts' (one per node, or one per trace folder).

    The job runs while any part runs (else the first of interrupted, failed, stopped, completed
    a part ended with); it starts with the first part and ends with the last; hosts, ranks, GPUs,
    sources, notes and the traced windows are the parts' together. ``capture`` is the first
    part's settings without its process (``pid``, ``host``: each part's are in
    ``capture["nodes"]``, their liveness already read into their status). Name and job id come
    from ``base`` (a multi-node capture's shared top-level manifest) when given.
    """
    first = parts[0]
    statuses = [p.status for p in parts]
    status = next((s for s in _STATUS_ORDER if s in statuses), first.status)
    starts = [p.start_ns for p in parts if p.start_ns is not None]
    ends = [p.end_ns for p in parts if p.end_ns is not None]
    capture = {k: v for k, v in first.capture.items() if k not in ("pid", "host", "windows")}
    capture["windows"] = [w for p in parts for w in p.capture.get("windows", []) or []]
    capture["nodes"] = [
        {"hosts": p.hosts, "status": p.status, **{k: p.capture[k] for k in ("pid", "host") if k in p.capture}}
        for p in parts
    ]
    if base is not None:
        capture.update({k: v for k, v in base.capture.items() if k in ("job_id", "per_node")})
    codes = [p.exit_code for p in parts if p.exit_code is not None]
    notes: list[str] = []
    for p in parts:
        notes.extend(n for n in p.notes if n not in notes)
    gpus: list[dict[str, Any]] = []
    for p in parts:
        gpus.extend(g for g in p.gpus if g not in gpus)
    return Manifest(
        name=base.name if base is not None else first.name,
        status=status,
        source=first.source,
        synthetic=any(p.synthetic for p in parts),
        command=first.command,
        exit_code=next((c for c in codes if c != 0), codes[0] if codes else None),
        start_ns=min(starts) if starts else None,
        end_ns=max(ends) if ends and status != "running" else None,
        hosts=sorted({h for p in parts for h in p.hosts}),
        gpus=gpus,
        ranks=sorted({r for p in parts for r in p.ranks}),
        versions=first.versions,
        capture=capture,
        sources=[s for p in parts for s in p.sources],
        notes=notes,
        format_version=max(p.format_version for p in parts),
        extra=first.extra,
    )
