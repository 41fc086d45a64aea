"""The typed result of an analysis: every stage's outputs, and where they came from.

Every surface (text summary, JSON, dashboard, views, notebook, diff, explain) reads a
:class:`Result`; none computes. It is the same type whether the outputs were computed now, in
memory or by a recorded run, or read back from disk. Its per-stage properties
(``result.sync.host``, ``result.utilization.busy_rows()``) are generated from the declared
schemas (:mod:`profui.analysis.result_tables`), so a misspelt or renamed output fails ``mypy``, not a user's run.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from profui.analysis.result_tables import OutputMissing, StageAccessors

__all__ = ["OutputMissing", "Result", "Store"]

#: ``{stage: {output file: frame or value}}``.
Store = dict[str, dict[str, Any]]


@dataclass(eq=False)
class Result(StageAccessors):
    """The outputs of the stages asked for (``outputs``) and where they came from (``source``:
    ``cache``, ``computed (run-0003)``, ``computed in memory``, ``by ranks``). Compared by
    identity: tables have no one truth value of equality (compare them output by output)."""

    outputs: Store
    source: str

    def ran(self, stage: str) -> bool:
        """Whether the result holds ``stage``'s outputs (reading one it does not raises
        :class:`OutputMissing` naming it)."""
        return stage in self.outputs
