"""``profui analyze``: the analysis as a DAG of named stages with cached outputs and run records.

- :data:`REGISTRY` (in :mod:`.registry`) declares every stage and parameter.
- :func:`analyze` runs it (whole, selectively with ``stages=``/``reference=``, or ``resume=``).
- :func:`list_runs` / :func:`load_run` read the run records (:func:`damaged_runs` names the
  damaged ones); :func:`latest_outputs` /
  :func:`load_output` give the TUI the newest successful outputs without computing anything;
  :func:`prune` forgets old runs and deletes the outputs no remaining run uses.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from profui.capture.format.lazy import lazy_exports

if TYPE_CHECKING:
    from .dag import TRACE as TRACE
    from .dag import Registry as Registry
    from .dag import Stage as Stage
    from .engine import StageEvent as StageEvent
    from .engine import analyze as analyze
    from .errors import PipelineError as PipelineError
    from .outputs import (
        damaged_runs as damaged_runs,
    )
    from .outputs import (
        latest_outputs as latest_outputs,
    )
    from .outputs import (
        list_runs as list_runs,
    )
    from .outputs import (
        load_output as load_output,
    )
    from .outputs import (
        load_run as load_run,
    )
    from .outputs import (
        prune as prune,
    )
    from .params import Param as Param
    from .params import parse_assignments as parse_assignments
    from .planning import Plan as Plan
    from .planning import plan_run as plan_run
    from .records import RunRecord as RunRecord
    from .records import StageRecord as StageRecord
    from .registry import REGISTRY as REGISTRY

# Each name loads its own module on first use: the registry imports every stage (and Polars with
# them), which reading run records (`profui runs`) or catching PipelineError does not need.
__getattr__, __dir__, __all__ = lazy_exports(
    __name__,
    {
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
    },
)
