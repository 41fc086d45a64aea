"""A CPU-only run is shown for what it is (issue #37, item 6).

A real 2-rank gloo DDP run recorded here with ``profcap -- torchrun`` and the bundled CPU MLP
sample, opened in the app and driven by keys: the Steps view shows each step's host work
(communication is the union of the rank's ``gloo:all_reduce`` ranges in the step, busy and idle
the host's), and the dashboard names no GPU and says in one line which charts do not apply.
The oracle reads the events files with pyarrow, never analysis.
"""

from __future__ import annotations

import asyncio
import json
import shutil
import sys
from pathlib import Path

import pyarrow.parquet as pq
import pytest
from pilotwait import wait_dashboard, wait_for
from typer.testing import CliRunner

from profui.analysis import open_trace
from profui.analysis.formatting import fmt_ns
from profui.tui.app import OpenTarget, ProfuiApp
from profui.tui.cli import app as cli_app
from profui.tui.widgets.bars import Bars
from profui.tui.widgets.charts import ChartPanel
from profui.tui.widgets.frame_table import FrameTable

from realdata import REPO, SAMPLES

sys.path.insert(0, str(REPO / "tests" / "capture"))
from test_profcap_gloo_comm import union  # noqa: E402  (the plain-Python oracle of an interval union)
from test_profcap_support import run_profcap  # noqa: E402

from ddp_job import DDP_JOB  # noqa: E402

GLOO = "gloo:all_reduce"
#: The charts of device work: on a run without any they say so in one line.
DEVICE_CHARTS = (
    "gpu_active",
    "gpu_util",
    "kernel_total",
    "top_time",
    "top_count",
    "precision",
    "activity",
    "memory",
)


def events(trace: Path) -> dict[int, list[dict]]:
    """Every events row of each rank, read with pyarrow."""
    out: dict[int, list[dict]] = {}
    for f in sorted(trace.glob("node=*/rank=*/events-*.parquet")):
        out.setdefault(int(f.parent.name.split("=")[1]), []).extend(pq.read_table(f).to_pylist())
    return out


def ns_of(text: str) -> float:
    """A duration as ``fmt_ns`` writes it (``1.23 ms``), in ns."""
    value, unit = text.split()
    return float(value.replace(",", "")) * {"ns": 1, "µs": 1e3, "ms": 1e6, "s": 1e9}[unit]


def host_oracle(rows: list[dict]) -> dict[int, dict[str, int]]:
    """Per ProfilerStep of one rank: its length, the union of the rank's gloo:all_reduce ranges
    and of every CPU op in it (any thread), cut to the step's window."""
    out = {}
    for r in rows:
        if r["kind"] == "step" and r["name"].startswith("ProfilerStep#"):
            lo, hi = r["ts"], r["ts"] + r["dur"]

            def cut(keep, lo: int = lo, hi: int = hi) -> int:
                iv = [(max(e["ts"], lo), min(e["ts"] + e["dur"], hi)) for e in rows if keep(e)]
                return union([(a, b) for a, b in iv if a < b])

            out[int(r["name"].split("#")[1])] = {
                "dur": hi - lo,
                "comm": cut(lambda e: e["name"] == GLOO),
                "ops": cut(lambda e: e["kind"] == "cpu_op"),
            }
    return out


