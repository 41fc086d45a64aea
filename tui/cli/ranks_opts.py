"""The options of a run by ranks on Dask (``--scheduler``, ``--workers``, ``--skip-bad-ranks``)
and its progress line, shared by ``profui summary`` and ``profui analyze``."""

from __future__ import annotations

import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import typer

from .errors import UserError

SCHEDULER_HELP = (
    "Dask scheduler to run the ranks on, e.g. tcp://10.0.0.5:8786 (started with `dask scheduler` and "
    "`dask worker ADDR`, or dask-jobqueue); also $PROFUI_DASK_SCHEDULER. Default: a local cluster when "
    "the trace is large or --workers is given."
)
WORKERS_HELP = "Worker processes of the local Dask cluster, e.g. --workers 8 (default: one per core)."
SKIP_HELP = "Leave out a rank whose files cannot be read, naming it, instead of failing the run."


def scheduler_option(help: str = SCHEDULER_HELP) -> Any:
    """``--scheduler ADDR``."""
    return typer.Option(None, "--scheduler", metavar="ADDR", help=help)


def workers_option(help: str = WORKERS_HELP) -> Any:
    """``--workers N``."""
    return typer.Option(None, "--workers", min=1, help=help)


def skip_option() -> Any:
    """``--skip-bad-ranks``."""
    return typer.Option(False, "--skip-bad-ranks", help=SKIP_HELP)


def by_ranks(path: Path, scheduler: str | None, workers: int | None, skip_bad_ranks: bool) -> bool:
    """Whether to run by ranks (see :func:`profui.analysis.distributed.wants_ranks`); skipping a
    bad rank is something only a run by ranks can do."""
    from profui.analysis.distributed import wants_ranks

    return skip_bad_ranks or wants_ranks(path, scheduler, workers)


def rank_progress(done: int, total: int, result: Any) -> None:
    """``k/N ranks`` on stderr as each rank finishes (one line, rewritten on a terminal)."""
    if sys.stderr.isatty():
        sys.stderr.write(f"\r{done}/{total} ranks" + ("\n" if done == total else ""))
    else:
        sys.stderr.write(f"{done}/{total} ranks\n")
    sys.stderr.flush()


def where_and_options(
    path: Path,
    scheduler: str | None,
    workers: int | None,
    skip: bool,
    on_rank: Callable[[int, int, Any], None] | None = None,
) -> dict[str, Any]:
    """:func:`profui.analysis.run.run`'s ``where`` for ``path`` and these options, with the run
    by ranks' options when it runs by ranks (progress: ``on_rank``, default
    :func:`rank_progress`)."""
    if not by_ranks(path, scheduler, workers, skip):
        return {"where": "memory"}
    return {
        "where": "ranks",
        "scheduler": scheduler,
        "workers": workers,
        "skip_bad_ranks": skip,
        "on_rank": on_rank or rank_progress,
    }


def run_summary_stage(path: Path, params: dict[str, Any], options: dict[str, Any]) -> Any:
    """The ``summary`` stage's Summary of ``path`` by :func:`profui.analysis.run.run` with
    ``options`` (:func:`where_and_options`'); a cluster that cannot be reached or a rank that
    cannot finish is the user's one line (exit 2)."""
    from profui.analysis.cluster import ClusterError
    from profui.analysis.distributed import RankFailed
    from profui.analysis.run import run

    try:
        result = run(path, ["summary"], params, **options)
    except (ClusterError, RankFailed) as exc:
        raise UserError(str(exc)) from None
    return result.summary.summary
