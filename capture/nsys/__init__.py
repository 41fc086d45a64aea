"""Import of Nsight Systems SQLite exports (``nsys export --type sqlite``) into the trace format.

:func:`convert_nsys_file` turns one export into one events file per profiled process (a rank);
the import pipeline in :mod:`profui.capture.ingest.importer` calls it for ``.sqlite`` and
``.nsys-rep`` sources. Only the standard library's ``sqlite3`` reads the export.
"""

from typing import TYPE_CHECKING

from profui.capture.format.lazy import lazy_exports

if TYPE_CHECKING:
    from .convert import convert_nsys_file as convert_nsys_file
    from .tables import (
        NSYS_SUFFIXES as NSYS_SUFFIXES,
    )
    from .tables import (
        NsysFormatError as NsysFormatError,
    )
    from .tables import (
        is_nsys_file as is_nsys_file,
    )

__getattr__, __dir__, __all__ = lazy_exports(
    __name__,
    {
        "NSYS_SUFFIXES": "tables",
        "NsysFormatError": "tables",
        "is_nsys_file": "tables",
        "convert_nsys_file": "convert",
    },
)
