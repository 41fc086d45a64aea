"""Job-level answers reduced from per-rank results: what a cluster run of many ranks builds on
the client without ever loading a rank's events.

A run over ranks (:mod:`profui.analysis.distributed`) computes the stage graph on each rank
alone (:mod:`profui.analysis.ranks`). Three kinds of thing come back (:func:`rank_keys`):

- :data:`PER_RANK_TABLES`: tables keyed by node and rank whose rows for a rank depend on that
  rank's events only. The job's table is the ranks' tables one after another, in (node, rank)
  order, the order the whole-trace stage writes them in (``sort``: the columns a table is sorted
  by where the stage orders its rows otherwise; ``node_rows``: a node's own rows, which each of
  its ranks sends, kept once).
- :data:`RANK_ROWS`: what a job table needs of each rank to be exact, in no summary table: the
  rank's kernels, cpu ops, runtime calls, memory ops, annotations, launches, communication
  rows and FLOP-bearing ops and kernels (:func:`profui.analysis.flops.flop_rows`: an op's
  kernels are its own rank's), only the columns the whole-trace function reads (a percentile of the job is not a
  reduction of the ranks' percentiles: the values come back; about 8-40 bytes a row).
- :data:`RANK_JSON`: the steps' and memory events' counts, worded for the job by the stage's
  own rule (:func:`job_json`).

:data:`JOB_TABLES` are the tables across ranks. Each is the *same function* the whole-trace
stage calls (``stp.job_steps(windows)`` in :func:`profui.analysis.pipeline.bodies.steps`,
``kn.stats_of`` of the kernel rows in ``kernels.kernel_stats``), applied here to the concatenated
per-rank tables or rows; ``tests/analysis/test_distributed.py`` holds the two equal on every
table and ``tests/analysis/test_ranks_equal.py`` a whole summary, so the rule lives in its
analysis module once.

The utilization time series are bucketed on the client over the job's first to last ns (each
rank's :func:`utilization.trace_window`) from each GPU's busy union, each host thread's union
and each node's samples (sent by every rank of the node, kept once). The FLOPs tables, the
per-rank steps among them (their MFU divides by the job's one peak), are
:func:`profui.analysis.flops.flop_tables` of the ranks' op and kernel rows, the steps' windows
and the manifest's GPUs.

The critical path is the whole-trace stage's :func:`profui.analysis.critical_path.paths` of the
job's plan (:func:`path_plan`: its analysed steps, from the job's step windows and arrivals)
and every rank's share of the graph's inputs (:data:`PATH_SHARE`, sent by a second task per
rank, :func:`profui.analysis.ranks.path_shares`); the findings are
:func:`profui.analysis.findings.stage` of the job's tables. Under ``hta_compat`` the critical
path is HTA's, one rank's graph per window: a per-rank table (:data:`HTA_PER_RANK_TABLES`). What
a run by ranks does not give (the path and the findings without the second tasks; under
``hta_compat`` the findings and the tables whose HTA variant is not reduced here) is left out;
:func:`whole_trace_only` names it in the summary's notes.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, cast

import polars as pl

from profui.analysis import allocations as al
from profui.analysis import annotations as ann
from profui.analysis import busy as bz
from profui.analysis import comm as cm
from profui.analysis import critical_path as cp
from profui.analysis import flops as fl
from profui.analysis import idle as il
from profui.analysis import kernels as kn
from profui.analysis import launch as la
from profui.analysis import memory as mem
from profui.analysis import steps as stp
from profui.analysis import utilization as ut
from profui.analysis.activity import activity_total
from profui.analysis.busy import GPU_BY, WORK_KINDS, device_intervals
from profui.analysis.devices import CPU, GPU, NONE, DeviceWords
from profui.analysis.engine import ENGINE
from profui.analysis.intervals import merge_intervals
from profui.analysis.precision import kernel_precision, precision_shares
from profui.analysis.schemas import conform

Key = tuple[str, str]  # (stage, table) without ".parquet"
Store = Mapping[str, Mapping[str, Any]]
Params = Mapping[str, Any]


@dataclass(frozen=True)
class PerRank:
    """A table whose job rows are the ranks' rows; ``sort`` (``descending``): the order the stage
    gives them where it is not (node, rank). ``node_rows``: rows with a null ``rank`` are their
    node's (sampled metrics), which each rank of the node sends: kept once per node."""

    sort: tuple[str, ...] = ()
    descending: tuple[bool, ...] = ()
    node_rows: bool = False


