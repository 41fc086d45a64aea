"""One Kineto JSON file converted into an existing trace: :func:`convert_kineto_file`.

profcap's daemon calls it for each file a job writes; the import pipeline
(:mod:`profui.capture.ingest.importer`) calls it for each Kineto source of an import.
"""

from __future__ import annotations

import gc
import json
from pathlib import Path
from typing import Any

from profui.capture.conversion.errors import KinetoFormatError
from profui.capture.conversion.heap import c_heap_pool, give_back
from profui.capture.conversion.result import (
    ConvertResult,
    Progress,
    detect_node,
    detect_rank,
    source_size,
)
from profui.capture.format import write_events

from .convert import FailedInParts, convert_events
from .native import scan_ahead
from .reader import decode, is_mapped, read_bytes


def convert_kineto_file(
    src: Path,
    trace_dir: Path,
    *,
    node: str | None = None,
    rank: int | None = None,
    seq: int | None = None,
    progress: Progress | None = None,
    note: dict[str, Any] | None = None,
    threads: int = 1,
) -> ConvertResult:
    """Convert one Kineto JSON file into one events file of the existing trace ``trace_dir``.

    Writes ``node=<node>/rank=<rank>/events-<seq>.parquet`` atomically (the next free ``seq``
    unless given) and nothing else: the caller owns the manifest. ``progress(done, total)`` is
    called now and then (``total`` is the source's size in bytes); ``note`` adds its keys to the
    events file's ``profui.source`` note (profcap's hand-over hash); ``threads``: how many threads
    its scan and its write may use (1, the default, where a training job runs beside the
    conversion). Raises :class:`KinetoFormatError` for files that are missing, broken or not Kineto traces.
    """
    src = Path(src)
    with c_heap_pool():
        try:
            return _convert_kineto_file(src, trace_dir, node, rank, seq, progress, note, threads)
        except FailedInParts:  # a file this bad is refused: with the error a one-part run names first
            return _convert_kineto_file(src, trace_dir, node, rank, seq, progress, note, 1)


def _convert_kineto_file(
    src: Path,
    trace_dir: Path,
    node: str | None,
    rank: int | None,
    seq: int | None,
    progress: Progress | None,
    note: dict[str, Any] | None,
    threads: int,
) -> ConvertResult:
    size = source_size(src)

    def report(fraction: float) -> None:
        if progress is not None:
            progress(int(size * fraction), size)

    before = _identity(src)
    data = read_bytes(src, spill_dir=trace_dir)
    report(0.15)
    # the events array is scanned (C, without the GIL) while msgspec decodes the whole text
    ahead = scan_ahead(data, threads, is_mapped(data))
    try:
        doc = decode(src, data)
        del data
        report(0.35)
        if doc.is_empty():
            raise KinetoFormatError(src, "no trace events (empty 'traceEvents')")
        exported = doc.metadata.get("profui")
        if (
            isinstance(exported, dict)
            and isinstance(exported.get("ranks"), list)
            and len(exported["ranks"]) > 1
        ):
            raise KinetoFormatError(
                src,
                f"a profui export of {len(exported['ranks'])} ranks in one file (for viewing): to import "
                "it again, export one rank per file (profui export --ranks R)",
            )
        gc_enabled = gc.isenabled()
        gc.disable()  # millions of short-lived objects, no cycles: full collections only cost time
        try:
            conv = convert_events(
                doc,
                None if progress is None else lambda i, n: report(0.35 + 0.45 * i / max(n, 1)),
                threads=threads,
                ahead=ahead,
            )
        finally:
            if gc_enabled:
                gc.enable()
    finally:
        if ahead is not None:
            ahead.close()
    if _identity(src) != before:  # a plain file is read through a mapping, which sees changes
        raise KinetoFormatError(
            src, "changed while it was being imported: import it again once it is written"
        )
    if conv.table.num_rows == 0:
        raise KinetoFormatError(src, "no trace events besides metadata: nothing to import")
    rank_value, rank_from = detect_rank(doc.metadata, src, rank)
    node_value = detect_node(doc.metadata, src, node)
    source = {
        "file": str(src),
        "format": "kineto",
        "rank_from": rank_from,
        "metadata": doc.metadata,
        "base_time_ns": doc.base_time_ns,
        **conv.source,
        **(note or {}),
    }
    exported = doc.metadata.get("profui")  # a file profui export wrote: what its source's importer said
    if isinstance(exported, dict) and isinstance(exported.get("notes"), list) and exported["notes"]:
        source["notes"] = [n for n in exported["notes"] if isinstance(n, str)]
    extra = {"profui.source": json.dumps(source, default=str, separators=(",", ":"))}
    give_back()  # what the conversion let go of (its text, the scan's columns), before the writer's own
    path = write_events(
        trace_dir, node_value, rank_value, conv.table, seq=seq, extra_metadata=extra, threads=threads
    )
    report(1.0)
    gpus = _gpus(doc.metadata, node_value, conv.devices)
    return ConvertResult(
        rank=rank_value,
        node=node_value,
        num_events=conv.table.num_rows,
        counts=conv.counts,
        first_ts_ns=conv.first_ts_ns,
        last_end_ns=conv.last_end_ns,
        devices=conv.devices,
        path=path,
        source=source,
        gpus=gpus,
    )


def _identity(src: Path) -> tuple[int, int, int] | None:
    """What tells a file rewritten since: inode, size and modification time."""
    try:
        st = src.stat()
    except OSError:
        return None
    return st.st_ino, st.st_size, st.st_mtime_ns


def _gpus(metadata: dict[str, Any], node: str, devices: list[int]) -> list[dict[str, Any]]:
    props = metadata.get("deviceProperties")
    gpus: list[dict[str, Any]] = []
    seen: set[int] = set()
    if isinstance(props, list):
        for p in props:
            if isinstance(p, dict):
                gpus.append({"node": node, **p})
                if isinstance(p.get("id"), int):
                    seen.add(p["id"])
    for d in devices:
        if d not in seen:
            gpus.append({"node": node, "id": d})
    return gpus
