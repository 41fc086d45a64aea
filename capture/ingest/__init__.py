"""The import pipeline of every format (Kineto JSON, Nsight Systems, JAX) into the trace format.

:func:`import_trace` builds a new trace from files or folders of any of them (``profui
import``), :func:`import_jobs` a trace per job; which files a folder holds is
:mod:`.sources`, the on-the-fly import cache :mod:`.cache`, several trace folders of one job as one
:mod:`.combine`. Each file goes to its format's converter (``profui.capture.kineto``, ``.nsys``,
``.jax``), which never imports this package back.

The pipeline (pyarrow, numpy, msgspec, the C scan) loads on first use of one of its names
(PEP 562), so the import cache's look-up (:mod:`.cache`, which a warm ``profui open x.json.gz``
needs) costs nothing of it.
"""

from typing import TYPE_CHECKING

from profui.capture.format.lazy import lazy_exports

if TYPE_CHECKING:
    from .importer import (
        Imported as Imported,
    )
    from .importer import (
        import_jobs as import_jobs,
    )
    from .importer import (
        import_trace as import_trace,
    )
    from .importer import (
        workers_for as workers_for,
    )

__getattr__, __dir__, __all__ = lazy_exports(
    __name__,
    dict.fromkeys(["Imported", "import_jobs", "import_trace", "workers_for"], "importer"),
)
