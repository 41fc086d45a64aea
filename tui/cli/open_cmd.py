"""``profui open [PATH]``: the dashboard, views and timeline of a trace in the terminal."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import typer

from .errors import UserError

SAMPLE_NAME = "synthetic_gpu"
_KINDS = "Kineto .json/.json.gz, a JAX log folder, Nsight .sqlite/.nsys-rep"


def samples_dir() -> Path:
    """``samples/`` of the source tree the package was installed from (installs are editable)."""
    import profui.tui

    return Path(profui.tui.__file__).resolve().parent.parent / "samples"


def bundled_sample() -> Path:
    """The sample trace ``profui open`` shows without a PATH; UserError when it is not there."""
    from profui.capture.format import is_trace_dir

    path = samples_dir() / SAMPLE_NAME
    if not is_trace_dir(path):
        raise UserError(
            f"{path}: bundled sample trace not found (this install has no samples/ folder); "
            "pass a trace folder or a Kineto .json/.json.gz file: profui open PATH"
        )
    return path


def _target(kind: str, path: Path, **more: Any):
    """The app's OpenTarget; imported here, when there is something to show, because it loads
    Textual (~0.2 s), which a path refused in one line does not need."""
    from ..app import OpenTarget

    return OpenTarget(kind, path, **more)


def plan_open(path: Path | None):
    """Decide what to show for ``path``: a trace, a jobs list, or Kineto JSON to import first
    (with :func:`profui.capture.ingest.cache.resolve_trace`, composed here, not in the app).

    Bad input raises :class:`TraceFormatError` / :class:`UserError` (one line) before the app starts.
    """
    from profui.capture.format import TraceFormatError, find_trace_dirs, is_trace_dir, open_trace_dir

    if path is None:
        return _target("trace", bundled_sample())
    path = path.expanduser()
    if not path.exists():
        raise TraceFormatError(path, "no such file or directory")
    if is_trace_dir(path):
        open_trace_dir(path, require_data=False)  # validate now: a bad trace is a one-line error
        return _target("trace", path)
    if path.is_dir():
        traces = find_trace_dirs(path)
        if len(traces) == 1:
            open_trace_dir(traces[0], require_data=False)
            return _target("trace", traces[0])
        if traces:
            return _target("jobs", path)
    # the import cache's look-up (msgspec) only for a path that is no trace
    from profui.capture.ingest.cache import cached_import, resolve_jobs
    from profui.capture.ingest.sources import refused_folder, source_scan

    scan = source_scan(path)
    sources = scan.sources
    for src in sources:  # unreadable: one line now (the CLI names the file), not in the app
        with open(src, "rb"):
            pass
    if sources:
        done = cached_import(sources)
        if done is not None and not is_trace_dir(done):  # files of several jobs: one row each
            return _target("jobs", done, label=str(path))
        if done is not None:  # imported before, unchanged since: no import screen to show
            open_trace_dir(done, require_data=False)
            return _target("trace", done)
        # the import screen runs the capture side's cached import (then a jobs list, for several)
        return _target("import", path, resolve=resolve_jobs)
    if path.is_dir():
        raise refused_folder(path, scan, f"no profui traces and no trace files in this folder ({_KINDS})")
    raise TraceFormatError(path, f"not a trace profui reads: expected a profui trace folder or {_KINDS}")


def plan_open_many(paths: list[Path]):
    """What to show for several paths: the trace folders of one job, as one trace (else one line)."""
    from .sources import resolve_sources

    return _target("trace", resolve_sources(paths))


def open_diff(base: str, new: Path | None) -> None:
    """Run the diff app of ``base`` against ``new`` (both resolved and analysed first)."""
    if new is None:
        raise UserError("--diff BASE needs the new trace too: profui open --diff BASE NEW")
    from profui.analysis.diff import diff, profile_of
    from profui.capture.format import is_trace_dir

    from ..screens.diff import DiffApp
    from .diff_cmd import load_profile
    from .sources import resolve_source

    new_dir = resolve_source(new)
    base_profile = load_profile(base)
    folder = base_profile["trace"].get("folder")
    # a saved baseline whose trace folder is gone still diffs; its timeline cannot be shown
    base_dir = Path(folder) if folder and is_trace_dir(Path(folder)) else None
    result = diff(base_profile, profile_of(new_dir, label=str(new)))
    failed = DiffApp(base_dir, new_dir, result).run()
    if failed:  # a view ended the app on a file it cannot read
        raise UserError(failed)


def register(app: typer.Typer) -> None:
    """Add ``open`` to ``app``."""

    @app.command("open")
    def open_(
        paths: list[Path] | None = typer.Argument(
            None,
            help="A trace folder, a folder of traces (a jobs list comes first), or Kineto JSON "
            "(.json/.json.gz, or a folder of them; imported into a cache; files of several jobs give a "
            "jobs list); or several trace folders of one job (one per node): profui open node1/ node2/. "
            "Default: the bundled sample.",
            show_default=False,
            readable=False,
        ),
        poll: float = typer.Option(
            2.0, "--poll", help="Seconds between checks of a running trace for new files."
        ),
        diff: str | None = typer.Option(
            None,
            "--diff",
            metavar="BASE",
            help="Open the diff of BASE (a trace or a saved baseline) against PATH instead: "
            "profui open --diff before/ after/",
        ),
    ) -> None:
        """Open a trace: jobs list, dashboard, kernels, steps, runs, timeline, communication, launches, idle and sync, keyboard first.

        Keys: 1-9 or Tab switch views (Dash, Kernels, Steps, Runs, Timeline, Comm, Launch, Idle, Sync), ] [ move between charts, Enter opens, / filters, s sorts, ? lists every key, q quits. A trace still being captured refreshes as new files land. A trace file that cannot be read ends the app with one line naming it (exit 2).

        \b
        Examples:
          profui open trace/
          profui open run.pt.trace.json.gz
          profui open node1/ node2/
          profui open --diff before/ after/
        """
        paths = list(paths or [])
        if diff is not None:
            if len(paths) > 1:
                raise UserError("--diff BASE takes one new trace: profui open --diff BASE NEW")
            open_diff(diff, paths[0] if paths else None)
            return
        target = plan_open_many(paths) if len(paths) > 1 else plan_open(paths[0] if paths else None)
        from ..app import ProfuiApp

        result = ProfuiApp(target, poll_s=poll).run()
        if result:
            raise UserError(result)
