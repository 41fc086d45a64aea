"""``profui explain TRACE [--json] [--step N] [--rank R] [--top K] [--annotation NAME --instance K]
[--hta-compat] [--path-events N]``: why the step is slow and what to change.

TRACE is whatever ``profui summary`` takes (a trace folder, Kineto JSON, an Nsight ``.sqlite``, a
JAX log folder). The text starts with the headline (:func:`profui.analysis.headline.headline`,
the words ``profui summary`` and the dashboard say), then the top K findings, each with its
evidence, where to look and the next step, then the critical path of the step in question by
kind: the job's median analysed step on its slowest rank unless ``--step``/``--rank`` say.

``--json`` prints :func:`profui.analysis.findings_doc.document` (its keys are documented in that
module: ``version, trace, headline, step, rank, annotation, critical_path {length_ns, by_kind,
events, events_total, events_truncated}, findings [{category, title, severity, recoverable_ns_per_step, recoverable_share, ranks,
steps, evidence [{label, value, unit, source}], look_at, timeline {rank, step, ts_ns},
next_step}], notes``). Every value comes from the ``findings`` and ``critical_path`` stage outputs.
"""

from __future__ import annotations

import json
import os
import re
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import typer

from .errors import UserError
from .markdown import chosen_format, format_option

#: The text's width at most (a terminal narrower than this wraps at its own width).
WIDTH = 80


def _params(hta_compat: bool) -> dict[str, Any]:
    from profui.analysis.pipeline import REGISTRY
    from profui.analysis.pipeline.params import resolve_params

    params = resolve_params(REGISTRY.params, None, {})
    if hta_compat:
        params["hta_compat"] = True
    return params


def annotation_window(events: Any, name: str, instance: int, rank: int | None) -> Any:
    """A one-row step-windows frame (``steps/windows.parquet``'s schema) of the ``instance``-th
    (0-based, in start order, as HTA counts them) host annotation called ``name`` on ``rank``
    (the first rank that has one when None). Raises UserError when there is none."""
    import polars as pl

    from profui.analysis.schemas import TABLES

    rows = events.filter(pl.col("kind") == "annotation", pl.col("name") == name)
    if rank is not None:
        rows = rows.filter(pl.col("rank") == rank)
    found = rows.select("node", "rank", "ts", "dur").sort("rank", "ts", "node").collect()
    if not found.height:
        where = f" on rank {rank}" if rank is not None else ""
        raise UserError(f"--annotation {name!r}: no such annotation{where}")
    first_rank = found["rank"][0]
    mine = found.filter(pl.col("rank") == first_rank)
    if not 0 <= instance < mine.height:
        raise UserError(
            f"--instance {instance}: {name!r} has {mine.height} instance(s) on rank {first_rank} (0 to {mine.height - 1})"
        )
    r = mine.row(instance, named=True)
    schema = TABLES[("steps", "windows.parquet")].empty().schema
    return pl.DataFrame(
        [
            {
                "node": r["node"],
                "rank": r["rank"],
                "step": instance,
                "name": name,
                "cpu_start_ns": r["ts"],
                "cpu_end_ns": r["ts"] + r["dur"],
                "cpu_dur_ns": r["dur"],
                "start_ns": None,
                "end_ns": None,
                "dur_ns": None,
                "n_launches": 0,
                "n_device_events": 0,
                "mapped": False,
            }
        ],
        schema=schema,
    )


