"""Each spool hand-over is published into the trace once, whoever converts it and whoever dies.

A conversion runs in a child of the daemon, which outlives a daemon killed outright, and
profcap converts what the dead daemon left: without these rules both would publish the window.
A converter holds the hand-over's lock from its check to its publish (the lock dies with its
holder; :class:`~profui.capture.format.lock.FileLock`, so a file system without locks converts
unlocked rather than not at all), and a window already in the trace is recognised by the ``file``
its events file names as its source (``profui.source``, written by every converter) together with
the hand-over's content hash noted beside it (``sha256``): a later script of the job whose process
reuses a pid hands over a new window under an old name, which is not that window.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from ..format import FooterError, read_footer
from ..format.layout import is_events_file, node_dir, rank_dir
from ..format.lock import FileLock

#: How long a converter waits for another one still converting the same hand-over.
CLAIM_WAIT_S = 300.0


class StillConverting(OSError):
    """Another converter held the hand-over for longer than :data:`CLAIM_WAIT_S`."""


@contextlib.contextmanager
def claimed(path: Path) -> Iterator[bool]:
    """Hold ``path``'s lock (waiting for a converter that holds it); yield False when the
    hand-over is gone (finished by another converter meanwhile)."""
    lock = FileLock(path, create=False)
    try:
        if not lock.acquire_within(CLAIM_WAIT_S):
            raise StillConverting(f"another converter held {path.name} for {CLAIM_WAIT_S:.0f} s")
    except FileNotFoundError:
        yield False
        return
    try:
        yield path.exists()
    finally:
        lock.release()


def content_hash(path: Path) -> str:
    """The hand-over's identity beside its name: the SHA-256 of its bytes (hex)."""
    h = hashlib.sha256()
    with open(path, "rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def published(path: Path, trace_dir: Path, node: str, rank: int) -> dict[str, Any] | None:
    """What a converter returns for ``path`` (rank, events, counts, sha256), when an events file
    of ``node`` already holds it (the same name and the same content hash); None when none does.
    ``rank``'s folder is looked in first, then the node's others: a Kineto window is stored under
    the rank its own ``distributedInfo`` names, which need not be the hand-over's."""
    first = rank_dir(trace_dir, node, rank)
    try:
        others = sorted(p for p in node_dir(trace_dir, node).glob("rank=*") if p != first)
    except OSError:
        others = []
    digest: str | None = None  # hashed once a name matches: most windows have no namesake
    for folder in (first, *others):
        try:
            names = sorted(n for n in os.listdir(folder) if is_events_file(n))
        except OSError:
            continue
        for name in names:
            try:
                footer = read_footer(folder / name)
            except (OSError, FooterError):
                continue
            file, sha = source_identity(footer.metadata.get(b"profui.source"))
            if file != path.name:
                continue
            if digest is None:
                try:
                    digest = content_hash(path)
                except OSError:
                    return None
            if sha == digest:
                return {
                    "rank": int(folder.name.removeprefix("rank=")),
                    "events": footer.num_rows,
                    "counts": _counts(folder / name),
                    "sha256": digest,
                }
    return None


def source_identity(raw: bytes | None) -> tuple[str | None, str | None]:
    """The file name and content hash an events file's ``profui.source`` note gives its source."""
    try:
        source = json.loads(raw) if raw else None
    except ValueError:
        return None, None
    if not isinstance(source, dict):
        return None, None
    file, sha = source.get("file"), source.get("sha256")
    return (Path(file).name if isinstance(file, str) else None, sha if isinstance(sha, str) else None)


def _counts(events: Path) -> dict[str, int]:
    import pyarrow.compute as pc
    import pyarrow.parquet as pq

    try:
        kinds = pq.read_table(events, columns=["kind"]).column("kind")
    except (OSError, ValueError):
        return {}
    return dict(sorted((v["values"], v["counts"]) for v in pc.value_counts(kinds).to_pylist()))
