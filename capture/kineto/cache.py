"""On-the-fly import: a profui trace folder as is, or Kineto JSON imported into a cache.

``profui summary trace.json.gz`` and ``profui open run/`` over PyTorch Profiler output work
straight away: the command line resolves the path with :func:`resolve_trace`, which converts the
JSON files once into the trace format, in a cache folder keyed by the sources' paths, sizes and
modification times, and reuses it while they are unchanged. Analysis only ever sees the folder.
"""

from __future__ import annotations

import contextlib
import glob
import json
import os
import shutil
import tempfile
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

from profui.capture.format import (
    IMPORTABLE_SUFFIXES,
    NSYS_SUFFIXES,
    TraceFormatError,
    default_cache_root,
    is_trace_dir,
    open_trace_dir,
)
from profui.capture.format.lock import cache_lock

from .sniff import not_a_trace

_DONE_MARK = ".profui-import.json"


def is_source_file(path: Path) -> bool:
    """True for a file whose name ends like a trace profui imports (Kineto ``.json``/``.json.gz``,
    Nsight Systems ``.sqlite``/``.nsys-rep``)."""
    name = path.name.lower()
    return path.is_file() and name.endswith(IMPORTABLE_SUFFIXES)


_JAX_TRACES = (".trace.json.gz", ".trace.json")


@dataclass
class FolderScan:
    """What a folder (or a file) stands for as trace sources: its trace files, and the files
    named like traces that are not, each with why (:func:`~.sniff.not_a_trace`)."""

    sources: list[Path]
    skipped: list[tuple[Path, str]] = field(default_factory=list)

    def notes(self) -> list[str]:
        """One line per skipped file, naming it and why: the import's notes."""
        return [skipped_note(f, why) for f, why in self.skipped]


def skipped_note(path: Path, why: str) -> str:
    """The one wording of a file of a folder left out of its import."""
    return f"skipped {path}: {why}"


def scan_folder(folder: Path) -> FolderScan:
    """The trace files of ``folder``, sorted, each event source once, and the files it skipped.

    - the folder's own trace files; the folders below it (hidden ones skipped) only when it
      holds none, or when it is a JAX log folder (``plugins/profile/`` inside): a folder of
      traces is not mixed with what its subfolders hold (a tool's results, other jobs). Only
      files that are traces (after the sniff) count as its own: a ``config.json`` beside
      ``rank0/`` does not stop the scan going below, and is listed as skipped;
    - of an Nsight report and its export (``run.nsys-rep``, ``run.sqlite``), the export;
    - of a JAX profile run (``plugins/profile/<run>/``), the ``<host>.trace.json.gz`` files (not
      ``perfetto_trace.json.gz``, the same events again, unless it is the only one; never the
      memory profiles), and of a JAX log folder holding several runs, the newest run only (each
      run is a separate profile, never ranks of one job);
    - a file named like a Kineto trace whose first bytes show it is something else (an
      execution trace, a memory timeline, another tool's JSON, a FIFO) is skipped, with why.
    """
    if not (folder / "plugins" / "profile").is_dir():
        # the folder holds traces itself only when a file of its own IS one (after the sniff): a
        # config.json beside rank folders sends the scan below, and is listed as skipped there
        own = _scan(folder, folder.iterdir())
        if own.sources:
            return own
    return _scan(folder, _below(folder))


def _below(folder: Path) -> Iterator[Path]:
    """Everything below ``folder`` but hidden folders, which are never walked (a home folder's
    caches hold far more files than its traces)."""
    for top, dirs, files in os.walk(folder):
        dirs[:] = sorted(d for d in dirs if not d.startswith("."))
        for name in (*dirs, *files):
            yield Path(top, name)


