"""``profui import TRACE... -o OUT``: convert PyTorch Profiler (Kineto) JSON and Nsight Systems
exports into a profui trace."""

from __future__ import annotations

import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

import typer


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
) -> str:
    """Import and return the summary lines to print."""
    # loaded by this command only (numpy, pyarrow)
    from profui.capture.kineto import import_jobs, import_kineto

    options = {"rank": rank, "node": node, "force": force, "step_pattern": nvtx_step}
    with progress_bar(sys.stderr.isatty()) as progress:
        if separate_jobs:
            jobs = import_jobs(sources, out, progress=progress, **options).jobs
        else:
            jobs = [(out, import_kineto(sources, out, progress=progress, **options))]
    lines = [] if len(jobs) == 1 else [f"{len(jobs)} jobs, one trace folder each under {out}:"]
    for folder, manifest in jobs:
        events = sum(s["num_events"] for s in manifest.sources)
        ranks = ",".join(str(r) for r in manifest.ranks)
        files = len({s.get("file") for s in manifest.sources})
        lines.append(
            f"imported {events:,} events from {files} file(s) into {folder} "
            f"(node(s) {', '.join(manifest.hosts)}; rank(s) {ranks})"
        )
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
    ) -> None:
        """Convert PyTorch Profiler / Kineto JSON, Nsight Systems exports and JAX traces into a trace folder.

        The files must be one job (ranks that ran together); files of several jobs are refused,
        naming the files that do not belong and why, unless --separate-jobs.

        Examples:

          profui import rank0.json.gz rank1.json.gz -o trace/

          profui import run.sqlite -o trace/ --nvtx-step '^train_step'

          profui import jax_logs/ -o trace/

          profui import old_runs/*.json.gz -o jobs/ --separate-jobs
        """
        typer.echo(run_import(traces, out, rank, node, force, nvtx_step, separate_jobs))
