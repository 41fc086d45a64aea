"""On-the-fly import: a profui trace folder as is, or Kineto JSON imported into a cache.

``profui summary trace.json.gz`` and ``profui open run/`` over PyTorch Profiler output work
straight away: the command line resolves the path with :func:`resolve_trace`, which converts the
JSON files once into the trace format, in a cache folder keyed by the sources' paths, sizes and
modification times, and reuses it while they and the importing code are unchanged. Analysis only
ever sees the folder.
"""

from __future__ import annotations

import contextlib
import glob
import json
import os
import shutil
import tempfile
from collections.abc import Callable, Iterator
from pathlib import Path

from profui.capture.format import (
    TraceFormatError,
    is_trace_dir,
    open_trace_dir,
)
from profui.capture.format.layout import imports_dir
from profui.capture.format.lock import cache_lock

from .sources import refused_folder, source_scan

_DONE_MARK = ".profui-import.json"


#: The module whose code (with all it loads: every format's converter) makes an import.
IMPORT_CODE = ("profui.capture.ingest.importer",)


def cache_key(sources: list[Path]) -> str:
    """Key of an import: the digest of the sources' fingerprint (absolute path, size, mtime)."""
    # here, not at the top: the fingerprint's hashlib loads OpenSSL (3.6 MB resident), which an
    # import that is not cached (the importer reads this module's folder scan) never uses
    from profui.capture.format import files_fingerprint, fingerprint_digest

    return fingerprint_digest(files_fingerprint(sources))


def import_code() -> str:
    """The version of the code that imports (:data:`IMPORT_CODE`), kept in each entry's done
    mark: an entry another version made is a miss, imported again in its place. In the mark, not
    in the key, so that each upgrade replaces the entries of the sources it reads again instead of
    leaving a copy of every import behind."""
    from profui.capture.format.code_version import code_version

    return code_version(IMPORT_CODE)


#: What a command that reads one trace says to do with sources of several jobs.
SEVERAL_JOBS_HINT = "open them with profui open to pick one, or profui import --separate-jobs"


def _import(
    sources: list[Path], out_dir: Path, progress: Callable[[str], None] | None, notes: list[str]
) -> str | None:
    """Import ``sources`` into ``out_dir``: one trace, or one trace folder per job when they are
    several jobs; returns the line that refuses them as one job then, else None. ``notes`` (the
    files of the folder skipped) go into each trace's manifest."""
    # the importer is heavy (pyarrow, the Kineto converter): loaded only when JSON is imported
    from profui.capture.conversion.result import source_stem

    from .importer import import_jobs

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


def cached_import(sources: list[Path], cache_root: str | Path | None = None) -> Path | None:
    """The finished import of the Kineto files ``sources`` in the cache, or None when they were
    never imported as they are now (see :func:`resolve_jobs`): a trace folder, or for sources of
    several jobs a folder of one trace folder per job. Reads nothing but the cache."""
    out = imports_dir(cache_root) / cache_key(sources)
    return out if out.is_dir() and _made_by_this_code(out) and _whole(out) else None


def _made_by_this_code(entry: Path) -> bool:
    """True when the entry's done mark is there and names the code running now."""
    path = entry / _DONE_MARK
    if not path.is_file():  # a FIFO (or anything but a file) would block the read
        return False
    try:
        mark = json.loads(path.read_text())
    except (OSError, ValueError):
        return False
    return isinstance(mark, dict) and mark.get("code") == import_code()


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
      imported once into ``<key>/`` in :func:`~profui.capture.format.layout.imports_dir` of
      ``cache_root`` (by default :func:`~profui.capture.format.default_cache_root`) where the
      key hashes the sources' paths, sizes and mtimes, so an unchanged source is not imported
      again (by the same code: an entry another version made is imported again in its place);
      the import is written under a temporary name and renamed, so an interrupted import
      never looks complete, and under the entry's lock, so concurrent commands over the same
      files import them once and a published entry is never removed under a reader;
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
    imports = imports_dir(cache_root)
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
            mark = {
                "sources": [str(s) for s in sources],
                "code": import_code(),
                **({"apart": apart} if apart else {}),
            }
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