def explain(
    trace: list[Path],
    step: int | None,
    rank: int | None,
    top: int | None,
    annotation: str | None,
    instance: int | None,
    hta_compat: bool,
    path_events: int | None = None,
    show_progress: bool = False,
) -> dict[str, Any]:
    """Resolve and analyse ``trace``; the explain document for the step (or annotation instance)
    asked for, its critical path's ``path_events`` longest stretches (None: all). A step the stage did not analyse (it takes at most ``critical_path.MAX_STEPS``
    per job) has its critical path computed here, on its own window. Bad options raise
    :class:`UserError` (one line, exit 2)."""
    import polars as pl

    from profui.analysis import critical_path as cpath
    from profui.analysis import critical_path_hta as cpath_hta
    from profui.analysis.findings_base import NO_MARKERS_NOTE, has_step_markers
    from profui.analysis.findings_doc import document, median_step, slowest_rank
    from profui.analysis.headline import headline
    from profui.analysis.pipeline import REGISTRY
    from profui.analysis.pipeline.bodies import retag_steps, stage_events
    from profui.analysis.result_tables import CriticalPathOutputs
    from profui.analysis.run import run
    from profui.analysis.step_window import numbers, step_listing
    from profui.analysis.trace import Trace
    from profui.capture.format import open_trace_dir

    from .sources import resolve_sources
    from .summary_cmd import import_progress, stage_progress

    if top is not None and top < 1:
        raise UserError(f"--top: must be at least 1, got {top}")
    if path_events is not None and path_events < 0:
        raise UserError(f"--path-events: must be 0 or more, got {path_events}")
    if (annotation is None) != (instance is None):
        raise UserError("--annotation and --instance go together: --annotation NAME --instance K")
    params = _params(hta_compat)
    with import_progress(sys.stderr.isatty()) as progress:
        path = resolve_sources(trace, progress=progress)
        t = Trace(open_trace_dir(path))
        result = None
        if show_progress and progress is not None:
            result = run(
                t,
                ("findings",),
                params,
                on_stage=stage_progress(progress, REGISTRY.with_ancestors(["findings"])),
            )
    if result is None:  # no bar to tell: the analysis runs after it is gone
        result = run(t, ("findings",), params)
    overview = result.ingest.trace["overview"]
    cp = result.critical_path
    windows = result.steps.windows
    head = headline(result.findings.findings, windows, cp.steps)
    notes: list[str] = []
    named = None

    def path_of(tables: Mapping[str, Any]) -> CriticalPathOutputs:
        """A critical path computed here for one window, read as the stage's are."""
        return CriticalPathOutputs("critical_path", tables)

    def events() -> Any:
        return stage_events(t, params, hta_compat)

    def on_demand(window: Any) -> CriticalPathOutputs:
        """The critical path of ``window`` alone (the stage's tables for it)."""
        return path_of(cpath.stage(events(), window, result.correlate.launches, hta_compat))

    if annotation is not None:
        if step is not None:
            raise UserError(f"--step {step}: not with --annotation (the path is the annotation's instance)")
        k = int(instance or 0)
        window = annotation_window(events(), annotation, k, rank)
        rank = int(window["rank"][0])
        if hta_compat:
            # HTA's own windows: its instances of the annotation, as its critical_path_analysis takes them
            cp = path_of(cpath_hta.stage(events(), annotation=annotation, instance=k))
            mine = cp.steps.filter(pl.col("rank") == rank)
            step = int(mine["step"][0]) if mine.height else k
        else:
            # the annotation is the window's marker, so its thread is the path's host thread
            # (the steps stage's step_annotation rule)
            tagged = retag_steps(events(), f"^{re.escape(annotation)}$")
            cp = path_of(cpath.stage(tagged, window, result.correlate.launches, hta_compat))
            step = k
        named = {"name": annotation, "instance": k}
        notes.append(
            f"the path shown is {annotation!r} instance {k} on rank {rank}; "
            "the findings are the analysed steps', not this instance's"
        )
    else:
        analysed = cp.steps
        if step is not None and step not in set(analysed["step"].to_list()):
            have = sorted(set(windows["step"].to_list()))
            if step not in have:
                raise UserError(f"--step {step}: no such step ({step_listing(have)})")
            cp = on_demand(windows.filter(pl.col("step") == step))
            analysed = cp.steps
            notes.append(
                f"step {step} is not among the analysed steps: its critical path is computed on its "
                "own; the findings are the analysed steps'"
            )
        if rank is not None and rank not in set(analysed["rank"].to_list()):
            ranks_listed = numbers(sorted(set(analysed["rank"].to_list())))
            where = f"step {step} has no path" if step is not None else "no analysed step"
            raise UserError(f"--rank {rank}: {where} on that rank (ranks: {ranks_listed})")
        if step is None:
            median, slowest = median_step(analysed)
            step = median
            rank = slowest if rank is None else rank
            if step is not None:
                notes.append(
                    f"step {step} is the job's median analysed step"
                    if has_step_markers(windows)
                    else NO_MARKERS_NOTE
                )
        elif rank is None:
            rank = slowest_rank(analysed, step)
        if step is None:
            notes.append("no step was analysed: no critical path, no time findings")
    return document(overview, cp, result.findings, step, rank, notes, top, head, named, path_events)


# -- text -----------------------------------------------------------------------------------------


def _value(value: float, unit: str) -> str:
    from profui.analysis.formatting import fmt_bytes, fmt_count, fmt_gbps, fmt_ns, fmt_pct

    if unit in ("ns", "ns_float"):
        return fmt_ns(value)
    if unit == "fraction":
        return fmt_pct(value, 0)
    if unit == "bytes":
        return fmt_bytes(value)
    if unit in ("count", "id"):
        return fmt_count(value)
    if unit == "GB/s":
        return fmt_gbps(value)
    return f"{value:.3g} {unit}"


def kind_label(kind: str, words: Any) -> str:
    """A critical-path kind in the trace's device words."""
    return {
        "host_compute": "host ops",
        "host_overhead": "host outside ops",
        "input": "data loading",
        "launch_delay": f"{words.launch} delay",
        "device_compute": f"{words.work}s",
        "device_overhead": f"{words.device} gaps",
        "transfer": "memory copies",
        "sync_wait": "sync wait",
        "communication": "communication",
        "rank_wait": "waiting for a rank",
    }.get(kind, kind.replace("_", " "))


