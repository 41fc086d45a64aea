"""The whole package type-checks under mypy, on every test run.

The annotations are the design's contracts between modules (the typed result, what a stage
body takes and gives, which values may be None); a change that breaks one (a LazyFrame used as
a DataFrame, a None nobody handles) fails here, in the test run, rather than in a user's trace.
Plain mypy: the package's every module, untyped bodies not yet checked. ``mypy --strict``: the
stage graph (``analysis/pipeline``) and the result it produces (the summary document, the
declared schemas, the code-version key of its outputs), which every surface reads.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from package_root import package_root

#: mypy over the symlinked tree: ``profui`` is a namespace package (no ``__init__.py``) whose
#: modules are named from the root; packages without type information are not checked. Checked
#: against the oldest Python pyproject's requires-python claims: a use of a newer standard
#: library (Popen's process_group is 3.11's) fails here, though the tests run on a newer one.
FLAGS = [
    "--namespace-packages",
    "--explicit-package-bases",
    "--ignore-missing-imports",
    "--python-version",
    "3.10",
]


#: Checked with ``--strict``: the pipeline and the typed result (``pipeline/result.py``, its
#: generated accessors ``result_tables.py`` and row types ``result_rows.py``, their generator; modules the strict run imports
#: are read silently: their own errors are the plain run's).
STRICT = [
    "-p",
    "profui.analysis.pipeline",
    "-m",
    "profui.analysis.summary_document",
    "-m",
    "profui.analysis.schemas",
    "-m",
    "profui.capture.format.code_version",
    # the typed result's accessors and their generator
    "-m",
    "profui.analysis.result_tables",
    "-m",
    "profui.analysis.result_rows",
    "-m",
    "profui.analysis.result_codegen",
]


def _mypy(tmp_path: Path, *args: str) -> str:
    root = package_root(tmp_path / "root")
    mypy = Path(sys.executable).with_name("mypy")
    # a cache of its own: the result never rests on what an earlier run of other code stored
    proc = subprocess.run(
        [str(mypy), *FLAGS, "--cache-dir", str(tmp_path / "cache"), *args],
        cwd=root,
        capture_output=True,
        text=True,
        timeout=600,
    )
    out = proc.stdout + proc.stderr
    assert proc.returncode == 0, out
    assert "Success: no issues found" in out, out
    return out


def test_mypy_finds_no_error(tmp_path: Path) -> None:
    _mypy(tmp_path, "-p", "profui")


def test_mypy_strict_finds_no_error_in_the_pipeline_and_the_result(tmp_path: Path) -> None:
    out = _mypy(tmp_path, "--strict", "--follow-imports=silent", *STRICT)
    # every module of the pipeline was checked, not a package found empty
    pipeline = len(list((package_root(tmp_path / "count") / "profui" / "analysis" / "pipeline").glob("*.py")))
    assert f"in {pipeline + 6} source files" in out, out
