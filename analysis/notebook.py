"""The notebook facade: ``t = open_trace("trace/")``, then ``t.events()``, ``t.kernels()``,
``t.result("kernels")``, ``t.summary()`` ...

A :class:`TraceAnalyses` is a :class:`~profui.analysis.trace.Trace` (the data) with the analyses
as methods: each is a thin call into the module that owns the computation, or a run of the stage
graph (:func:`profui.analysis.run.run`), so the same numbers come from the facade,
the pipeline stages and the TUI. The pipeline never imports this module: its stage bodies take
the data handle.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

import polars as pl

from .top_n import TOP_N
from .trace import Trace
from .trace import open_trace as open_trace_data

if TYPE_CHECKING:
    from .pipeline.result import Result
    from .steps import Steps
    from .summary_document import Summary


class TraceAnalyses(Trace):
    """An opened trace with the analyses as methods.

    ``hta_compat=True`` on the analysis methods reproduces Holistic Trace Analysis' numbers
    (µs rounding, last ProfilerStep dropped, sync counted as GPU time) through
    :mod:`profui.analysis.hta_variants`; the default is exact ns over the whole trace with only
    real device work counted.
    """

    def __init__(self, trace: Trace) -> None:
        super().__init__(trace.dir)
        #: In-memory stores of the stage graph, one per parameter set (see :meth:`result`).
        self._stores: dict[tuple[tuple[str, Any], ...], dict[str, dict[str, Any]]] = {}

    def hta_events(self, include_last_step: bool = False) -> pl.LazyFrame:
        """Events as Holistic Trace Analysis sees them; see :mod:`profui.analysis.hta`."""
        from .hta import hta_events

        return hta_events(self.cached_events(), self.hta_time_offsets(), include_last_step=include_last_step)

    def _run(
        self, exact: Callable[..., pl.LazyFrame], hta_variant: str, hta_compat: bool, **kwargs: Any
    ) -> pl.DataFrame:
        """``exact(events)``, or HTA's variant (named in :mod:`.hta_variants`) over HTA's view."""
        if hta_compat:
            from . import hta_variants

            variant: Callable[..., pl.LazyFrame] = getattr(hta_variants, hta_variant)
            return variant(self.hta_events(), **kwargs).collect()
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

    def steps(self) -> Steps:
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
        return stage_result(self, stage, params)

    def summary(
        self,
        *,
        scheduler: str | None = None,
        workers: int | None = None,
        skip_bad_ranks: bool = False,
        **params: Any,
    ) -> Summary:
        """Every answer at once, a :class:`profui.analysis.summary.Summary` (``profui summary``'s).

        With ``scheduler="tcp://HOST:PORT"``, ``workers=N`` (a local Dask cluster) or
        ``skip_bad_ranks=True`` the job is summarised by ranks on Dask instead
        (:func:`profui.analysis.run.run` with ``where="ranks"``: per-rank and job tables, never
        every event in this process): ``t.summary(scheduler="tcp://10.0.0.5:8786")``.
        """
        if scheduler or workers or skip_bad_ranks:
            from .run import run

            result = run(
                self.path,
                ["summary"],
                params,
                where="ranks",
                scheduler=scheduler,
                workers=workers,
                skip_bad_ranks=skip_bad_ranks,
            )
            return result.summary.summary
        return stage_run(self, "summary", params).summary.summary


def open_trace(path: str | Path) -> TraceAnalyses:
    """Open a profui trace directory for a notebook: its data and the analyses
    (``TraceFormatError`` with a one-line message when it is not a trace folder).

    Analysis never writes traces: Kineto JSON is imported into a trace folder first, with
    ``profui import FILE -o trace/`` or :func:`profui.capture.ingest.import_trace`.
    """
    return TraceAnalyses(open_trace_data(path))


def stage_result(trace: Trace, stage: str, params: Mapping[str, Any]) -> dict[str, Any]:
    """``stage``'s outputs on ``trace``, ``{file: frame or value}`` (:func:`stage_run`'s)."""
    return stage_run(trace, stage, params).outputs[stage]


def stage_run(trace: Trace, stage: str, params: Mapping[str, Any]) -> Result:
    """The result of ``stage`` on ``trace``, the stage graph run in memory for ``params`` (by
    name); a :class:`TraceAnalyses` keeps the stages computed for these parameters for its later
    calls."""
    from .run import run

    store: dict[str, dict[str, Any]] = {}
    if isinstance(trace, TraceAnalyses):
        store = trace._stores.setdefault(tuple(sorted(params.items())), {})
    return run(trace, (stage,), params, store=store)