class TextLines:
    """Where :func:`render` writes the text: lines of at most ``width`` characters, wrapped at
    words, names elided in the middle."""

    def __init__(self, width: int) -> None:
        self.width = width
        self.lines: list[str] = []

    def wrap(self, text: str, indent: str = "", first: str | None = None) -> None:
        """``text`` wrapped, its first line after ``first`` (else ``indent``), the rest after ``indent``."""
        import textwrap

        self.lines.extend(
            textwrap.wrap(
                text,
                self.width,
                initial_indent=indent if first is None else first,
                subsequent_indent=indent,
                break_on_hyphens=False,
            )
            or [""]
        )

    def trace(self, text: str) -> None:
        """The trace's line."""
        self.wrap(text)

    def headline(self, text: str) -> None:
        """The top finding's line."""
        self.wrap(text, "  ", "")

    def note(self, text: str) -> None:
        """A note on what is shown."""
        self.wrap(text, "  ", "note: ")

    def finding(self, n: int, title: str) -> None:
        """Finding ``n``'s title."""
        self.lines.append("")
        self.wrap(title, "   ", f"{n}. ")

    def evidence(self, rows: list[tuple[str, str]]) -> None:
        """A finding's evidence: (label, value) rows, on one line."""
        if rows:
            self.wrap("; ".join(f"{label} {value}" for label, value in rows), "     ", "   evidence: ")

    def look_at(self, names: list[str]) -> None:
        """Where to look: names, each elided to fit."""
        from profui.analysis.formatting import elide

        if names:
            text = "; ".join(elide(n, max(20, self.width - 16), bare=False) for n in names)
            self.wrap(text, "     ", "   look at: ")

    def field(self, label: str, text: str) -> None:
        """A finding's field (``worst``, ``next``)."""
        self.wrap(text, "     ", f"   {label}: ")

    def path(self, title: str, rows: list[tuple[str, str, str]]) -> None:
        """The critical path by kind: (kind, time, share) rows under its title."""
        from profui.analysis.formatting import elide

        self.lines.append("")
        self.wrap(title)
        labels = [elide(k, self.width - 21, bare=False) for k, _, _ in rows]
        pad = max(map(len, labels), default=0) + 2
        for label, (_, time, share) in zip(labels, rows, strict=True):
            self.lines.append(f"  {label:<{pad}}{time:>10}{share:>7}")


class MarkdownDoc:
    """Where :func:`render` writes Markdown: the headline first, in bold; each finding a heading
    (the top one's not repeating the headline) with its evidence as a table; the critical path by
    kind as a table; every name whole."""

    def __init__(self) -> None:
        from .markdown import MarkdownSink

        self.md = MarkdownSink()
        self._top: list[str] = []
        self._headline = ""

    def trace(self, text: str) -> None:
        """The trace's line."""
        self.md.paragraph(text)

    def headline(self, text: str) -> None:
        """The top finding's line: the document's first."""
        self._headline = text
        self.md.bold(text)
        self.md.blocks.insert(0, self.md.blocks.pop())

    def note(self, text: str) -> None:
        """A note on what is shown."""
        self.md.paragraph(text, "note")

    def finding(self, n: int, title: str) -> None:
        """Finding ``n``'s title, a heading; the headline's finding is ``1. The top finding``
        (its title is the bold line above, said once)."""
        said = n == 1 and title.rstrip(".") in self._headline
        self.md.heading(f"{n}. The top finding" if said else f"{n}. {title}", 3)

    def evidence(self, rows: list[tuple[str, str]]) -> None:
        """A finding's evidence as a table."""
        if rows:
            self.md.table(None, ["evidence", "value"], rows, [False, True])

    def look_at(self, names: list[str]) -> None:
        """Where to look, names whole."""
        if names:
            self.md.paragraph("; ".join(names), "look at")

    def field(self, label: str, text: str) -> None:
        """A finding's field (``worst``, ``next``)."""
        self.md.paragraph(text, label)

    def path(self, title: str, rows: list[tuple[str, str, str]]) -> None:
        """The critical path by kind as a table."""
        self.md.table(title, ["kind", "time", "share"], rows, [False, True, True])

    def getvalue(self) -> str:
        """The document."""
        return self.md.getvalue()


