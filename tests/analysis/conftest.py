"""Fixtures of the analysis tests: shared real traces imported once per test session.

``imported_trace("nccl_parser_config-nccl_data")`` (or the full file name, or several names for a
multi-rank run) imports the shared Kineto file(s) with profui's own importer into a session
temporary folder and returns the opened :class:`profui.analysis.Trace`. Each distinct set of
files is imported only once per session.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from pathlib import Path

import polars as pl
import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from eventrows import events_frame  # noqa: E402

from profui.analysis import Trace, open_trace  # noqa: E402
from profui.capture.ingest import import_trace  # noqa: E402

from realdata import shared_trace, traces_dir  # noqa: E402


def trace_file_name(name: str) -> str:
    """``nccl_parser_config-nccl_data`` -> the shared file name ``hta-nccl_parser_config-nccl_data.json.gz``."""
    if name.endswith((".json", ".json.gz")):
        return name
    stem = name if name.startswith("hta-") else f"hta-{name}"
    for suffix in (".json.gz", ".json"):
        if (traces_dir() / f"{stem}{suffix}").is_file():
            return f"{stem}{suffix}"
    return f"{stem}.json.gz"


@pytest.fixture(scope="session")
def imported_trace(tmp_path_factory: pytest.TempPathFactory) -> Callable[..., Trace]:
    """Factory: ``imported_trace(name, *more_names)`` -> opened Trace of the imported shared file(s)."""
    cache: dict[tuple[str, ...], Trace] = {}
    root = tmp_path_factory.mktemp("imported")

    def get(*names: str) -> Trace:
        files = tuple(trace_file_name(n) for n in names)
        if files not in cache:
            sources = [shared_trace(f) for f in files]
            out = root / f"t{len(cache)}"
            import_trace(sources, out)
            cache[files] = open_trace(out)
        return cache[files]

    return get


@pytest.fixture(scope="session")
def make_events() -> Callable[[list[dict]], pl.LazyFrame]:
    """Factory fixture for :func:`events_frame` (import-free: ``conftest`` names are ambiguous)."""
    return events_frame
