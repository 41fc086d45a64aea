"""The import pipeline every format goes through: ``import_trace`` and ``import_jobs``.

The sources (files, or folders: :mod:`.sources`) are each converted by their format's converter
(:func:`_convert`: Kineto, JAX or Nsight Systems), then placed, told apart by job and given a
manifest. The converters depend on :mod:`profui.capture.conversion`, never on this module.
"""

from __future__ import annotations

import contextlib
import glob
import os
import re
import shutil
import time
import uuid
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from profui.capture.conversion.cpus import usable_cpus
from profui.capture.conversion.errors import KinetoFormatError
from profui.capture.conversion.heap import give_back
from profui.capture.conversion.result import ConvertResult, Progress, source_size, source_stem
from profui.capture.format import (
    Manifest,
    TraceFormatError,
    adopt_events,
    is_trace_dir,
    write_manifest,
)
from profui.capture.format.code_version import installed_version as _profui_version
from profui.capture.format.columns import is_nsys_file
from profui.capture.format.jobs import Part, group_jobs, not_one_job, part_from_distributed_info
from profui.capture.format.liveness import pid_alive
from profui.capture.format.regular import not_utf8
from profui.capture.jax.detect import is_jax_trace
from profui.capture.kineto.file_import import convert_kineto_file
from profui.capture.kineto.reader import text_size

from .sources import refused_folder, scan_folder

#: Runs many conversions at once, e.g. as tasks on a Dask cluster: ``mapper(fn, items, labels)``
#: calls the picklable ``fn`` on every item (in other processes, perhaps other machines) and yields
#: ``(index, result)`` as each finishes; an item that cannot finish raises, named by its label.
Mapper = Callable[[Callable[[Any], Any], list[Any], list[str]], Iterable[tuple[int, Any]]]


def expand_sources(sources: list[Path]) -> list[Path]:
    """Files to import: each path itself, or the trace files of a folder (``.json``,
    ``.json.gz``, Nsight's ``.sqlite``/``.nsys-rep``)."""
    return _expanded(sources)[0]


def _expanded(sources: list[Path]) -> tuple[list[Path], list[str]]:
    """:func:`expand_sources`, and the notes of the files of its folders skipped (not traces)."""
    files: list[Path] = []
    notes: list[str] = []
    if not sources:
        raise TraceFormatError(Path("."), "no trace files given")
    for src in sources:
        src = Path(src)
        if src.is_dir():
            scan = scan_folder(src)
            if not scan.sources:
                raise refused_folder(
                    src, scan, "folder holds no trace files (.json, .json.gz, .sqlite, .nsys-rep)"
                )
            files.extend(scan.sources)
            notes.extend(scan.notes())
        elif not src.exists() and not src.is_symlink():
            raise KinetoFormatError(src, "no such file or directory")
        else:
            files.append(src)
    unique: dict[Path, Path] = {}
    for f in files:  # the same file named twice (a path and its folder) is imported once
        unique.setdefault(f.resolve() if f.exists() else f, f)
    return list(unique.values()), list(dict.fromkeys(notes))


#: Sources of less JSON text than this in all are converted one by one in this process by
#: default: starting a cluster's worker processes costs ~3 s, and a conversion already keeps more
#: than one core busy (gunzip, then Arrow's threads writing Parquet), so at once pays only on many
#: cores for much text (on 2 cores: 0.90x at 430 MB, 1.08x at 1.3 GB; benchmarks/import_ranks.py).
AT_ONCE_BYTES = 1024 * 1024 * 1024
#: ... and on fewer cores than this.
AT_ONCE_CORES = 4
#: A file's conversion holds up to about this many times its JSON text at its peak: a plain
#: file's text (and a large gzip file's, spilled to a file: .spill) is mapped and let go as it
#: is scanned, which leaves the columns and the args rules (1.7x on an 851 MB text); a gzip
#: text held in memory is there with the scan's columns at the end of the scan (2.5x). The
#: margin is for traces whose args are a larger share of the text.
PEAK_PER_TEXT_BYTE = 3