def render(doc: Mapping[str, Any], out: Any) -> None:
    """Write the explain document to ``out`` (:class:`TextLines` or :class:`MarkdownDoc`): the
    trace, the headline, notes, each finding (title, evidence, where to look, its worst instance,
    the next step), then the step's critical path by kind."""
    from profui.analysis.devices import fmt_devices, words_for
    from profui.analysis.findings_base import NO_MARKERS_NOTE
    from profui.analysis.formatting import fmt_ns, fmt_pct, plural

    words = words_for(doc["trace"])
    whole = NO_MARKERS_NOTE in doc["notes"]  # the one window is the whole trace: no step to name
    tr = doc["trace"]
    out.trace(f"{tr['name']} · {fmt_devices(tr)} · {plural(len(tr['ranks']), 'rank')}")
    out.headline(doc["headline"])
    for note in doc["notes"]:
        out.note(note)
    for i, f in enumerate(doc["findings"], 1):
        out.finding(i, f["title"])
        out.evidence([(e["label"], _value(e["value"], e["unit"])) for e in f["evidence"]])
        out.look_at(list(f["look_at"] or []))
        tl = f["timeline"]
        if tl["step"] is not None:
            at = (
                f" at {fmt_ns(tl['ts_ns'] - tr['start_ns'])} into the trace"
                if tl["ts_ns"] is not None
                else ""
            )
            step = "" if whole else f", step {tl['step']}"
            out.field("worst", f"rank {tl['rank']}{step}{at}")
        out.field("next", f["next_step"])
    cp = doc["critical_path"]
    if cp["length_ns"]:
        ann = doc["annotation"]
        what = (
            f"{ann['name']!r} instance {ann['instance']}"
            if ann
            else "the whole trace"
            if whole
            else f"step {doc['step']}"
        )
        kinds = sorted(((k, v) for k, v in cp["by_kind"].items() if v), key=lambda kv: -kv[1])
        out.path(
            f"Critical path of {what} on rank {doc['rank']}: {fmt_ns(cp['length_ns'])}",
            [(kind_label(k, words), fmt_ns(v), fmt_pct(v / cp["length_ns"], 0)) for k, v in kinds],
        )


def render_text(doc: Mapping[str, Any], width: int) -> list[str]:
    """The explain document as lines of at most ``width`` characters."""
    out = TextLines(width)
    render(doc, out)
    return out.lines


def render_markdown(doc: Mapping[str, Any]) -> str:
    """The explain document as Markdown (:class:`MarkdownDoc`)."""
    out = MarkdownDoc()
    render(doc, out)
    return out.getvalue()


def register(app: typer.Typer) -> None:
    """Add ``profui explain``."""

    @app.command("explain")
    def explain_command(
        trace: list[Path] = typer.Argument(
            ...,
            help="A profui trace folder, Kineto .json/.json.gz file(s), an Nsight .sqlite or a JAX log folder.",
            readable=False,
        ),
        as_json: bool = typer.Option(False, "--json", help="Print one JSON document instead of text."),
        fmt: str | None = format_option(),
        step: int | None = typer.Option(None, "--step", help="The step whose critical path is shown."),
        rank: int | None = typer.Option(None, "--rank", help="The rank whose critical path is shown."),
        top: int | None = typer.Option(None, "--top", help="Show the first K findings (default: all)."),
        path_events: int | None = typer.Option(
            None,
            "--path-events",
            help="Keep the N longest critical-path stretches in --json's critical_path.events, in path "
            "order (default: all; events_total says how many there are).",
        ),
        annotation: str | None = typer.Option(
            None, "--annotation", help="The critical path of an annotation's instance instead of a step."
        ),
        instance: int | None = typer.Option(
            None, "--instance", help="Which instance of --annotation (0 = the first, as HTA counts)."
        ),
        hta_compat: bool = typer.Option(
            False, "--hta-compat", help="Holistic Trace Analysis semantics and its critical-path kinds."
        ),
    ) -> None:
        """Why the step is slow and what to change: high-severity risks first (memory rising every
        step, near out of memory), then findings ranked by the time each would save per step on
        the critical path, with their evidence and next step.

        \b
        Examples:
          profui explain trace/
          profui explain rank0.json.gz --top 3
          profui explain trace/ --step 12 --rank 1
          profui explain trace/ --annotation forward --instance 2
          profui explain report.sqlite --json > explain.json
          profui explain report.sqlite --json --path-events 40
          profui explain trace/ --top 3 --format markdown >> "$GITHUB_STEP_SUMMARY"
        """
        out_format = chosen_format(fmt, as_json)
        doc = explain(
            trace, step, rank, top, annotation, instance, hta_compat, path_events, sys.stderr.isatty()
        )
        if out_format == "json":
            sys.stdout.write(json.dumps(doc, allow_nan=False) + "\n")
            return
        if out_format == "markdown":
            sys.stdout.write(render_markdown(doc))
            return
        columns = os.environ.get("COLUMNS", "")
        if sys.stdout.isatty():
            import shutil

            width = min(WIDTH, shutil.get_terminal_size().columns)
        else:
            width = min(WIDTH, int(columns)) if columns.isdigit() else WIDTH
        sys.stdout.write("\n".join(render_text(doc, width)) + "\n")
