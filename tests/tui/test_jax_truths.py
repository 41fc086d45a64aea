"""A JAX run on CPU is shown for what it is (issue #37, item 5): its device lanes are CPU threads
running XLA ops, so the header, the dashboard's charts and takeaways, ``profui summary`` and its
JSON name a CPU device and XLA ops, never a GPU. The bundled ``samples/jax_cpu`` (recorded by
``samples/train_jax.py``) is imported here; the oracle reads its events with pyarrow.
"""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pyarrow.parquet as pq
import pytest
from pilotwait import wait_dashboard, wait_for
from typer.testing import CliRunner

from profui.analysis import open_trace
from profui.analysis.formatting import fmt_ns, fmt_pct
from profui.capture.ingest import import_trace
from profui.tui.app import OpenTarget, ProfuiApp
from profui.tui.cli import app as cli_app
from profui.tui.widgets.bars import Bars
from profui.tui.widgets.frame_table import FrameTable

from realdata import SAMPLES


@pytest.fixture()
def trace(tmp_path: Path) -> Path:
    out = tmp_path / "jax_cpu"
    import_trace([SAMPLES / "jax_cpu"], out)
    return out


def xla_ops(trace: Path) -> list[dict]:
    """The XLA ops the run executed: the rows on a device lane, read with pyarrow."""
    rows = [
        r for f in sorted(trace.glob("node=*/rank=*/events-*.parquet")) for r in pq.read_table(f).to_pylist()
    ]
    return [r for r in rows if r["device"] is not None and r["device"] >= 0]


def union(intervals: list[tuple[int, int]]) -> int:
    total, end = 0, None
    for lo, hi in sorted(intervals):
        if end is None or lo > end:
            total, end = total + hi - lo, hi
        elif hi > end:
            total, end = total + hi - end, hi
    return total


def test_summary_names_a_cpu_device_and_xla_ops(trace: Path) -> None:
    ops = xla_ops(trace)
    assert ops and {r["kind"] for r in ops} == {"kernel"} and {r["device"] for r in ops} == {0}
    res = CliRunner().invoke(cli_app, ["summary", str(trace), "--json"])
    assert res.exit_code == 0, res.output
    doc = json.loads(res.stdout)
    t = doc["trace"]
    assert (t["device_type"], t["devices"], t["gpus"], t["gpus_listed"]) == ("cpu", 1, 0, 0)  # was 1 GPU
    assert not any("GPU" in v for v in doc["takeaways"].values()), doc["takeaways"]
    total = sum(r["dur"] for r in ops)
    assert doc["takeaways"]["kernel_total"].startswith(
        f"{len(ops)} XLA ops, {fmt_ns(total)} of CPU-device time"
    )
    text = CliRunner().invoke(cli_app, ["summary", str(trace)], env={"COLUMNS": "200"})
    assert text.exit_code == 0, text.output
    assert "GPU" not in text.stdout.upper().replace("GPU_", ""), [
        line for line in text.stdout.splitlines() if "GPU" in line.upper()
    ]
    assert "1 CPU device (XLA)" in text.stdout
    # a step's dur_ns here is its CPU window (the XLA ops run on host threads): not "device time"
    steps = text.stdout.split("\nSteps")[1].split("┡")[0]
    assert "step time" in steps and "device time" not in steps, steps
    # the idle phrases say how XLA ops start on a CPU device: no launches
    from profui.analysis.devices import CPU_WORDS
    from profui.analysis.takeaways import _IDLE_PHRASE, _idle_phrase

    phrases = {c: _idle_phrase(c, CPU_WORDS) for c in _IDLE_PHRASE}
    assert not any("launch" in p for p in phrases.values()), phrases
    assert "back-to-back XLA ops" in phrases["kernel_wait"] and "runs arrive" in phrases["host_wait"]
    assert "launch" not in doc["takeaways"]["idle"]
    # a run over ranks speaks the devices' words too, its findings the whole trace's; what it
    # leaves out under --hta-compat is said in them (it said "GPU time")
    hta = CliRunner().invoke(
        cli_app, ["summary", str(trace), "--workers", "2", "--hta-compat"], env={"COLUMNS": "200"}
    )
    assert hta.exit_code == 0, hta.output
    assert "a run over ranks leaves out the CPU device and CPU utilization time series" in hta.stdout
    workers = CliRunner().invoke(cli_app, ["summary", str(trace), "--workers", "2"], env={"COLUMNS": "200"})
    assert workers.exit_code == 0, workers.output
    assert workers.stdout.splitlines()[0] == text.stdout.splitlines()[0]
    assert "FLOPs" in workers.stdout  # the FLOPs tables are a run over ranks' too now
    assert "GPU" not in workers.stdout.upper().replace("GPU_", ""), [
        line for line in workers.stdout.splitlines() if "GPU" in line.upper()
    ]


