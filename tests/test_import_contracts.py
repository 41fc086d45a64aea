"""The one import rule of DESIGN.md, checked by import-linter on every test run."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from realdata import REPO


def _lint_root(tmp: Path) -> Path:
    # import-linter walks files; profui.* is mapped by setuptools onto three folders, so build the
    # package tree it expects out of symlinks.
    pkg = tmp / "profui"
    pkg.mkdir()
    for folder in ("capture", "analysis", "tui"):
        (pkg / folder).symlink_to(REPO / folder, target_is_directory=True)
    return tmp


def test_import_contracts_kept(tmp_path: Path) -> None:
    root = _lint_root(tmp_path)
    env = dict(os.environ, PYTHONPATH=str(root))
    lint = Path(sys.executable).with_name("lint-imports")
    proc = subprocess.run(
        [str(lint), "--config", str(REPO / "pyproject.toml"), "--no-cache"],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    out = proc.stdout + proc.stderr
    assert proc.returncode == 0, out
    assert "0 broken" in out
