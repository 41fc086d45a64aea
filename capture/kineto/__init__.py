"""Import of PyTorch Profiler / Kineto Chrome-trace JSON into the profui trace format.

``convert_kineto_file`` converts one file into an existing trace (used by profcap's daemon);
``import_kineto`` builds a whole new trace from files or folders (``profui import``).

The importer (pyarrow, numpy, msgspec, the C scan) loads on first use of one of its names
(PEP 562), so the import cache's look-up (:mod:`.cache`, which a warm ``profui open x.json.gz``
needs) costs nothing of it.
"""

from typing import Any

from .errors import KinetoFormatError

_IMPORTER = (
    "ConvertResult",
    "Imported",
    "convert_kineto_file",
    "detect_node",
    "detect_rank",
    "import_jobs",
    "import_kineto",
    "workers_for",
)

__all__ = ["KinetoFormatError", *_IMPORTER]


def __getattr__(name: str) -> Any:
    if name in _IMPORTER:
        from . import importer

        return getattr(importer, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
