"""The step-time histogram, the CPU active time and the all-GPUs activity row, driven on a real
trace (HTA's NCCL trace) and on the bundled multi-GPU sample (2 nodes × 2 GPUs, synthetic — the
corpus has no multi-GPU single trace). Every number shown must equal what analysis returns."""

from __future__ import annotations

import asyncio
import shutil
from pathlib import Path

import polars as pl
import pytest
from pilotwait import wait_dashboard

from profui.analysis import open_trace
from profui.analysis.activity import activity_total
from profui.analysis.formatting import fmt_ns, fmt_pct
from profui.analysis.steps import step_histogram, step_windows
from profui.analysis.utilization import cpu_active
from profui.capture.ingest import import_trace
from profui.tui.app import OpenTarget, ProfuiApp
from profui.tui.cli.open_cmd import bundled_sample
from profui.tui.views.dashboard import DashboardView
from profui.tui.widgets.bars import Bars

from realdata import shared_trace

NCCL = "hta-nccl_parser_config-nccl_data.json.gz"


@pytest.fixture(scope="module")
def nccl(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("hist") / "nccl"
    import_trace([shared_trace(NCCL)], out)
    return out


@pytest.fixture(scope="module")
def sample(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("hist") / "sample"
    shutil.copytree(bundled_sample(), out, ignore=shutil.ignore_patterns(".profui"))
    return out


def check_histogram(view: DashboardView, trace: Path) -> None:
    windows = step_windows(open_trace(trace).events()).windows
    first = windows.select("node", "rank").sort("node", "rank").row(0)
    hist = step_histogram(windows).filter(pl.col("node") == first[0], pl.col("rank") == first[1])
    mine = windows.filter(pl.col("node") == first[0], pl.col("rank") == first[1])
    panel = view.panel("steps")
    data = panel.data
    assert data is not None and data.kind == "bars"
    lines = panel.query_one(Bars).render().plain.splitlines()
    if mine.height <= 20:  # a bar per step: a histogram of a few steps shows gaps, not a shape
        assert [int(b.value) for b in data.bars] == mine.sort("step")["dur_ns"].to_list()
        assert len(lines) == mine.height
    else:
        assert [int(b.value) for b in data.bars] == hist["count"].to_list()
        assert len(lines) == hist.height
        for line, n in zip(lines, hist["count"].to_list(), strict=True):
            assert f"{n} step{'s' if n != 1 else ''}" in line
    note = str(panel.query_one(".chart-foot").render())
    slowest = mine.sort("dur_ns", descending=True).row(0, named=True)
    assert f"slowest: step {slowest['step']} ({fmt_ns(slowest['dur_ns'])})" in note.replace("\n", " ")


def test_real_trace_histogram_and_cpu_active(nccl: Path) -> None:
    t = open_trace(nccl)
    active = cpu_active(t.events(), t.metrics()).collect()
    assert active["source"].to_list() == ["host_events"]  # Kineto traces carry no CPU samples
    row = active.row(0, named=True)

    async def go() -> None:
        app = ProfuiApp(OpenTarget("trace", nccl), poll_s=60)
        async with app.run_test(size=(80, 24)) as pilot:
            view = await wait_dashboard(pilot, app)
            check_histogram(view, nccl)
            header = str(view.panel("cpu").query_one(".chart-text").render())
            # host events only: not the machine's CPU, and the header says what it is
            expected = (
                f"Host threads active (ops, calls or annotations) {fmt_ns(row['active_ns'])}"
                f" of {fmt_ns(row['window_ns'])}"
                f" ({fmt_pct(row['active_share'])})"
            )
            assert expected in header

    asyncio.run(go())


def test_sample_all_gpus_activity_row_and_histogram(sample: Path) -> None:
    t = open_trace(sample)
    per_gpu = t.activity()
    total = activity_total(per_gpu).collect()
    gpus = per_gpu.select("node", "rank", "device").unique().height
    active = cpu_active(t.events(), t.metrics()).collect().filter(pl.col("source") == "metrics")

    async def go() -> None:
        app = ProfuiApp(OpenTarget("trace", sample), poll_s=60)
        async with app.run_test(size=(80, 24)) as pilot:
            view = await wait_dashboard(pilot, app)
            data = view.panel("activity").data
            assert len(data.bars) == gpus + 1
            overall = data.bars[0]
            assert overall.label == f"all {gpus} GPUs"
            shares = dict(zip(total["activity"].to_list(), total["share"].to_list(), strict=True))
            assert [s[0] for s in overall.segments] == [
                shares[a] for a in ("kernel", "memcpy", "memset", "sync", "idle")
            ]
            assert f"k{100 * shares['kernel']:.0f}%" in overall.text
            check_histogram(view, sample)
            header = str(view.panel("cpu").query_one(".chart-text").render())
            act, window = int(active["active_ns"].sum()), int(active["window_ns"].sum())
            assert (
                f"CPU active {fmt_ns(act)} of {fmt_ns(window)}" in header
                and f"{active.height} nodes" in header
            )

    asyncio.run(go())


CPU_ONLY = "hta-cpu_only-rank-34.Jul_15_10_52_41.1074.pt.trace.json.gz"


def _union_ns(intervals: list[tuple[int, int]]) -> int:
    total, end = 0, None
    for a, b in sorted(intervals):
        if end is None or a > end:
            total, end = total + (b - a), b
        elif b > end:
            total, end = total + (b - end), b
    return total


def test_cpu_chart_words_say_what_each_number_counts(tmp_path: Path) -> None:
    """HTA's CPU-only trace: 1.1 s of annotations and 4 µs of ops on one thread. The chart's
    header counts a thread active in ops, calls or annotations (86% of the window), its line and
    the takeaway count threads busy in ops or calls (<0.1%): each says which, so the two do not
    read as one number contradicting the other ('busy 86%' above a line at 0). Oracle: the unions
    of the raw events' intervals by kind, in plain Python; the line's mean is its busy time over
    its buckets' time, exactly."""
    trace = tmp_path / "cpu_only"
    import_trace([shared_trace(CPU_ONLY)], trace)
    ev = open_trace(trace).events().collect()
    host = ev.filter(pl.col("device") < 0)
    rows = host.select("ts", "dur", "kind").rows()
    ops = [(t, t + d) for t, d, k in rows if k in ("cpu_op", "python", "runtime", "driver")]
    active = [(t, t + d) for t, d, k in rows if k in ("cpu_op", "python", "runtime", "driver", "annotation")]
    window = int((ev["ts"] + ev["dur"]).max()) - int(ev["ts"].min())  # first to last event
    assert _union_ns(active) > 0.5 * window > 1000 * _union_ns(ops)  # the case this test is for

    async def go() -> None:
        app = ProfuiApp(OpenTarget("trace", trace), poll_s=60)
        async with app.run_test(size=(120, 40)) as pilot:
            view = await wait_dashboard(pilot, app)
            panel = view.panel("cpu")
            header = str(panel.query_one(".chart-text").render())
            assert (
                f"active (ops, calls or annotations) {fmt_ns(_union_ns(active))} of {fmt_ns(window)}"
                in header
            )
            assert "busy" not in header, header
            foot = str(panel.query_one(".chart-foot").render())  # the note, then the takeaway
            assert foot.startswith("traced host threads busy in ops or calls"), foot
            words = open_trace(trace).result("summary")["takeaways.json"]["cpu"]
            assert words.startswith("Host threads busy in ops or calls ") and words in " ".join(foot.split())
            cpu = open_trace(trace).result("utilization")["cpu.parquet"]
            # each bucket's share of the one thread busy, the ops' union cut to the bucket
            shares = [
                _union_ns([(max(a, b0), min(b, b0 + n)) for a, b in ops if a < b0 + n and b > b0]) / n
                for b0, n in cpu.select("bucket_start_ns", "bucket_len_ns").rows()
            ]
            assert cpu["util"].to_list() == pytest.approx(shares, rel=1e-9, abs=1e-15)
            assert fmt_pct(sum(shares) / len(shares), 0) in words

    asyncio.run(go())