def workers_for(sources: list[Path]) -> int:
    """How many files of ``sources`` to convert at once by default: 1 (one by one, in this
    process) for a single file, any Nsight export, less than :data:`AT_ONCE_BYTES` of JSON text
    or fewer than :data:`AT_ONCE_CORES` cores; else one per core, at most one per file, and no
    more than the free memory holds at :data:`PEAK_PER_TEXT_BYTE` times the largest file's text."""
    files = expand_sources(sources)
    cores = os.cpu_count() or 1
    if len(files) < 2 or cores < AT_ONCE_CORES or any(is_nsys_file(f) for f in files):
        return 1
    texts = [max(text_size(f), 1) for f in files]
    if sum(texts) < AT_ONCE_BYTES:
        return 1
    import psutil

    fit = psutil.virtual_memory().available // (PEAK_PER_TEXT_BYTE * max(texts))
    return int(max(1, min(cores, len(files), fit)))


def check_output(out_dir: Path, force: bool) -> None:
    """Refuse an output folder that holds a trace (unless ``force``) or anything else."""
    if out_dir.is_symlink() or (out_dir.exists() and not out_dir.is_dir()):
        raise TraceFormatError(out_dir, "output exists and is not a folder")
    if not out_dir.exists():
        return
    if is_trace_dir(out_dir) or _holds_only_traces(out_dir):
        if not force:
            raise TraceFormatError(
                out_dir, "output folder already holds a profui trace; use --force to replace it"
            )
        return
    if any(out_dir.iterdir()):
        raise TraceFormatError(
            out_dir, "output folder is not empty and is not a profui trace; choose another"
        )


#: What ``profui import`` says to do with sources that are several jobs.
SEPARATE_HINT = "import them with --separate-jobs"


@dataclass
class Imported:
    """What :func:`import_jobs` wrote: one trace at ``out_dir``, or, for sources of several jobs,
    one trace folder per job under it (``jobs``: each folder and its manifest, by start)."""

    jobs: list[tuple[Path, Manifest]]
    #: For several jobs: the one line a one-job import refuses them with.
    apart: str | None = None


def _holds_only_traces(folder: Path) -> bool:
    """True for a folder of trace folders and nothing else (what ``--separate-jobs`` writes)."""
    children = [c for c in folder.iterdir() if not c.name.startswith(".")]
    return bool(children) and all(is_trace_dir(c) for c in children)


def import_trace(
    sources: list[Path],
    out_dir: Path,
    *,
    rank: int | None = None,
    node: str | None = None,
    force: bool = False,
    progress: Progress | None = None,
    name: str | None = None,
    step_pattern: str | None = None,
    mapper: Mapper | None = None,
) -> Manifest:
    """Import trace files of any format profui reads (Kineto JSON, Nsight Systems exports, JAX
    profiler logs; or folders of them) as the new trace ``out_dir``. ``step_pattern`` (regex) names the NVTX ranges of Nsight files that are steps.

    The sources must be one job (:mod:`profui.capture.format.jobs`): files of several jobs are
    refused with :class:`~profui.capture.format.jobs.NotOneJob` (one line naming the files that do
    not belong and why); :func:`import_jobs` imports them as separate jobs instead.
    Everything is built in a temporary folder beside ``out_dir`` and renamed into place at the
    end, so a failure leaves no half trace and ``force`` never half-overwrites an old one.
    ``name`` is the trace's name in its manifest (default: the folder's name).
    With a ``mapper`` (:data:`Mapper`, e.g. tasks on a Dask cluster) the files are converted at
    once, each by a task into a folder of its own, and placed as a one-by-one import places them
    (Nsight exports, whose ranks follow the files before them, are converted one by one).
    Returns the written manifest (status ``imported``, source ``kineto-import``).
    """
    done = _import(sources, out_dir, rank, node, force, progress, name, step_pattern, None, mapper, [])
    return done.jobs[0][1]


def import_jobs(
    sources: list[Path],
    out_dir: Path,
    *,
    rank: int | None = None,
    node: str | None = None,
    force: bool = False,
    progress: Progress | None = None,
    name: str | None = None,
    step_pattern: str | None = None,
    hint: str = SEPARATE_HINT,
    mapper: Mapper | None = None,
    notes: list[str] | None = None,
) -> Imported:
    """As :func:`import_trace`, but sources of several jobs are imported as one trace folder
    per job under ``out_dir`` (named ``<start, UTC>-<first file's name>[+N]``), and the line a
    one-job import would have refused them with (ending in ``hint``) is returned with them.
    Sources that are one job are imported as one trace at ``out_dir``, as by
    :func:`import_trace`. Several jobs are converted twice (once to tell them apart).
    ``notes`` (files of a folder the caller's scan skipped) go into each trace's manifest, with
    those of the folders among ``sources``."""
    return _import(
        sources, out_dir, rank, node, force, progress, name, step_pattern, hint, mapper, notes or []
    )


