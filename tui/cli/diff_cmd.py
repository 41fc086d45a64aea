"""``profui diff BASE NEW``: what changed between two runs, and a regression gate for CI.

Each side is any trace profui reads (a trace folder, Kineto JSON, an Nsight export, a JAX
trace) or a named baseline (``baseline:NAME``, or ``NAME`` where no such path exists) saved with
``profui diff --save-baseline NAME TRACE``. Both sides come from their stage outputs (the stage
cache when warm), never from raw events.
"""

from __future__ import annotations

import json
import re
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import typer

from profui.analysis.top_n import TOP_N

from .errors import EXIT_BAD_INPUT, UserError
from .markdown import chosen_format, format_option

_BASELINE_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,99}$")
EXIT_GATE = 1


def _baselines() -> Path:
    from profui.capture.format.layout import baselines_dir

    return baselines_dir()


def _trace_profile(source: str, say: Callable[[str], None] | None = None) -> dict[str, Any]:
    from profui.analysis.diff import profile_of

    from .sources import resolve_source

    return profile_of(resolve_source(source, progress=say), label=str(source), say=say)


def load_profile(spec: str, say: Callable[[str], None] | None = None) -> dict[str, Any]:
    """The profile of ``spec``: a saved baseline (``baseline:NAME``, or a bare NAME that is not a
    path), its ``path`` then ``NAME (baseline)`` (the trace it was saved from stays its
    ``folder``), else a trace (its import and stages reporting progress lines to ``say``)."""
    name = spec.removeprefix("baseline:")
    if spec.startswith("baseline:") and not _BASELINE_NAME.fullmatch(name):
        raise UserError(f"bad baseline name {name!r}: letters, digits, '.', '_' and '-' only")
    if spec.startswith("baseline:") or (
        not Path(spec).expanduser().exists() and _BASELINE_NAME.fullmatch(name)
    ):
        prof = _read_baseline(spec, _baselines() / f"{name}.json")
        # the name the reader gave, not the path it was saved from (often the same trace/)
        return {**prof, "trace": {**prof["trace"], "path": f"{name} (baseline)"}}
    return _trace_profile(spec, say)


def _read_baseline(spec: str, saved: Path) -> dict[str, Any]:
    from profui.analysis.baseline import VERSIONS, BaselineError, decode
    from profui.capture.format.regular import not_regular

    problem = not_regular(saved)
    if problem:
        raise UserError(f"{saved}: {problem}")
    if not saved.is_file():
        known = sorted(p.stem for p in _baselines().glob("*.json")) if _baselines().is_dir() else []
        raise UserError(
            f"{spec}: no such trace or baseline (baselines: {', '.join(known) or 'none'}; "
            "save one with `profui diff --save-baseline NAME TRACE`)"
        )
    try:
        data = saved.read_bytes()
    except OSError as exc:
        raise UserError(f"{saved}: unreadable baseline ({exc.strerror or exc})") from None
    try:
        return decode(data)
    except BaselineError as exc:
        raise UserError(
            f"{saved}: not a profui baseline of version {' or '.join(map(str, VERSIONS))}: {exc}; "
            "save it again with --save-baseline"
        ) from None


def save_baseline(name: str, source: str) -> str:
    """Save ``source``'s profile as baseline ``name``; returns the line to print."""
    from profui.analysis.baseline import BaselineError, encode
    from profui.analysis.formatting import plural
    from profui.capture.format import write_bytes_atomic

    if not _BASELINE_NAME.fullmatch(name):
        raise UserError(f"bad baseline name {name!r}: letters, digits, '.', '_' and '-' only")
    prof = _trace_profile(source)
    try:
        data = encode(prof)
    except BaselineError as exc:
        raise UserError(f"{source}: its profile cannot be kept as a baseline: {exc}") from None
    out = _baselines() / f"{name}.json"
    try:
        write_bytes_atomic(out, data)  # makes the folder; the old baseline stays until it lands
    except OSError as exc:
        raise UserError(f"{out}: cannot save the baseline ({exc.strerror or exc})") from None
    return f"saved baseline {name} from {source} ({plural(len(prof['steps']), 'step')}) in {out}"


def text_width() -> int:
    """The width the text report is laid out in: ``COLUMNS`` when set, else the terminal's; piped
    output keeps whole rows (200) as ``profui summary``'s does."""
    import os
    import shutil
    import sys

    cols = os.environ.get("COLUMNS", "")
    if cols.isdigit() and int(cols) > 0:
        return int(cols)
    return shutil.get_terminal_size().columns if sys.stdout.isatty() else 200


def format_diff(result: dict[str, Any], width: int | None = None) -> str:
    """The text report of a diff result, laid out in ``width`` columns (:func:`text_width` when
    None): its tables by :mod:`.fit_table` (numbers and units whole, names elided in the middle,
    a table too wide goes on in parts under its names), its sentences wrapped at words."""
    import io

    from rich.console import Console

    out = io.StringIO()
    console = Console(
        file=out, width=width or text_width(), highlight=False, color_system=None, emoji=False, markup=False
    )
    emit_diff(result, console)
    return "\n".join(line.rstrip() for line in out.getvalue().rstrip("\n").split("\n"))


