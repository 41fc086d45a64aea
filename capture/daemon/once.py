"""Each spool hand-over is published into the trace once, whoever converts it and whoever dies.

A conversion runs in a child of the daemon, which outlives a daemon killed outright, and
profcap converts what the dead daemon left: without these rules both would publish the window.
A converter holds the hand-over's lock from its check to its publish (the lock dies with its
holder), and a window already in the trace is recognised by the ``file`` its events file names
as its source (``profui.source``, written by every converter): then it is not converted again.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from ..format import FooterError, read_footer
from ..format.layout import is_events_file, rank_dir

#: How long a converter waits for another one still converting the same hand-over.
CLAIM_WAIT_S = 300.0


class StillConverting(OSError):
    """Another converter held the hand-over for longer than :data:`CLAIM_WAIT_S`."""


@contextlib.contextmanager
def claimed(path: Path) -> Iterator[bool]:
    """Hold ``path``'s lock (waiting for a converter that holds it); yield False when the
    hand-over is gone (finished by another converter meanwhile)."""
    try:
        fd = os.open(path, os.O_RDONLY)
    except FileNotFoundError:
        yield False
        return
    try:
        deadline = time.monotonic() + CLAIM_WAIT_S
        while True:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except BlockingIOError:
                if time.monotonic() > deadline:
                    raise StillConverting(
                        f"another converter held {path.name} for {CLAIM_WAIT_S:.0f} s"
                    ) from None
                time.sleep(0.05)
        yield path.exists()
    finally:
        os.close(fd)


def published(path: Path, trace_dir: Path, node: str, rank: int) -> dict[str, Any] | None:
    """What a converter returns for ``path`` (rank, events, counts), when an events file of
    ``node``/``rank`` already holds it; None when none does."""
    folder = rank_dir(trace_dir, node, rank)
    try:
        names = sorted(n for n in os.listdir(folder) if is_events_file(n))
    except OSError:
        return None
    for name in names:
        try:
            footer = read_footer(folder / name)
        except (OSError, FooterError):
            continue
        if source_name(footer.metadata.get(b"profui.source")) == path.name:
            return {"rank": rank, "events": footer.num_rows, "counts": _counts(folder / name)}
    return None


def source_name(raw: bytes | None) -> str | None:
    """The file name an events file's ``profui.source`` note gives as its source, if any."""
    try:
        source = json.loads(raw) if raw else None
    except ValueError:
        return None
    file = source.get("file") if isinstance(source, dict) else None
    return Path(file).name if isinstance(file, str) else None


def _counts(events: Path) -> dict[str, int]:
    import pyarrow.compute as pc
    import pyarrow.parquet as pq

    try:
        kinds = pq.read_table(events, columns=["kind"]).column("kind")
    except (OSError, ValueError):
        return {}
    return dict(sorted((v["values"], v["counts"]) for v in pc.value_counts(kinds).to_pylist()))