@dataclass(frozen=True)
class JobTable:
    """A job table reduced by ``fn`` from the (already reduced) tables ``inputs``; ``fn`` also
    gets the run's parameters where ``params``, and the manifest's GPUs (``gpus=``) where
    ``gpus``."""

    fn: Callable[..., Any]
    inputs: tuple[Key, ...]
    params: bool = False
    gpus: bool = False


def _kernel_rows(ev: pl.LazyFrame, store: Store, params: Params) -> pl.LazyFrame:
    return kn.kernel_events(ev).select("name", "kernel_type", "dur")


def _type_cover(ev: pl.LazyFrame, store: Store, params: Params) -> pl.LazyFrame:
    # the exclusive coverage per GPU (kernel_type_breakdown's own rows), summed on the client
    return kn.kernel_type_breakdown(ev, by=("node", "rank", "device")).drop("share")


def _cpu_op_rows(ev: pl.LazyFrame, store: Store, params: Params) -> pl.LazyFrame:
    return ev.filter(pl.col("kind") == "cpu_op").select("kind", "name", "dur")


def _runtime_rows(ev: pl.LazyFrame, store: Store, params: Params) -> pl.LazyFrame:
    calls = pl.col("kind").is_in(["runtime", "driver"])
    work = pl.col("kind").is_in(list(WORK_KINDS)) & (pl.col("device") >= 0)
    return ev.filter(calls | work).select("kind", "name", "dur", "node", "rank", "correlation", "device")


def _memory_rows(ev: pl.LazyFrame, store: Store, params: Params) -> pl.LazyFrame:
    return ev.filter(pl.col("kind").is_in(["memcpy", "memset"]), pl.col("device") >= 0).select(
        "kind", "memcpy_kind", "bytes", "dur", "device"
    )


def _precision_rows(ev: pl.LazyFrame, store: Store, params: Params) -> pl.LazyFrame:
    return kernel_precision(ev).select("precision", "rule", "dur")


def _annotation_rows(ev: pl.LazyFrame, store: Store, params: Params) -> pl.LazyFrame:
    return ev.filter(pl.col("kind").is_in(["annotation", "gpu_annotation"])).select("kind", "name", "dur")


def _launch_rows(ev: pl.LazyFrame, store: Store, params: Params) -> pl.DataFrame:
    # what launch_stats(by=()), launch_stats_by_kernel and launch_histogram read
    cols = ("name", "dur", "launch_dur", "launch_delay", "launch_latency", "launch_bound")
    launches: pl.DataFrame = store["correlate"]["launches.parquet"]
    return launches.select(cols)


def _gpu_busy(ev: pl.LazyFrame, store: Store, params: Params) -> pl.LazyFrame:
    # each GPU's busy union (what gpu_busy_and_utilization buckets), far fewer rows than its work
    return merge_intervals(device_intervals(ev), GPU_BY).select(*GPU_BY, "start", "end")


def _host_busy(ev: pl.LazyFrame, store: Store, params: Params) -> pl.LazyFrame:
    return ut.host_thread_busy(ev)


def _host_instants(ev: pl.LazyFrame, store: Store, params: Params) -> pl.LazyFrame:
    # host events without length: threads cpu_utilization counts though no union holds them
    return ev.filter(
        pl.col("kind").is_in(list(ut.HOST_BUSY_KINDS)), pl.col("device") < 0, pl.col("dur") <= 0
    ).select(*ut.THREAD, "kind", "device", "ts", "dur")


def _flop_rows(ev: pl.LazyFrame, store: Store) -> tuple[pl.DataFrame, pl.DataFrame]:
    # the op rows and the kernel rows are one computation (each needs the other's links): done
    # once per rank, its store naming the rank (rank_outputs forgets it when done)
    if not _FLOP_ROWS or _FLOP_ROWS[0] is not store:
        kernels = store.get("precision", {}).get("kernels.parquet")
        _FLOP_ROWS[:] = [store, fl.flop_rows(ev, kernels)]
    rows: tuple[pl.DataFrame, pl.DataFrame] = _FLOP_ROWS[1]
    return rows


_FLOP_ROWS: list[Any] = []


def _flop_op_rows(ev: pl.LazyFrame, store: Store, params: Params) -> pl.DataFrame:
    return _flop_rows(ev, store)[0]


def _flop_kernel_rows(ev: pl.LazyFrame, store: Store, params: Params) -> pl.DataFrame:
    return _flop_rows(ev, store)[1]