def markdown_diff(result: dict[str, Any]) -> str:
    """The diff as Markdown: the blocks of the text report (:func:`emit_diff`), each table with
    every cell whole (:class:`~.markdown.MarkdownSink`)."""
    from .markdown import MarkdownSink

    md = MarkdownSink(markup=False)  # as the text's console: names are text, never markup
    emit_diff(result, md)
    return md.getvalue()


def emit_diff(result: dict[str, Any], console: Any) -> None:
    """Print a diff result's blocks on ``console`` (a rich Console, or a
    :class:`~.markdown.MarkdownSink`): the two traces and the verdict (bold), the gate's verdict
    in one line (with ``--fail-if``), what else changed and the noise, the metrics, the findings,
    kernels, host ops, runtime calls and annotations that changed, the steps that changed most,
    and the gate's verdict on each ``--fail-if``."""
    from rich.text import Text

    from profui.analysis.diff import change_text, head_lines, per_step_text, status_tag, value_text
    from profui.analysis.formatting import fmt_ns, fmt_signed_ns
    from profui.analysis.gate import verdict_line

    from .fit_table import Column, FittedTable

    head = head_lines(result)
    gate_line = verdict_line(result.get("gate"))
    for n, line in enumerate(head[:1] + ([gate_line] if gate_line else []) + head[1:]):
        console.print(Text(line, style="bold" if n == 0 else ""))
    metrics = result["metrics"]
    shown = result["headline"] or []
    if shown:
        ms = [metrics[n] for n in shown]
        console.print()
        console.print(
            FittedTable(
                "Metrics",
                [
                    Column("metric", [m["label"] for m in ms], text=True, key=True),
                    Column("base", [value_text(m["base"], m["unit"]) for m in ms], right=True),
                    Column("new", [value_text(m["new"], m["unit"]) for m in ms], right=True),
                    Column("change", [change_text(m) for m in ms], right=True),
                    Column("verdict", [m["verdict"] for m in ms]),
                    Column("key (--fail-if)", list(shown)),
                ],
            )
        )
    found = [f for f in result.get("findings", []) if f["status"] != "same"]
    if found:
        console.print()
        console.print(
            FittedTable(
                "Findings by change of recoverable time per step",
                [
                    Column("finding", [f["label"] for f in found], text=True, key=True),
                    Column("status", [f["status"] for f in found], key=True),
                    Column("base", [per_step_text(f["base_ns_per_step"]) for f in found], right=True),
                    Column("new", [per_step_text(f["new_ns_per_step"]) for f in found], right=True),
                    Column("change", [fmt_signed_ns(f["delta_ns_per_step"]) for f in found], right=True),
                    Column("material", ["yes" if f["material"] else "no" for f in found]),
                ],
            )
        )
    sections = (
        ("Kernels", "kernels"),
        ("Host ops", "ops"),
        ("Runtime calls (device events they started)", "runtime"),
        ("Annotations", "annotations"),
    )
    for title, key in sections:
        rows = [r for r in result.get(key, []) if r["delta_ns"] or r["base_count"] != r["new_count"]]
        if not rows:
            continue
        tags = [status_tag(r).strip(" []") for r in rows]
        cols = [
            Column(
                "name",
                [r["name"] for r in rows],
                text=True,
                kernel=key == "kernels",
                key=True,
            ),
            # which run alone has it (new / gone); a column empty on every row is left out
            *([Column("in", tags, key=True)] if any(tags) else []),
            Column("change", [fmt_signed_ns(r["delta_ns"]) for r in rows], right=True),
            Column("base", [fmt_ns(r["base_total_ns"]) for r in rows], right=True),
            Column("new", [fmt_ns(r["new_total_ns"]) for r in rows], right=True),
            Column("calls", [f"{r['base_count']:,}→{r['new_count']:,}" for r in rows], right=True),
        ]
        if any(r.get("base_device_events") or r.get("new_device_events") for r in rows):
            events = [
                f"{r.get('base_device_events') or 0:,}→{r.get('new_device_events') or 0:,}" for r in rows
            ]
            cols.append(Column("device events", events, right=True))
        console.print()
        console.print(FittedTable(f"{title} by change of total time", cols))
    steps = [s for s in result["steps"] if s["delta_ns"]]
    if steps:
        worst = sorted(steps, key=lambda s: -abs(s["delta_ns"]))[:5]
        console.print()
        console.print(
            FittedTable(
                "Steps by change (aligned by step number)",
                [
                    Column("step", [str(s["step"]) for s in worst], right=True, key=True),
                    Column("base", [fmt_ns(s["base_ns"]) for s in worst], right=True),
                    Column("new", [fmt_ns(s["new_ns"]) for s in worst], right=True),
                    Column("change", [fmt_signed_ns(s["delta_ns"]) for s in worst], right=True),
                ],
            )
        )
    checks = gate_checks(result.get("gate"))
    if checks:
        console.print()
        console.print(
            FittedTable(
                "Gate (--fail-if)",
                [
                    Column("condition", [g["condition"] for g in checks], key=True),
                    Column("verdict", ["broken" if g["broken"] else "passed" for g in checks], key=True),
                    Column("why", [g["line"] for g in checks]),  # its numbers whole: never elided
                ],
            )
        )