def _scan(folder: Path, found: Iterator[Path]) -> FolderScan:
    """:func:`scan_folder` of the files ``found`` in ``folder`` (its own, or all below it)."""
    files = sorted(
        f
        for f in found
        if _named_like_source(f) and not any(part.startswith(".") for part in f.relative_to(folder).parts)
    )
    by_dir: dict[Path, list[str]] = {}
    for f in files:
        by_dir.setdefault(f.parent, []).append(f.name.lower())
    newest: dict[Path, str] = {}  # JAX log folder -> its newest run
    for d in by_dir:
        if d.parent.name == "profile" and d.parent.parent.name == "plugins":
            newest[d.parent] = max(newest.get(d.parent, ""), d.name)
    scan = FolderScan([])
    for f in files:
        low, siblings = f.name.lower(), by_dir[f.parent]
        if low.endswith(".nsys-rep") and low.removesuffix(".nsys-rep") + ".sqlite" in siblings:
            continue
        in_run = f.parent.parent in newest
        if in_run and f.parent.name != newest[f.parent.parent]:
            continue
        # a run folder also holds <host>.memory_profile.json.gz, and the same events again as
        # perfetto_trace.json.gz: its events are the <host>.trace.json(.gz) files
        only_perfetto = low.startswith("perfetto_trace.json") and not any(
            s.endswith(_JAX_TRACES) for s in siblings
        )
        if in_run and not (low.endswith(_JAX_TRACES) or only_perfetto):
            continue
        if not in_run and low.startswith("perfetto_trace.json") and not only_perfetto:
            continue
        why = None if low.endswith(NSYS_SUFFIXES) else not_a_trace(f)
        if why is None:
            scan.sources.append(f)
        else:
            scan.skipped.append((f, why))
    return scan


def _named_like_source(path: Path) -> bool:
    """A name that ends like a trace profui imports, of anything but a folder (a FIFO or a
    device so named is skipped, with why, rather than passed over in silence)."""
    return path.name.lower().endswith(IMPORTABLE_SUFFIXES) and not path.is_dir()


def folder_sources(folder: Path) -> list[Path]:
    """The trace files of ``folder`` (:func:`scan_folder`)."""
    return scan_folder(folder).sources


def source_scan(path: str | Path) -> FolderScan:
    """The foreign trace files ``path`` stands for (itself, or :func:`scan_folder` of a folder),
    resolved, with the files of the folder it skipped. No sources when ``path`` is neither such
    a file nor a folder holding any."""
    p = Path(path)
    if p.is_file():
        return FolderScan([p.resolve()] if is_source_file(p) else [])
    if p.is_dir():
        scan = scan_folder(p)
        return FolderScan([f.resolve() for f in scan.sources], scan.skipped)
    return FolderScan([])


def trace_sources(path: str | Path) -> list[Path]:
    """The foreign trace files ``path`` stands for (:func:`source_scan`), sorted."""
    return source_scan(path).sources


def refused_folder(path: Path, scan: FolderScan, none_line: str) -> TraceFormatError:
    """The one line refusing a folder with no trace files: ``none_line``, and the files it
    skipped with why when it skipped some."""
    if not scan.skipped:
        return TraceFormatError(path, none_line)
    named = "; ".join(f"{f.name}: {why}" for f, why in scan.skipped[:3])
    more = f"; and {len(scan.skipped) - 3} more" if len(scan.skipped) > 3 else ""
    return TraceFormatError(path, f"no trace files in this folder; skipped {named}{more}")


def cache_key(sources: list[Path]) -> str:
    """Key of an import: the digest of the sources' fingerprint (absolute path, size, mtime)."""
    # here, not at the top: the fingerprint's hashlib loads OpenSSL (3.6 MB resident), which an
    # import that is not cached (the importer reads this module's folder scan) never uses
    from profui.capture.format import files_fingerprint, fingerprint_digest

    return fingerprint_digest(files_fingerprint(sources))


#: What a command that reads one trace says to do with sources of several jobs.
SEVERAL_JOBS_HINT = "open them with profui open to pick one, or profui import --separate-jobs"


