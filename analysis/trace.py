"""The data of a trace: a validated trace directory, its events and metrics, and what its files
say beside them (the manifest, HTA's time offsets).

A :class:`Trace` reads and runs nothing else: the stage bodies take it, and the analyses a
notebook calls on a trace are :mod:`profui.analysis.notebook`'s.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable
from functools import cached_property
from pathlib import Path
from typing import cast

import polars as pl

from profui.capture.format import (
    EVENT_KINDS,
    IMPORTABLE_SUFFIXES,
    TABLE_COLUMNS,
    FooterError,
    Manifest,
    TraceDir,
    TraceFile,
    TraceFormatError,
    is_trace_dir,
    open_trace_dir,
    read_footer,
)

#: Polars types of the events columns as analysis sees them (strings as plain ``pl.String``).
EVENTS_POLARS_SCHEMA: dict[str, pl.DataType] = {
    "ts": pl.Int64(),
    "dur": pl.Int64(),
    "kind": pl.String(),
    "name": pl.String(),
    "pid": pl.Int64(),
    "tid": pl.Int64(),
    "device": pl.Int32(),
    "stream": pl.Int32(),
    "correlation": pl.Int64(),
    "external_id": pl.Int64(),
    "bytes": pl.Int64(),
    "memcpy_kind": pl.String(),
    "args": pl.String(),
    "node": pl.String(),
    "rank": pl.Int64(),
}

METRICS_POLARS_SCHEMA: dict[str, pl.DataType] = {
    "ts": pl.Int64(),
    "source": pl.String(),
    "device": pl.Int32(),
    "metric": pl.String(),
    "value": pl.Float64(),
    "node": pl.String(),
}

assert set(TABLE_COLUMNS["events"]) < set(EVENTS_POLARS_SCHEMA)
assert set(TABLE_COLUMNS["metrics"]) < set(METRICS_POLARS_SCHEMA)


def _scan(
    files: list[TraceFile], schema: dict[str, pl.DataType], with_rank: bool, cast: bool = True
) -> pl.LazyFrame:
    """One lazy scan over ``files`` with the partition values as literal columns; ``cast=False``
    leaves the dictionary-coded strings as Polars reads them (Categorical)."""
    if not files:
        return pl.LazyFrame(schema=schema)
    stored = [c for c in schema if c not in ("node", "rank")]
    parts = []
    for f in files:
        lf = pl.scan_parquet(f.path).select(stored)
        extra = [pl.lit(f.node, dtype=pl.String).alias("node")]
        if with_rank:
            extra.append(pl.lit(f.rank, dtype=pl.Int64).alias("rank"))
        parts.append(lf.with_columns(extra))
    lf = pl.concat(parts, how="vertical") if len(parts) > 1 else parts[0]
    return lf.cast(schema) if cast else lf  # type: ignore[arg-type]


def strings_sharing_text(frame: pl.DataFrame) -> pl.DataFrame:
    """``frame`` with each Categorical column as a String column whose rows share one copy of
    each distinct text.

    A cast copies every row's text (at 3M events, 125 MB of kernel names out of 215 distinct
    ones); gathering from a column of the distinct texts makes rows that point into it, and so
    do the filters, joins and sorts of the analyses that carry the names on.
    """
    converted = []
    for column in frame.get_columns():
        if column.dtype != pl.Categorical:
            continue
        codes = column.to_physical()
        first = codes.arg_unique()
        present = codes.gather(first)
        texts = column.gather(first).cast(pl.String)
        known = present.is_not_null()
        size = (cast("int | None", present.max()) or 0) + 1
        lookup = pl.Series(column.name, [None], dtype=pl.String).extend_constant(None, size - 1)
        converted.append(lookup.scatter(present.filter(known), texts.filter(known)).gather(codes))
    # with_columns keeps the other columns' chunks (a new frame of them all would rechunk them)
    return frame.with_columns(converted) if converted else frame


def _read(
    lf: pl.LazyFrame, files: list[TraceFile], then: Callable[[pl.DataFrame], pl.DataFrame] | None = None
) -> pl.DataFrame:
    """``lf`` collected (and passed through ``then``); when that fails on the files' contents,
    the one-line error naming the file (corrupt pages under an intact footer, a column of the
    wrong type)."""
    try:
        frame = lf.collect()
        return then(frame) if then is not None else frame
    except (pl.exceptions.PolarsError, OSError) as exc:
        from profui.capture.format.readcheck import unreadable

        found = unreadable(files)
        if found is None:
            raise
        raise found from exc


def scan_events(trace_dir: TraceDir) -> pl.LazyFrame:
    """Lazy scan of every events file of an opened trace, with ``node`` and ``rank`` columns."""
    return _scan(trace_dir.events, EVENTS_POLARS_SCHEMA, with_rank=True)


def scan_metrics(trace_dir: TraceDir) -> pl.LazyFrame:
    """Lazy scan of every metrics file of an opened trace, with a ``node`` column."""
    return _scan(trace_dir.metrics, METRICS_POLARS_SCHEMA, with_rank=False)


class Trace:
    """An opened trace directory: its tables (lazy scans, or read once into memory), its manifest
    and HTA's time offsets. Holds data only; the analyses are :mod:`profui.analysis.notebook`'s."""

    def __init__(self, trace_dir: TraceDir, columns: Iterable[str] | None = None) -> None:
        """``columns``: the events columns :meth:`cached_events` reads (with ``node``, ``rank``
        and ``kind``), for a caller that runs only analyses reading no others; None: all."""
        self.dir = trace_dir
        keep = None if columns is None else {*columns, "node", "rank", "kind"}
        self._schema = {c: t for c, t in EVENTS_POLARS_SCHEMA.items() if keep is None or c in keep}

    @property
    def path(self) -> Path:
        """Folder of the trace."""
        return self.dir.path

    @property
    def manifest(self) -> Manifest:
        """The trace's ``manifest.json``."""
        return self.dir.manifest

    def __repr__(self) -> str:
        return f"Trace({str(self.path)!r}, events={self.dir.num_events}, ranks={len(self.dir.ranks)})"

    # -- tables ---------------------------------------------------------------------------
    def events(self) -> pl.LazyFrame:
        """All events: EVENTS_SCHEMA columns (strings as ``pl.String``) plus ``node``, ``rank``."""
        return scan_events(self.dir)

    def metrics(self) -> pl.LazyFrame:
        """All sampled metrics (``ts, source, device, metric, value``) plus ``node``."""
        return self._collected_metrics.lazy()

    @cached_property
    def _collected_metrics(self) -> pl.DataFrame:
        return _read(scan_metrics(self.dir), self.dir.metrics)

    @cached_property
    def _collected_events(self) -> pl.DataFrame:
        files = self.dir.events

        def held(read: pl.DataFrame) -> pl.DataFrame:
            odd = set(read["kind"].unique().drop_nulls().cast(pl.String).to_list()) - set(EVENT_KINDS)
            if odd:
                from profui.capture.format.readcheck import kind_not_in_format

                raise kind_not_in_format(files, odd)
            frame = strings_sharing_text(read.with_columns(pl.col("kind").cast(pl.Enum(EVENT_KINDS))))
            # only the columns stored in another type (a cast of the frame copies the others too)
            other = {c: t for c, t in self._schema.items() if frame.schema[c] != t and c != "kind"}
            return frame.cast(other) if other else frame  # type: ignore[arg-type]

        # the casts too may fail on a file's contents (a column stored as another type)
        return _read(_scan(files, self._schema, with_rank=True, cast=False), files, then=held)

    def cached_events(self) -> pl.LazyFrame:
        """Events read once into memory and reused by later calls (for repeated analyses): the
        columns of :meth:`events`, but ``kind`` as an Enum of the format's kinds (every analysis
        filters on kinds, which then compares small integers, not text), and each distinct name's
        text held once (:func:`strings_sharing_text`)."""
        return self._collected_events.lazy()

    def without_cached_columns(self, names: Iterable[str]) -> None:
        """Let go of the columns ``names`` of the events held in memory, the others kept as they
        are (not copied): for a run of the stage graph whose stages still to run read none of
        them (:func:`profui.analysis.pipeline.store.compute`), which then calls
        :meth:`forget_cached_events`."""
        if "_collected_events" in self.__dict__:
            drop = set(names)
            kept = [c for c in self._collected_events.get_columns() if c.name not in drop]
            # a frame of the columns, not ``drop``: the columns' chunks differ, and a select
            # of them rechunks (copies) every column
            self.__dict__["_collected_events"] = pl.DataFrame(kept)

    def forget_cached_events(self) -> None:
        """Let go of the events held in memory: :meth:`cached_events` reads them again when next
        called."""
        self.__dict__.pop("_collected_events", None)

    def hta_time_offsets(self) -> dict[tuple[str, int], int]:
        """Per ``(node, rank)``: the ns HTA's float µs were relative to (Kineto ``baseTimeNanoseconds``).

        Read from the ``profui.source`` note the Kineto importer leaves in each events file;
        0 (absolute epoch µs) when there is none.
        """
        offsets: dict[tuple[str, int], int] = {}
        for f in self.dir.events:
            try:
                meta = read_footer(f.path).metadata
            except (OSError, FooterError):
                meta = {}
            raw = meta.get(b"profui.source")
            base = None
            if raw:
                try:
                    base = json.loads(raw).get("base_time_ns")
                except (ValueError, AttributeError):
                    base = None
            if isinstance(base, int) and f.rank is not None:
                offsets[(f.node, f.rank)] = base
        return offsets


def open_trace(path: str | Path) -> Trace:
    """The data of the profui trace directory ``path``, validated (``TraceFormatError`` with a
    one-line message otherwise); :func:`profui.analysis.open_trace` is the notebook's, with the
    analyses.

    Analysis never writes traces: Kineto JSON is imported into a trace folder first, with
    ``profui import FILE -o trace/`` or :func:`profui.capture.ingest.import_trace`.
    """
    p = Path(path).expanduser()
    if not is_trace_dir(p) and _looks_importable(p):
        raise TraceFormatError(
            p,
            "a trace to import (Kineto JSON or an Nsight Systems export), not a profui trace folder: import it first "
            f"(`profui import {p} -o trace/` or profui.capture.ingest.import_trace) "
            "and open the folder",
        )
    return Trace(open_trace_dir(p))


def _looks_importable(p: Path) -> bool:
    if p.is_file():
        return p.name.lower().endswith(IMPORTABLE_SUFFIXES)
    if p.is_dir():
        return any(f.name.lower().endswith(IMPORTABLE_SUFFIXES) for f in p.iterdir() if f.is_file())
    return False