def _window(ev: pl.LazyFrame, store: Store, params: Params) -> pl.DataFrame:
    start, end = ut.trace_window(ev)
    return pl.DataFrame({"start": [start], "end": [end]}, schema={"start": pl.Int64, "end": pl.Int64})


def _comm_rows(ev: pl.LazyFrame, store: Store, params: Params) -> pl.LazyFrame:
    # the rank's communication rows as the comm stage finds them (host collectives where it has
    # no communication kernels); not sent under hta_compat, whose stage reads HTA's events
    return cm.comm_ops(ev, True)


#: Rows a rank sends back that no summary table shows: what a job table needs of each rank to be
#: reduced exactly by the whole-trace stage's own function (a percentile of the job is not a
#: reduction of the ranks' percentiles: the values themselves come back). One row per kernel,
#: cpu op, runtime call, memory op, annotation or launch of the rank, only the columns the
#: function reads.
RANK_ROWS: dict[Key, Callable[[pl.LazyFrame, Store, Params], pl.LazyFrame | pl.DataFrame]] = {
    ("kernels", "_kernel_rows"): _kernel_rows,
    ("kernels", "_type_cover"): _type_cover,
    ("kernels", "_cpu_op_rows"): _cpu_op_rows,
    ("kernels", "_runtime_rows"): _runtime_rows,
    ("memory", "_memory_rows"): _memory_rows,
    ("precision", "_precision_rows"): _precision_rows,
    ("annotations", "_annotation_rows"): _annotation_rows,
    ("launch", "_launch_rows"): _launch_rows,
    ("comm", "_comm_rows"): _comm_rows,
    ("flops", "_op_rows"): _flop_op_rows,
    ("flops", "_kernel_rows"): _flop_kernel_rows,
    ("utilization", "_gpu_busy"): _gpu_busy,
    ("utilization", "_host_busy"): _host_busy,
    ("utilization", "_host_instants"): _host_instants,
    ("utilization", "_window"): _window,
}
#: The rows whose function is the whole-trace stage's under hta_compat too (the others are
#: the exact semantics' and are not sent under hta_compat: their tables are left out). The
#: memory ops and precision shares read the trace's own events under hta_compat too.
HTA_ROWS: frozenset[Key] = frozenset(
    {
        ("launch", "_launch_rows"),
        ("flops", "_op_rows"),
        ("flops", "_kernel_rows"),
        ("memory", "_memory_rows"),
        ("precision", "_precision_rows"),
    }
)

PER_RANK_TABLES: dict[Key, PerRank] = {
    ("utilization", "busy"): PerRank(),
    ("utilization", "cpu_active"): PerRank(sort=("node", "source", "rank"), node_rows=True),
    ("utilization", "traced"): PerRank(),
    ("activity", "shares"): PerRank(),
    ("memory", "bandwidth"): PerRank(),
    ("allocations", "devices"): PerRank(),
    ("allocations", "per_step"): PerRank(),
    ("allocations", "live_at_peak"): PerRank(),
    ("allocations", "over_time"): PerRank(),
    ("allocations", "oom"): PerRank(),
    ("steps", "windows"): PerRank(),
    ("steps", "stats"): PerRank(),
    ("steps", "outliers"): PerRank(),
    ("steps", "histogram"): PerRank(),
    ("steps", "breakdown"): PerRank(),
    ("launch", "stats"): PerRank(),
    ("launch", "outliers"): PerRank(sort=("launch_delay", "launch_dur"), descending=(True, True)),
    ("launch", "aten_op_kernels"): PerRank(),
    ("sync", "host"): PerRank(sort=("total_ns", "name"), descending=(True, False)),  # then (node, rank)
    ("sync", "totals"): PerRank(),
    ("sync", "device"): PerRank(),
    ("idle", "breakdown"): PerRank(),
    ("idle", "queue"): PerRank(),
    ("idle", "blocked_on_full_queue"): PerRank(),
    ("comm", "overlap"): PerRank(),
    ("comm", "per_rank"): PerRank(),
    ("comm", "per_step"): PerRank(sort=("step", "node", "rank")),
    ("comm", "arrivals"): PerRank(),
    ("annotations", "breakdown"): PerRank(),
    ("annotations", "per_step"): PerRank(),
}


def _launch_overall(launches: pl.DataFrame, params: Mapping[str, Any]) -> pl.LazyFrame:
    slow, late = _launch_limits(params)
    return la.launch_stats(launches.lazy(), by=(), runtime_outlier_ns=slow, launch_delay_outlier_ns=late)


