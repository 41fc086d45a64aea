"""One answer, one place: on every shared real trace, ``profui summary --json``, the notebook facade
and the dashboard's data path (cold, which records a run, and warm, from that run's outputs) give
the same numbers and the same takeaways, and what the dashboard draws quotes them.
"""

from __future__ import annotations

import json
import math
import shutil
from pathlib import Path

import polars as pl
import pytest
from typer.testing import CliRunner

from profui.analysis import open_trace
from profui.analysis.formatting import fmt_ns, fmt_pct
from profui.analysis.pipeline.bodies import DETAIL_TABLES, TOP_N_TABLES
from profui.analysis.summary import SECTIONS, Summary
from profui.capture.ingest import import_trace
from profui.tui.cli import app
from profui.tui.views import dashboard_charts as dc
from profui.tui.views.session import TraceSession

from realdata import REPO, require_shared_traces, same_numbers, traces_dir

#: Shared files that are not profiler traces: the importer refuses them (tested in capture).
NOT_TRACES = (
    "hta-execution_trace-benchmark_simple_add_et.json.gz",
    "hta-memory_analysis-memory_timeline.raw.gz",
)


def _trace_files() -> list[str]:
    d = traces_dir()
    shared = sorted(p.name for p in d.glob("hta-*.json*") if p.name not in NOT_TRACES) if d.is_dir() else []
    # the bundled samples too (a profcap capture with sampled metrics, a synthetic 2-node job)
    return [*(shared or ["(shared traces missing)"]), "samples/mlp_cpu", "samples/synthetic_gpu"]


def _rows(df: pl.DataFrame) -> list[dict]:
    """JSON rows as ``summary --json`` writes them (NaN as null)."""
    return json.loads(json.dumps(Summary({}, {}, {"s": {"t": df}}).to_json_dict()["sections"]["s"]["t"]))


@pytest.fixture(scope="module")
def imported(tmp_path_factory: pytest.TempPathFactory):
    root = tmp_path_factory.mktemp("one-answer")

    def get(name: str) -> Path:
        out = root / name.replace("/", "-").split(".json")[0]
        if out.exists():
            return out
        if name.startswith("samples/"):
            # the dashboard records its run inside the trace; the sample's own cache is not copied
            shutil.copytree(REPO / name, out, ignore=shutil.ignore_patterns(".profui"))
        else:
            import_trace([require_shared_traces() / name], out)
        return out

    return get


@pytest.mark.parametrize("name", _trace_files())
def test_summary_json_facade_and_dashboard_agree(name: str, imported) -> None:
    trace = imported(name)
    res = CliRunner().invoke(app, ["summary", str(trace), "--json"])
    assert res.exit_code == 0, res.output
    cli = json.loads(res.stdout)
    facade = json.loads(json.dumps(open_trace(trace).summary().to_json_dict()))
    assert same_numbers(cli, facade)
    assert list(cli["sections"]) == list(SECTIONS)

    for attempt in ("cold", "warm"):
        session = TraceSession(trace)
        result = session.stage_outputs(dc.STAGES)
        outputs = result.outputs
        assert session.source == "cache" if attempt == "warm" else session.source.startswith("computed (run-")
        # every table the dashboard holds is the summary's table, row for row
        for stage in dc.STAGES:
            if stage not in cli["sections"]:
                continue
            for file, value in outputs[stage].items():
                if not file.endswith(".parquet"):
                    continue
                table = file.removesuffix(".parquet")
                if (stage, table) in DETAIL_TABLES:  # a row per event: declared out of the summary
                    assert table not in cli["sections"][stage]
                    continue
                if (stage, table) in TOP_N_TABLES:  # the summary holds their top_n rows
                    want = cli["sections"][stage][table]
                    assert same_numbers(_rows(value)[: len(want)], want), (stage, table)
                else:
                    assert same_numbers(_rows(value), cli["sections"][stage][table]), (stage, table)
        # the takeaway each chart shows is the summary's, word for word
        for chart in dc.CHARTS:
            data = chart.build(result, None)
            assert data.takeaway == cli["takeaways"].get(chart.id, ""), chart.id
        # and the headline bar quotes the summary's numbers
        busy = cli["sections"]["utilization"]["busy"]
        bars = dc.build_gpu_active(result, None).bars
        for row in busy:
            share = row["busy_share"] or 0.0
            expected = f"{fmt_pct(share)} active · {fmt_pct(1 - share)} idle ({fmt_ns(row['idle_ns'])})"
            assert any(b.text == expected for b in bars), (expected, [b.text for b in bars])
    # the summary stage that the dashboard's run recorded is the same document
    recorded = json.loads((trace / ".profui").joinpath(_summary_artifact(trace)).read_text())
    assert same_numbers(_clean(recorded), _clean(cli))


def _summary_artifact(trace: Path) -> str:
    from profui.analysis.pipeline import latest_outputs

    return str(latest_outputs(trace)["summary"].relative_to(trace / ".profui") / "summary.json")


def _clean(doc):
    if isinstance(doc, float) and (math.isnan(doc) or math.isinf(doc)):
        return None
    if isinstance(doc, dict):
        return {k: _clean(v) for k, v in doc.items()}
    if isinstance(doc, list):
        return [_clean(v) for v in doc]
    return doc
