"""The Kernels and Communication views name what a CPU-only or JAX-on-CPU run has, at 80×24:
no "NCCL kernels" where there is no GPU to run one (the empty Comm view names what was searched),
and the Kernels view counts XLA ops on the JAX CPU sample, as the dashboard does. Oracles: the
events files read with pyarrow, and the words of each kind of device written out here."""

from __future__ import annotations

import asyncio
import shutil
from pathlib import Path

import pyarrow.parquet as pq
from pilotwait import wait_dashboard, wait_for
from textual.widgets import Static

from profui.capture.ingest import import_trace
from profui.tui.app import OpenTarget, ProfuiApp
from profui.tui.views.kernels import KernelsView
from profui.tui.views.table_sections import SectionsView

from realdata import SAMPLES


def rows(trace: Path) -> list[dict]:
    return [
        r for f in sorted(trace.glob("node=*/rank=*/events-*.parquet")) for r in pq.read_table(f).to_pylist()
    ]


async def kernels_status(pilot) -> str:
    await pilot.press("2")
    assert await wait_for(pilot, lambda: bool(pilot.app.screen.query(KernelsView)))
    view = pilot.app.screen.query_one(KernelsView)
    assert await wait_for(pilot, lambda: view.ready)
    return view.query_one("#kernels-status", Static).render().plain


async def comm_status(pilot) -> str:
    await pilot.press("6")
    assert await wait_for(pilot, lambda: bool(pilot.app.screen.query("#comm")))
    view = pilot.app.screen.query_one("#comm", SectionsView)
    assert await wait_for(pilot, lambda: view.ready)
    return str(view.query_one(".view-status").render())


def test_cpu_mlp_run_says_no_collectives_and_no_device_work(tmp_path: Path) -> None:
    trace = tmp_path / "mlp_cpu"
    shutil.copytree(SAMPLES / "mlp_cpu", trace, ignore=shutil.ignore_patterns(".profui"))
    events = rows(trace)
    assert not [r for r in events if r["kind"] in ("kernel", "memcpy", "memset")]  # no device work
    assert not [r for r in events if str(r["name"]).startswith(("gloo:", "nccl:", "c10d::"))]
    got: dict[str, str] = {}

    async def go() -> None:
        app = ProfuiApp(OpenTarget("trace", trace), poll_s=60)
        async with app.run_test(size=(80, 24)) as pilot:
            await wait_dashboard(pilot, app)
            got["comm"] = await comm_status(pilot)
            got["kernels"] = await kernels_status(pilot)

    asyncio.run(go())
    assert "NCCL" not in got["comm"], got
    assert got["comm"].startswith("No collectives in this trace: no host collectives (gloo:*"), got
    assert got["kernels"] == "No kernel statistics: no device work was traced", got


def test_jax_cpu_sample_counts_xla_ops(tmp_path: Path) -> None:
    trace = tmp_path / "jax_cpu"
    import_trace([SAMPLES / "jax_cpu"], trace)
    ops = {
        r["name"]
        for r in rows(trace)
        if r["kind"] == "kernel" and r["device"] is not None and r["device"] >= 0
    }
    assert len(ops) == 10
    got: dict[str, str] = {}

    async def go() -> None:
        app = ProfuiApp(OpenTarget("trace", trace), poll_s=60)
        async with app.run_test(size=(80, 24)) as pilot:
            await wait_dashboard(pilot, app)
            got["kernels"] = await kernels_status(pilot)
            got["comm"] = await comm_status(pilot)
            got["placeholder"] = pilot.app.screen.query_one("#kernels-filter").placeholder

    asyncio.run(go())
    assert got["kernels"].startswith(f"{len(ops)} of {len(ops)} XLA ops · "), got
    assert "kernel" not in got["kernels"] and got["placeholder"].startswith("XLA op name contains"), got
    assert "NCCL" not in got["comm"] and got["comm"].startswith("No collectives in this trace"), got
