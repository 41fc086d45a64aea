"""The MCP server's tools as plain functions: each takes the tool's arguments (and a ``say``
callback for progress lines) and returns a JSON-ready dict; bad input raises what the command
line raises (:class:`~profui.tui.cli.errors.UserError`, ``TraceFormatError``), whose line
:func:`error_line` gives. No ``mcp`` import here: the functions run and test without the SDK.

``summary``, ``explain``, ``diff`` and ``import_trace``'s ``info`` call the functions the
commands call, so a tool's result equals the command's ``--json`` for the same question.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from profui.analysis.top_n import TOP_N
from profui.tui.cli.errors import UserError

if TYPE_CHECKING:
    from profui.analysis.pipeline.result import Result

Say = Callable[[str], None]

#: Most rows ``events`` returns in one call.
MAX_EVENTS = 5000
#: Most rows ``top`` returns in one call.
MAX_TOP = 1000
#: Most job folders a refusal of a folder of several jobs names.
MAX_JOBS_NAMED = 10
#: How deep ``list_traces`` walks below its folder, and how many entries it looks at in all.
LIST_DEPTH, LIST_ENTRIES = 6, 50_000


def _quiet(_line: str) -> None:
    pass


def _path(text: str, what: str = "trace") -> Path:
    """``text`` as a path that exists and is no FIFO, device or socket (refused before anything
    opens it, so a FIFO never blocks a call)."""
    from profui.capture.format import TraceFormatError
    from profui.capture.format.regular import not_regular

    if not isinstance(text, str) or not text.strip():
        raise UserError(f"{what}: give a path")
    p = Path(text).expanduser()
    if not p.exists():
        if not p.is_absolute():
            raise TraceFormatError(
                p,
                f"no such file or directory (a relative path is taken from the server's working folder, {os.getcwd()})",
            )
        raise TraceFormatError(p, "no such file or directory")
    problem = not_regular(p)
    if problem:
        raise TraceFormatError(p, problem)
    return p


def _resolve(trace: str, say: Say) -> Path:
    """The trace folder of ``trace``: itself, or its foreign files imported into the cache
    (``profui import``'s cached path, :func:`profui.tui.cli.sources.resolve_source`)."""
    from profui.capture.format import TraceFormatError
    from profui.tui.cli.sources import resolve_source

    p = _path(trace)
    try:
        return resolve_source(p, progress=say)
    except TraceFormatError:
        jobs = _jobs_imported(p)
        if len(jobs) < 2:
            raise
        named = ", ".join(map(str, jobs[:MAX_JOBS_NAMED]))
        more = (
            f" (and {len(jobs) - MAX_JOBS_NAMED} more: list_traces names them)"
            if len(jobs) > MAX_JOBS_NAMED
            else ""
        )
        raise UserError(
            f"{p}: its trace files are {len(jobs)} jobs, not one (imported one folder per job); "
            f"call import_trace (or this tool) on one of: {named}{more}"
        ) from None


def _jobs_imported(path: Path) -> list[Path]:
    """The trace folders, one per job, that the cache imported ``path``'s files into when they
    are several jobs (the import splits them: :func:`profui.tui.cli.sources.scan_sources`)."""
    from profui.capture.format import is_trace_dir
    from profui.tui.cli.sources import scan_sources

    if not path.is_dir() or is_trace_dir(path):
        return []
    _, done = scan_sources(path)
    if done is None or is_trace_dir(done):
        return []
    return sorted(d for d in done.iterdir() if is_trace_dir(d))


def _json_ready(value: Any) -> Any:
    """``value`` as the command line prints it with ``json.dumps(..., default=str)``."""
    return json.loads(json.dumps(value, default=str, allow_nan=False))


# -- list and import --------------------------------------------------------------------------------


def _walk(root: Path, say: Say) -> tuple[list[Path], list[Path], int, bool]:
    """The trace folders and the files named like traces at or below ``root`` (not inside a
    trace folder, never in hidden folders), at most :data:`LIST_DEPTH` folders down and
    :data:`LIST_ENTRIES` entries looked at; also how many were looked at and whether it stopped
    short. A progress line every 5,000 entries."""
    from profui.capture.format import is_trace_dir
    from profui.capture.format.columns import IMPORTABLE_SUFFIXES

    folders: list[Path] = []
    files: list[Path] = []
    seen, cut = 0, False
    for top, dirs, names in os.walk(root):
        here = Path(top)
        if is_trace_dir(here):
            folders.append(here)
            dirs[:] = []
            continue
        depth = len(here.relative_to(root).parts)
        dirs[:] = sorted(d for d in dirs if not d.startswith(".")) if depth < LIST_DEPTH else []
        files.extend(here / n for n in sorted(names) if n.lower().endswith(IMPORTABLE_SUFFIXES))
        before, seen = seen, seen + len(dirs) + len(names)
        if seen // 5000 > before // 5000:
            say(f"listing: {seen} entries looked at")
        if seen >= LIST_ENTRIES:
            cut = True
            break
    return sorted(folders), files, seen, cut


def list_traces(folder: str, say: Say = _quiet) -> dict[str, Any]:
    """The profui trace folders at or below ``folder`` (the jobs list of ``profui open``), the
    foreign trace files ``import_trace`` of the folder imports (Kineto JSON, Nsight exports, a
    JAX log folder), the trace folders of their import when they were imported before (one per
    job), the other trace files below it (each importable on its own), and the files named like
    traces it skipped, with why. The walk skips hidden folders and is bounded (``walk`` says
    how far it went and whether it stopped short)."""
    from profui.analysis.catalog import job_row
    from profui.capture.format import TraceFormatError, is_trace_dir
    from profui.tui.cli.sources import scan_sources

    root = _path(folder, "folder")
    if not root.is_dir():
        raise TraceFormatError(root, "not a folder (import_trace takes a trace file)")
    say(f"looking at and below {root}")
    found, named, seen, cut = _walk(root, say)
    rows = sorted((job_row(p) for p in found), key=lambda r: r.created_ns or 0, reverse=True)
    inside = [r.path.resolve() for r in rows]

    def own(p: Path) -> bool:
        return not any(p.resolve().is_relative_to(t) for t in inside)

    # the import's own scan walks the whole folder: only when the bounded walk saw all of it
    scan, done = scan_sources(root) if not is_trace_dir(root) and not cut else (None, None)
    files = [f for f in scan.sources if own(f)] if scan else []
    skipped = [(f, why) for f, why in scan.skipped if own(f)] if scan else []
    if done is None:
        imported = []
    else:  # imported before: one trace, or one trace folder per job
        imported = [done] if is_trace_dir(done) else sorted(d for d in done.iterdir() if is_trace_dir(d))
    taken = {f.resolve() for f in files} | {f.resolve() for f, _ in skipped}
    below: list[Path] = []
    for d in [] if cut else sorted({f.parent for f in named if own(f) and f.resolve() not in taken}):
        # each folder's own files, through the import's scan (what is a trace, after the sniff)
        there, _ = scan_sources(d)
        below += [f for f in there.sources if f.parent == d.resolve()]
        skipped += [(f, why) for f, why in there.skipped if f.parent == d.resolve()]
    return {
        "folder": str(root),
        "traces": [
            {
                "path": str(r.path),
                "name": r.name,
                "status": r.status,
                "created_ns": r.created_ns,
                "duration_ns": r.duration_ns,
                "nodes": r.nodes,
                "gpus": r.gpus,
                "size_bytes": r.size_bytes,
                "problem": r.problem,
            }
            for r in rows
        ],
        "files": [str(f) for f in files],
        "imported": [str(d) for d in imported],
        "below": [str(f) for f in below],
        "skipped": [{"path": str(f), "why": why} for f, why in skipped],
        "walk": {"max_depth": LIST_DEPTH, "entries": seen, "cut": cut},
    }


def import_trace(path: str, say: Say = _quiet) -> dict[str, Any]:
    """Import ``path`` (Kineto JSON, an Nsight export, a JAX log folder, a folder of them) into
    profui's cache once, as ``profui summary`` does before it analyses; a profui trace folder is
    itself. Returns the trace folder and ``profui info --json``'s document of it."""
    from profui.analysis.inventory import trace_info

    folder = _resolve(path, say)
    return {"source": path, "trace": str(folder), "info": _json_ready(trace_info(folder))}


# -- the commands' documents --------------------------------------------------------------------


def summary(
    trace: str,
    hta_compat: bool = False,
    top: int | None = None,
    sections: list[str] | None = None,
    say: Say = _quiet,
) -> dict[str, Any]:
    """``profui summary TRACE --json [--hta-compat] [--top N] [--sections A,B]``'s document
    (``sections`` None: all of them)."""
    from profui.analysis.cluster import scheduler_address
    from profui.analysis.distributed import IN_PROCESS_BYTES
    from profui.tui.cli.ranks_opts import by_ranks
    from profui.tui.cli.summary_cmd import check_sections, json_document, run_summary

    if sections is not None:
        check_sections(sections)
    folder = _resolve(trace, say)
    if scheduler_address(None):
        say(f"analysing rank by rank on the Dask scheduler {scheduler_address(None)}")
    elif by_ranks(folder, None, None, False):
        mib = IN_PROCESS_BYTES // 2**20
        say(f"analysing rank by rank on a local Dask cluster (its events files are over {mib} MiB)")
    else:
        say("analysing (every stage in memory)")
    doc = run_summary(
        folder, top, hta_compat, None, on_rank=lambda done, total, _: say(f"{done}/{total} ranks")
    )
    return _json_ready(json_document(doc, sections))


def explain(
    trace: str,
    step: int | None = None,
    rank: int | None = None,
    top: int | None = None,
    hta_compat: bool = False,
    path_events: int | None = None,
    say: Say = _quiet,
) -> dict[str, Any]:
    """``profui explain TRACE --json [--step S] [--rank R] [--top K] [--hta-compat]
    [--path-events N]``'s document."""
    from profui.tui.cli.explain_cmd import explain as explain_doc

    folder = _resolve(trace, say)
    say("analysing (critical path and findings)")
    return _json_ready(explain_doc([folder], step, rank, top, None, None, hta_compat, path_events))


def diff(
    base: str, new: str, fail_if: list[str] | None = None, top: int = TOP_N, say: Say = _quiet
) -> dict[str, Any]:
    """``profui diff BASE NEW --json [--fail-if COND ...] [--top N]``'s document; each side a
    trace or a saved baseline (``baseline:NAME``, or a NAME that is no path). A side that is a
    foreign trace is imported first, with progress."""
    from profui.tui.cli.diff_cmd import diff_result

    for label, side in (("base", base), ("new", new)):
        if Path(side).expanduser().exists():
            say(f"{label}: {side}")
            _resolve(side, say)  # a FIFO refused before it is opened; an import done once, here
    say("comparing (each side's steps, kernels and findings)")
    return _json_ready(diff_result(base, new, top, list(fail_if or []), say))


# -- windows of one trace ---------------------------------------------------------------------------


def _stage_outputs(folder: Path, stages: tuple[str, ...], say: Say) -> Result:
    """The result of ``stages`` for ``folder``: the pipeline's cached outputs when there (the
    dashboard's rule, :func:`profui.analysis.pipeline.answers.answers`), else computed once and
    recorded so the next call reads them."""
    from profui.analysis.pipeline.answers import answers
    from profui.analysis.trace import Trace
    from profui.capture.format import open_trace_dir

    return answers(folder, stages, lambda: Trace(open_trace_dir(folder)), say=say)


def _events(folder: Path) -> Any:
    from profui.analysis.trace import Trace
    from profui.capture.format import open_trace_dir

    return Trace(open_trace_dir(folder)).events()


def _window_error(exc: Exception) -> UserError:
    return UserError(str(exc))


def top(
    trace: str,
    what: str = "kernels",
    step: int | None = None,
    rank: int | None = None,
    n: int = 10,
    say: Say = _quiet,
) -> dict[str, Any]:
    """The ``n`` kernels, ops or annotations with the most total time in one step (every rank
    that ran it, or ``rank``), or in the whole trace without a step (:mod:`profui.analysis.step_window`)."""
    from profui.analysis import step_window as sw

    if what not in sw.TOP_KINDS:
        raise UserError(f"what {what!r}: one of {', '.join(sw.TOP_KINDS)}")
    if not 1 <= n <= MAX_TOP:
        raise UserError(f"n {n}: from 1 to {MAX_TOP}")
    folder = _resolve(trace, say)
    out = _stage_outputs(folder, ("ingest", "steps"), say)
    ov = out.ingest.trace["overview"]
    start_ns, end_ns = ov["start_ns"], ov["end_ns"]
    if start_ns is None or end_ns is None:
        raise UserError(f"{folder}: the trace has no events")
    try:
        window = sw.step_window(out.steps.windows, list(ov["ranks"]), start_ns, end_ns, step, rank)
    except sw.WindowError as exc:
        raise _window_error(exc) from None
    rows, names, window_ns = sw.top(_events(folder), window, what, n)
    note = None
    if what == "kernels" and not names:
        from profui.analysis.devices import NONE, words_for

        note = (
            "no device work in this trace: the host's time is in ops and annotations (what='ops')"
            if ov.get("device_type") == NONE
            else f"no {words_for(ov).work} started in this window"
        )
    return {
        "trace": str(folder),
        "what": what,
        "step": step,
        "rank": rank,
        "ranks": window.ranks,
        "window_ns": window_ns,
        "names": names,
        "note": note,
        "rows": _json_ready(rows.to_dicts()),
    }


def events(
    trace: str,
    rank: int | None = None,
    step: int | None = None,
    start_ns: int | None = None,
    end_ns: int | None = None,
    limit: int = 500,
    say: Say = _quiet,
) -> dict[str, Any]:
    """The events of one rank that start in a window (a step's, ``start_ns``..``end_ns`` in ns
    since the epoch, or the whole trace), by start time, as compact rows: at most ``limit``
    (up to :data:`MAX_EVENTS`), with the total and ``truncated`` when cut. A window reaching past
    the rank's events is clipped to them."""
    from profui.analysis import step_window as sw

    if not 1 <= limit <= MAX_EVENTS:
        raise UserError(f"limit {limit}: from 1 to {MAX_EVENTS} rows per call (ask for a narrower window)")
    if step is not None and (start_ns is not None or end_ns is not None):
        raise UserError("step or start_ns/end_ns: one window at a time")
    if start_ns is not None and end_ns is not None and start_ns >= end_ns:
        raise UserError(f"window {start_ns}..{end_ns}: its start is not before its end")
    folder = _resolve(trace, say)
    out = _stage_outputs(folder, ("ingest", "steps"), say)
    ranks = sorted(out.ingest.trace["overview"]["ranks"])
    if rank is None:
        if len(ranks) != 1:
            raise UserError(f"rank: the trace has ranks {sw.numbers(ranks)}; name one")
        rank = ranks[0]
    if rank not in ranks:
        raise UserError(f"rank {rank}: no such rank (ranks: {sw.numbers(ranks)})")
    ev = _events(folder)
    span = sw.rank_span(ev, rank)
    if span is None:
        raise UserError(f"rank {rank}: no events")
    if step is not None:
        try:
            w = sw.step_window(out.steps.windows, ranks, span[0], span[1], step, rank)
        except sw.WindowError as exc:
            raise _window_error(exc) from None
        rows, total = sw.step_events(ev, w, limit)
        b = w.frame.row(0, named=True)
        return {
            "trace": str(folder),
            "rank": rank,
            "step": step,
            "window": {
                "start_ns": min(b["cpu_start_ns"], b["start_ns"]),
                "end_ns": max(b["cpu_end_ns"], b["end_ns"]),
                "clipped": False,
            },
            "columns": list(sw.EVENT_COLUMNS),
            "rows": _json_ready(rows.rows()),
            "count": rows.height,
            "total": total,
            "truncated": total > rows.height,
        }
    else:
        lo = span[0] if start_ns is None else start_ns
        hi = span[1] + 1 if end_ns is None else end_ns
    asked = (lo, hi)
    if hi <= span[0] or lo > span[1]:
        raise UserError(
            f"window {lo}..{hi}: outside rank {rank}'s events ({span[0]}..{span[1]} ns since the epoch)"
        )
    lo, hi = max(lo, span[0]), min(hi, span[1] + 1)
    rows, total = sw.window_events(ev, rank, lo, hi, limit)
    return {
        "trace": str(folder),
        "rank": rank,
        "step": step,
        "window": {"start_ns": lo, "end_ns": hi, "clipped": (lo, hi) != asked},
        "columns": list(sw.EVENT_COLUMNS),
        "rows": _json_ready(rows.rows()),
        "count": rows.height,
        "total": total,
        "truncated": total > rows.height,
    }


def memory_peak(trace: str, rank: int | None = None, say: Say = _quiet) -> dict[str, Any]:
    """The allocated-memory peak of each device (of ``rank``, or every rank), the op, annotation
    and step holding it, and the largest allocations live at the highest peak, from the
    allocations stage's outputs (the allocator's ``[memory]`` events)."""
    import polars as pl

    from profui.analysis.step_window import numbers

    folder = _resolve(trace, say)
    out = _stage_outputs(folder, ("ingest", "allocations"), say)
    ranks = sorted(out.ingest.trace["overview"]["ranks"])
    if rank is not None and rank not in ranks:
        raise UserError(f"rank {rank}: no such rank (ranks: {numbers(ranks)})")
    devices = out.allocations.devices
    live = out.allocations.live_at_peak
    if rank is not None:
        devices = devices.filter(pl.col("rank") == rank)
        live = live.filter(pl.col("rank") == rank)
    doc: dict[str, Any] = {"trace": str(folder), "rank": rank, "has_memory_events": not devices.is_empty()}
    if devices.is_empty():
        note = out.allocations.allocations["note"]  # worded for the trace's source
        return {**doc, "note": note, "peak": None, "devices": [], "live_at_peak": []}
    devices = devices.sort(["peak_allocated_bytes", "rank", "device"], descending=[True, False, False])
    peak = devices.row(0, named=True)
    at = live.filter(
        pl.col("node") == peak["node"],
        pl.col("rank") == peak["rank"],
        pl.col("device_type") == peak["device_type"],
        pl.col("device") == peak["device"],
    ).sort("order")
    return {
        **doc,
        "note": None,
        "peak": _json_ready(peak),
        "devices": _json_ready(devices.to_dicts()),
        "live_at_peak": _json_ready(at.head(10).to_dicts()),
    }


# -- errors -------------------------------------------------------------------------------------------


#: The command line's flags that are tool arguments, by the argument's name: a message the
#: commands share with the tools names the argument in a tool's error.
FLAG_ARGS = {
    "--step": "step",
    "--rank": "rank",
    "--top": "top",
    "--hta-compat": "hta_compat",
    "--path-events": "path_events",
    "--sections": "sections",
    "--fail-if": "fail_if",
}
_FLAG = re.compile(r"(?<![\w-])--[a-z][a-z-]*")


def tool_words(line: str) -> str:
    """``line`` with each command-line flag that is a tool argument named as the argument."""
    return _FLAG.sub(lambda m: FLAG_ARGS.get(m.group(0), m.group(0)), line)


def error_line(exc: BaseException) -> str | None:
    """The one line the command line prints for ``exc`` (``profui: ...``) when it is bad input
    (:class:`UserError`, a trace it cannot read, a path the system refused); None for a bug."""
    from profui.capture.format import TraceFormatError

    if isinstance(exc, (UserError, TraceFormatError)):
        return f"profui: {tool_words(' '.join(str(exc).split()))}"
    if isinstance(exc, OSError) and exc.filename is not None:
        name = os.fsdecode(exc.filename) if isinstance(exc.filename, (str, bytes)) else str(exc.filename)
        return f"profui: {name}: {(exc.strerror or str(exc)).lower()}"
    return None


def bug_line(exc: BaseException) -> str:
    """The line for an exception that is profui's fault, not the input's."""
    text = " ".join(str(exc).split())[:300]
    return (
        f"profui: internal error ({type(exc).__name__}{': ' + text if text else ''}); "
        "this is a bug in profui, please report it with the tool call you made"
    )
