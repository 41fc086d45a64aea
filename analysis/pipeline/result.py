"""The typed result of an analysis: every stage's outputs, and where they came from.

Every surface (text summary, JSON, dashboard, views, notebook, diff, explain) reads a
:class:`Result`; none computes. It is the same type whether the outputs were computed now, in
memory or by a recorded run, or read back from disk.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

#: ``{stage: {output file: frame or value}}``.
Store = dict[str, dict[str, Any]]


@dataclass
class Result:
    """The outputs of the stages asked for (``outputs``) and where they came from (``source``:
    ``cache``, ``computed (run-0003)``, ``computed in memory``, ``by ranks``)."""

    outputs: Store
    source: str