@pytest.fixture(scope="module")
def gloo_trace(tmp_path_factory) -> Path:
    tmp = tmp_path_factory.mktemp("gloo")
    launcher = [sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc-per-node", "2"]
    proc, trace = run_profcap(
        tmp, ["--steps", "3-5"], DDP_JOB, cmd=[*launcher, str(tmp / "job.py")], env={"OMP_NUM_THREADS": "1"}
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    return trace


def copy(src: Path, tmp: Path) -> Path:
    dst = tmp / src.name
    shutil.copytree(src, dst, ignore=shutil.ignore_patterns(".profui"))
    return dst


def screen_text(app) -> str:
    """Everything the app draws now, as text."""
    return "\n".join(
        str(w.render()) if not hasattr(w.render(), "plain") else w.render().plain
        for w in app.screen.query("Static")
        if w.display
    )


def test_steps_view_shows_the_host_work_of_a_gloo_run(gloo_trace: Path, tmp_path: Path) -> None:
    trace = copy(gloo_trace, tmp_path)
    oracle = {rank: host_oracle(rows) for rank, rows in events(trace).items()}
    assert all(s["comm"] > 0 for o in oracle.values() for s in o.values()), "torch records gloo ranges"

    async def go() -> None:
        app = ProfuiApp(OpenTarget("trace", trace), poll_s=60)
        async with app.run_test(size=(80, 24)) as pilot:
            await wait_dashboard(pilot, app)
            await pilot.press("3")
            table = app.screen.query_one("#steps-table", FrameTable)
            assert await wait_for(pilot, lambda: table.row_count > 0)
            shown = table.shown_frame().select(table.columns_shown).to_dicts()
            status = app.screen.query_one("#steps-status").render().plain
            return shown, table.columns_shown, status

    shown, columns, status = asyncio.run(go())
    # profui summary prints the same host work per step
    text = CliRunner().invoke(cli_app, ["summary", str(trace)], env={"COLUMNS": "200"})
    assert text.exit_code == 0, text.output
    table = text.stdout.split("Host work per step (no device work)")[1].split("└")[0]
    cells = [
        [c.strip() for c in line.split("│")[1:-1]] for line in table.splitlines() if line.startswith("│")
    ]
    assert {(int(c[0]), int(c[1])): (c[2], c[5]) for c in cells} == {
        (rank, step): (fmt_ns(want["dur"]), fmt_ns(want["comm"]))
        for rank, steps in oracle.items()
        for step, want in steps.items()
    }
    assert "no device work" in status and "idle = host time outside any op" in status
    assert {"busy_ns", "idle_ns", "communication_ns", "computation_ns", "data_loading_ns"} <= set(columns)
    assert "memory_ns" not in columns  # a host has no memcpy: no column of zeros claiming one
    assert len(shown) == sum(len(o) for o in oracle.values())
    for row in shown:
        want = oracle[row["rank"]][row["step"]]
        assert row["dur_ns"] == want["dur"]
        assert row["communication_ns"] == want["comm"]  # was 0 ns: gloo's all_reduce time
        assert row["busy_ns"] >= max(want["ops"], want["comm"]) > 0  # was 0 ns
        assert row["idle_ns"] == row["dur_ns"] - row["busy_ns"]  # was the whole step
        assert row["computation_ns"] <= row["busy_ns"] - row["communication_ns"] + row["data_loading_ns"]
        # the parts are a partition of the step: the bar is as long as the step, the columns add up
        parts = ("computation_ns", "communication_ns", "data_loading_ns", "idle_ns")
        assert sum(row[c] for c in parts) == row["dur_ns"]


def test_host_parts_partition_a_step_where_communication_and_data_loading_overlap() -> None:
    """Hand-checked: a 100 ns step; gloo all_reduce [10, 40), a DataLoader fetch [30, 60) on
    another thread, aten::mm [55, 80). Communication 30; data loading outside it [40, 60) = 20;
    compute the rest of busy [10, 80) = 70 - 50 = 20; stalls [0, 10) + [80, 100) = 30: 100 in all
    (data loading counted as 30 made the parts 110 ns of a 100 ns step)."""
    import polars as pl

    from profui.analysis.steps import host_breakdown

    names = ["gloo:all_reduce", "enumerate(DataLoader)#_SingleProcessDataLoaderIter.__next__", "aten::mm"]
    ev = pl.DataFrame(
        {
            "node": ["n0"] * 3,
            "rank": [0] * 3,
            "device": [-1] * 3,
            "thread": [1, 2, 1],
            "kind": ["cpu_op"] * 3,
            "name": names,
            "ts": [10, 30, 55],
            "dur": [30, 30, 25],
            "args": [None] * 3,
        },
        schema_overrides={"args": pl.Utf8},
    )
    windows = pl.DataFrame(
        {"node": ["n0"], "rank": [0], "step": [0], "cpu_start_ns": [0], "cpu_end_ns": [100], "dur_ns": [100]}
    )
    (row,) = host_breakdown(ev, windows).collect().to_dicts()
    assert (row["communication_ns"], row["data_loading_ns"], row["computation_ns"], row["idle_ns"]) == (
        30,
        20,
        20,
        30,
    )
    assert row["busy_ns"] == 70 and row["dur_ns"] == 100


def test_gloo_dashboard_shows_each_steps_host_work(gloo_trace: Path, tmp_path: Path) -> None:
    trace = copy(gloo_trace, tmp_path)
    oracle = {rank: host_oracle(rows) for rank, rows in events(trace).items()}

    async def go() -> dict[int, list[str]]:
        app = ProfuiApp(OpenTarget("trace", trace), poll_s=60)
        async with app.run_test(size=(120, 40)) as pilot:
            view = await wait_dashboard(pilot, app)
            panel = view.panel("host_steps")
            seen = {}
            for _ in oracle:  # n: the next rank
                head = panel.query_one(".chart-text").render().plain
                rank = int(head.split("rank ")[1].split(" ")[0])
                seen[rank] = panel.query_one(Bars).render().plain.splitlines()
                await pilot.press("n")
                await pilot.pause()
            return seen

    seen = asyncio.run(go())
    assert set(seen) == set(oracle)
    for rank, lines in seen.items():
        assert len(lines) == len(oracle[rank])
        for line, (step, want) in zip(lines, sorted(oracle[rank].items()), strict=True):
            assert line.startswith(f"step {step} ")
            # the step's length and the union of its gloo:all_reduce ranges, as read from the events
            assert f" {fmt_ns(want['dur'])} · comm {fmt_ns(want['comm'])} · outside ops " in line, line
            # the time outside any op is at most the step less the union of its ops (any thread)
            outside = line.split(" · outside ops ")[1].strip()
            assert ns_of(outside) <= (want["dur"] - want["ops"]) * 1.005, line


def test_cpu_only_dashboard_names_no_gpu_and_draws_no_device_chart(tmp_path: Path) -> None:
    trace = copy(SAMPLES / "mlp_cpu", tmp_path)
    res = CliRunner().invoke(cli_app, ["summary", str(trace), "--json"])
    assert res.exit_code == 0, res.output
    doc = json.loads(res.stdout)
    assert (doc["trace"]["device_type"], doc["trace"]["gpus"]) == ("none", 0)
    assert not any("GPU" in t for t in doc["takeaways"].values())

    async def go():
        app = ProfuiApp(OpenTarget("trace", trace), poll_s=60)
        async with app.run_test(size=(80, 24)) as pilot:
            view = await wait_dashboard(pilot, app)
            title = app.screen.query_one("#trace-title").render().plain
            status = app.screen.query_one("#dash-status").render().plain
            drawn = [p.chart_id for p in view.panels()]
            hidden = [p.chart_id for p in app.screen.query(ChartPanel) if not p.display]
            takeaways = {p.chart_id: p.takeaway_shown() for p in view.panels()}
            # ] walks the charts drawn, and only those
            walked = []
            for _ in drawn:
                await pilot.press("right_square_bracket")
                await pilot.pause()
                walked.append(app.focused.chart_id)
            return title, status, screen_text(app), drawn, hidden, takeaways, walked, view.session.source

    # the first open computes; the second draws what the first kept, and shows the same charts
    first = asyncio.run(go())
    title, status, text, drawn, hidden, takeaways, walked, source = asyncio.run(go())
    assert source == "cache" and (first[3], first[4], first[5]) == (drawn, hidden, takeaways)
    assert "CPU only" in title
    assert "GPU" not in text, [line for line in text.splitlines() if "GPU" in line]
    # was: 8 of 13 charts empty GPU placeholders; now not drawn, and the status line says so in one line
    assert sorted(hidden) == sorted(DEVICE_CHARTS)
    assert status.startswith(
        f"{len(drawn)} charts ({len(DEVICE_CHARTS)} device charts not drawn: no device work traced)"
    )
    assert "host_steps" in drawn and sorted(walked) == sorted(drawn)
    # what the dashboard says is the summary's takeaway, word for word, and the facade's
    assert takeaways == {k: doc["takeaways"].get(k, "") for k in takeaways}
    assert takeaways["host_steps"].startswith("Host, median of 4 steps: compute ")
    assert open_trace(trace).summary().takeaways == doc["takeaways"]


def test_cpu_only_summary_words(tmp_path: Path) -> None:
    """The CPU MLP sample's summary: the host-work table's columns have distinct headers (the
    step's number and its length), the Steps table says "step time" (a CPU window), no takeaway
    speaks of launches or GPUs, and a run over ranks names no GPU either (and leaves nothing
    out: its first line is the whole run's)."""
    trace = copy(SAMPLES / "mlp_cpu", tmp_path)
    text = CliRunner().invoke(cli_app, ["summary", str(trace)], env={"COLUMNS": "200"})
    assert text.exit_code == 0, text.output
    host = text.stdout.split("Host work per step (no device work)")[1].split("┡")[0]
    (header,) = [line for line in host.splitlines() if line.startswith("┃")]
    heads = [c.strip() for c in header.split("┃")[1:-1]]
    assert heads[:3] == ["rank", "step", "length"] and len(set(heads)) == len(heads), heads
    steps = text.stdout.split("\nSteps")[1].split("┡")[0]
    assert "step time" in steps and "device time" not in steps, steps
    # no GPU word anywhere in the text, the Markdown or explain (the FLOPs note once said "no
    # kernel ran on a GPU")
    for args in (
        ["summary", str(trace)],
        ["summary", str(trace), "--format", "markdown"],
        ["explain", str(trace)],
    ):
        said = CliRunner().invoke(cli_app, args, env={"COLUMNS": "200"})
        assert said.exit_code == 0, said.output
        assert "GPU" not in said.stdout, (args, [line for line in said.stdout.splitlines() if "GPU" in line])
    doc = json.loads(CliRunner().invoke(cli_app, ["summary", str(trace), "--json"]).stdout)
    assert doc["trace"]["device_type"] == "none"
    assert not any("GPU" in v or "launches arrive" in v for v in doc["takeaways"].values()), doc["takeaways"]
    # one wording for "does not apply on a CPU-only run": the takeaways and the charts alike
    from profui.analysis.devices import NONE_WORDS, does_not_apply
    from profui.tui.views.dashboard_charts import no_device_text

    said = "Does not apply: no device work was traced"
    assert does_not_apply("host work is in the CPU and step charts") in doc["takeaways"].values()
    assert no_device_text(NONE_WORDS, "kernels") == f"{said}."
    device_takeaways = [v for v in doc["takeaways"].values() if "no device work was traced" in v]
    assert device_takeaways and all(
        v.startswith(said) or v.startswith("No memcpy or memset: ") for v in device_takeaways
    ), device_takeaways
    workers = CliRunner().invoke(cli_app, ["summary", str(trace), "--workers", "2"], env={"COLUMNS": "200"})
    assert workers.exit_code == 0, workers.output
    # by ranks every section, the critical path and the findings too: nothing left out, no note
    assert "a run over ranks" not in workers.stdout
    assert workers.stdout.splitlines()[0] == text.stdout.splitlines()[0]
    # the sample has memory events: a run by ranks gives the section as the whole run does
    assert "Memory over time (allocator's [memory] events)" in workers.stdout
    assert "GPU" not in workers.stdout, [line for line in workers.stdout.splitlines() if "GPU" in line]


def test_a_gpu_run_blames_no_hidden_chart_on_missing_device_work(tmp_path: Path) -> None:
    """The GPU sample hides a chart for its own reason (no memory events): the status line once
    said '1 device charts not drawn: no device work traced' of a run whose devices are all busy."""
    trace = copy(SAMPLES / "synthetic_gpu", tmp_path)

    async def go():
        app = ProfuiApp(OpenTarget("trace", trace), poll_s=60)
        async with app.run_test(size=(80, 24)) as pilot:
            view = await wait_dashboard(pilot, app)
            return app.screen.query_one("#dash-status").render().plain, len(view.panels())

    status, drawn = asyncio.run(go())
    assert status.startswith(f"{drawn} charts · ") and "not drawn" not in status, status
