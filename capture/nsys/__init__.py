"""Import of Nsight Systems SQLite exports (``nsys export --type sqlite``) into the trace format.

:func:`convert_nsys_file` turns one export into one events file per profiled process (a rank);
the import pipeline in :mod:`profui.capture.kineto.importer` calls it for ``.sqlite`` and
``.nsys-rep`` sources. Only the standard library's ``sqlite3`` reads the export.
"""

from typing import Any

from .tables import NSYS_SUFFIXES, NsysFormatError, is_nsys_file

__all__ = ["NSYS_SUFFIXES", "NsysFormatError", "convert_nsys_file", "is_nsys_file"]


def __getattr__(name: str) -> Any:
    if name == "convert_nsys_file":
        from .convert import convert_nsys_file

        return convert_nsys_file
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
