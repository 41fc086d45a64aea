"""Shared fixtures. The helpers live in ``realdata`` (import them with ``from realdata import ...``:
a module named ``conftest`` is ambiguous once sub-folders have their own conftest.py)."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))

from realdata import REPO, SAMPLES, hta_reference, require_shared_traces, shared_trace, traces_dir  # noqa: E402

__all__ = ["REPO", "SAMPLES", "hta_reference", "shared_trace", "traces_dir"]


@pytest.fixture(scope="session")
def shared_traces() -> Path:
    """The shared traces folder; skip (or fail under CI) when absent."""
    return require_shared_traces()
