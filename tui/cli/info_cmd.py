"""``profui info TRACE [--json]``: manifest, ranks, devices, time span and event counts."""

from __future__ import annotations

import json
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import typer

from profui.analysis.formatting import elide_all, plural
from profui.capture.format import TraceFormatError


def _when(ns: int | None) -> str:
    if ns is None:
        return "-"
    secs, rem = divmod(ns, 1_000_000_000)
    stamp = datetime.fromtimestamp(secs, tz=timezone.utc).strftime("%Y-%m-%d %H:%M:%S")
    return f"{stamp}.{rem:09d} UTC"


def _duration(ns: int | None) -> str:
    if ns is None:
        return "-"
    if ns >= 1_000_000_000:
        return f"{ns / 1e9:.3f} s"
    if ns >= 1_000_000:
        return f"{ns / 1e6:.3f} ms"
    return f"{ns / 1e3:.3f} µs"


def _gpu_number(gpu: dict[str, Any]) -> str:
    """A manifest GPU's device number by the one rule (:func:`gpu_index`), ``?`` when unrecorded."""
    from profui.capture.format.manifest import gpu_index

    n = gpu_index(gpu)
    return "?" if n is None else str(n)


def format_info(info: dict[str, Any]) -> str:
    """Readable text of :func:`profui.analysis.inventory.trace_info`'s result."""
    m = info["manifest"]
    span = info["span"]
    lines = [
        f"trace     {info['path']}",
        f"name      {m['name']}   status {m['status']}   source {m['source']}"
        + ("   (synthetic)" if m["synthetic"] else ""),
    ]
    if m["command"]:
        lines.append(f"command   {' '.join(m['command'])}   exit {m['exit_code']}")
    lines += [
        f"start     {_when(span['start_ns'])}",
        f"end       {_when(span['end_ns'])}",
        f"duration  {_duration(span['duration_ns'])}",
        f"hosts     {', '.join(m['hosts']) or '-'}",
        f"ranks     {', '.join(str(r['rank']) + '@' + r['node'] for r in info['ranks']) or '-'}",
    ]
    gpus = [g for g in m["gpus"] if isinstance(g, dict)]
    if gpus:
        lines.append(
            "gpus      "
            + "; ".join(
                f"{_gpu_number(g)}: {g.get('name') or 'name not recorded'} ({g.get('node', '')})"
                for g in gpus
            )
        )
    lines.append(f"events    {info['num_events']:,} in {plural(info['num_event_files'], 'events file')}")
    lines += [f"note      {n}" for n in m["source_notes"]]  # what the import left out, ...
    if info["num_metric_rows"]:
        lines.append(f"metrics   {info['num_metric_rows']:,} samples")
    if info["counts"]:
        lines.append("")
        lines.append("  kind              events")
        for kind, n in sorted(info["counts"].items(), key=lambda kv: -kv[1]):
            lines.append(f"  {kind:<14} {n:>10,}")
    if info["devices"]:
        lines.append("")
        lines.append("  device                    events   by kind")
        # node names of one job share their head ("run-rank-0", "run-rank-1"): cut in the middle
        nodes = elide_all([d["node"] for d in info["devices"]], 18, bare=False)
        for d, node in zip(info["devices"], nodes, strict=True):
            kinds = ", ".join(f"{k} {v:,}" for k, v in d["counts"].items())
            lines.append(f"  {node:<18} {d['device']:>3} {d['events']:>10,}   {kinds}")
    return "\n".join(lines)


def register(app: typer.Typer) -> None:
    """Add ``profui info``."""

    @app.command("info")
    def info_command(
        trace: Path = typer.Argument(
            ...,
            help="A profui trace folder, or a trace to import (Kineto JSON, Nsight .sqlite/.nsys-rep).",
            readable=False,
        ),
        as_json: bool = typer.Option(False, "--json", help="Print JSON instead of text."),
    ) -> None:
        """Show what a trace holds: manifest, ranks, devices, time span, event counts by kind.

        The counts are kept in the trace's .profui/ folder (profui's cache for a read-only trace),
        so the next info of an unchanged trace reads no events."""
        if not trace.exists():
            raise TraceFormatError(trace, "no such file or directory")
        from profui.analysis.inventory import trace_info

        from .sources import resolve_source

        info = trace_info(resolve_source(trace))
        typer.echo(json.dumps(info, indent=2) if as_json else format_info(info))
