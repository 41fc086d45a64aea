"""The whole package type-checks under mypy, on every test run.

The annotations are the design's contracts between modules (the typed result, what a stage
body takes and gives, which values may be None); a change that breaks one (a LazyFrame used as
a DataFrame, a None nobody handles) fails here, in the test run, rather than in a user's trace.
Plain mypy: the package's every module, untyped bodies not yet checked.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from package_root import package_root

#: mypy over the symlinked tree: ``profui`` is a namespace package (no ``__init__.py``) whose
#: modules are named from the root; packages without type information are not checked.
FLAGS = ["--namespace-packages", "--explicit-package-bases", "--ignore-missing-imports"]


def test_mypy_finds_no_error(tmp_path: Path) -> None:
    root = package_root(tmp_path / "root")
    mypy = Path(sys.executable).with_name("mypy")
    # a cache of its own: the result never rests on what an earlier run of other code stored
    proc = subprocess.run(
        [str(mypy), *FLAGS, "--cache-dir", str(tmp_path / "cache"), "-p", "profui"],
        cwd=root,
        capture_output=True,
        text=True,
        timeout=600,
    )
    out = proc.stdout + proc.stderr
    assert proc.returncode == 0, out
    assert "Success: no issues found" in out, out