def gate_checks(gate: Any) -> list[dict[str, Any]]:
    """The gate's verdict on each ``--fail-if`` condition (``condition, broken, line``) in a diff
    result's ``gate`` (:func:`profui.analysis.gate.gate_json`); none without conditions."""
    return list(gate["conditions"]) if gate else []


def diff_result(
    base_spec: str, new_spec: str, top: int, fail_if: list[str], say: Callable[[str], None] | None = None
) -> dict[str, Any]:
    """The diff of ``base_spec`` against ``new_spec`` (traces or baselines, :func:`load_profile`,
    progress lines to ``say``) with the verdict of each ``fail_if`` condition under ``"gate"``:
    what ``--json`` prints (the MCP server's ``diff`` tool returns it too). Bad conditions or
    sides raise :class:`UserError`."""
    from profui.analysis.diff import diff
    from profui.analysis.gate import GateError, gate_json, parse_condition

    if top < 0:  # as summary and explain refuse a --top below their least
        raise UserError(f"--top: must be at least 0 (0: all), got {top}")
    try:
        conditions = [parse_condition(c) for c in fail_if]
    except GateError as exc:
        raise UserError(str(exc)) from None
    base, new = (load_profile(s, say) for s in (base_spec, new_spec))
    result = diff(base, new, top=top)
    try:
        result["gate"] = gate_json(conditions, result)
    except GateError as exc:
        raise UserError(str(exc)) from None
    return result


def run_diff(
    specs: list[str], as_json: bool, top: int, fail_if: list[str], save: str | None, fmt: str = "text"
) -> int:
    """Run ``profui diff``, printing the diff as ``fmt`` (``text``, ``markdown``; ``json`` when
    ``as_json``); returns the exit status (0, or 1 when a --fail-if condition broke: the report is
    printed whole first)."""
    if save is not None:
        if len(specs) != 1:
            raise UserError("--save-baseline NAME takes one trace: profui diff --save-baseline NAME TRACE")
        typer.echo(save_baseline(save, specs[0]))
        return 0
    if len(specs) != 2:
        raise UserError("profui diff takes two traces (BASE NEW), or --save-baseline NAME TRACE")
    result = diff_result(specs[0], specs[1], top, fail_if)
    gate = result["gate"]
    if as_json or fmt == "json":
        typer.echo(json.dumps(result, indent=2, default=str))
    elif fmt == "markdown":
        sys.stdout.write(markdown_diff(result))
        sys.stdout.flush()
    else:
        typer.echo(format_diff(result))
    broken = [g for g in gate_checks(gate) if g["broken"]]
    for g in broken:
        typer.echo(f"profui: gate: {g['line']}", err=True)
    return EXIT_GATE if broken else 0


def register(app: typer.Typer) -> None:
    """Add ``profui diff``."""

    @app.command("diff")
    def diff_command(
        traces: list[str] = typer.Argument(
            ...,
            metavar="BASE NEW",
            help="Two traces (folders, Kineto JSON, Nsight .sqlite, JAX) or baselines.",
        ),
        as_json: bool = typer.Option(
            False, "--json", help="Print the diff as JSON (stable keys, version 2; profui schema diff)."
        ),
        fmt: str | None = format_option(),
        top: int = typer.Option(TOP_N, "--top", help="Kernels and annotations listed (0: all)."),
        fail_if: list[str] = typer.Option(
            [],
            "--fail-if",
            metavar="COND",
            help="Exit 1 when COND holds, e.g. 'step_p50>+5%' or 'idle_pct>+3pt'.",
        ),
        save_baseline_name: str | None = typer.Option(
            None, "--save-baseline", metavar="NAME", help="Save TRACE's numbers as baseline NAME instead."
        ),
    ) -> None:
        """What changed between two runs: step time against step-to-step noise, GPU busy and idle,
        activity shares, kernels (new, gone, moved), communication, launch latency, precision,
        annotations and copies, regressions first.

        Exit status: 0, or 1 when a --fail-if condition breaks (one line each on stderr), or 2 on
        bad input. Conditions: METRIC OP VALUE with % (relative), pt (share points), ns/us/ms/s
        or a plain count; METRIC is any key of the --json "metrics".

        \b
        Examples:
          profui diff before/ after/
          profui diff before.sqlite after.sqlite --json
          profui diff --save-baseline main trace/
          profui diff main trace/ --fail-if 'step_p50>+5%' --fail-if 'idle_pct>+3pt'
          profui diff main trace/ --fail-if 'step_p50>+5%' --format markdown \\
              >> "$GITHUB_STEP_SUMMARY"
        """
        out_format = chosen_format(fmt, as_json)
        code = run_diff(traces, out_format == "json", top, fail_if, save_baseline_name, out_format)
        if code:
            raise typer.Exit(code)


__all__ = [
    "EXIT_BAD_INPUT",
    "diff_result",
    "format_diff",
    "load_profile",
    "register",
    "run_diff",
    "save_baseline",
]
