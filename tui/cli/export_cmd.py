"""``profui export TRACE -o out.json.gz``: Chrome-trace JSON for Perfetto UI and chrome://tracing."""

from __future__ import annotations

from pathlib import Path

import typer

from .errors import UserError


def run_export(trace: Path, out: Path, fmt: str, steps: str | None, ranks: str | None, force: bool) -> str:
    """Export and return the line to print."""
    if fmt != "chrome":
        raise UserError(
            f"unknown export format {fmt!r}: the one format is 'chrome' (Perfetto UI, chrome://tracing)"
        )
    from profui.analysis import open_trace
    from profui.analysis.selection import SelectionError, parse_ranks, parse_steps, select
    from profui.capture.kineto.export import check_output, write_chrome_trace

    from .sources import resolve_source

    check_output(out, force)  # refused before the trace is read, not after
    try:
        rank_list = parse_ranks(ranks) if ranks else None
        step_list = parse_steps(steps) if steps else None
        t = open_trace(resolve_source(trace))
        chosen = select(t, rank_list, step_list)
    except SelectionError as exc:
        raise UserError(f"{trace}: {exc}") from None
    manifest = t.manifest
    counts = write_chrome_trace(
        out,
        chosen.events.to_arrow(),
        chosen.metrics.to_arrow() if chosen.metrics.height else None,
        name=manifest.name,
        gpus=[g for g in manifest.gpus if isinstance(g, dict)],
        world_size=len(manifest.ranks) or None,
        notes=list(
            dict.fromkeys(n for s in manifest.sources if isinstance(s, dict) for n in s.get("notes", []))
        ),
        force=force,
    )
    ranks_text = ", ".join(f"{r}@{n}" for n, r in chosen.ranks)
    return (
        f"wrote {counts['events']:,} events, {counts['flows']:,} launch→device flows and "
        f"{counts['counters']:,} counter samples of rank(s) {ranks_text} to {out} "
        "(open it in https://ui.perfetto.dev or chrome://tracing)"
    )


def register(app: typer.Typer) -> None:
    """Add ``profui export``."""

    @app.command("export")
    def export_command(
        trace: Path = typer.Argument(
            ...,
            help="A profui trace folder, or a trace to import (Kineto JSON, Nsight .sqlite, JAX trace).",
            readable=False,
        ),
        out: Path = typer.Option(
            ..., "-o", "--out", help="Output file (.json, or .json.gz to compress).", readable=False
        ),
        fmt: str = typer.Option("chrome", "--format", help="Output format: chrome (Chrome-trace JSON)."),
        steps: str | None = typer.Option(
            None, "--steps", metavar="STEPS", help="Only these steps, e.g. 41, 40-42 or 3,7-8 (default: all)."
        ),
        ranks: str | None = typer.Option(
            None, "--ranks", metavar="RANKS", help="Only these ranks, e.g. 0,3 or 0-7 (default: all)."
        ),
        force: bool = typer.Option(False, "--force", help="Replace an existing output file."),
    ) -> None:
        """Write a trace as Chrome-trace JSON that Perfetto UI and chrome://tracing open.

        Launch→kernel flows, process and thread names, steps and annotations, and sampled metrics
        as counters are kept; times are exact to the ns. A file of one rank is also a PyTorch
        Profiler trace that `profui import` and HTA read back.

        \b
        Examples:
          profui export trace/ -o trace.json.gz
          profui export run.sqlite -o step41.json.gz --steps 41 --ranks 0,3
        """
        typer.echo(run_export(trace, out, fmt, steps, ranks, force))
