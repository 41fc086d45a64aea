"""The dashboard's headline is the top finding, as ``profui explain --json`` lists it (its title
and the time it would save per step), or says that there is none; a warm open draws the same
line from what the cold open kept. On the bundled samples and shared traces of each kind (CPU
only, JAX on CPU, GPUs with several ranks, a GPU trace with NCCL, one without a finding)."""

from __future__ import annotations

import asyncio
import json
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

from realdata import SAMPLES, shared_trace

SAMPLE_NAMES = ["mlp_cpu", "jax_cpu", "synthetic_gpu"]
SHARED = [
    "hta-nccl_parser_config-nccl_data.json.gz",
    "hta-cpu_only-rank-34.Jul_15_10_52_41.1074.pt.trace.json.gz",
    "hta-mtia_trace_single_rank-mtia_rank_0.json.gz",
]


@pytest.fixture(params=SAMPLE_NAMES + SHARED)
def trace(request, tmp_path: Path) -> Path:
    name = request.param
    dst = tmp_path / name.split(".json")[0]
    if name == "jax_cpu":  # a JAX log folder: imported as the command line does
        res = CliRunner().invoke(cli_app, ["import", str(SAMPLES / name), "-o", str(dst)])
        assert res.exit_code == 0, res.output
    elif name in SAMPLE_NAMES:
        shutil.copytree(SAMPLES / name, dst, ignore=shutil.ignore_patterns(".profui"))
    else:
        import_trace([shared_trace(name)], dst)
    return dst


def headline_of(trace: Path) -> tuple[str, str]:
    """The dashboard headline's text and where the dashboard came from."""

    async def go() -> tuple[str, str]:
        app = ProfuiApp(OpenTarget("trace", trace), poll_s=3600)
        async with app.run_test(size=(100, 30)) as pilot:
            view = await wait_dashboard(pilot, app)
            return str(view.query_one("#dash-headline").render()), view.session.source or ""

    return asyncio.run(go())


def test_the_headline_is_explains_top_finding_cold_and_warm(trace: Path) -> None:
    res = CliRunner().invoke(cli_app, ["explain", str(trace), "--json"])
    assert res.exit_code == 0, res.output
    doc = json.loads(res.stdout)
    cold, cold_source = headline_of(trace)
    assert cold_source.startswith("computed")
    if doc["findings"]:
        top = doc["findings"][0]
        assert cold.startswith("Top finding: " + top["title"].rstrip(".")[:40])
        assert fmt_ns(top["recoverable_ns_per_step"]) in cold
    else:
        assert cold.startswith("No finding")
    if doc["trace"]["device_type"] != "gpu":
        assert "GPU" not in cold
    kept = json.loads((private_dir_for(trace) / "tui" / "dashboard.json").read_text())
    text = kept["charts"]["headline"]["text"]
    assert (text["plain"] if isinstance(text, dict) else text) == cold
    warm, _ = headline_of(trace)
    assert warm == cold
