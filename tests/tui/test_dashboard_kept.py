"""A warm open draws what the last complete dashboard of the same trace drew (kept as JSON in the
trace's cache store), without Polars; anything that could change the answers makes it draw anew.

Oracle: the charts of a dashboard built from the stage outputs (the cold open, and the same
outputs built again here with the chart builders), compared chart by chart with what the warm
open shows, on the bundled sample and on two real traces (HTA's NCCL trace and the df_index
trace, imported with the project's importer).
"""

from __future__ import annotations

import asyncio
import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from pilotwait import wait_dashboard

from profui.capture.format import open_trace_dir, private_dir_for
from profui.capture.ingest import import_trace
from profui.tui.app import OpenTarget, ProfuiApp
from profui.tui.views import dashboard_cache
from profui.tui.views import dashboard_charts as dc
from profui.tui.views.session import TraceSession

from realdata import REPO, SAMPLES, shared_trace

REAL = ["hta-nccl_parser_config-nccl_data.json.gz", "hta-df_index_resolver-df_index_resolver.json.gz"]


def _drawn(trace: Path) -> tuple[dict[str, dict], str]:
    """Open ``trace`` headless at 80×24 until the dashboard is complete: every chart's data as
    JSON, and the session's source."""

    async def go():
        app = ProfuiApp(OpenTarget("trace", trace), poll_s=3600)
        async with app.run_test(size=(80, 24)) as pilot:
            view = await wait_dashboard(pilot, app)
            charts = {c.id: dashboard_cache._chart_to_json(view.panel(c.id).data) for c in dc.CHARTS}
            return charts, view.session.source

    return asyncio.run(go())


def _built(trace: Path) -> dict[str, dict]:
    """The charts built from the stage outputs, as the dashboard's normal path builds them."""
    session = TraceSession(trace)
    result = session.stage_outputs(dc.STAGES)
    return {c.id: dashboard_cache._chart_to_json(c.build(result, None)) for c in dc.CHARTS}


@pytest.fixture(params=["sample", *REAL], ids=["sample", "nccl", "df_index"])
def trace(request, tmp_path: Path) -> Path:
    dst = tmp_path / "trace"
    if request.param == "sample":
        shutil.copytree(SAMPLES / "synthetic_gpu", dst, ignore=shutil.ignore_patterns(".profui"))
    else:
        import_trace([shared_trace(request.param)], dst)
    return dst


def test_a_warm_open_draws_what_the_cold_open_drew(trace: Path) -> None:
    kept_file = private_dir_for(trace) / "tui" / "dashboard.json"
    cold, cold_source = _drawn(trace)
    assert cold_source.startswith("computed") and kept_file.is_file()
    warm, warm_source = _drawn(trace)
    assert warm_source == "cache"
    assert warm == cold
    assert warm == _built(trace)  # the same outputs, built again: the same charts


def test_a_warm_open_imports_no_polars_until_an_action_needs_the_outputs(tmp_path: Path) -> None:
    trace = tmp_path / "trace"
    shutil.copytree(SAMPLES / "synthetic_gpu", trace, ignore=shutil.ignore_patterns(".profui"))
    _drawn(trace)  # cold: keeps the dashboard
    child = f"""
import asyncio, sys
from pathlib import Path
from profui.tui.app import OpenTarget, ProfuiApp
from profui.tui.views.dashboard import DashboardView

async def go():
    app = ProfuiApp(OpenTarget("trace", Path({str(trace)!r})), poll_s=3600)
    async with app.run_test(size=(80, 24)) as pilot:
        while not app.screen.query(DashboardView) or not app.screen.query_one(DashboardView).complete:
            await pilot.pause()
        view = app.screen.query_one(DashboardView)
        print("complete, polars imported:", "polars" in sys.modules, "source:", view.session.source)
        await pilot.press("a")  # the annotation picker needs the outputs: they load, then it opens
        for _ in range(600):
            await pilot.pause()
            await asyncio.sleep(0.01)
            if type(app.screen).__name__ == "PickScreen":
                break
        print("after a:", type(app.screen).__name__, "polars imported:", "polars" in sys.modules)

asyncio.run(go())
"""
    res = subprocess.run([sys.executable, "-c", child], capture_output=True, text=True, timeout=120, cwd=REPO)
    assert res.returncode == 0, res.stderr
    assert "complete, polars imported: False source: cache" in res.stdout, res.stdout
    assert "after a: PickScreen polars imported: True" in res.stdout, res.stdout


