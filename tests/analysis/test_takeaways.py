"""Takeaways: wording decided by documented thresholds, on hand-made frames and a real trace."""

from __future__ import annotations

import polars as pl
import pytest

from profui.analysis import takeaways as tk
from profui.analysis.formatting import fmt_ns
from profui.analysis.steps import job_steps, step_stats

BUSY = pl.DataFrame(
    {"device": [0, 1], "busy_ns": [540, 540], "span_ns": [1000, 1000], "busy_share": [0.54, 0.54]}
)
IDLE = pl.DataFrame(
    {"stream": [7, 7, 7], "category": ["host_wait", "kernel_wait", "other"], "idle_ns": [800, 50, 70]}
)


def test_gpu_active_describes_idle_and_its_category():
    # idle 1 - 1080/2000 = 46%; host_wait 800 of 920 idle ns = 87%, more than half: named, as
    # a share of the streams' idle time (920 ns), not of the GPUs' (920 of 2000 here only by
    # chance: a device idle on two streams at once counts twice in the streams' sum)
    assert tk.gpu_active_takeaway(BUSY, IDLE) == (
        "GPU idle 46% across 2 GPUs; 87% of stream idle time is host_wait"
        " (launches arrive after their stream ran dry)."
    )
    # XLA's CPU devices: a stream is a thread that executes XLA ops, and the words say so
    from profui.analysis.devices import CPU_WORDS

    assert tk.gpu_active_takeaway(BUSY, IDLE, CPU_WORDS) == (
        "CPU device idle 46% across 2 CPU devices; 87% of idle time of the XLA-op threads is"
        " host_wait (runs arrive after their stream ran dry)."
    )
    no_cause = IDLE.with_columns(pl.Series("idle_ns", [300, 300, 320]))
    # no category has half the idle time (320 of 920 at most): none is named
    assert tk.gpu_active_takeaway(BUSY, no_cause) == "GPU idle 46% across 2 GPUs."
    waits = BUSY.with_columns(pl.Series("busy_ns", [420, 420]), pl.Series("busy_share", [0.42, 0.42]))
    assert tk.gpu_active_takeaway(waits, no_cause) == "GPU idle 58% across 2 GPUs."
    fed = BUSY.with_columns(pl.Series("busy_ns", [950, 960]))
    # idle 4.5%, under IDLE_LOW_SHARE: the busy share (1910/2000) is what is said, with no verdict
    assert tk.gpu_active_takeaway(fed, IDLE) == "GPU busy 96% across 2 GPUs."


def _windows(steps: list[int], durs: list[int], ranks: tuple[int, ...] = (0,)) -> pl.DataFrame:
    rows = [
        {"node": "n", "rank": r, "step": s, "name": f"ProfilerStep#{s}", "dur_ns": d}
        for r in ranks
        for s, d in zip(steps, durs, strict=True)
    ]
    return pl.DataFrame(
        rows,
        schema={"node": pl.String, "rank": pl.Int64, "step": pl.Int64, "name": pl.String, "dur_ns": pl.Int64},
    )


def _steps(windows: pl.DataFrame) -> tuple[pl.DataFrame, pl.DataFrame, pl.DataFrame]:
    """The steps stage's windows, job and job_stats tables of ``windows``."""
    job = job_steps(windows).collect()
    return windows, job, step_stats(job, by=()).collect()


def test_steps_take_the_slowest_rank_and_say_so():
    two = pl.concat([_windows([1, 2, 3], [100, 100, 100]), _windows([1, 2, 3], [100, 200, 100], ranks=(1,))])
    assert tk.steps_takeaway(*_steps(two)) == (
        "3 steps, median 100 ns (longest rank per step); step 2 (rank 1) takes 2.0× the median."
    )


def test_the_jobs_step_is_its_slowest_ranks():
    a = _windows([1, 2, 3], [100, 250, 90])
    b = _windows([1, 2, 3], [120, 200, 90], ranks=(1,))
    job = job_steps(pl.concat([a, b])).collect()
    # hand-checked: step 1 rank 1 (120 > 100), step 2 rank 0 (250 > 200), step 3 a tie → rank 0
    assert job.rows() == [(1, 120, "n", 1, 100, 2), (2, 250, "n", 0, 200, 2), (3, 90, "n", 0, 90, 2)]
    st = step_stats(job, by=()).collect().row(0, named=True)
    assert (st["count"], st["min_ns"], st["p50_ns"], st["max_ns"]) == (3, 90, 120.0, 250)


def test_kernels_steps_and_sync_wording():
    stats = pl.DataFrame(
        {
            "name": ["a", "b"],
            "count": [900, 100],
            "total_ns": [900 * 3_000, 100 * 500_000],
            "mean_ns": [3_000.0, 500_000.0],
            "share": [0.051, 0.949],
        }
    )
    # 900 of the 1,000 launches are of "a", whose mean (3 µs) is under SHORT_KERNEL_NS
    assert tk.kernel_total_takeaway(stats) == (
        "1,000 kernels, 52.7 ms of GPU time, 52.7 µs on average; "
        "90% of the launches are of kernels averaging under 10 µs."
    )
    assert tk.top_time_takeaway(stats.sort("total_ns", descending=True)) == (
        "b takes 95% of kernel time; the top 2 take 100%."
    )
    windows = _windows([1, 2, 3], [100, 100, 130])
    assert tk.steps_takeaway(*_steps(windows)) == "3 steps, median 100 ns; step 3 is 30% slower."
    # 95 and 105 around a median of 100: every step within ±5% of it
    even = _windows([1, 2, 3], [95, 100, 105])
    assert tk.steps_takeaway(*_steps(even)) == "3 steps, median 100 ns, all within ±5% of it."
    assert tk.steps_takeaway(*_steps(_windows([], []))) == (
        "No step markers: the trace is analysed as one window."
    )
    # a first profiled step that carries the profiler's start-up: a ratio, not "51238% slower"
    warm = _windows([10, 11, 12], [1_000_000, 1_000, 1_000])
    assert tk.steps_takeaway(*_steps(warm)) == "3 steps, median 1 µs; step 10 takes 1,000.0× the median."
    totals = pl.DataFrame({"calls": [10], "blocked_ns": [60], "window_ns": [1000], "share": [0.06]})
    assert tk.sync_takeaway(totals) == "Host blocked 60 ns in 10 synchronize calls (6% of host time)."


