"""``profui analyze``: the analysis as a DAG of named stages with cached outputs and run records.

- :data:`REGISTRY` (in :mod:`.registry`) declares every stage and parameter.
- :func:`analyze` runs it (whole, selectively with ``stages=``/``reference=``, or ``resume=``).
- :func:`list_runs` / :func:`load_run` read the run records (:func:`damaged_runs` names the
  damaged ones); :func:`latest_outputs` /
  :func:`load_output` give the TUI the newest successful outputs without computing anything;
  :func:`prune` forgets old runs and deletes the outputs no remaining run uses.
"""

from __future__ import annotations

from .dag import TRACE, Registry, Stage
from .engine import StageEvent, analyze
from .errors import PipelineError
from .outputs import damaged_runs, latest_outputs, list_runs, load_output, load_run, prune
from .params import Param, parse_assignments
from .planning import Plan, plan_run
from .records import RunRecord, StageRecord
from .registry import REGISTRY

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
