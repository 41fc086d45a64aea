"""Shared fixtures. The helpers live in ``realdata`` (import them with ``from realdata import ...``:
a module named ``conftest`` is ambiguous once sub-folders have their own conftest.py)."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest
from hypothesis import settings

sys.path.insert(0, str(Path(__file__).resolve().parent))

# CI replays the same examples every run (a failure there reproduces anywhere) and times none
# (a loaded 2-core machine is no measure of an example); a developer's run explores new ones.
# A null where a table's schema declares none is refused in tests (and in every profui the tests
# start); a user's run keeps its analysis and is warned (analysis/schemas.py:STRICT_ENV).
os.environ.setdefault("PROFUI_STRICT_SCHEMAS", "1")

settings.register_profile("ci", derandomize=True, database=None, deadline=None, print_blob=True)
if os.environ.get("CI"):
    settings.load_profile("ci")

from realdata import REPO, SAMPLES, hta_reference, require_shared_traces, shared_trace, traces_dir  # noqa: E402

__all__ = ["REPO", "SAMPLES", "hta_reference", "shared_trace", "traces_dir"]


@pytest.fixture(scope="session")
def shared_traces() -> Path:
    """The shared traces folder; skip (or fail under CI) when absent."""
    return require_shared_traces()