def _import(
    sources: list[Path],
    out_dir: Path,
    rank: int | None,
    node: str | None,
    force: bool,
    progress: Progress | None,
    name: str | None,
    step_pattern: str | None,
    separate_hint: str | None,
    mapper: Mapper | None,
    notes: list[str],
) -> Imported:
    out_dir = Path(out_dir)
    files, skipped = _expanded([Path(s) for s in sources])
    notes = list(dict.fromkeys([*notes, *skipped]))
    bad_name = not_utf8(out_dir.absolute())
    if bad_name:
        raise TraceFormatError(out_dir, bad_name)
    check_output(out_dir, force)
    try:
        out_dir.parent.mkdir(parents=True, exist_ok=True)
    except OSError as exc:  # -o under a file, in a read-only folder, a name too long ...
        raise TraceFormatError(out_dir, f"cannot create the output folder ({exc.strerror or exc})") from None
    _clear_stale_imports(out_dir)
    tmp = out_dir.parent / f".{out_dir.name}.importing-{os.getpid()}"
    if tmp.exists():
        shutil.rmtree(tmp)
    try:
        tmp.mkdir()
    except OSError as exc:
        raise TraceFormatError(
            out_dir, f"cannot write beside the output folder ({exc.strerror or exc})"
        ) from None
    options: dict[str, Any] = {
        "rank": rank,
        "node": node,
        "progress": progress,
        "step_pattern": step_pattern,
        "mapper": mapper,
    }
    try:
        per_file = _convert_all(files, tmp, **options)
        parts = [_part(f, found) for f, found in per_file]
        groups = group_jobs(parts)
        if len(groups) == 1:
            manifest = _write_job_manifest(
                [r for _, found in per_file for r in found], tmp, name or out_dir.name, notes
            )
            done = Imported([(out_dir, manifest)])
        else:
            first_apart = groups[1][0]
            refusal = not_one_job(parts, groups, separate_hint or SEPARATE_HINT, files[first_apart])
            if separate_hint is None:
                raise refusal
            shutil.rmtree(tmp)
            tmp.mkdir()
            done = Imported([], apart=str(refusal))
            by_start = sorted(groups, key=lambda g: min(parts[i].start_ns or 0 for i in g))
            for group in by_start:
                job_files = [files[i] for i in group]
                label = _job_label(job_files)
                folder = _job_folder_name(label, parts[group[0]].start_ns, tmp)
                (tmp / folder).mkdir()
                found = [r for _, rs in _convert_all(job_files, tmp / folder, **options) for r in rs]
                # the jobs list shows the name beside the start: the folder's name without it
                manifest = _write_job_manifest(found, tmp / folder, label, notes)
                done.jobs.append((out_dir / folder, manifest))
        _swap_into_place(tmp, out_dir)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        _remove_task_folders(tmp)
        raise
    finally:
        # the caller often goes on to analyse the trace with Polars; the young generations hold
        # little of a small import's (its collection: ~1 ms, most of such an import's last step)
        give_back(collect=sum(map(source_size, files)) >= _COLLECT_BYTES)
    return done


#: Source bytes from which the import's own cyclic garbage is collected at its end.
_COLLECT_BYTES = 1 << 20


def _part(src: Path, results: list[ConvertResult]) -> Part:
    """What one converted file says about its job (the identity rule reads this)."""
    meta = results[0].source.get("metadata") or {} if results else {}
    host = next(
        (
            v.strip()
            for k in ("host_name", "hostname", "hostName")
            if isinstance(v := meta.get(k), str) and v.strip()
        ),
        None,
    )
    stated = part_from_distributed_info(meta.get("distributedInfo"))
    if not all(r.source.get("rank_from") == "distributedInfo" for r in results):
        stated.pop("ranks", None)  # a rank from the file name or a default is no identity
    firsts = [r.first_ts_ns for r in results if r.first_ts_ns is not None]
    lasts = [r.last_end_ns for r in results if r.last_end_ns is not None]
    return Part(
        label=src.name,
        start_ns=min(firsts) if firsts else None,
        end_ns=max(lasts) if lasts else None,
        host=host,
        **stated,
    )


_UNSAFE = re.compile(r"[^A-Za-z0-9._+-]")


def _job_label(files: list[Path]) -> str:
    """A job's name: its first file's name, ``+N`` more."""
    stem = _UNSAFE.sub("_", source_stem(files[0]))[:80]
    return stem + (f"+{len(files) - 1}" if len(files) > 1 else "")


