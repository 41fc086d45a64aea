"""The inventory's record: what each events file of a trace holds, kept so that ``profui info``
need not read the files again (nor load pyarrow and numpy, most of a small ``info``'s time).

The record is only a cache of :func:`profui.analysis.inventory.count_file`, the one counting rule:
a :class:`FileTally` per events file, in ``inventory.json`` in the trace's one cache store
(:func:`~profui.capture.format.private_dir_for`: ``trace/.profui/``, or profui's cache folder
for a read-only trace). A file's tally is believed only while the file has the size and
modification and change times it had when it was counted (:data:`StatKey`) and the counting
code is the one that counted it; any other file is counted again. Whatever does not decode to exactly the schema below (a
truncated write, a hand edit, a FIFO in its place) is a miss, never an error: the record is
derived data, recomputed and replaced, as the stage outputs and the dashboard's are.
"""

from __future__ import annotations

import json
import os
import stat
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from profui.capture.format import private_dir_for, write_bytes_atomic

#: The record's file in the trace's cache store.
RECORD = "inventory.json"
#: Raised when the record's layout changes (the counting code's own changes are in its key).
VERSION = 3

#: A file's key: its inode, size, modification and change times (ns), as :func:`os.stat` gives
#: them (the stage outputs' key, ``pipeline/artifacts.py``): a file rewritten in place with its
#: old size and its old modification time set back (``cp -p``, ``rsync -a``, ``touch -d``) still
#: has a new change time, which no user can set.
StatKey = tuple[int, int, int, int]


@dataclass(frozen=True)
class FileTally:
    """What one events file holds, as ``profui info`` counts it."""

    rows: int
    #: events by kind (the kinds present)
    kinds: dict[str, int]
    #: events on each device (a non-negative device number) by kind
    devices: dict[int, dict[str, int]]
    #: the first start and the last end (ns), None for a file without rows
    span: tuple[int, int] | None


def stat_key(path: Path) -> StatKey:
    """``path``'s inode, size, modification and change times."""
    st = os.stat(path)
    return st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns


def load(trace_path: Path, code: str) -> dict[str, tuple[StatKey, FileTally]]:
    """The record of the trace at ``trace_path``, counted by code version ``code``: each file's
    key and tally by its path relative to the trace; empty when there is none or it does not
    decode."""
    try:
        data = json.loads(_read(private_dir_for(trace_path) / RECORD))
        return _decode(data, code)
    except (OSError, ValueError, TypeError, KeyError, RecursionError):
        return {}


def save(trace_path: Path, code: str, entries: dict[str, tuple[StatKey, FileTally]]) -> None:
    """Keep ``entries`` as the trace's record (replacing it whole); a store that cannot be written
    (a read-only folder and cache, a full disk) keeps none: the next ``info`` counts again."""
    files = {
        rel: {
            "stat": list(key),
            "rows": t.rows,
            "kinds": t.kinds,
            "devices": [[dev, kind, n] for dev, by_kind in t.devices.items() for kind, n in by_kind.items()],
            "span": list(t.span) if t.span is not None else None,
        }
        for rel, (key, t) in entries.items()
    }
    data = json.dumps({"version": VERSION, "code": code, "files": files}, separators=(",", ":"))
    try:  # a cache: a crash before the data reach the disk loses it, and the next info counts again
        write_bytes_atomic(private_dir_for(trace_path) / RECORD, data.encode(), fsync=False)
    except OSError:
        pass


def _read(path: Path) -> bytes:
    """The record's bytes; OSError unless it is a regular file (a FIFO would block the open)."""
    fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK)
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise OSError(f"{path}: not a regular file")
        with os.fdopen(fd, "rb", closefd=False) as fh:
            return fh.read()
    finally:
        os.close(fd)


def _int(value: Any, low: int | None = 0) -> int:
    """``value`` when it is an int (never a bool) of at least ``low`` (None: any), else ValueError."""
    if type(value) is not int or (low is not None and value < low):
        raise ValueError(value)
    return value


def _decode(data: Any, code: str) -> dict[str, tuple[StatKey, FileTally]]:
    if not isinstance(data, dict) or set(data) != {"version", "code", "files"}:
        raise ValueError("not a record")
    if data["version"] != VERSION or data["code"] != code or not isinstance(data["files"], dict):
        raise ValueError("another layout or counting code")
    out = {}
    for rel, e in data["files"].items():
        if not isinstance(e, dict) or set(e) != {"stat", "rows", "kinds", "devices", "span"}:
            raise ValueError(rel)
        kinds = e["kinds"]
        if not isinstance(kinds, dict) or not all(
            isinstance(k, str) and _int(n, 1) for k, n in kinds.items()
        ):
            raise ValueError(rel)
        rows = _int(e["rows"])
        if sum(kinds.values()) != rows:  # every row has a kind
            raise ValueError(rel)
        devices: dict[int, dict[str, int]] = {}
        for item in e["devices"]:
            dev, kind, n = item  # a list of three, else ValueError/TypeError
            if not isinstance(kind, str) or _int(n, 1) > kinds.get(kind, 0):
                raise ValueError(rel)
            devices.setdefault(_int(dev), {})[kind] = n
        span = e["span"]
        if span is not None:
            start, end = span
            span = (_int(start, None), _int(end, None))
        if (span is None) != (rows == 0):
            raise ValueError(rel)
        ino, size, mtime_ns, ctime_ns = e["stat"]  # a list of four, else ValueError/TypeError
        key = (_int(ino), _int(size), _int(mtime_ns, None), _int(ctime_ns, None))
        out[rel] = (key, FileTally(rows, kinds, devices, span))
    return out
