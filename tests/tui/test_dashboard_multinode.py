"""Multi-node shapes the real corpus lacks (every shared trace is one node), on the bundled
synthetic sample (2 nodes × 2 GPUs, made by ``samples/generate_synthetic.py``): all nodes in one
utilization chart, one active/idle bar per GPU plus the total, ranks cycled with ``n``."""

from __future__ import annotations

import asyncio
import shutil
from pathlib import Path

import polars as pl
from pilotwait import wait_for

from profui.analysis import open_trace
from profui.analysis.busy import total_busy
from profui.analysis.formatting import fmt_ns, fmt_pct
from profui.analysis.utilization import gpu_utilization, node_utilization
from profui.tui.app import OpenTarget, ProfuiApp
from profui.tui.cli.open_cmd import bundled_sample
from profui.tui.views.dashboard import DashboardView
from profui.tui.widgets.bars import Bars
from profui.tui.widgets.charts import LinePlot


def test_all_nodes_in_one_chart_and_per_gpu_bars(tmp_path: Path) -> None:
    trace = tmp_path / "sample"
    shutil.copytree(bundled_sample(), trace, ignore=shutil.ignore_patterns(".profui"))
    t = open_trace(trace)
    per_node = node_utilization(gpu_utilization(t.events()).collect()).collect()
    # the sample carries (synthetic) NVML samples: the chart then shows those, over the whole job
    m = t.metrics().filter(pl.col("source") == "gpu", pl.col("metric") == "util_pct").collect()
    if m.height:
        per_node = t.result("utilization")["gpu_sampled.parquet"]
        # by hand for one bucket: the mean over the node's GPUs of each GPU's mean sample
        first = per_node.row(0, named=True)
        cell = m.filter(
            pl.col("node") == first["node"],
            pl.col("ts") >= first["bucket_start_ns"],
            pl.col("ts") < first["bucket_start_ns"] + first["bucket_len_ns"],
        )
        by_gpu = cell.group_by("device").agg(pl.col("value").mean())["value"].to_list()
        assert abs(first["util"] - sum(by_gpu) / len(by_gpu) / 100) < 1e-12
    busy = t.gpu_busy()
    overall = total_busy(busy).collect().row(0, named=True)

    async def go() -> None:
        app = ProfuiApp(OpenTarget("trace", trace), poll_s=600)
        async with app.run_test(size=(80, 24)) as pilot:
            view = app.screen.query_one(DashboardView)
            await wait_for(pilot, lambda: view.complete, 1500)
            data = view.panel("gpu_util").data
            assert data is not None and data.kind == "lines"
            assert [s.label for s in data.series] == sorted(per_node["node"].unique().to_list())
            for s in data.series:
                mine = per_node.filter(pl.col("node") == s.label).sort("bucket")
                assert s.ys == [100.0 * u for u in mine["util"].to_list()]
            assert view.panel("gpu_util").query_one(LinePlot).display
            lines = view.panel("gpu_active").query_one(Bars).render().plain.splitlines()
            assert len(lines) == busy.height + 1
            assert lines[0].startswith(f"all {busy.height} GPUs")
            assert f"{fmt_pct(overall['busy_share'])} active" in lines[0]
            for line, row in zip(lines[1:], busy.iter_rows(named=True), strict=True):
                assert line.startswith(f"{row['node']} r{row['rank']} gpu{row['device']}")
                assert fmt_ns(row["idle_ns"]) in line
            first = str(view.panel("steps").query_one(".chart-text").render())
            await pilot.press("n")
            second = str(view.panel("steps").query_one(".chart-text").render())
            assert first != second and "rank 1" in second and "next of 4 ranks" in second

    asyncio.run(go())
