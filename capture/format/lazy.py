"""Package names loaded on first use (PEP 562), the one implementation every profui package uses.

A package declares once where each public name lives and binds the hooks::

    __getattr__, __dir__, __all__ = lazy_exports(__name__, {"open_trace": "trace", ...})

Standard library only, and nothing but :mod:`importlib` at call time: it sits in the bottom
layer (capture.format) so that every package may import it.
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Mapping
from importlib import import_module
from typing import Any


def lazy_exports(
    package: str, homes: Mapping[str, str]
) -> tuple[Callable[[str], Any], Callable[[], list[str]], list[str]]:
    """The ``__getattr__``, ``__dir__`` and ``__all__`` of ``package`` whose public names are the
    keys of ``homes``, each loaded from its module on first use and then kept in the package.

    ``homes`` maps a name to ``"module"`` (the attribute of that name in ``package.module``) or
    ``"module:attribute"`` (another name there); modules are relative to ``package``.
    """
    namespace = sys.modules[package].__dict__

    def __getattr__(name: str) -> Any:
        where = homes.get(name)
        if where is None:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        module, _, attr = where.partition(":")
        value = getattr(import_module(f".{module}", package), attr or name)
        namespace[name] = value
        return value

    def __dir__() -> list[str]:
        return sorted({*namespace, *homes})

    return __getattr__, __dir__, sorted(homes)
