"""The timeline on a real Nsight Systems export (``nsys/mfu_2gpu_before.sqlite``): both GPUs and
their streams, PyTorch's NVTX op ranges on the host threads, and Enter from a CUDA launch to its
kernel. The expected launch and kernel are read from the export with sqlite3 here."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest
from pilotwait import wait_timeline
from test_timeline_pilot import SIZE, details, run

from profui.analysis.lod_open import build_lod
from profui.capture.ingest import import_trace
from profui.tui.timeline import TimelineApp

from realdata import nsys_export


@pytest.fixture(scope="module")
def imported(tmp_path_factory) -> tuple[Path, Path]:
    src = nsys_export("mfu_2gpu_before")
    out = tmp_path_factory.mktemp("nsys_timeline") / "t"
    import_trace([src], out)
    build_lod(out)
    return src, out


def _first_launch(src: Path) -> tuple[int, str, int]:
    """(kernel start - launch start, kernel name, kernel stream) of the earliest cudaLaunchKernel."""
    conn = sqlite3.connect(f"file:{src}?mode=ro", uri=True)
    try:
        return conn.execute(
            "SELECT k.start - r.start, s.value, k.streamId FROM CUPTI_ACTIVITY_KIND_RUNTIME r "
            "JOIN StringIds n ON n.id = r.nameId AND n.value LIKE 'cudaLaunchKernel%' "
            "JOIN CUPTI_ACTIVITY_KIND_KERNEL k ON k.correlationId = r.correlationId "
            "AND (k.globalPid >> 24) = (r.globalTid >> 24) JOIN StringIds s ON s.id = k.demangledName "
            "ORDER BY r.start LIMIT 1"
        ).fetchone()
    finally:
        conn.close()


def test_gpus_streams_and_nvtx_ops_are_lanes(imported) -> None:
    _src, out = imported

    async def go() -> None:
        app = TimelineApp(out)
        async with app.run_test(size=SIZE) as pilot:
            view = await wait_timeline(pilot, app)
            lanes = view.state.ix.lanes()
            assert {(lane.rank, lane.device) for lane in lanes if lane.kind == "gpu"} == {(0, 0), (1, 1)}
            assert {lane.stream for lane in lanes if lane.kind == "stream" and lane.device == 0} >= {7}
            await pilot.press("slash", *"aten::addmm", "enter")
            rec = view.state.ix.event(view.state.selected)
            assert rec["name"] == "aten::addmm" and view.state.current().lane.kind == "thread"

    run(go())


def test_enter_follows_a_launch_to_its_kernel(imported) -> None:
    src, out = imported
    delay, kernel_name, stream = _first_launch(src)

    async def go() -> None:
        app = TimelineApp(out)
        async with app.run_test(size=SIZE) as pilot:
            view = await wait_timeline(pilot, app)
            st = view.state
            await pilot.press("slash", *"cudaLaunchKernel", "enter")
            launch = st.ix.event(st.selected)
            assert launch["name"] == "cudaLaunchKernel"
            await pilot.press("enter")
            kernel = st.ix.event(st.selected)
            assert (kernel["name"], kernel["stream"], kernel["ts"] - launch["ts"]) == (
                kernel_name,
                stream,
                delay,
            )
            assert st.current().lane.kind == "stream" and "ext id" in details(view)

    run(go())
