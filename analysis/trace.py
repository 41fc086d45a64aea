"""The notebook facade: ``t = open_trace("trace/")``, then ``t.events()``, ``t.kernels()`` ...

A :class:`Trace` is a validated trace directory plus lazy scans of its tables. Every analysis
method is a thin call into the module that owns the computation, so the same numbers come from
the facade, the pipeline stages and the TUI.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable
from functools import cached_property
from pathlib import Path
from typing import Any, cast

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

from .top_n import TOP_N

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
    """An opened trace directory: lazy tables plus the analyses as methods.

    ``hta_compat=True`` on the analysis methods reproduces Holistic Trace Analysis' numbers
    (µs rounding, last ProfilerStep dropped, sync counted as GPU time) through
    :mod:`profui.analysis.hta_variants`; the default is exact ns over the whole trace with only
    real device work counted.
    """

    def __init__(self, trace_dir: TraceDir) -> None:
        self.dir = trace_dir
        #: In-memory stores of the stage graph, one per parameter set (see :meth:`result`).
        self._stores: dict[tuple, dict[str, dict[str, Any]]] = {}

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
            other = {c: t for c, t in EVENTS_POLARS_SCHEMA.items() if frame.schema[c] != t and c != "kind"}
            return frame.cast(other) if other else frame  # type: ignore[arg-type]

        # the casts too may fail on a file's contents (a column stored as another type)
        return _read(_scan(files, EVENTS_POLARS_SCHEMA, with_rank=True, cast=False), files, then=held)

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

    def hta_events(self, include_last_step: bool = False) -> pl.LazyFrame:
        """Events as Holistic Trace Analysis sees them; see :mod:`profui.analysis.hta`."""
        from .hta import hta_events

        return hta_events(self.cached_events(), self.hta_time_offsets(), include_last_step=include_last_step)

    def _run(self, exact: Any, hta_variant: str, hta_compat: bool, **kwargs: Any) -> pl.DataFrame:
        """``exact(events)``, or HTA's variant (named in :mod:`.hta_variants`) over HTA's view."""
        if hta_compat:
            from . import hta_variants

            return getattr(hta_variants, hta_variant)(self.hta_events(), **kwargs).collect()
        return exact(self.cached_events(), **kwargs).collect()

    # -- analyses (thin calls into the owning modules) ------------------------------------
    def gpu_busy(self, by: tuple[str, ...] | None = None, hta_compat: bool = False) -> pl.DataFrame:
        """GPU busy/idle per GPU (HTA: per rank) or ``by``; see :func:`profui.analysis.busy.gpu_busy`."""
        from .busy import gpu_busy

        kwargs = {} if by is None else {"by": by}
        return self._run(gpu_busy, "hta_gpu_busy", hta_compat, **kwargs)

    def temporal_breakdown(self, hta_compat: bool = False) -> pl.DataFrame:
        """Idle / compute / non-compute time; see :func:`profui.analysis.busy.temporal_breakdown`."""
        from .busy import temporal_breakdown

        return self._run(temporal_breakdown, "hta_temporal_breakdown", hta_compat)

    def utilization(self, bucket_ns: int | None = None, hta_compat: bool = False) -> pl.DataFrame:
        """GPU busy fraction per time bucket; see :func:`profui.analysis.utilization.gpu_utilization`."""
        from .utilization import gpu_utilization

        return self._run(gpu_utilization, "hta_gpu_utilization", hta_compat, bucket_ns=bucket_ns)

    def cpu_utilization(self, bucket_ns: int | None = None) -> pl.DataFrame:
        """CPU utilization over time; see :func:`profui.analysis.utilization.cpu_utilization`."""
        from .utilization import cpu_utilization

        return cpu_utilization(self.cached_events(), self.metrics(), bucket_ns=bucket_ns).collect()

    def kernels(self, by: tuple[str, ...] = (), hta_compat: bool = False) -> pl.DataFrame:
        """Per-kernel-name statistics; see :func:`profui.analysis.kernels.kernel_stats`."""
        from .kernels import kernel_stats

        return self._run(kernel_stats, "hta_kernel_stats", hta_compat, by=by)

    def top_kernels(self, n: int = TOP_N, by: str = "total_ns") -> pl.DataFrame:
        """Top-N kernels by ``total_ns`` or ``count``; see :func:`profui.analysis.kernels.top_kernels`."""
        from .kernels import kernel_stats, top_kernels

        return top_kernels(kernel_stats(self.cached_events()), n=n, by=by).collect()

    def activity(self, hta_compat: bool = False) -> pl.DataFrame:
        """Kernel/memcpy/memset/sync/idle shares; see :func:`profui.analysis.activity.activity_shares`."""
        from .activity import activity_shares

        return self._run(activity_shares, "hta_activity_shares", hta_compat)

    def memory_ops(self) -> pl.DataFrame:
        """Memory operations by direction; see :func:`profui.analysis.memory.memory_ops`."""
        from .memory import memory_ops

        return memory_ops(self.cached_events()).collect()

    def memory_bandwidth(self, hta_compat: bool = False) -> pl.DataFrame:
        """Concurrent memory bandwidth over time; see :func:`profui.analysis.memory.bandwidth_summary`."""
        from .memory import bandwidth_summary

        return self._run(bandwidth_summary, "hta_memory_bw_summary", hta_compat)

    def blocked_on_full_queue(self, max_queue_length: int = 1024, hta_compat: bool = False) -> pl.DataFrame:
        """Time launch queues were full; see :func:`profui.analysis.idle.blocked_on_full_queue`."""
        from .idle import blocked_on_full_queue

        return self._run(
            blocked_on_full_queue, "hta_blocked_on_full_queue", hta_compat, max_queue_length=max_queue_length
        )

    def aten_op_kernels(self, hta_compat: bool = False) -> pl.DataFrame:
        """Kernels launched per ATen op, with delays; see :func:`profui.analysis.launch.aten_op_kernels`."""
        from .launch import aten_op_kernels

        return self._run(aten_op_kernels, "hta_aten_op_kernels", hta_compat)

    def precision(self) -> pl.DataFrame:
        """Kernel-time shares per precision; see :func:`profui.analysis.precision.precision_shares`."""
        from .precision import precision_shares

        return precision_shares(self.cached_events()).collect()

    def steps(self) -> Any:
        """Step windows mapped to the device (a :class:`profui.analysis.steps.Steps`)."""
        from .steps import step_windows

        return step_windows(self.cached_events())

    def result(self, stage: str, **params: Any) -> dict[str, Any]:
        """One stage's outputs, ``{file: frame or value}``, exactly as ``profui analyze`` and the
        dashboard compute them (``t.result("kernels")["top_by_time.parquet"]``).

        ``params`` are pipeline parameters by name (``top_n=30``, ``hta_compat=True`` …). The stage
        graph runs in memory, nothing is written; stages computed for these parameters are kept
        and reused by later calls on this Trace.
        """
        from .pipeline.store import compute

        key = tuple(sorted(params.items()))
        store = self._stores.setdefault(key, {})
        return compute(self, (stage,), params, store=store)[stage]

    def summary(
        self,
        *,
        scheduler: str | None = None,
        workers: int | None = None,
        skip_bad_ranks: bool = False,
        **params: Any,
    ) -> Any:
        """Every answer at once, a :class:`profui.analysis.summary.Summary` (``profui summary``'s).

        With ``scheduler="tcp://HOST:PORT"``, ``workers=N`` (a local Dask cluster) or
        ``skip_bad_ranks=True`` the job is summarised by ranks on Dask instead
        (:func:`profui.analysis.distributed.summarize_ranks`: per-rank and job tables, never
        every event in this process): ``t.summary(scheduler="tcp://10.0.0.5:8786")``.
        """
        if scheduler or workers or skip_bad_ranks:
            from .distributed import summarize_ranks

            return summarize_ranks(
                self.path, params, scheduler=scheduler, workers=workers, skip_bad_ranks=skip_bad_ranks
            )
        return self.result("summary", **params)["summary.json"]


def open_trace(path: str | Path) -> Trace:
    """Open a profui trace directory, validated (``TraceFormatError`` with a one-line message otherwise).

    Analysis never writes traces: Kineto JSON is imported into a trace folder first, with
    ``profui import FILE -o trace/`` or :func:`profui.capture.kineto.import_kineto`.
    """
    p = Path(path).expanduser()
    if not is_trace_dir(p) and _looks_importable(p):
        raise TraceFormatError(
            p,
            "a trace to import (Kineto JSON or an Nsight Systems export), not a profui trace folder: import it first "
            f"(`profui import {p} -o trace/` or profui.capture.kineto.import_kineto) "
            "and open the folder",
        )
    return Trace(open_trace_dir(p))


def _looks_importable(p: Path) -> bool:
    if p.is_file():
        return p.name.lower().endswith(IMPORTABLE_SUFFIXES)
    if p.is_dir():
        return any(f.name.lower().endswith(IMPORTABLE_SUFFIXES) for f in p.iterdir() if f.is_file())
    return False
