"""SVG snapshots of the Findings view at 80×24 on a real trace (HTA's NCCL trace, imported with
the project's importer and analysed once, so each snapshot is a warm open): the findings with
the first one's evidence, then Enter: the timeline at its worst instance with the step's
critical path drawn. Update after an intended change, once the new SVGs are checked by eye,
with ``pytest tests/tui/test_findings_view_snapshots.py --snapshot-update``.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from pilotwait import wait_dashboard, wait_for

from profui.analysis.lod_open import build_lod
from profui.capture.ingest import import_trace
from profui.tui.app import OpenTarget, ProfuiApp
from profui.tui.views import dashboard_charts as dc
from profui.tui.views.session import TraceSession

from realdata import shared_trace

NCCL = "hta-nccl_parser_config-nccl_data.json.gz"


@pytest.fixture(scope="module")
def trace(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("findsnap") / "nccl"
    import_trace([shared_trace(NCCL)], out)
    TraceSession(out).stage_outputs(dc.STAGES)
    TraceSession(out).stage_outputs(("critical_path",))
    build_lod(out)
    return out


def findings_then(*keys: str):
    async def run_before(pilot) -> None:
        await wait_dashboard(pilot, pilot.app)
        await pilot.press("F")
        view = pilot.app.screen.query_one("#findings")
        await wait_for(pilot, lambda: view.ready, 1500)
        for k in keys:
            await pilot.press(k)
        if "enter" in keys:
            timeline = pilot.app.screen.query_one("#timeline")
            await wait_for(
                pilot, lambda: timeline.state is not None and timeline.state.paths is not None, 1500
            )
        await pilot.pause()

    return run_before


def test_findings_view(snap_compare, trace: Path) -> None:
    app = ProfuiApp(OpenTarget("trace", trace), poll_s=600)
    assert snap_compare(app, terminal_size=(80, 24), run_before=findings_then())


def test_enter_opens_the_worst_instance_with_its_critical_path(snap_compare, trace: Path) -> None:
    app = ProfuiApp(OpenTarget("trace", trace), poll_s=600)
    assert snap_compare(app, terminal_size=(80, 24), run_before=findings_then("enter"))
