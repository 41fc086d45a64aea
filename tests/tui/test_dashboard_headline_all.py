"""The dashboard's headline equals ``profui explain --json``'s ``headline`` on every shared trace
profui opens (each Kineto file, the Nsight exports, the two sampled ranks as one 2-rank job) and
on every bundled sample (issue 36, "Done means").

The dashboard side is what :class:`~profui.tui.views.dashboard.DashboardView` draws on a cold
open: :func:`~profui.tui.views.dashboard_charts.build_headline` of the stage outputs the dashboard
loads (``TraceSession.stage_outputs(dashboard_charts.STAGES)``); on a few traces also the line a
Pilot draws, cold and then warm from the kept dashboard. The explain side is the real command
line, once per trace, on the same import. The oracle beside the two surfaces: the line names
explain's first finding by its own title and time per step (or says that there is none), and a
run without GPUs says no GPU word. Shared files that are not profiler traces are refused by
profui with one line; they are skipped by name with that line, never silently."""

from __future__ import annotations

import asyncio
import json
import os
import re
import shutil
from pathlib import Path

import pytest
from pilotwait import wait_dashboard
from typer.testing import CliRunner

from profui.analysis.formatting import fmt_ns
from profui.capture.format import private_dir_for
from profui.capture.ingest import import_trace
from profui.tui.app import OpenTarget, ProfuiApp
from profui.tui.cli import app as cli_app
from profui.tui.cli.sources import resolve_source
from profui.tui.views import dashboard_charts as dc
from profui.tui.views.session import TraceSession

from realdata import REPO, nsys_export, require_shared_traces, run_profui, shared_trace, traces_dir

#: Shared files that are not profiler traces (a memory timeline, an execution trace).
NOT_TRACES = (
    "hta-execution_trace-benchmark_simple_add_et.json.gz",
    "hta-memory_analysis-memory_timeline.raw.gz",
)
NSYS = ("nsys/h100_2gpu_1s", "nsys/mfu_2gpu_after", "nsys/mfu_2gpu_before")
PAIR = ("hta-trace_filter-sampled_rank-0.json.gz", "hta-trace_filter-sampled_rank-1.json.gz")
PAIR_JOB = "pair/hta-trace_filter-sampled_rank-0+1"
SAMPLES = ("samples/mlp_cpu", "samples/synthetic_gpu", "samples/jax_cpu")
#: Also opened through Pilot, cold and warm: no step markers (the whole trace's path), a 2-rank
#: job, CUDA graphs (the test of the six covers a CPU-only, an NCCL and an MTIA trace).
PILOT = ("nsys/h100_2gpu_1s", PAIR_JOB, "hta-negative_queue_length_values_check-rank0.json.gz")


def _kineto_names() -> list[str]:
    """The shared files on disk and those the folder's README lists (one listed but gone is
    then missing, not unnoticed)."""
    d = traces_dir()
    if not d.is_dir():
        return ["(shared traces missing)"]
    readme = d / "README.md"
    listed = re.findall(r"^\| (hta-[^ |]+) \|", readme.read_text(), re.M) if readme.is_file() else []
    return sorted({*listed, *(p.name for p in d.glob("hta-*") if p.is_file())}) or ["(shared traces missing)"]


NAMES = [*_kineto_names(), *NSYS, PAIR_JOB, *SAMPLES]


@pytest.fixture(scope="module")
def cache(tmp_path_factory: pytest.TempPathFactory):
    """profui's import cache in a tmp dir for this module (the test's imports and the CLI's)."""
    d = tmp_path_factory.mktemp("profui-cache")
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("PROFUI_CACHE", str(d))
        yield d


def opened(name: str, root: Path) -> tuple[Path, Path]:
    """What the user passes to ``profui explain`` for ``name`` and the trace folder it opens."""
    if name == "(shared traces missing)":
        require_shared_traces()
    if name.startswith("samples/"):
        dst = root / Path(name).name
        if name == "samples/jax_cpu":  # a JAX log folder: imported as the command line does
            res = CliRunner().invoke(cli_app, ["import", str(REPO / name), "-o", str(dst)])
            assert res.exit_code == 0, res.output
        else:  # a copy, so that no .profui is left in the repository
            shutil.copytree(REPO / name, dst, ignore=shutil.ignore_patterns(".profui"))
        return dst, dst
    if name == PAIR_JOB:
        dst = root / "sampled_rank-0+1"
        import_trace([shared_trace(n) for n in PAIR], dst)
        return dst, dst
    src = nsys_export(Path(name).name) if name.startswith("nsys/") else shared_trace(name)
    return src, resolve_source(src)  # the CLI's own import, into the module's cache