def _job_folder_name(label: str, start_ns: int | None, parent: Path) -> str:
    """``<start, UTC>-<label>``: sorts by time, tells the jobs apart; unique in ``parent``."""
    stamp = time.strftime("%Y%m%d-%H%M%S", time.gmtime(start_ns / 1e9)) if start_ns else "undated"
    base = f"{stamp}-{label}"
    name, n = base, 1
    while (parent / name).exists():
        n += 1
        name = f"{base}-{n}"
    return name


def _clear_stale_imports(out_dir: Path) -> None:
    """Remove the temporary folders of earlier imports into ``out_dir`` whose process is gone
    (one killed outright never removed its own)."""
    prefix = f".{out_dir.name}.importing-"
    try:
        leftovers = [p for p in out_dir.parent.iterdir() if p.name.startswith(prefix)]
    except OSError:
        return
    for folder in leftovers:
        pid = folder.name[len(prefix) :].split(".")[0]  # a task's folder: <pid>.file-<batch>-<i>
        if pid.isdigit() and int(pid) != os.getpid() and not pid_alive(int(pid)):
            shutil.rmtree(folder, ignore_errors=True)


def _convert(
    src: Path,
    tmp: Path,
    *,
    node: str | None,
    rank: int | None,
    step_pattern: str | None,
    progress: Progress,
    threads: int = 1,
) -> list[ConvertResult]:
    """One source file into ``tmp``: a Kineto or JAX trace is one rank, an Nsight export a rank per
    process. ``threads``: how many threads a Kineto file's scan and write may use."""
    if not is_nsys_file(src):
        if is_jax_trace(src):
            from profui.capture.jax.convert import convert_jax_file

            return convert_jax_file(src, tmp, node=node, rank=rank, progress=progress)
        return [convert_kineto_file(src, tmp, node=node, rank=rank, progress=progress, threads=threads)]
    from profui.capture.nsys.convert import convert_nsys_file
    from profui.capture.nsys.tables import exported_sqlite

    work = None
    try:
        if src.name.lower().endswith(".nsys-rep"):
            work = tmp.parent / f".{tmp.name}.nsys"
            work.mkdir(exist_ok=True)
            sqlite = exported_sqlite(src, work)
        else:
            sqlite = src
        results = convert_nsys_file(
            sqlite, tmp, node=node, rank=rank, step_pattern=step_pattern, progress=progress
        )
    finally:
        if work is not None:
            shutil.rmtree(work, ignore_errors=True)
    for r in results:
        r.source["file"] = str(src)
    return results


def _convert_all(
    files: list[Path],
    tmp: Path,
    *,
    rank: int | None,
    node: str | None,
    progress: Progress | None,
    step_pattern: str | None = None,
    mapper: Mapper | None = None,
    scratch: Path | None = None,
) -> list[tuple[Path, list[ConvertResult]]]:
    """Convert every file into ``tmp``; each file with what it gave (an Nsight export a rank per
    process)."""
    if mapper is not None and len(files) > 1 and not any(is_nsys_file(f) for f in files):
        return _convert_at_once(
            files, tmp, scratch=scratch or tmp, rank=rank, node=node, progress=progress, mapper=mapper
        )
    sizes = [source_size(f) for f in files]
    total = sum(sizes)
    done = 0
    threads = usable_cpus()
    results: list[ConvertResult] = []
    per_file: list[tuple[Path, list[ConvertResult]]] = []
    for f, size in zip(files, sizes, strict=True):
        offset = done

        def sub(d: int, _n: int, offset: int = offset) -> None:
            if progress is not None:
                progress(offset + d, total)

        first_rank = rank
        if rank is None and is_nsys_file(f) and results:
            # each export numbers its processes from 0: several exports (one per rank or node)
            # go on where the files before them stopped, never into the same ranks
            first_rank = max(r.rank for r in results) + 1
        found = _convert(
            f, tmp, node=node, rank=first_rank, step_pattern=step_pattern, progress=sub, threads=threads
        )
        results.extend(found)
        per_file.append((f, found))
        done += size
    if progress is not None:
        progress(total, total)
    return per_file


def _convert_apart(job: tuple[Path, Path, Path, str | None, int | None]) -> list[ConvertResult]:
    """One Kineto or JAX file ``(source, own folder, import's folder, node, rank)`` converted into
    a folder of its own beside the import's: a task of an import done at once. The folder is
    emptied first, so a task run again after its worker died starts over; a task that finishes
    after its import was given up (that folder gone) removes its own."""
    src, own, scratch, node, rank = job
    shutil.rmtree(own, ignore_errors=True)
    own.mkdir()
    try:
        return _convert(src, own, node=node, rank=rank, step_pattern=None, progress=lambda _d, _n: None)
    finally:
        if not scratch.exists():
            shutil.rmtree(own, ignore_errors=True)


