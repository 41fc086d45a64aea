"""``profui import TRACE... -o OUT``: convert PyTorch Profiler (Kineto) JSON and Nsight Systems
exports into a profui trace."""

from __future__ import annotations

import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import typer

from .errors import UserError
from .ranks_opts import scheduler_option, workers_option

IMPORT_SCHEDULER_HELP = (
    "Dask scheduler to convert the files on, one task per file, e.g. tcp://10.0.0.5:8786 (its workers "
    "must see the files and -o at the same paths); also $PROFUI_DASK_SCHEDULER. Default: a local "
    "cluster when several large files are imported, else one by one in this process."
)
IMPORT_WORKERS_HELP = (
    "Files converted at once on a local Dask cluster, e.g. --workers 4 (default: one per core, as "
    "memory allows, for 1 GiB of JSON or more on 4 cores or more; else one by one)."
)


@contextmanager
def progress_bar(enabled: bool) -> Iterator[Callable[[int, int], None] | None]:
    """A rich progress bar on stderr fed by ``(done, total)`` calls; None when not a terminal."""
    if not enabled:
        yield None
        return
    from rich.console import Console
    from rich.progress import BarColumn, DownloadColumn, Progress, TextColumn, TimeElapsedColumn

    with Progress(
        TextColumn("importing"),
        BarColumn(),
        DownloadColumn(),
        TimeElapsedColumn(),
        console=Console(stderr=True),
        transient=True,
    ) as bar:
        task = bar.add_task("import", total=None)

        def update(done: int, total: int) -> None:
            bar.update(task, completed=done, total=total)

        yield update


def run_import(
    sources: list[Path],
    out: Path,
    rank: int | None,
    node: str | None,
    force: bool,
    nvtx_step: str | None = None,
    separate_jobs: bool = False,
    scheduler: str | None = None,
    workers: int | None = None,
) -> str:
    """Import and return the summary lines to print: one by one in this process, or the files
    at once as tasks on Dask (``scheduler``, ``workers``, or by default for several large files:
    :func:`profui.capture.ingest.workers_for`)."""
    # loaded by this command only (numpy, pyarrow)
    from profui.analysis.cluster import scheduler_address
    from profui.analysis.inventory import keep_tallies
    from profui.capture.ingest import import_jobs, import_trace, workers_for

    options: dict[str, Any] = {"rank": rank, "node": node, "force": force, "step_pattern": nvtx_step}

    def run(mapper: Any = None) -> list:
        with progress_bar(sys.stderr.isatty()) as progress:
            if separate_jobs:
                return import_jobs(sources, out, progress=progress, mapper=mapper, **options).jobs
            return [(out, import_trace(sources, out, progress=progress, mapper=mapper, **options))]

    on_dask = bool(scheduler_address(scheduler) or workers)
    if not on_dask:
        workers = workers_for(sources)
        on_dask = workers > 1
    if on_dask:
        from profui.analysis.cluster import ClusterError, TaskFailed, dask_client, import_mapper

        try:
            with dask_client(scheduler, workers) as client:
                jobs = run(import_mapper(client))
        except (ClusterError, TaskFailed) as exc:
            raise UserError(str(exc)) from None
    else:
        jobs = run()
    lines = [] if len(jobs) == 1 else [f"{len(jobs)} jobs, one trace folder each under {out}:"]
    for folder, manifest in jobs:
        keep_tallies(folder)  # what `profui info` counts, counted now (pyarrow is loaded)
        events = sum(s["num_events"] for s in manifest.sources)
        ranks = ",".join(str(r) for r in manifest.ranks)
        files = len({s.get("file") for s in manifest.sources})
        lines.append(
            f"imported {events:,} events from {files} file(s) into {folder} "
            f"(node(s) {', '.join(manifest.hosts)}; rank(s) {ranks})"
        )
        lines += [f"note: {n}" for n in manifest.source_notes()]  # what the import left out, ...
    return "\n".join(lines)


def register(app: typer.Typer) -> None:
    """Add ``profui import``."""

    @app.command("import")
    def import_command(
        traces: list[Path] = typer.Argument(
            ...,
            help="Kineto trace files (.json, .json.gz; one per rank), Nsight Systems exports (.sqlite; "
            ".nsys-rep with nsys on PATH; a rank per process), JAX traces (a jax.profiler log folder), "
            "or folders of them.",
            readable=False,
        ),
        out: Path = typer.Option(..., "-o", "--out", help="Output trace folder (created).", readable=False),
        rank: int | None = typer.Option(
            None, "--rank", help="Rank when neither distributedInfo nor the file name gives one."
        ),
        node: str | None = typer.Option(None, "--node", help="Node (host) name; default: the trace's host."),
        force: bool = typer.Option(False, "--force", help="Replace an existing trace in the output folder."),
        nvtx_step: str | None = typer.Option(
            None,
            "--nvtx-step",
            metavar="REGEX",
            help="Nsight files: NVTX ranges whose text matches REGEX are training steps "
            "(default: PyTorch's ProfilerStep#N).",
        ),
        separate_jobs: bool = typer.Option(
            False,
            "--separate-jobs",
            help="Files of several jobs (other times, world sizes, job ids) become one trace folder per "
            "job under -o instead of being refused, e.g. profui import *.json.gz -o jobs/ --separate-jobs",
        ),
        scheduler: str | None = scheduler_option(IMPORT_SCHEDULER_HELP),
        workers: int | None = workers_option(IMPORT_WORKERS_HELP),
    ) -> None:
        """Convert PyTorch Profiler / Kineto JSON, Nsight Systems exports and JAX traces into a trace folder.

        The files must be one job (ranks that ran together); files of several jobs are refused,
        naming the files that do not belong and why, unless --separate-jobs.

        \b
        Examples:
          profui import rank0.json.gz rank1.json.gz -o trace/
          profui import run.sqlite -o trace/ --nvtx-step '^train_step'
          profui import jax_logs/ -o trace/
          profui import old_runs/*.json.gz -o jobs/ --separate-jobs
          profui import ranks/*.json.gz -o trace/ --scheduler tcp://10.0.0.5:8786
        """
        typer.echo(run_import(traces, out, rank, node, force, nvtx_step, separate_jobs, scheduler, workers))