def _launch_limits(params: Mapping[str, Any]) -> tuple[int, int]:
    from profui.analysis.pipeline.bodies import launch_limits

    return launch_limits(params)


def _job_window(windows: pl.DataFrame) -> tuple[int, int] | None:
    """The job's first and last ns (utilization.trace_window of every rank's events)."""
    if windows.filter(pl.col("end") > 0).height == 0:
        return None
    w = windows.filter(pl.col("end") > 0)  # (0, 0): a rank without events
    # integer columns of a frame with rows: their min and max are ints
    return cast(int, w["start"].min()), cast(int, w["end"].max())


def _gpu_util(busy: pl.DataFrame, windows: pl.DataFrame, params: Params) -> pl.LazyFrame:
    bucket = _bucket_ns(params)
    return ut.utilization_table(
        None, busy.lazy(), lambda work, by: work, bucket, GPU_BY, _job_window(windows)
    )


def _cpu_util(
    busy: pl.DataFrame, instants: pl.DataFrame, windows: pl.DataFrame, metrics: pl.DataFrame, params: Params
) -> pl.LazyFrame:
    # the sampled CPU spans its own samples (no window); host events the job's first to last ns
    cpu = metrics.filter(pl.col("source") == "cpu", pl.col("metric") == "util_pct")
    window = None if cpu.height else _job_window(windows)
    return ut.cpu_utilization(
        instants.lazy(), metrics.lazy(), bucket_ns=_bucket_ns(params), window=window, busy=busy.lazy()
    )


def _bucket_ns(params: Params) -> int | None:
    from profui.analysis.pipeline.bodies import bucket_ns_of

    return bucket_ns_of(params)


def _flops(table: str) -> Callable[..., pl.DataFrame]:
    def reduce(
        ops: pl.DataFrame, kernels: pl.DataFrame, windows: pl.DataFrame, params: Params, gpus: Any
    ) -> pl.DataFrame:
        tables = fl.flop_tables(ops, kernels, windows, gpus, params["peak_tflops"], params["model_flops"])
        reduced: pl.DataFrame = getattr(tables, table)
        return reduced

    return reduce


_FLOP_INPUTS: tuple[Key, ...] = (("flops", "_op_rows"), ("flops", "_kernel_rows"), ("steps", "windows"))


def _top(by: str) -> Callable[..., pl.LazyFrame]:
    return lambda stats, params: kn.top_kernels(stats, params["top_n"], by=by)


JOB_TABLES: dict[Key, JobTable] = {
    ("utilization", "total"): JobTable(bz.total_busy, (("utilization", "busy"),)),
    ("utilization", "gpu"): JobTable(
        _gpu_util, (("utilization", "_gpu_busy"), ("utilization", "_window")), params=True
    ),
    ("utilization", "node"): JobTable(ut.node_utilization, (("utilization", "gpu"),)),
    ("utilization", "cpu"): JobTable(
        _cpu_util,
        (
            ("utilization", "_host_busy"),
            ("utilization", "_host_instants"),
            ("utilization", "_window"),
            ("utilization", "_metrics"),
        ),
        params=True,
    ),
    ("utilization", "gpu_over_time"): JobTable(
        lambda gpu: ut.util_over_time(gpu, ("node", "rank", "device")), (("utilization", "gpu"),)
    ),
    ("utilization", "cpu_over_time"): JobTable(
        lambda cpu: ut.util_over_time(cpu, ("node",)), (("utilization", "cpu"),)
    ),
    ("utilization", "gpu_sampled"): JobTable(
        lambda metrics, params: ut.sampled_gpu_utilization(
            None, metrics.lazy(), bucket_ns=_bucket_ns(params)
        ),
        (("utilization", "_metrics"),),
        params=True,
    ),
    ("kernels", "stats"): JobTable(kn.stats_of, (("kernels", "_kernel_rows"),)),
    ("kernels", "top_by_time"): JobTable(_top("total_ns"), (("kernels", "stats"),), params=True),
    ("kernels", "top_by_count"): JobTable(_top("count"), (("kernels", "stats"),), params=True),
    ("kernels", "types"): JobTable(kn.type_rows, (("kernels", "_type_cover"),)),
    ("kernels", "ops"): JobTable(kn.cpu_op_stats, (("kernels", "_cpu_op_rows"),)),
    ("kernels", "runtime"): JobTable(kn.runtime_call_stats, (("kernels", "_runtime_rows"),)),
    ("activity", "total"): JobTable(activity_total, (("activity", "shares"),)),
    ("memory", "ops"): JobTable(mem.memory_ops, (("memory", "_memory_rows"),)),
    ("precision", "shares"): JobTable(
        lambda rows: precision_shares(rows, kernels=rows), (("precision", "_precision_rows"),)
    ),
    ("steps", "job"): JobTable(stp.job_steps, (("steps", "windows"),)),
    ("steps", "job_stats"): JobTable(lambda job: stp.step_stats(job, by=()), (("steps", "job"),)),
    ("steps", "rank_ratios"): JobTable(stp.rank_step_ratios, (("steps", "windows"),)),
    ("launch", "overall"): JobTable(_launch_overall, (("launch", "_launch_rows"),), params=True),
    ("launch", "by_kernel"): JobTable(
        lambda rows: la.launch_stats_by_kernel(rows.lazy()), (("launch", "_launch_rows"),)
    ),
    ("launch", "histogram"): JobTable(
        lambda rows: la.launch_histogram(rows.lazy()), (("launch", "_launch_rows"),)
    ),
    ("idle", "totals"): JobTable(il.totals_of_breakdown, (("idle", "breakdown"),)),
    ("comm", "stragglers"): JobTable(cm.stragglers, (("comm", "arrivals"),)),
    ("annotations", "names"): JobTable(
        lambda rows: ann.annotation_names(rows.lazy()), (("annotations", "_annotation_rows"),)
    ),
    ("comm", "by_collective"): JobTable(
        lambda rows: cm.comm_by_collective(rows.lazy(), comm=rows), (("comm", "_comm_rows"),)
    ),
    ("annotations", "step_means"): JobTable(ann.annotation_step_means, (("annotations", "per_step"),)),
    **{
        ("flops", t): JobTable(_flops(t), _FLOP_INPUTS, params=True, gpus=True)
        for t in ("ops", "op_types", "kernels", "steps", "totals")
    },
}