def _import(
    sources: list[Path], out_dir: Path, progress: Callable[[str], None] | None, notes: list[str]
) -> str | None:
    """Import ``sources`` into ``out_dir``: one trace, or one trace folder per job when they are
    several jobs; returns the line that refuses them as one job then, else None. ``notes`` (the
    files of the folder skipped) go into each trace's manifest."""
    # the importer is heavy (pyarrow, the Kineto converter): loaded only when JSON is imported
    from .importer import import_jobs, source_stem

    report = None
    if progress is not None:
        state = {"pct": -10}

        def report(done: int, total: int) -> None:  # the importer reports (bytes done, bytes total)
            pct = int(100 * done / total) if total else 100
            if pct >= state["pct"] + 10 or pct == 100:
                state["pct"] = pct
                progress(f"importing: {pct}%")

    # named after the file (or the folder of a multi-rank run), not after the cache key
    name = source_stem(sources[0]) if len(sources) == 1 else Path(os.path.commonpath(sources)).name
    done = import_jobs(
        sources, out_dir, force=True, progress=report, name=name, hint=SEVERAL_JOBS_HINT, notes=notes
    )
    return done.apart


def _imports_root(cache_root: str | Path | None) -> Path:
    root = Path(cache_root).expanduser() if cache_root is not None else default_cache_root()
    return root / "imports"


def cached_import(sources: list[Path], cache_root: str | Path | None = None) -> Path | None:
    """The finished import of the Kineto files ``sources`` in the cache, or None when they were
    never imported as they are now (see :func:`resolve_jobs`): a trace folder, or for sources of
    several jobs a folder of one trace folder per job. Reads nothing but the cache."""
    out = _imports_root(cache_root) / cache_key(sources)
    return out if out.is_dir() and (out / _DONE_MARK).is_file() and _whole(out) else None


def _whole(entry: Path) -> bool:
    """True when the cached import ``entry`` is as its import left it: each trace folder in it
    opens (manifest, every footer) and holds the events files its manifest lists with their
    numbers of events. A damaged entry (a file removed, truncated, rewritten) is then a miss,
    imported again, never served. Reads the footers only, as opening the trace does anyway."""
    folders = [entry] if is_trace_dir(entry) else sorted(d for d in entry.iterdir() if is_trace_dir(d))
    try:
        for folder in folders:
            trace = open_trace_dir(folder, require_data=False)
            rows = {f.path.relative_to(folder).as_posix(): f.num_rows for f in trace.events}
            for src in trace.manifest.sources:
                if "events_file" in src and rows.get(src["events_file"]) != src.get("num_events"):
                    return False
    except (TraceFormatError, OSError):
        return False
    return bool(folders)


def several_jobs(imported: Path) -> str | None:
    """For a cached import of several jobs, the line that refuses them as one; else None."""
    if is_trace_dir(imported):
        return None
    try:
        mark = json.loads((imported / _DONE_MARK).read_text())
    except (OSError, ValueError):
        mark = {}
    apart = mark.get("apart") if isinstance(mark, dict) else None
    return apart if isinstance(apart, str) else f"{imported}: holds several jobs"


def resolve_trace(
    path: str | Path,
    progress: Callable[[str], None] | None = None,
    cache_root: str | Path | None = None,
) -> Path:
    """Return the trace folder of ``path``, importing foreign trace files into the cache when
    needed (see :func:`resolve_jobs`); files of several jobs raise
    :class:`~profui.capture.format.jobs.NotOneJob`'s line as a :class:`TraceFormatError`."""
    done = resolve_jobs(path, progress, cache_root)
    apart = several_jobs(done)
    if apart is not None:
        raise WholeLine(apart)
    return done


class WholeLine(TraceFormatError):
    """A refusal whose line is already whole: it names its files itself."""

    def __init__(self, line: str) -> None:
        super().__init__(Path("."), line)
        self.args = (line,)

    def __reduce__(self) -> tuple:
        return (type(self), self.args)

    def __str__(self) -> str:
        return str(self.args[0])


