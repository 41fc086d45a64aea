"""``profui info TRACE [--json]``: manifest, ranks, devices, time span and event counts."""

from __future__ import annotations

import functools
import json
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import typer

from profui.analysis.formatting import elide_all
from profui.capture.format import TraceFormatError

from .help_format import HelpCommand


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
    lines.append(f"events    {info['num_events']:,} in {info['num_event_files']} file(s)")
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


@functools.cache
def _plain_coercion() -> type | None:
    """Typer 0.29's runtime coercion of one parameter, made plain (:class:`PlainValuesCommand`);
    None on a Typer without that layer (before 0.29, or after it changed)."""
    try:
        from typer._coercion import RuntimeParam, build_runtime_param
    except ImportError:
        return None

    class Plain(RuntimeParam):
        def _coerce_value(self, value: Any, param: Any, ctx: Any) -> Any:
            if self.annotation is Path and isinstance(value, str):
                return Path(value)
            if self.annotation is bool and isinstance(value, bool):
                return value
            return build_runtime_param(param.type_descriptor)._coerce_value(value, param=param, ctx=ctx)

    return Plain


class PlainValuesCommand(HelpCommand):
    """A command whose ``Path`` and ``bool`` parameters take the value given as Typer would,
    without loading pydantic (~0.05 s of a 0.1 s ``info``).

    Typer 0.29 builds a pydantic adapter for every parameter that has a value, given or not
    (the ``--help`` a command did not get is ``None``), only to make a ``Path`` of a string or
    to keep a ``bool`` here (no ``exists``, ``readable``, ``resolve_path`` ... check asked).
    Anything else (another value, a parameter with checks) goes through Typer's own coercion, and
    on a Typer without that layer nothing is changed.
    """

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        for param in self.params:
            _make_plain(param)

    def get_help_option(self, ctx: Any) -> Any:
        """The command's ``-h/--help`` (made when first asked for), its coercion made plain."""
        option = super().get_help_option(ctx)
        if option is not None:
            _make_plain(option)
        return option


def _make_plain(param: Any) -> None:
    """Give ``param`` the plain coercion (:class:`PlainValuesCommand`) when Typer's would only
    make a ``Path`` of a string or keep a ``bool``."""
    plain = _plain_coercion()
    desc = getattr(param, "type_descriptor", None)
    info = getattr(desc, "parameter_info", None)
    if plain is None or desc is None or info is None or getattr(param, "_runtime_param", 0) is not None:
        return
    if info.parser is not None or desc.annotation not in (Path, bool):
        return
    if desc.annotation is Path and (
        info.exists or info.writable or info.readable or info.resolve_path or info.allow_dash
    ):
        return  # a check Typer makes (file_okay, dir_okay: only with exists)
    if desc.annotation is Path and (info.path_type is not None or not (info.file_okay and info.dir_okay)):
        return
    try:
        param._runtime_param = plain(parameter_info=info, annotation=desc.annotation)
    except Exception:  # a Typer whose layer changed shape: its own coercion stays, every command runs
        return


def register(app: typer.Typer) -> None:
    """Add ``profui info``."""

    @app.command("info", cls=PlainValuesCommand)
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