def whole_trace_only(missing: Mapping[str, list[str]], words: DeviceWords) -> str:
    """What a run over ranks left out (``{stage: its tables left out}``), said in its notes in
    the words of the job's devices (no "GPU" for a CPU-only run)."""
    said = {
        "utilization": f"the {words.device} and CPU utilization time series",  # under hta_compat
        "critical_path": "the critical path",
        "findings": "the findings",
    }
    parts = [said.get(stage, f"the {stage} tables {', '.join(tables)}") for stage, tables in missing.items()]
    listed = parts[0] if len(parts) == 1 else f"{'; '.join(parts[:-1])} and {parts[-1]}"
    return (
        f"a run over ranks leaves out {listed}: they need every rank's events in one "
        "process (profui summary without --scheduler/--workers)"
    )


def _lazy(frame: pl.DataFrame | pl.LazyFrame) -> pl.LazyFrame:
    return frame.lazy() if isinstance(frame, pl.DataFrame) else frame


def stages_needed(params: Params | None = None) -> list[str]:
    """The stages a rank must run for :data:`PER_RANK_TABLES`, :data:`RANK_JSON` and
    :data:`RANK_ROWS` (the launches: correlate's); under ``hta_compat`` also for
    :data:`HTA_PER_RANK_TABLES`."""
    hta = [s for s, _ in HTA_PER_RANK_TABLES] if params is not None and params["hta_compat"] else []
    return list(dict.fromkeys([*(s for s, _ in (*PER_RANK_TABLES, *RANK_JSON)), "correlate", *hta]))


#: Per-rank tables that are not per rank under ``hta_compat``: HTA's aten op table counts, on
#: each rank's rows, the op instances of every rank up to it (HTA never resets its list between
#: ranks; :func:`profui.analysis.hta_variants.hta_aten_op_kernels` reproduces that), which one
#: rank alone cannot: not sent, so left out and named in the notes.
HTA_CUMULATIVE: frozenset[Key] = frozenset({("launch", "aten_op_kernels")})
#: Tables that are per-rank under ``hta_compat`` only: HTA's critical path is one rank's graph per
#: window (:mod:`profui.analysis.critical_path_hta`, its rows rank by rank in (node, rank) order),
#: where profui's joins the ranks (:data:`PATH_TABLES`).
HTA_PER_RANK_TABLES: dict[Key, PerRank] = {
    ("critical_path", "steps"): PerRank(),
    ("critical_path", "by_kind"): PerRank(),
    ("critical_path", "events"): PerRank(),
    ("critical_path", "what_if"): PerRank(),
}


#: The JSON outputs a rank sends back (the summary's notes read them).
RANK_JSON: tuple[Key, ...] = (("steps", "steps.json"), ("allocations", "allocations.json"))


