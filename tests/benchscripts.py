"""The scripts of ``benchmarks/`` (not a package) loaded as modules, for the tests that hold them
to hand-checked cases."""

from __future__ import annotations

import importlib.util
import sys
from types import ModuleType

from realdata import REPO


def load(name: str) -> ModuleType:
    """``benchmarks/<name>.py`` as the module ``name`` (loaded once per test session)."""
    if name not in sys.modules:
        spec = importlib.util.spec_from_file_location(name, REPO / "benchmarks" / f"{name}.py")
        mod = importlib.util.module_from_spec(spec)
        sys.modules[name] = mod
        spec.loader.exec_module(mod)
    return sys.modules[name]