def test_takeaway_for_needs_every_table_it_reads():
    from profui.analysis.pipeline.result import OutputMissing, Result

    both = Result({"utilization": {"busy.parquet": BUSY}, "idle": {"breakdown.parquet": IDLE}}, "test")
    assert tk.takeaway_for("gpu_active", both).startswith("GPU idle 46%")
    with pytest.raises(OutputMissing, match="takeaway gpu_active: the idle stage was not run"):
        tk.takeaway_for("gpu_active", Result({"utilization": {"busy.parquet": BUSY}}, "test"))
    with pytest.raises(OutputMissing, match="the idle stage's result holds no breakdown.parquet"):
        tk.takeaway_for("gpu_active", Result({"utilization": {"busy.parquet": BUSY}, "idle": {}}, "test"))
    # the stages the takeaways read, as each takeaway's tables name them (hand-listed)
    assert tk.NEEDS == (
        "utilization", "idle", "kernels", "steps", "precision", "flops", "activity",
        "memory", "allocations", "annotations", "launch", "sync", "comm",
    )  # fmt: skip


def test_real_trace_takeaways(imported_trace):
    """nccl_parser_config: HTA finds the GPU ~76% idle, nearly all host_wait on stream 7."""
    from profui.analysis.busy import gpu_busy
    from profui.analysis.comm import comm_by_collective, comm_comp_overlap
    from profui.analysis.idle import idle_breakdown

    ev = imported_trace("nccl_parser_config-nccl_data").events()
    busy, idle = gpu_busy(ev).collect(), idle_breakdown(ev).collect()
    text = tk.gpu_active_takeaway(busy, idle)
    idle_pct = 100 - 100 * busy["busy_ns"].sum() / busy["span_ns"].sum()
    host_wait = idle.filter(pl.col("category") == "host_wait")["idle_ns"].sum() / idle["idle_ns"].sum()
    assert 0.99 < host_wait < 1  # shown as ">99%", not a rounded-up 100%
    assert text == (
        f"GPU idle {idle_pct:.0f}%; >99% of stream idle time is host_wait"
        " (launches arrive after their stream ran dry)."
    )
    comm = tk.comm_takeaway(comm_by_collective(ev).collect(), comm_comp_overlap(ev).collect(), pl.DataFrame())
    assert comm == "NCCL 46.9 ms (AllReduce >99%); 16% overlapped with compute."


def test_every_chart_has_a_takeaway_consistent_with_its_frame(imported_trace):
    """Over a full summary of nccl_parser_config, each chart's line quotes its frame's numbers."""
    from profui.analysis.summary import summarize

    s = summarize(imported_trace("nccl_parser_config-nccl_data"))
    t = s.takeaways
    assert set(t) >= {
        "gpu_active",
        "gpu_util",
        "cpu",
        "kernel_total",
        "top_time",
        "top_count",
        "steps",
        "precision",
        "activity",
        "memory",
        "annotation",
        "launch",
        "sync",
        "idle",
        "comm",
    }
    stats = s.table("kernels", "stats")
    assert t["kernel_total"].startswith(f"{stats['count'].sum():,} kernels, ")
    assert t["steps"].startswith(f"{s.table('steps', 'windows').height} steps, median ")
    mem = s.table("memory", "ops")
    assert t["memory"].startswith(f"{mem['count'].sum():,} memory ops")
    shares = s.table("precision", "shares")
    prec = shares.filter(pl.col("in_shares")).sort("share", descending=True).row(0, named=True)
    comm = shares.filter(pl.col("precision") == "communication")["time_ns"].item()
    assert t["precision"].startswith(
        f"{prec['precision']} dominates kernel time ({100 * prec['share']:.0f}%), "
        f"excluding {comm / 1e6:.1f} ms communication"
    )
    n = s.table("launch", "overall")["launches"].item()
    assert t["launch"].startswith(f"{n:,} launches")
    # the chart's default annotation: the user's own (not PyTorch's Optimizer./nccl: ...) with
    # the longest total time, measured here from the per-step table it is charted from
    names = s.table("annotations", "names")
    user = names.filter(~pl.col("name").str.contains(r"^(Optimizer\.|ProfilerStep#|nccl:|gloo:|c10d::)"))
    first = user.sort("total_ns", descending=True).row(0, named=True)
    assert names.row(0, named=True)["name"] == first["name"]
    mine = s.table("annotations", "per_step").filter(
        pl.col("name") == first["name"], pl.col("side") == first["side"]
    )
    assert t["annotation"] == (
        f"'{first['name']}' takes {100 * mine['share'].mean():.0f}% of a step on average "
        f"({fmt_ns(mine['time_ns'].mean())})."
    )


def test_the_summary_stage_reads_every_stage_a_takeaway_needs():
    """The need is derived from what the takeaways read, never remembered: the summary stage,
    which computes them, has every such stage upstream (so the dashboard, asking for it, gets
    the idle causes its headline quotes)."""
    from profui.analysis.pipeline import REGISTRY

    assert set(tk.NEEDS) <= REGISTRY.ancestors(["summary"])
    assert "idle" in tk.NEEDS