def rank_outputs(
    store: Store,
    events: pl.LazyFrame | None = None,
    params: Params | None = None,
    metrics: pl.LazyFrame | None = None,
) -> dict[Key, Any]:
    """What one rank sends back (:func:`rank_keys`) from its in-memory store (``store.compute``'s)
    and events (without them, no :data:`RANK_ROWS`)."""
    params = params or {"hta_compat": False}
    out: dict[Key, Any] = {}
    for key in rank_keys(params):
        stage, name = key
        if key in PER_RANK_TABLES or key in HTA_PER_RANK_TABLES:
            out[key] = store[stage][f"{name}.parquet"]
        elif key in RANK_JSON:
            out[key] = dict(store[stage][name])
        elif key in RANK_ROWS and events is not None:
            got = RANK_ROWS[key](events, store, params)
            frame = got.collect(engine=ENGINE) if isinstance(got, pl.LazyFrame) else got
            # names repeat: sent as categories (4 bytes a row), strings again on the client
            out[key] = frame.with_columns(pl.col(pl.String).cast(pl.Categorical))
    if events is not None and not params["hta_compat"]:
        # the node's sampled utilization (each rank of a node sends it; kept once per node)
        m = metrics if metrics is not None else pl.LazyFrame(schema=METRICS_SCHEMA)
        out[METRICS] = m.filter(pl.col("metric") == "util_pct").collect(engine=ENGINE)
    _FLOP_ROWS.clear()
    windows = store["steps"]["windows.parquet"]
    out[("steps", "steps.json")].update(windows=windows.height, rank=_rank_of(windows))
    return out


def always_given() -> set[Key]:
    """The tables a run by ranks gives whatever its parameters: the per-rank tables and the job
    tables reduced from them or from :data:`HTA_ROWS` (the others need rows a rank sends only
    without ``hta_compat``)."""
    given: set[Key] = (set(PER_RANK_TABLES) - HTA_CUMULATIVE) | set(HTA_ROWS)
    for key, rule in JOB_TABLES.items():  # in order: a job table's inputs come before it
        if all(i in given for i in rule.inputs):
            given.add(key)
    return given - set(RANK_ROWS)


#: The node's sampled metrics a rank sends (its node's metrics files: utilization samples).
METRICS: Key = ("utilization", "_metrics")
METRICS_SCHEMA = {
    "ts": pl.Int64,
    "source": pl.String,
    "device": pl.Int32,
    "metric": pl.String,
    "value": pl.Float64,
    "node": pl.String,
}


def rank_keys(params: Params) -> list[Key]:
    """What a rank sends back under ``params``, in order: its :data:`PER_RANK_TABLES` (under
    ``hta_compat`` and :data:`HTA_PER_RANK_TABLES`), its :data:`RANK_ROWS` (under ``hta_compat``
    only :data:`HTA_ROWS`), its :data:`RANK_JSON`."""
    hta = params["hta_compat"]
    rows = [k for k in RANK_ROWS if not hta or k in HTA_ROWS]
    tables = [
        *(k for k in PER_RANK_TABLES if not (hta and k in HTA_CUMULATIVE)),
        *(HTA_PER_RANK_TABLES if hta else ()),
    ]
    return [*tables, *rows, *RANK_JSON, *(() if hta else (METRICS,))]


def _rank_of(windows: pl.DataFrame) -> int | None:
    ranks = windows["rank"].unique().to_list() if windows.height else []
    return ranks[0] if len(ranks) == 1 else None


def _concat(frames: list[pl.DataFrame], rule: PerRank) -> pl.DataFrame:
    frame = pl.concat(frames, how="vertical") if frames else pl.DataFrame()
    if rule.node_rows and frame.height:
        node = pl.col("rank").is_null()
        first = pl.int_range(pl.len()).over("node", node) == 0
        frame = frame.filter(~node | first)
    if rule.sort and frame.height:
        frame = frame.sort(
            list(rule.sort), descending=list(rule.descending) or False, nulls_last=True, maintain_order=True
        )
    return frame


