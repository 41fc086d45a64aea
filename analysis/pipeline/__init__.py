"""``profui analyze``: the analysis as a DAG of named stages with cached outputs and run records.

- :data:`REGISTRY` (in :mod:`.registry`) declares every stage and parameter.
- :func:`analyze` runs it (whole, selectively with ``stages=``/``reference=``, or ``resume=``).
- :func:`list_runs` / :func:`load_run` read the run records (:func:`damaged_runs` names the
  damaged ones); :func:`latest_outputs` /
  :func:`load_output` give the TUI the newest successful outputs without computing anything;
  :func:`prune` forgets old runs and deletes the outputs no remaining run uses.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .dag import TRACE, Registry, Stage
    from .engine import StageEvent, analyze
    from .errors import PipelineError
    from .outputs import damaged_runs, latest_outputs, list_runs, load_output, load_run, prune
    from .params import Param, parse_assignments
    from .planning import Plan, plan_run
    from .records import RunRecord, StageRecord
    from .registry import REGISTRY

# Each name loads its own module on first use: the registry imports every stage (and Polars with
# them), which reading run records (`profui runs`) or catching PipelineError does not need.
_HOME = {
    "TRACE": "dag",
    "Registry": "dag",
    "Stage": "dag",
    "StageEvent": "engine",
    "analyze": "engine",
    "PipelineError": "errors",
    "damaged_runs": "outputs",
    "latest_outputs": "outputs",
    "list_runs": "outputs",
    "load_output": "outputs",
    "load_run": "outputs",
    "prune": "outputs",
    "Param": "params",
    "parse_assignments": "params",
    "Plan": "planning",
    "plan_run": "planning",
    "RunRecord": "records",
    "StageRecord": "records",
    "REGISTRY": "registry",
}

__all__ = [
    "REGISTRY",
    "TRACE",
    "Param",
    "PipelineError",
    "Plan",
    "Registry",
    "RunRecord",
    "Stage",
    "StageEvent",
    "StageRecord",
    "analyze",
    "damaged_runs",
    "latest_outputs",
    "list_runs",
    "load_output",
    "load_run",
    "parse_assignments",
    "plan_run",
    "prune",
]


def __getattr__(name: str) -> Any:
    if name in _HOME:
        value = getattr(importlib.import_module(f"{__name__}.{_HOME[name]}"), name)
        globals()[name] = value
        return value
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted([*globals(), *__all__])
