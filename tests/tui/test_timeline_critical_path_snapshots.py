"""SVG snapshot of the Timeline with the critical path drawn (``p``) on a real trace (HTA's NCCL
trace, imported with the project's importer): step 5 at 120×36, the path line under the step
band, the path's events underlined and its stretches between events ━. Update after an intended
change, once the new SVG is checked by eye, with
``pytest tests/tui/test_timeline_critical_path_snapshots.py --snapshot-update``.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from pilotwait import wait_for

from profui.analysis.lod_open import build_lod
from profui.capture.ingest import import_trace
from profui.tui.timeline import TimelineApp
from profui.tui.views.session import TraceSession

from realdata import shared_trace

NCCL = "hta-nccl_parser_config-nccl_data.json.gz"


@pytest.fixture(scope="module")
def trace(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("cpsnap") / "nccl"
    import_trace([shared_trace(NCCL)], out)
    TraceSession(out).stage_outputs(("critical_path",))
    build_lod(out)
    return out


def test_step_with_its_critical_path(snap_compare, trace: Path) -> None:
    async def run_before(pilot) -> None:
        view = pilot.app.query_one("#timeline")
        await wait_for(pilot, lambda: view.ready, 1000)
        await pilot.press("g", "5", "enter", "p")
        await wait_for(pilot, lambda: view.state.paths is not None, 1500)
        await pilot.pause()

    assert snap_compare(TimelineApp(trace), terminal_size=(120, 36), run_before=run_before)
