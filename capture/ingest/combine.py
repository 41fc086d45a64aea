"""Several trace folders of one job as one trace: ``profui open a/ b/``, ``profui summary a/ b/``.

A multi-node job captured one folder per node (``profcap -o run-$(hostname)``) is one job when
the identity rule (:mod:`profui.capture.format.jobs`) says so: the same profcap job id, or, for
imports, ranks that ran together. The combined trace is a folder in the import cache whose
``node=<host>`` entries link to the folders' own (nothing is copied) and whose manifest is the
folders' merged (:func:`~profui.capture.format.manifest.merge_manifests`); it is keyed by the
folders' paths and files and by this module's code version, so a changed folder (or combining
code) makes a new one. It is built under the entry's
lock and published by a rename (:func:`~profui.capture.ingest.cache.entry_lock`), so concurrent
commands build it once and never remove it under one another; an entry that no longer holds what
it was built with (a link gone or re-pointed, a file damaged) is built again, never served.
Folders of several jobs, a capture still running, or two folders holding the same node are
refused with one line.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import tempfile
from dataclasses import dataclass
from pathlib import Path

from profui.capture.format import (
    Manifest,
    TraceDir,
    TraceFormatError,
    manifest_path,
    open_trace_dir,
    trace_fingerprint,
    write_manifest,
)
from profui.capture.format.code_version import code_version
from profui.capture.format.jobs import group_jobs, not_one_job, part_of_manifest
from profui.capture.format.layout import combined_dir, parse_partition
from profui.capture.format.manifest import merge_manifests

from .cache import entry_lock, publish_entry

_DONE_MARK = ".profui-combined.json"
#: What to do with folders that are not one job.
APART_HINT = "open each folder on its own"


def combined_trace(folders: list[Path], cache_root: str | Path | None = None) -> Path:
    """The one trace of the trace folders ``folders`` (one job), built in the cache once.

    Raises :class:`TraceFormatError` (one line) for folders that are not one finished job.
    """
    traces = [open_trace_dir(f, require_data=False) for f in folders]
    for t in traces:
        if t.manifest.status == "running":
            raise TraceFormatError(
                t.path, "still being captured; open it on its own, or the folders together once it ends"
            )
    parts = [part_of_manifest(t.manifest, t.path.name) for t in traces]
    groups = group_jobs(parts)
    if len(groups) > 1:
        raise not_one_job(parts, groups, APART_HINT, traces[groups[1][0]].path)
    owner: dict[str, Path] = {}
    for t in traces:
        for node in t.nodes:
            if node in owner:
                raise TraceFormatError(
                    t.path, f"holds node {node}, as {owner[node]} does: not one job's nodes"
                )
            owner[node] = t.path
    key = hashlib.sha256(
        json.dumps(
            [[str(t.path.resolve()), trace_fingerprint(t)] for t in traces] + [code_version((__name__,))],
            sort_keys=True,
        ).encode()
    ).hexdigest()[:24]
    out = combined_dir(cache_root) / key
    want = _entry(traces)
    if _whole(out, want):
        return out
    out.parent.mkdir(parents=True, exist_ok=True)
    # built under the entry's lock, and published by a rename: a process reading an entry
    # another has just built never has it removed under it
    with entry_lock(out.parent, "combined", key):
        if _whole(out, want):  # built by another process while this one waited
            return out
        tmp = Path(tempfile.mkdtemp(prefix=f".{key}.", dir=out.parent))
        try:
            _build(want, tmp)
            publish_entry(tmp, out)
        finally:
            shutil.rmtree(tmp, ignore_errors=True)
    return out


@dataclass(frozen=True)
class _Entry:
    """What the combined trace of some trace folders holds."""

    links: dict[str, Path]  # node=<host> -> the folder's own node folder
    manifest: Manifest
    mark: dict[str, list[str]]


def _entry(traces: list[TraceDir]) -> _Entry:
    links = {
        child.name: child.resolve()
        for t in traces
        for child in sorted(t.path.iterdir())
        if parse_partition(child.name, "node") is not None and child.is_dir()
    }
    folders = [str(t.path.resolve()) for t in traces]
    merged = merge_manifests([t.manifest for t in traces])
    merged.notes.append("combined from the trace folders " + ", ".join(folders))
    return _Entry(links, merged, {"folders": folders})


def _build(want: _Entry, tmp: Path) -> None:
    """Write the combined trace ``want`` into the empty folder ``tmp``."""
    for name, target in want.links.items():
        os.symlink(target, tmp / name, target_is_directory=True)
    write_manifest(tmp, want.manifest)
    (tmp / _DONE_MARK).write_text(json.dumps(want.mark) + "\n")


def _whole(out: Path, want: _Entry) -> bool:
    """True when the cache entry ``out`` holds ``want`` as :func:`_build` wrote it: the same
    links, manifest and mark. A damaged entry (a link removed or re-pointed, a file truncated or
    replaced by a FIFO) is then built again, never served."""
    mark, manifest = out / _DONE_MARK, manifest_path(out)
    try:
        if not (mark.is_file() and manifest.is_file()):  # regular files only: a FIFO is never opened
            return False
        links = {p.name: p for p in out.iterdir() if parse_partition(p.name, "node") is not None}
        # the file itself, not read_manifest: that reads the nodes' own manifests when they have them
        return (
            json.loads(mark.read_text()) == want.mark
            and links.keys() == want.links.keys()
            and all(p.is_symlink() and Path(os.readlink(p)) == want.links[n] for n, p in links.items())
            and json.loads(manifest.read_text()) == json.loads(json.dumps(want.manifest.to_dict()))
        )
    except (OSError, ValueError, RecursionError):
        return False
