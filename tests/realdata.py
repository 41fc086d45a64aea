"""Test helpers: where the real traces live, and the rule for their absence.

The real PyTorch Profiler traces are not ours to commit; they are found through
``PROFUI_TRACES`` (default ``../shared/traces`` beside the repository). Where they are absent
(a user's fresh clone) the tests that need them skip with the reason; with
``PROFUI_REQUIRE_TRACES=1`` (set by ``.ci/run``) their absence is a failure instead.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
SAMPLES = REPO / "samples"


def traces_dir() -> Path:
    """Folder of the shared real traces."""
    return Path(os.environ.get("PROFUI_TRACES", REPO.parent / "shared" / "traces")).resolve()


def _missing(reason: str) -> None:
    if os.environ.get("PROFUI_REQUIRE_TRACES") == "1":
        pytest.fail(f"{reason} (PROFUI_REQUIRE_TRACES=1 makes this a failure)")
    pytest.skip(reason)


def require_shared_traces() -> Path:
    """The shared traces folder; skip (or fail under CI) when absent."""
    d = traces_dir()
    if not d.is_dir() or not any(d.glob("hta-*")):
        _missing(f"real traces not found in {d}; set PROFUI_TRACES to the folder of shared traces")
    return d


def shared_trace(name: str) -> Path:
    """Path of one shared trace file by its file name; skip/fail when absent."""
    p = traces_dir() / name
    if not p.is_file():
        _missing(f"real trace {name} not found in {traces_dir()}")
    return p


def hta_reference(trace_stem: str) -> dict:
    """HTA's reference numbers for a shared trace (``reference/<stem>.json``)."""
    p = traces_dir() / "reference" / f"{trace_stem}.json"
    if not p.is_file():
        _missing(f"HTA reference {p.name} not found in {p.parent}")
    return json.loads(p.read_text())


def same_numbers(a: object, b: object, rel: float = 1e-12) -> bool:
    """Two JSON documents equal, floats to 12 significant digits.

    Polars sums floats in parallel chunks, so a float's last bit may differ between two runs of
    the same analysis; every other value (ints, strings, order, structure) must be identical.
    """
    if isinstance(a, float) and isinstance(b, float):
        return a == b or abs(a - b) <= rel * max(abs(a), abs(b))
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(same_numbers(a[k], b[k], rel) for k in a)
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(same_numbers(x, y, rel) for x, y in zip(a, b, strict=True))
    return type(a) is type(b) and a == b


def nsys_export(name: str) -> Path:
    """Path of a shared Nsight Systems export (``nsys/<name>.sqlite``); skip/fail when absent."""
    p = traces_dir() / "nsys" / f"{name}.sqlite"
    if not p.is_file():
        _missing(f"Nsight export {p.name} not found in {p.parent}")
    return p


#: The ``profui`` console script of the interpreter running the tests.
PROFUI = str(Path(sys.executable).with_name("profui"))


def run_profui(*args: str | Path, cache: Path | None = None, **env: str) -> subprocess.CompletedProcess:
    """``profui ARGS`` as a user runs it (no standard input, output captured), with its import
    cache at ``cache`` when given and ``env`` added to the environment."""
    environ = {**os.environ, **env}
    if cache is not None:
        environ["PROFUI_CACHE"] = str(cache)
    return subprocess.run(
        [PROFUI, *map(str, args)],
        capture_output=True,
        text=True,
        timeout=300,
        stdin=subprocess.DEVNULL,
        env=environ,
    )