def concat_ranks(per_rank: Iterable[Mapping[Key, Any]]) -> dict[Key, Any]:
    """The job's :data:`PER_RANK_TABLES` and :data:`RANK_ROWS` from each rank's (given in
    (node, rank) order); each :data:`RANK_JSON` as the list of the ranks'."""
    ranks = list(per_rank)
    out: dict[Key, Any] = {}
    for key, rule in PER_RANK_TABLES.items():
        if all(key in r for r in ranks):
            out[key] = _concat([r[key] for r in ranks], rule)
    for key, rule in HTA_PER_RANK_TABLES.items():
        if ranks and all(key in r for r in ranks):
            out[key] = _concat([r[key] for r in ranks], rule)
    for key in RANK_ROWS:
        if all(key in r for r in ranks):
            rows = _concat([r[key] for r in ranks], PerRank())
            out[key] = rows.with_columns(pl.col(pl.Categorical).cast(pl.String))
    if all(METRICS in r for r in ranks):
        seen: set[str] = set()
        frames = []
        for r in ranks:  # in (node, rank) order: each node's rows from its first rank
            m = r[METRICS]
            frames.append(m.filter(~pl.col("node").is_in(list(seen))))
            seen |= set(m["node"].unique().to_list())
        out[METRICS] = pl.concat(frames, how="vertical") if frames else pl.DataFrame()
    for key in RANK_JSON:
        out[key] = [r[key] for r in ranks]
    if ranks and all(PATH_SHARE in r for r in ranks):
        out[PATH_SHARE] = cp.joined_shares([r[PATH_SHARE] for r in ranks])
    if ranks and all(OVERVIEWS in r for r in ranks):
        out[OVERVIEWS] = [r[OVERVIEWS] for r in ranks]
    return out


def job_json(stage: str, file: str, ranks: list[dict[str, Any]], source: str | None = None) -> dict[str, Any]:
    """A :data:`RANK_JSON` output of the job from its ranks' (in (node, rank) order), by the
    rule the stage words it with: the step windows' note (:func:`steps.steps_note`), the
    memory events' counts (:func:`allocations.counts_of`, the ranks' devices summed: a device
    belongs to one rank)."""
    if (stage, file) == ("steps", "steps.json"):
        windows = sum(r["windows"] for r in ranks)
        has = any(r["has_markers"] for r in ranks)
        again = [r["rank"] for r in ranks if r["renumbered"]]
        return {
            "has_markers": has,
            "renumbered": bool(again),
            "note": stp.steps_note(windows, has, stp.ranks_shown(again)),
            "step_annotation": ranks[0]["step_annotation"],
        }
    n, bad, devices = (sum(int(r[k]) for r in ranks) for k in ("events", "unreadable", "devices"))
    return al.counts_of(n, bad, devices, source)


def job_tables(
    tables: Mapping[Key, Any], params: Mapping[str, Any] | None = None, gpus: Sequence[Any] = ()
) -> dict[Key, Any]:
    """``tables`` (the job's per-rank tables and rows) with every :data:`JOB_TABLES` entry whose
    inputs are there reduced from them; ``gpus``: the manifest's (the FLOPs' peak)."""
    out = dict(tables)
    for key, rule in JOB_TABLES.items():
        if not all(i in out for i in rule.inputs):
            continue
        args = [out[i] for i in rule.inputs]
        kw = {"gpus": gpus} if rule.gpus else {}
        got = rule.fn(*args, params, **kw) if rule.params else rule.fn(*args, **kw)
        frame = got.collect(engine=ENGINE) if isinstance(got, pl.LazyFrame) else got
        out[key] = conform(key[0], f"{key[1]}.parquet", frame)  # as the stage's own output is
    if OVERVIEWS in out:
        out.update(_path_tables(out, gpus))
    return out


#: The tables the job builds from its ranks' shares of the critical path's inputs
#: (:func:`_path_tables`, after :data:`JOB_TABLES`): the critical path's and the findings'.
PATH_TABLES: tuple[Key, ...] = (
    ("critical_path", "steps"),
    ("critical_path", "by_kind"),
    ("critical_path", "events"),
    ("critical_path", "what_if"),
    ("findings", "findings"),
    ("findings", "evidence"),
)
#: Each rank's share of the critical path's inputs (:class:`~profui.analysis.critical_path.PathShare`),
#: and its overview (the findings' words and duration), added by its second task.
PATH_SHARE: Key = ("critical_path", "_share")
OVERVIEWS: Key = ("findings", "_overview")


def path_plan(per_rank: Sequence[Mapping[Key, Any]]) -> cp.PathPlan | None:
    """The job's :class:`~profui.analysis.critical_path.PathPlan` from its ranks' tables (in
    (node, rank) order): their step windows and arrivals, as the whole-trace stage reads them;
    None without step windows (the stage's tables are empty)."""
    windows = _concat([r[("steps", "windows")] for r in per_rank], PER_RANK_TABLES[("steps", "windows")])
    if windows.height == 0:
        return None
    arrivals = _concat([r[("comm", "arrivals")] for r in per_rank], PER_RANK_TABLES[("comm", "arrivals")])
    return cp.path_plan(windows, arrivals, _stragglers(arrivals))


