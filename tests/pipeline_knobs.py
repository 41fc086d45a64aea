"""Test-only knobs for the analysis pipeline, kept out of the users' parameter set.

:data:`KNOBBED` is :data:`~profui.analysis.pipeline.REGISTRY` plus three parameters that never
change what a stage writes (``affects_output=False``, so never part of a cache key), checked by
a wrapper around each stage body:

- ``debug_sleep_s`` + ``debug_sleep_stage``: the named stage(s) sleep after they start (to
  interrupt a run while a stage is running); with ``$PROFUI_TEST_SLEEP_MARK`` set, a stage
  creates that file as it begins to sleep, so a test can tell when (an in-memory run records
  nothing else);
- ``debug_fail``: the named stage(s) raise (to produce a failed run).

The wrapped bodies keep their code versions (``functools.wraps``: the source hashed is the
body's own), so runs with and without the knobs share cache entries.

In-process tests pass ``registry=KNOBBED`` to ``analyze``; command-line tests run
``python tests/pipeline_knobs.py analyze ...``, which installs KNOBBED as the registry and runs
``profui``.
"""

from __future__ import annotations

import functools
import os
import sys
import time
from dataclasses import replace
from pathlib import Path
from typing import Any

from profui.analysis.pipeline import REGISTRY, Param, Registry, Stage

KNOBS: tuple[Param, ...] = (
    Param(
        "debug_sleep_s",
        "float",
        0.0,
        "test knob: seconds the debug_sleep_stage stage(s) sleep",
        minimum=0,
        affects_output=False,
    ),
    Param(
        "debug_sleep_stage",
        "str",
        "",
        "test knob: comma-separated stages that sleep debug_sleep_s",
        affects_output=False,
    ),
    Param(
        "debug_fail",
        "str",
        "",
        "test knob: comma-separated stages made to raise an error",
        affects_output=False,
    ),
)


#: The environment variable naming the file a sleeping stage creates (see the module docstring).
SLEEP_MARK = "PROFUI_TEST_SLEEP_MARK"


def _knobbed(stage: Stage) -> Stage:
    body = stage.run

    @functools.wraps(body)
    def run(ctx: Any) -> Any:
        params = ctx.params
        if params["debug_sleep_s"] and stage.name in params["debug_sleep_stage"].split(","):
            mark = os.environ.get(SLEEP_MARK)
            if mark:
                Path(mark).touch()
            time.sleep(float(params["debug_sleep_s"]))
        if stage.name in params["debug_fail"].split(","):
            raise RuntimeError(f"stage {stage.name} made to fail by debug_fail")
        return body(ctx)

    return replace(stage, run=run)


#: The pipeline with the test knobs.
KNOBBED = Registry([_knobbed(s) for s in REGISTRY.stages.values()], (*REGISTRY.params.values(), *KNOBS))

#: ``[python, this file]``: ``profui`` with :data:`KNOBBED` as its pipeline.
PROFUI_WITH_KNOBS = [sys.executable, str(Path(__file__).resolve())]


def install() -> None:
    """Make KNOBBED the pipeline of this process (before the command line is imported)."""
    import profui.analysis.pipeline as pipeline
    import profui.analysis.pipeline.registry as registry

    registry.REGISTRY = KNOBBED
    pipeline.REGISTRY = KNOBBED


if __name__ == "__main__":
    install()
    from profui.tui.cli import main

    sys.argv[0] = "profui"
    main()