def resolve_jobs(
    path: str | Path,
    progress: Callable[[str], None] | None = None,
    cache_root: str | Path | None = None,
) -> Path:
    """Return a trace folder for ``path``, importing Kineto JSON into the cache when needed; for
    files of several jobs, a folder holding one trace folder per job.

    - a profui trace folder (has ``manifest.json``) is returned unchanged;
    - a Kineto JSON file, or a folder of them (searched recursively; a multi-rank run), is
      imported once into ``<cache_root>/imports/<key>/`` (``cache_root`` defaults to
      :func:`~profui.capture.format.default_cache_root`) where the key hashes the sources' paths,
      sizes and mtimes, so an unchanged source is not imported again; the import is written
      under a temporary name and renamed, so an interrupted import never looks complete, and
      under the entry's lock, so concurrent commands over the same files import them once and
      a published entry is never removed under a reader;
    - anything else raises :class:`TraceFormatError` with a one-line message naming the path.

    ``progress`` (optional) receives short status lines ("importing x.json.gz ...").
    """
    p = Path(path).expanduser()
    if not p.exists():
        raise TraceFormatError(p, "no such file or directory")
    if is_trace_dir(p):
        return p
    scan = source_scan(p)
    sources = scan.sources
    if not sources:
        if p.is_dir():
            raise refused_folder(
                p,
                scan,
                "not a profui trace (no manifest.json) and no trace files in it (Kineto .json/.json.gz, Nsight .sqlite/.nsys-rep)",
            )
        raise TraceFormatError(
            p,
            "not a trace profui reads: expected a profui trace folder, Kineto .json/.json.gz, "
            "a JAX log folder or Nsight .sqlite/.nsys-rep",
        )
    done = cached_import(sources, cache_root)
    if done is not None:
        if progress is not None:
            progress(f"using cached import {done}")
        return done
    imports = _imports_root(cache_root)
    out = imports / cache_key(sources)
    imports.mkdir(parents=True, exist_ok=True)

    def waiting() -> None:
        if progress is not None:
            progress(f"waiting for another profui importing into {out}")

    with entry_lock(imports, "import", out.name, waiting):
        # another process may have imported the same files while this one waited
        done = cached_import(sources, cache_root)
        if done is not None:
            if progress is not None:
                progress(f"using cached import {done}")
            return done
        if progress is not None:
            progress(f"importing {len(sources)} trace file(s) into {out}")
        tmp = Path(tempfile.mkdtemp(prefix=f".{out.name}.", dir=imports))
        try:
            apart = _import(sources, tmp, progress, scan.notes())
            mark = {"sources": [str(s) for s in sources], **({"apart": apart} if apart else {})}
            (tmp / _DONE_MARK).write_text(json.dumps(mark) + "\n")
            publish_entry(tmp, out)
        finally:
            shutil.rmtree(tmp, ignore_errors=True)
    return out


@contextlib.contextmanager
def entry_lock(
    folder: Path, kind: str, key: str, on_busy: Callable[[], None] | None = None
) -> Iterator[None]:
    """Hold the exclusive lock of the cache entry ``folder/key`` (:func:`cache_lock`, ``kind``
    naming its file), calling ``on_busy()`` before waiting for another holder. Concurrent
    commands then build an entry once, and no one replaces an entry while another publishes or
    reads it. While the lock is in force, the temporary folders of ``key`` that killed builds
    left in ``folder`` are removed, on taking it and on leaving it."""
    lock = cache_lock(folder.parent, kind, key)
    lock.acquire(on_busy)
    try:
        if lock.enforced:
            _remove_leftovers(folder, key)
        yield
    finally:
        try:
            if lock.enforced:
                _remove_leftovers(folder, key)
        finally:
            lock.release()


def publish_entry(tmp: Path, out: Path) -> None:
    """Rename the finished folder ``tmp`` onto the cache entry ``out``, with ``out``'s
    :func:`entry_lock` held. An ``out`` already there is unfinished or damaged (a whole one is
    served, never built again): it is moved aside by a rename first, then removed, so no one
    ever sees an entry half removed under its name."""
    stale = None
    try:
        if out.exists() or out.is_symlink():
            stale = Path(tempfile.mkdtemp(prefix=f".{out.name}.stale-", dir=out.parent))
            os.replace(out, stale / out.name)
        os.replace(tmp, out)
    finally:
        if stale is not None:
            shutil.rmtree(stale, ignore_errors=True)


def _remove_leftovers(folder: Path, key: str) -> None:
    """Remove the temporary folders of builds of ``key`` in ``folder`` (the importer's own,
    named after them, included). Called with the key's lock in force: every such folder is then
    a leftover of a process that was killed or has finished, never one in use."""
    for leftover in folder.glob(f".*{glob.escape(key)}.*"):
        if leftover.is_dir() and not leftover.is_symlink():
            shutil.rmtree(leftover, ignore_errors=True)
