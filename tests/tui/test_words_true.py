"""The words around the numbers are true of them (a user's walk at 80×24 on the samples): the
kernel-time header names what its bars add up to, same-named surfaces say their source, launch
counts say what they count, bandwidths and queue lengths read in one format, and a share sits
beside the numbers it comes from. Oracles: the samples' event files read with polars."""

from __future__ import annotations

import asyncio
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import polars as pl
import pytest
from pilotwait import wait_dashboard, wait_for

from profui.analysis.formatting import fmt_count, fmt_ns
from profui.tui.app import OpenTarget, ProfuiApp
from profui.tui.views.table_sections import SectionsView
from profui.tui.widgets.bars import Bars
from profui.tui.widgets.frame_table import FrameTable

SAMPLES = Path(__file__).resolve().parents[2] / "samples"
PROFUI = str(Path(sys.executable).with_name("profui"))
UNIT_NS = {"ns": 1.0, "µs": 1e3, "ms": 1e6, "s": 1e9}


def copy_sample(tmp_path_factory, name: str) -> Path:
    out = tmp_path_factory.mktemp("words_true") / name
    shutil.copytree(SAMPLES / name, out, ignore=shutil.ignore_patterns(".profui"))
    return out


def events(trace: Path) -> pl.DataFrame:
    return pl.scan_parquet(str(trace / "**" / "events-*.parquet")).collect()


def summary(trace: Path, cache: Path) -> str:
    env = dict(os.environ, PROFUI_CACHE=str(cache), NO_COLOR="1", COLUMNS="200")
    p = subprocess.run(
        [PROFUI, "summary", str(trace)],
        capture_output=True,
        text=True,
        timeout=600,
        stdin=subprocess.DEVNULL,
        env=env,
    )
    assert p.returncode == 0, p.stderr
    return p.stdout


@pytest.fixture(scope="module")
def gpu(tmp_path_factory) -> Path:
    return copy_sample(tmp_path_factory, "synthetic_gpu")


@pytest.fixture(scope="module")
def gpu_summary(gpu: Path, tmp_path_factory) -> str:
    return summary(gpu, tmp_path_factory.mktemp("cache"))


def table(text: str, title: str) -> list[list[str]]:
    """The body rows of the table under ``title`` in ``profui summary``'s output, as cells."""
    lines = text.splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith(title))
    rows = []
    for line in lines[start + 1 :]:
        if line.startswith("└"):
            break
        if line.startswith("│"):
            rows.append([c.strip() for c in line.strip("│").split("│")])
    return rows


def ns_of(s: str) -> float:
    v, unit = s.split()
    return float(v.replace(",", "")) * UNIT_NS[unit]


def test_bandwidths_read_in_one_format(gpu: Path, gpu_summary: str) -> None:
    ev = events(gpu)
    dtoh = ev.filter(pl.col("name").cast(pl.String).str.contains("DtoH"))
    gbps = dtoh["bytes"].sum() / dtoh["dur"].sum()  # bytes per ns = GB/s
    assert gbps < 0.01  # 160 B in 103 µs: well under 1 GB/s
    row = next(r for r in table(gpu_summary, "Memory operations") if r[0] == "DtoH")
    assert row[4] == f"{gbps * 1e3:.3g} MB/s", row
    memset = ev.filter(pl.col("kind") == "memset")
    big = memset["bytes"].sum() / memset["dur"].sum()
    assert big >= 1000
    assert f"at {big:,.0f} GB/s" in gpu_summary  # the memory takeaway, as the table writes it
    assert "e+" not in gpu_summary
    assert not re.search(r"\b0\.\d+ GB/s", gpu_summary), "a bandwidth under 1 GB/s written in GB/s"


def test_queue_lengths_read_as_short_decimals(gpu_summary: str) -> None:
    rows = table(gpu_summary, "Launch queue length per stream")
    assert rows
    for row in rows:
        for cell in row[-4:]:  # mean, time-weighted mean, p50, max
            assert re.fullmatch(r"<0\.01|[\d,]+(\.\d{1,2})?", cell), row


def test_launch_counts_say_what_they_count(gpu: Path, gpu_summary: str) -> None:
    kinds = events(gpu)["kind"].cast(pl.String).value_counts()
    n = dict(kinds.iter_rows())
    assert f"Kernels: {fmt_count(n['kernel'])} kernel launches of " in gpu_summary
    launched = n["kernel"] + n["memcpy"] + n["memset"]
    assert f"{fmt_count(launched)} launches (kernel, memcpy and memset)" in " ".join(gpu_summary.split())


def test_same_named_surfaces_say_their_source(gpu_summary: str) -> None:
    assert "GPU utilization over time (from the trace)" in gpu_summary
    assert "Device-side sync events (recorded on the device; host sync calls are above)" in gpu_summary


