"""What the commands accept: a profui trace folder, or a foreign trace (Kineto JSON, an Nsight
Systems export) imported on the fly.

The command line is where importing is composed with analysis (analysis never writes traces):
a trace folder is used as is; anything else goes to the capture side's cached import,
:func:`profui.capture.kineto.cache.resolve_trace`, which is only loaded then (the importer
brings pyarrow and numpy with it).
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from profui.capture.format import is_trace_dir


def resolve_source(path: str | Path, progress: Callable[[str], None] | None = None) -> Path:
    """A trace folder for ``path``: itself, or its foreign trace files imported into the cache.

    Raises :class:`~profui.capture.format.TraceFormatError` (one line) for anything else.
    """
    p = Path(path).expanduser()
    if is_trace_dir(p):
        return p
    from profui.capture.kineto.cache import resolve_trace

    return resolve_trace(p, progress=progress)
