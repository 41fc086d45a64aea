"""The ``profui`` package tree that tools walking files expect, built out of symlinks.

setuptools maps ``profui.capture``, ``profui.analysis`` and ``profui.tui`` onto three top-level
folders (setup.py); import-linter and mypy look for ``profui/<folder>`` on disk instead.
"""

from __future__ import annotations

from pathlib import Path

from realdata import REPO


def package_root(tmp: Path) -> Path:
    """``tmp``, holding ``profui/{capture,analysis,tui}`` linked to the repository's folders."""
    pkg = tmp / "profui"
    pkg.mkdir(parents=True)
    for folder in ("capture", "analysis", "tui"):
        (pkg / folder).symlink_to(REPO / folder, target_is_directory=True)
    return tmp
