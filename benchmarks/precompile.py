"""Compile profui's sources to bytecode before a benchmark starts fresh interpreters.

An installed profui (``pip install .``) ships compiled ``.pyc`` files, as HTA, Polars and every
other installed package do; an editable checkout run with ``PYTHONDONTWRITEBYTECODE=1`` (as in
some containers) would instead recompile every module in every fresh process, which a user never
pays. Each benchmark that times fresh processes calls :func:`compile_sources` once first.
"""

from __future__ import annotations

import compileall
import subprocess
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
PACKAGES = ("analysis", "capture", "tui")

_OTHER = """
import compileall, importlib, pathlib
for pkg in ("analysis", "capture", "tui"):
    compileall.compile_dir(pathlib.Path(importlib.import_module("profui." + pkg).__file__).parent, quiet=1)
"""


def compile_sources(python: str | None = None) -> None:
    """Write ``__pycache__`` bytecode for every profui module (idempotent, quiet): this checkout's,
    or, given ``python``, the profui that interpreter imports (another checkout's, say)."""
    if python is None:
        for pkg in PACKAGES:
            compileall.compile_dir(REPO / pkg, quiet=1)
    else:
        subprocess.run([python, "-c", _OTHER], check=True)
