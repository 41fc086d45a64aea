"""Import of JAX / XLA profiler traces (``jax.profiler.trace``'s Chrome-trace JSON).

:func:`is_jax_trace` tells a JAX trace from a Kineto one by its process names; the import
pipeline in :mod:`profui.capture.kineto.importer` calls :func:`convert_jax_file` for them.
"""

from typing import Any

from .detect import is_jax_trace

__all__ = ["convert_jax_file", "is_jax_trace"]


def __getattr__(name: str) -> Any:
    if name == "convert_jax_file":
        from .convert import convert_jax_file

        return convert_jax_file
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