def test_host_stall_share_is_of_all_steps_time(tmp_path_factory) -> None:
    mlp = copy_sample(tmp_path_factory, "mlp_cpu")
    text = summary(mlp, tmp_path_factory.mktemp("cache"))
    flat = " ".join(text.split())
    m = re.search(r"\((\d+)% of all steps' time outside any op\)", flat)
    assert m, flat
    steps = events(mlp).filter(pl.col("kind") == "step").sort("ts")
    rows = table(text, "Host work per step")
    lengths = [ns_of(r[2]) for r in rows]
    # the table's step lengths are the trace's steps (3 significant digits)
    assert len(lengths) == steps.height
    for shown, dur in zip(lengths, steps["dur"].to_list(), strict=True):
        assert shown == pytest.approx(dur, rel=6e-3)
    stalls = sum(ns_of(r[7]) for r in rows)
    assert int(m.group(1)) == pytest.approx(100 * stalls / steps["dur"].sum(), abs=1)


def test_kernel_time_header_names_what_its_bars_add_up_to(gpu: Path, gpu_summary: str) -> None:
    kernels = events(gpu).filter(pl.col("kind") == "kernel")

    async def go() -> None:
        app = ProfuiApp(OpenTarget("trace", gpu), poll_s=60)
        async with app.run_test(size=(80, 24)) as pilot:
            view = await wait_dashboard(pilot, app)
            panel = view.panel("kernel_total")
            head = " ".join(str(panel.query_one(".chart-text").render()).split())
            lines = panel.query_one(Bars).render().plain.splitlines()
            shown = [re.search(r"([\d.,]+ (?:ns|µs|ms|s)) \(", line) for line in lines]
            total = sum(ns_of(s.group(1)) for s in shown if s)
            m = re.search(r"([\d.,]+ (?:ns|µs|ms|s)) in the bars below · ", head)
            assert m, head
            assert ns_of(m.group(1)) == pytest.approx(total, rel=0.01), (head, lines)
            assert f"{fmt_ns(kernels['dur'].sum())} summed kernel durations" in head
            assert f"{fmt_count(kernels.height)} kernel launches" in head
            util = view.panel("gpu_util")
            assert util.title == "GPU utilization over time, per node"
            assert "NVML samples over the whole job" in str(util.data.note)  # the sample has them

    asyncio.run(go())


def test_gpu_utilization_without_samples_names_no_nvml(tmp_path: Path) -> None:
    """A Kineto trace has no NVML samples: its utilization chart is of the traced device events,
    and nothing around it says NVML (the title said "(NVML samples)" on every trace)."""
    from profui.capture.ingest import import_trace

    from realdata import shared_trace

    trace = tmp_path / "t"
    import_trace([shared_trace("hta-trace_filter-sampled_rank-0.json.gz")], trace)
    assert not list(trace.rglob("metrics-*.parquet"))

    async def go() -> None:
        app = ProfuiApp(OpenTarget("trace", trace), poll_s=60)
        async with app.run_test(size=(80, 24)) as pilot:
            view = await wait_dashboard(pilot, app)
            util = view.panel("gpu_util")
            assert await wait_for(pilot, lambda: util.data is not None)
            words = " ".join([util.title, str(util.data.note), util.data.y_label, util.data.takeaway])
            assert "NVML" not in words, words
            assert "from traced device events" in str(util.data.note)

    asyncio.run(go())


def test_views_word_their_tables_at_80x24(gpu: Path) -> None:
    """The Idle view's launch-queue table shows short decimals (not ``2.209`` / ``0.09117``), the
    Sync view names its device-side table, the Launch view says what its launches count."""
    kinds = dict(events(gpu)["kind"].cast(pl.String).value_counts().iter_rows())

    async def tables(pilot, key: str, view_id: str) -> dict[str, list[dict[str, str]]]:
        await pilot.press(key)
        assert await wait_for(pilot, lambda: bool(pilot.app.screen.query(f"#{view_id}")))
        view = pilot.app.screen.query_one(f"#{view_id}", SectionsView)
        assert await wait_for(pilot, lambda: view.ready), view_id
        seen: dict[str, list[dict[str, str]]] = {}
        while view.section.title not in seen:
            table = view.query_one(FrameTable)
            seen[view.section.title] = [
                {
                    c: getattr(v, "plain", None) or str(v)
                    for c, v in zip(table.columns_shown, row, strict=True)
                }
                for row in (table.get_row_at(i) for i in range(table.row_count))
            ]
            await pilot.press("right_square_bracket")
            await pilot.pause()
        return seen

    async def go() -> None:
        app = ProfuiApp(OpenTarget("trace", gpu), poll_s=60)
        async with app.run_test(size=(80, 24)) as pilot:
            await wait_dashboard(pilot, app)
            idle = await tables(pilot, "8", "idle")
            queue = next(rows for title, rows in idle.items() if title.startswith("Launch queue length"))
            assert queue
            for row in queue:
                for col in ("mean", "time_mean", "p50"):
                    assert re.fullmatch(r"<0\.01|[\d,]+(\.\d{1,2})?", row[col]), row
            sync = await tables(pilot, "9", "sync")
            assert "Device-side sync events (recorded on the device; host sync calls are above)" in sync
            launches = await tables(pilot, "7", "launches")
            first = "Launch→start delay, all ranks (kernel, memcpy and memset launches)"
            assert first in launches
            total = sum(int(r["launches"].replace(",", "")) for r in launches[first])
            assert total == kinds["kernel"] + kinds["memcpy"] + kinds["memset"]

    asyncio.run(go())