def test_a_new_analysis_run_draws_anew(tmp_path: Path) -> None:
    trace = tmp_path / "trace"
    import_trace([shared_trace(REAL[0])], trace)
    cold, _ = _drawn(trace)
    assert len(cold["top_time"]["bars"]) == 15
    res = subprocess.run(
        [str(Path(sys.executable).with_name("profui")), "analyze", str(trace), "-q", "--set", "top_n=3"],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert res.returncode == 0, res.stderr
    after, source = _drawn(trace)
    assert source != "cache" or after != cold  # not the kept drawing of before the run
    assert len(after["top_time"]["bars"]) == 3  # the new run's top_n


def test_a_changed_trace_or_code_draws_anew(tmp_path: Path, monkeypatch) -> None:
    trace = tmp_path / "trace"
    shutil.copytree(SAMPLES / "synthetic_gpu", trace, ignore=shutil.ignore_patterns(".profui"))
    _drawn(trace)
    td = open_trace_dir(trace)
    assert dashboard_cache.load(td) is not None
    monkeypatch.setattr(dashboard_cache, "code_fingerprint", lambda: "another profui")
    assert dashboard_cache.load(td) is None  # an upgrade: the charts' words may differ
    monkeypatch.undo()
    manifest = trace / "manifest.json"
    data = json.loads(manifest.read_text())
    data["notes"] = [*data.get("notes", []), "a note added after the run"]
    manifest.write_text(json.dumps(data))
    assert dashboard_cache.load(open_trace_dir(trace)) is None  # the trace changed


@pytest.mark.parametrize(
    "content",
    [b"", b"not json", b"[]", b'{"key": 1}', b'{"key": "%s", "charts": {"x": {"bars": 5}}}'],
    ids=["empty", "not-json", "a-list", "wrong-key", "wrong-types"],
)
def test_a_damaged_kept_file_is_a_miss_never_an_error(tmp_path: Path, content: bytes) -> None:
    trace = tmp_path / "trace"
    shutil.copytree(SAMPLES / "synthetic_gpu", trace, ignore=shutil.ignore_patterns(".profui"))
    cold, _ = _drawn(trace)
    kept_file = private_dir_for(trace) / "tui" / "dashboard.json"
    if b"%s" in content:
        content = content.replace(b"%s", dashboard_cache.key(open_trace_dir(trace)).encode())
    kept_file.write_bytes(content)
    assert dashboard_cache.load(open_trace_dir(trace)) is None
    again, source = _drawn(trace)  # drawn from the outputs, and kept again
    assert again == cold and source == "cache"
    assert dashboard_cache.load(open_trace_dir(trace)) is not None


def test_a_live_capture_is_never_kept(tmp_path: Path) -> None:
    trace = tmp_path / "trace"
    shutil.copytree(SAMPLES / "synthetic_gpu", trace, ignore=shutil.ignore_patterns(".profui"))
    manifest = trace / "manifest.json"
    data = json.loads(manifest.read_text())
    data["status"] = "running"
    manifest.write_text(json.dumps(data))
    assert dashboard_cache.key(open_trace_dir(trace)) is None


@pytest.mark.parametrize(
    "mutate",
    [
        lambda c: c["top_time"]["bars"][0].update(value="x"),
        lambda c: c["top_time"]["bars"][0].update(label=None),
        lambda c: c["gpu_util"].update(kind="pie"),
        lambda c: c["gpu_util"]["series"][0].update(xs=[1, "2"]),
        lambda c: c["gpu_active"].update(y_max=True),
        lambda c: c["gpu_active"].update(text={"plain": "x", "style": "not a style !!", "spans": []}),
    ],
    ids=["value-a-string", "label-null", "unknown-kind", "xs-a-string", "y_max-a-bool", "bad-style"],
)
def test_a_kept_file_of_the_right_key_but_wrong_types_is_a_miss(tmp_path: Path, mutate) -> None:
    # the key can be right (a file written by another profui of the same sources, edited): a
    # value of the wrong type must never reach the widgets, where it would fail inside the app
    trace = tmp_path / "trace"
    shutil.copytree(SAMPLES / "synthetic_gpu", trace, ignore=shutil.ignore_patterns(".profui"))
    _drawn(trace)
    kept_file = private_dir_for(trace) / "tui" / "dashboard.json"
    doc = json.loads(kept_file.read_bytes())
    mutate(doc["charts"])
    kept_file.write_text(json.dumps(doc))
    assert dashboard_cache.load(open_trace_dir(trace)) is None


def test_drawing_the_timeline_keeps_the_kept_dashboard(tmp_path: Path) -> None:
    """The timeline's index is a stage: drawing it records a run of that stage, reusing the
    rest; the dashboard's outputs are the same, so what it kept is still drawn at once. A run
    that changes one of them (another top-N) is drawn anew."""
    from profui.analysis.lod_open import open_lod
    from profui.analysis.pipeline.engine import analyze
    from profui.analysis.pipeline.outputs import list_runs

    trace = tmp_path / "trace"
    shutil.copytree(SAMPLES / "synthetic_gpu", trace, ignore=shutil.ignore_patterns(".profui"))
    _drawn(trace)  # cold: keeps the dashboard
    assert dashboard_cache.load(open_trace_dir(trace)) is not None
    open_lod(trace)
    runs = list_runs(trace)
    assert len(runs) == 2 and runs[-1].stages["timeline"].provenance == "computed"
    assert dashboard_cache.load(open_trace_dir(trace)) is not None
    analyze(trace, overrides={"top_n": "3"})
    assert dashboard_cache.load(open_trace_dir(trace)) is None