def pilot_headline(folder: Path) -> tuple[str, str, str]:
    """The line a Pilot-driven dashboard draws, where its outputs came from, and
    ``build_headline`` of the very outputs that dashboard holds."""

    async def go() -> tuple[str, str, str]:
        app = ProfuiApp(OpenTarget("trace", folder), poll_s=3600)
        async with app.run_test(size=(100, 30)) as pilot:
            view = await wait_dashboard(pilot, app)
            drawn = str(view.query_one("#dash-headline").render())
            return drawn, view.session.source or "", dc.build_headline(view.result).text.plain

    return asyncio.run(go())


@pytest.fixture(scope="module")
def headlines(cache: Path, tmp_path_factory: pytest.TempPathFactory):
    """For a trace name: the dashboard's cold headline and explain's JSON, one import each."""

    def get(name: str) -> tuple[str, dict, Path]:
        root = tmp_path_factory.mktemp(name.replace("/", "-").split(".json")[0][:60])
        given, folder = opened(name, root)
        if name in PILOT:
            drawn, source, built = pilot_headline(folder)
            assert built == drawn
        else:
            session = TraceSession(folder)
            drawn = dc.build_headline(session.stage_outputs(dc.STAGES)).text.plain
            source = session.source
        assert source.startswith("computed"), source  # a cold open: nothing was kept before
        proc = run_profui("explain", given, "--json", cache=cache)
        assert proc.returncode == 0, proc.stderr[-2000:]
        return drawn, json.loads(proc.stdout), folder

    return get


@pytest.mark.parametrize("name", NAMES)
def test_the_dashboard_headline_is_explains(name: str, headlines, cache: Path) -> None:
    if name in NOT_TRACES:
        # profui refuses it: one line naming the file, exit 2; skipped with that line
        proc = run_profui("explain", shared_trace(name), "--json", cache=cache)
        lines = proc.stderr.strip().splitlines()
        assert proc.returncode == 2 and len(lines) == 1 and name in lines[0], proc.stderr[-1500:]
        pytest.skip(f"{name}: not a profiler trace; profui refuses it: {lines[0]}")
    drawn, doc, folder = headlines(name)
    assert drawn == doc["headline"]
    if doc["findings"]:
        top = doc["findings"][0]
        assert drawn.startswith("Top finding: " + top["title"].rstrip("."))
        ns = top["recoverable_ns_per_step"]
        # an Nsight export has no step markers: the one window is the whole trace, times per trace
        whole = "no step markers: the whole trace is analysed as one window" in doc["notes"]
        assert whole or not name.startswith("nsys/")
        unit = "trace" if whole else "step"
        assert f"{fmt_ns(ns)} per {unit}" in drawn if ns > 0 else f"{top['severity']} risk" in drawn
    else:
        assert drawn.startswith("No finding: ")
    if doc["trace"]["device_type"] != "gpu":
        assert "GPU" not in drawn
    if name in PILOT:  # a warm open draws the kept line
        kept = json.loads((private_dir_for(folder) / "tui" / "dashboard.json").read_text())
        text = kept["charts"]["headline"]["text"]
        assert (text["plain"] if isinstance(text, dict) else text) == drawn
        warm, source, _ = pilot_headline(folder)
        assert warm == drawn and not source.startswith("computed"), source


def test_every_shared_file_is_listed() -> None:
    """Each shared file is checked or skipped by name: none is left out silently."""
    d = require_shared_traces()
    on_disk = {p.name for p in d.glob("hta-*")} | {f"nsys/{p.stem}" for p in (d / "nsys").glob("*.sqlite")}
    assert on_disk <= set(NAMES), on_disk - set(NAMES)
    assert set(PAIR) <= on_disk and all(os.path.exists(nsys_export(Path(n).name)) for n in NSYS)