def test_dashboard_names_a_cpu_device(trace: Path) -> None:
    ops = xla_ops(trace)
    busy = union([(r["ts"], r["ts"] + r["dur"]) for r in ops])
    span = max(r["ts"] + r["dur"] for r in ops) - min(r["ts"] for r in ops)
    res = CliRunner().invoke(cli_app, ["summary", str(trace), "--json"])
    takeaways = json.loads(res.stdout)["takeaways"]

    async def go():
        app = ProfuiApp(OpenTarget("trace", trace), poll_s=60)
        async with app.run_test(size=(80, 24)) as pilot:
            view = await wait_dashboard(pilot, app)
            title = app.screen.query_one("#trace-title").render().plain
            panels = {p.chart_id: p for p in view.panels()}
            text = {
                cid: "\n".join(w.render().plain for w in p.query("Static") if w.display)
                for cid, p in panels.items()
            }
            active = panels["gpu_active"].query_one(Bars).render().plain.splitlines()
            shown = {cid: p.takeaway_shown() for cid, p in panels.items()}
            return title, text, active, shown, view.session.source

    # the first open computes; the second draws what the first kept, and says the same
    first = asyncio.run(go())
    title, text, active, shown, source = asyncio.run(go())
    assert source == "cache" and first[:4] == (title, text, active, shown)
    assert "1 CPU device (XLA)" in title and "GPU" not in title  # was "1 GPU"
    offenders = {cid: t for cid, t in text.items() if "GPU" in t}
    assert not offenders, offenders  # was "GPU active vs idle", "r0 gpu0", "GPU idle 32%" ...
    assert text["gpu_active"].startswith("CPU device active vs idle")
    assert text["top_time"].startswith("Top XLA ops by time")
    # one lane, labelled as the CPU device it is, with the busy share of the XLA ops' union
    (line,) = active
    assert line.startswith("r0 cpu0") and f"{fmt_pct(busy / span)} active" in line
    assert shown == {cid: takeaways.get(cid, "") for cid in shown}
    assert open_trace(trace).summary().takeaways == takeaways


def test_steps_view_shows_the_xla_ops_of_each_step(trace: Path) -> None:
    """XLA ops carry no launch to tie them to a step: each step's busy time is the union of the
    ops inside its window (was 0 ns, idle the whole step)."""
    rows = [
        r for f in sorted(trace.glob("node=*/rank=*/events-*.parquet")) for r in pq.read_table(f).to_pylist()
    ]
    ops = [r for r in rows if r["device"] is not None and r["device"] >= 0]
    steps = {int(r["name"].rsplit("#", 1)[1]): r for r in rows if r["kind"] == "step"}
    oracle = {}
    for n, st in steps.items():
        lo, hi = st["ts"], st["ts"] + st["dur"]
        cut = [(max(r["ts"], lo), min(r["ts"] + r["dur"], hi)) for r in ops]
        oracle[n] = (hi - lo, union([(a, b) for a, b in cut if a < b]))

    async def go():
        app = ProfuiApp(OpenTarget("trace", trace), poll_s=60)
        async with app.run_test(size=(80, 24)) as pilot:
            await wait_dashboard(pilot, app)
            await pilot.press("3")
            table = app.screen.query_one("#steps-table", FrameTable)
            assert await wait_for(pilot, lambda: table.row_count > 0)
            status = app.screen.query_one("#steps-status").render().plain
            return table.shown_frame().to_dicts(), status

    shown, status = asyncio.run(go())
    assert "busy = XLA ops running on the CPU device" in status
    assert {r["step"]: (r["dur_ns"], r["busy_ns"]) for r in shown} == oracle
    assert all(r["idle_ns"] == r["dur_ns"] - r["busy_ns"] for r in shown)
    assert all(busy > 0 for _, busy in oracle.values())
