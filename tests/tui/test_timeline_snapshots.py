"""SVG snapshots of the Timeline on a real trace (HTA's NCCL trace, imported with the project's
importer): the whole trace at coarse zoom (80×24 and 120×36), one step, and an NCCL kernel
followed to its launch. Update after an intended change with
``pytest tests/tui/test_timeline_snapshots.py --snapshot-update``.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from pilotwait import wait_for

from profui.analysis.lod_open import build_lod
from profui.capture.ingest import import_trace
from profui.tui.timeline import TimelineApp

from realdata import shared_trace

NCCL = "hta-nccl_parser_config-nccl_data.json.gz"


@pytest.fixture(scope="module")
def trace(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("tlsnap") / "nccl"
    import_trace([shared_trace(NCCL)], out)
    build_lod(out)
    return out


def keys_after_ready(*keys: str):
    async def run_before(pilot) -> None:
        view = pilot.app.query_one("#timeline")
        await wait_for(pilot, lambda: view.ready, 1000)
        for k in keys:
            await pilot.press(k)
        await pilot.pause()

    return run_before


@pytest.mark.parametrize("size", [(80, 24), (120, 36)], ids=lambda s: f"{s[0]}x{s[1]}")
def test_coarse_whole_trace(snap_compare, trace: Path, size) -> None:
    assert snap_compare(TimelineApp(trace), terminal_size=size, run_before=keys_after_ready())


def test_step_view(snap_compare, trace: Path) -> None:
    keys = ("g", "5", "enter", "down", "down", "down", "down", "right")
    assert snap_compare(TimelineApp(trace), terminal_size=(120, 36), run_before=keys_after_ready(*keys))


def test_nccl_kernel_followed_to_its_launch(snap_compare, trace: Path) -> None:
    keys = ("slash", *"ncclKernel_AllReduce", "enter", "enter")
    assert snap_compare(TimelineApp(trace), terminal_size=(120, 36), run_before=keys_after_ready(*keys))
