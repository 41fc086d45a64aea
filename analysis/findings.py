"""Findings: what to change and what it would save, ranked by the time each would recover per
step on the critical path (the ``critical_path`` stage's what-if replays).

(Being built; see issue 36. ``stage`` returns the declared tables.)
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from .schemas import TABLES

#: A finding's ``category``: the fixed vocabulary ``profui explain`` speaks.
CATEGORIES: tuple[str, ...] = (
    "input",
    "host",
    "launch",
    "sync",
    "transfer",
    "compute",
    "communication",
    "straggler",
    "memory",
    "precision",
    "idle",
)

#: ``explain --json``'s version: raised when a key changes meaning or goes.
VERSION = 1


def stage(inputs: Mapping[str, Mapping[str, Any]], overview: Mapping[str, Any]) -> dict[str, Any]:
    """The ``findings`` stage's outputs from its input stages' outputs (``{stage: {file: value}}``)."""
    return {f: TABLES[("findings", f)].empty() for f in ("findings.parquet", "evidence.parquet")}