def _convert_at_once(
    files: list[Path],
    tmp: Path,
    *,
    scratch: Path,
    rank: int | None,
    node: str | None,
    progress: Progress | None,
    mapper: Mapper,
) -> list[tuple[Path, list[ConvertResult]]]:
    """:func:`_convert_all` with every file converted by ``mapper`` at once, each into a folder
    of its own beside the import's folder ``scratch`` (absolute paths: the tasks may run
    elsewhere), then moved into ``tmp`` in the files' order, so each rank's events files are
    numbered as a one-by-one import numbers them. A task still running when the import fails
    cannot be stopped: the folders are outside ``scratch`` (a write into one never re-creates
    it) and :func:`_remove_task_folders` or the task itself removes them."""
    sizes = [source_size(f) for f in files]
    total, done = sum(sizes), 0
    scratch = scratch.absolute()
    batch = uuid.uuid4().hex[:8]
    own = [scratch.parent / f"{scratch.name}.file-{batch}-{i}" for i in range(len(files))]
    jobs = [(f.absolute(), own[i], scratch, node, rank) for i, f in enumerate(files)]
    found: list[list[ConvertResult]] = [[] for _ in files]
    for i, results in mapper(_convert_apart, jobs, [str(f) for f in files]):
        found[i] = results
        done += sizes[i]
        if progress is not None:
            progress(done, total)
    for f, results in zip(files, found, strict=True):
        for r in results:
            r.path = adopt_events(r.path, tmp, r.node, r.rank)
            r.source["file"] = str(f)  # as named, like a one-by-one import's manifest
    for folder in own:
        shutil.rmtree(folder)
    return list(zip(files, found, strict=True))


def _remove_task_folders(scratch: Path) -> None:
    """The folders of an import's tasks (:func:`_convert_at_once`) beside ``scratch``."""
    for folder in scratch.parent.glob(f"{glob.escape(scratch.name)}.file-*"):
        shutil.rmtree(folder, ignore_errors=True)


def _write_job_manifest(results: list[ConvertResult], tmp: Path, name: str, notes: list[str]) -> Manifest:
    """The manifest of one imported job, written into ``tmp``; ``notes``: what the import skipped."""
    firsts = [r.first_ts_ns for r in results if r.first_ts_ns is not None]
    lasts = [r.last_end_ns for r in results if r.last_end_ns is not None]
    gpus: list[dict[str, Any]] = []
    seen: set[tuple[str, Any]] = set()
    for r in results:
        for g in r.gpus:
            key = (g["node"], g.get("id"))
            if key not in seen:
                seen.add(key)
                gpus.append(g)
    schema_versions = sorted(
        {
            str(r.source["metadata"].get("schemaVersion"))
            for r in results
            if "schemaVersion" in r.source["metadata"]
        }
    )
    versions = {"profui": _profui_version()}
    if schema_versions:
        versions["kineto_schema"] = ",".join(schema_versions)
    manifest = Manifest(
        name=name,
        status="imported",
        source=_import_source({r.source.get("format") for r in results}),
        start_ns=min(firsts) if firsts else None,
        end_ns=max(lasts) if lasts else None,
        hosts=sorted({r.node for r in results}),
        gpus=gpus,
        ranks=sorted({r.rank for r in results}),
        versions=versions,
        sources=[r.manifest_entry(tmp) for r in results],
        notes=list(notes),
    )
    write_manifest(tmp, manifest)
    return manifest


def _import_source(formats: set[object]) -> str:
    """The manifest's ``source``: ``kineto-import``, ``nsys-import``, or ``import`` for a mix."""
    return f"{formats.pop()}-import" if len(formats) == 1 else "import"


def _swap_into_place(tmp: Path, out_dir: Path) -> None:
    if not out_dir.exists():
        os.replace(tmp, out_dir)
        return
    old = out_dir.parent / f".{out_dir.name}.replaced-{os.getpid()}"
    if old.exists():
        shutil.rmtree(old)
    os.replace(out_dir, old)
    try:
        os.replace(tmp, out_dir)
    except BaseException:
        os.replace(old, out_dir)
        raise
    with contextlib.suppress(OSError):
        shutil.rmtree(old)
