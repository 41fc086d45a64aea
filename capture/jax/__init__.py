"""Import of JAX / XLA profiler traces (``jax.profiler.trace``'s Chrome-trace JSON).

:func:`is_jax_trace` tells a JAX trace from a Kineto one by its process names; the import
pipeline in :mod:`profui.capture.ingest.importer` calls :func:`convert_jax_file` for them.
"""

from typing import TYPE_CHECKING

from profui.capture.format.lazy import lazy_exports

if TYPE_CHECKING:
    from .convert import convert_jax_file as convert_jax_file
    from .detect import is_jax_trace as is_jax_trace

__getattr__, __dir__, __all__ = lazy_exports(
    __name__, {"convert_jax_file": "convert", "is_jax_trace": "detect"}
)
