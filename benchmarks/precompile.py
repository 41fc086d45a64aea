"""Compile profui's sources to bytecode before a benchmark starts fresh interpreters.

An installed profui (``pip install .``) ships compiled ``.pyc`` files, as HTA, Polars and every
other installed package do; an editable checkout run with ``PYTHONDONTWRITEBYTECODE=1`` (as in
some containers) would instead recompile every module in every fresh process, which a user never
pays. Each benchmark that times fresh processes calls :func:`compile_sources` once first.
"""

from __future__ import annotations

import compileall
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
PACKAGES = ("analysis", "capture", "tui")


def compile_sources() -> None:
    """Write ``__pycache__`` bytecode for every profui module (idempotent, quiet)."""
    for pkg in PACKAGES:
        compileall.compile_dir(REPO / pkg, quiet=1)
