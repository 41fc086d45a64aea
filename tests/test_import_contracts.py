"""The one import rule of the design, checked by import-linter on every test run.

The contracts in pyproject.toml follow its arrows: tui -> analysis -> capture.format;
tui.cli -> capture.ingest -> the converters -> capture.conversion -> capture.format; capture (everything else) -> capture.format.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from package_root import package_root
from realdata import REPO


def test_import_contracts_kept(tmp_path: Path) -> None:
    root = package_root(tmp_path)
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
    assert f"{len(_contracts())} kept, 0 broken" in out


def _contracts() -> list[dict]:
    tomllib = pytest.importorskip("tomllib")  # Python 3.11+
    with open(REPO / "pyproject.toml", "rb") as f:
        return tomllib.load(f)["tool"]["importlinter"]["contracts"]


#: The capture packages that import foreign traces, composed with analysis by tui.cli alone: the
#: pipeline of every format, the converters, and what the converters write through.
IMPORTERS = [
    "profui.capture.ingest",
    "profui.capture.kineto",
    "profui.capture.nsys",
    "profui.capture.jax",
    "profui.capture.conversion",
]


def test_capture_runtime_lists_name_every_capture_module() -> None:
    # "capture (everything else)" is spelled out in the contracts: every capture module but the
    # format and the importers (the pipeline, Kineto, Nsight, JAX, their shared base) must be in
    # each list, or a new module escapes the arrows.
    runtime = {
        f"profui.capture.{p.stem if p.is_file() else p.name}"
        for p in (REPO / "capture").iterdir()
        if (p.suffix == ".py" and p.stem != "__init__") or (p / "__init__.py").is_file()
    } - {"profui.capture.format", *IMPORTERS}
    by_name = {c["name"]: c for c in _contracts()}
    for name in (
        "capture.format is the contract: pyarrow and stdlib only",
        "analysis reads traces only through capture.format: no importer, no capture runtime",
        "tui imports from capture only capture.format (and, in tui.cli, the importers)",
    ):
        assert runtime <= set(by_name[name]["forbidden_modules"]), name
    protected = by_name[
        "only tui.cli composes the importers: ingest and the converters imported by tui.cli and capture alone"
    ]
    assert protected["protected_modules"] == IMPORTERS
    for name in (
        "capture.format is the contract: pyarrow and stdlib only",
        "analysis reads traces only through capture.format: no importer, no capture runtime",
    ):
        assert set(IMPORTERS) <= set(by_name[name]["forbidden_modules"]), name
    assert protected["allowed_importers"] == ["profui.tui.cli", "profui.capture"]