def _stragglers(arrivals: pl.DataFrame) -> pl.DataFrame:
    return conform("comm", "stragglers.parquet", cm.stragglers(arrivals).collect(engine=ENGINE))


def with_share(share: cp.PathShare | None, overview: Mapping[str, Any]) -> dict[Key, Any]:
    """What a rank's second task adds to its tables: its share and its overview (under
    ``hta_compat`` no task runs, its overview alone is added: HTA's path is per rank)."""
    return {OVERVIEWS: dict(overview)} | ({PATH_SHARE: share} if share is not None else {})


def _path_tables(tables: Mapping[Key, Any], gpus: Sequence[Any]) -> dict[Key, Any]:
    """The critical path's tables from the job's plan and its ranks' shares (under
    ``hta_compat``, HTA's, already the ranks' tables concatenated), and the findings from the
    job's tables, each by the whole-trace stage's own function (as its bodies call it:
    :func:`profui.analysis.pipeline.bodies.critical_path`, ``findings``)."""
    from profui.analysis import findings as fd

    out: dict[Key, Any] = {}
    if PATH_SHARE in tables:
        windows = tables[("steps", "windows")]
        if windows.height == 0:
            got = cp.empty_outputs()
        else:
            plan = cp.path_plan(windows, tables[("comm", "arrivals")], tables[("comm", "stragglers")])
            got = cp.paths(plan, windows, tables[PATH_SHARE])[0]
        out = {
            ("critical_path", f.removesuffix(".parquet")): conform("critical_path", f, t)
            for f, t in got.items()
        }
    needed = (*HTA_PER_RANK_TABLES, ("precision", "shares"), ("comm", "stragglers"))
    if not all(k in tables or k in out for k in needed):
        return out  # a table the findings read is left out
    # the findings stage's inputs as its body hands them over: {stage: {file: table}}
    inputs: dict[str, dict[str, Any]] = {}
    for (stage, name), table in (*tables.items(), *out.items()):
        if not name.startswith("_") and isinstance(table, pl.DataFrame):
            inputs.setdefault(stage, {})[f"{name}.parquet"] = table
    found = fd.stage(inputs, _span_and_kind(tables[OVERVIEWS]), gpus)
    out.update(
        {("findings", f.removesuffix(".parquet")): conform("findings", f, t) for f, t in found.items()}
    )
    return out


def _device_type(kinds: list[str]) -> str:
    """The job's ``device_type`` from its ranks' (:mod:`profui.analysis.devices`)."""
    used = {k for k in kinds if k != NONE}
    if not used:
        return NONE
    return CPU if used == {CPU} else GPU


def job_overview(
    path: str, manifest: Any, nodes: list[str], ranks: list[tuple[str, int]], parts: list[dict[str, Any]]
) -> dict[str, Any]:
    """The summary's ``trace`` block of a job from its ranks' overviews
    (:func:`profui.analysis.summary.trace_overview` of each rank): events and GPUs summed, the
    span from the first start to the last end."""
    span = _span_and_kind(parts)
    return {
        "path": path,
        "name": manifest.name,
        "status": manifest.status,
        "source": manifest.source,
        "nodes": sorted(nodes),
        "ranks": sorted({r for _, r in ranks}),
        "gpus": sum(int(p["gpus"]) for p in parts),
        "gpus_listed": len(manifest.gpus),
        "devices": sum(int(p.get("devices", p["gpus"])) for p in parts),
        "device_type": span["device_type"],
        "events": sum(int(p["events"]) for p in parts),
        "start_ns": span["start_ns"],
        "end_ns": span["end_ns"],
        "duration_ns": span["duration_ns"],
    }


def _span_and_kind(parts: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """The job's device type and time span from its ranks' overviews (the overview's keys)."""
    starts = [p["start_ns"] for p in parts if p["start_ns"] is not None]
    ends = [p["end_ns"] for p in parts if p["end_ns"] is not None]
    start, end = (min(starts), max(ends)) if starts and ends else (None, None)
    return {
        # the job's devices are of one kind when its ranks' are; GPUs where any rank has them
        "device_type": _device_type([p.get("device_type", GPU) for p in parts]),
        "start_ns": start,
        "end_ns": end,
        "duration_ns": (end - start) if start is not None and end is not None else None,
    }
