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
) -> str:
    """Import and return the summary line to print."""
    from profui.capture.kineto import import_kineto  # loaded by this command only (numpy, pyarrow)

    with progress_bar(sys.stderr.isatty()) as progress:
        manifest = import_kineto(
            sources, out, rank=rank, node=node, force=force, progress=progress, step_pattern=nvtx_step
        )
    events = sum(s["num_events"] for s in manifest.sources)
    ranks = ",".join(str(r) for r in manifest.ranks)
    return (
        f"imported {events:,} events from {len(manifest.sources)} file(s) into {out} "
        f"(node(s) {', '.join(manifest.hosts)}; rank(s) {ranks})"
    )


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
    ) -> None:
        """Convert PyTorch Profiler / Kineto JSON, Nsight Systems exports and JAX traces into a trace folder.

        Examples:

          profui import rank0.json.gz rank1.json.gz -o trace/

          profui import run.sqlite -o trace/ --nvtx-step '^train_step'

          profui import jax_logs/ -o trace/
        """
        typer.echo(run_import(traces, out, rank, node, force, nvtx_step))
