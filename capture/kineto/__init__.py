"""Import of PyTorch Profiler / Kineto Chrome-trace JSON into the profui trace format.

``convert_kineto_file`` converts one file into an existing trace (used by profcap's daemon);
``import_kineto`` builds a whole new trace from files or folders (``profui import``).

The importer (pyarrow, numpy, msgspec, the C scan) loads on first use of one of its names
(PEP 562), so the import cache's look-up (:mod:`.cache`, which a warm ``profui open x.json.gz``
needs) costs nothing of it.
"""

from typing import TYPE_CHECKING

from profui.capture.format.lazy import lazy_exports

if TYPE_CHECKING:
    from .errors import KinetoFormatError as KinetoFormatError
    from .importer import (
        ConvertResult as ConvertResult,
    )
    from .importer import (
        Imported as Imported,
    )
    from .importer import (
        convert_kineto_file as convert_kineto_file,
    )
    from .importer import (
        detect_node as detect_node,
    )
    from .importer import (
        detect_rank as detect_rank,
    )
    from .importer import (
        import_jobs as import_jobs,
    )
    from .importer import (
        import_kineto as import_kineto,
    )
    from .importer import (
        workers_for as workers_for,
    )

__getattr__, __dir__, __all__ = lazy_exports(
    __name__,
    {
        "KinetoFormatError": "errors",
        **dict.fromkeys(
            [
                "ConvertResult",
                "Imported",
                "convert_kineto_file",
                "detect_node",
                "detect_rank",
                "import_jobs",
                "import_kineto",
                "workers_for",
            ],
            "importer",
        ),
    },
)
