"""The Communication, Launches, Idle and Sync views driven by keys at 80×24 on real traces, their
cells checked against the raw trace events (read here with the standard library)."""

from __future__ import annotations

import asyncio
import gzip
import json
import shutil
from pathlib import Path

import pytest
from pilotwait import wait_for

from profui.analysis.formatting import fmt_count, fmt_ns
from profui.capture.ingest import import_trace
from profui.tui.app import OpenTarget, ProfuiApp
from profui.tui.views.table_sections import SectionsView
from profui.tui.widgets.frame_table import FrameTable

from realdata import REPO, shared_trace

NCCL = "hta-nccl_parser_config-nccl_data.json.gz"
CPU_ONLY = "hta-cpu_only-rank-34.Jul_15_10_52_41.1074.pt.trace.json.gz"
KEYS = {"comm": "6", "launches": "7", "idle": "8", "sync": "9"}


def raw_events(name: str) -> list[dict]:
    """The Kineto file's complete events, parsed with the json module."""
    with gzip.open(shared_trace(name), "rt") as f:
        return [e for e in json.load(f)["traceEvents"] if e.get("ph") == "X"]


def us_to_ns(us: float) -> int:
    return round(us * 1000)


@pytest.fixture(scope="module")
def imported(tmp_path_factory) -> dict[str, Path]:
    root = tmp_path_factory.mktemp("views")
    out = {}
    for name in (NCCL, CPU_ONLY):
        out[name] = root / name.split(".json")[0]
        import_trace([shared_trace(name)], out[name])
    out["mlp"] = root / "mlp"
    shutil.copytree(REPO / "samples" / "mlp_cpu", out["mlp"])
    return out


def cells(table: FrameTable) -> list[dict[str, str]]:
    """Every row as shown: column name -> the cell's text."""
    rows = []
    for i in range(table.row_count):
        row = table.get_row_at(i)
        rows.append(
            {c: getattr(v, "plain", None) or str(v) for c, v in zip(table.columns_shown, row, strict=True)}
        )
    return rows


async def show(pilot, view_id: str) -> SectionsView:
    await pilot.press(KEYS[view_id])
    assert await wait_for(pilot, lambda: bool(pilot.app.screen.query(f"#{view_id}")))
    view = pilot.app.screen.query_one(f"#{view_id}", SectionsView)
    assert await wait_for(pilot, lambda: view.ready), view_id
    return view


def status(view: SectionsView) -> str:
    return str(view.query_one(".view-status").render())


def test_communication_on_nccl_kernels_and_table_keys(imported) -> None:
    raw = [
        e
        for e in raw_events(NCCL)
        if e.get("cat") == "kernel" and e["name"].startswith("ncclKernel_AllReduce")
    ]

    async def go() -> None:
        app = ProfuiApp(OpenTarget("trace", imported[NCCL]), poll_s=600)
        async with app.run_test(size=(80, 24)) as pilot:
            view = await show(pilot, "comm")
            assert status(view).startswith("Communication · table 1 of 5 · ] [ tables")
            assert str(view.query_one(".view-takeaway").render()).startswith("NCCL ")
            rows = {r["collective"]: r for r in cells(view.query_one(FrameTable))}
            assert rows["AllReduce"]["total_ns"].strip() == fmt_ns(sum(us_to_ns(e["dur"]) for e in raw))
            assert rows["AllReduce"]["count"].strip() == fmt_count(len(raw)) == "15"
            assert rows["AllReduce"]["source"] == "device kernel"
            titles = [view.section.title]
            for _ in range(5):
                await pilot.press("right_square_bracket")
                titles.append(view.section.title)
            assert titles[0] == titles[5] == "Collectives by kind"
            assert titles[1:5] == [
                "Exposed vs overlapped, per rank",
                "Communication time per rank",
                "Straggler per step: last at the collectives",
                "Per step and rank",
            ]
            await pilot.press("left_square_bracket")
            assert view.section.title == "Per step and rank"

    asyncio.run(go())


def test_communication_counts_gloo_host_ranges_on_a_cpu_trace(imported) -> None:
    raw = [e for e in raw_events(CPU_ONLY) if e["name"] == "gloo:all_reduce"]

    async def go() -> None:
        app = ProfuiApp(OpenTarget("trace", imported[CPU_ONLY]), poll_s=600)
        async with app.run_test(size=(80, 24)) as pilot:
            view = await show(pilot, "comm")
            (row,) = cells(view.query_one(FrameTable))
            assert (row["collective"], row["source"]) == ("AllReduce", "host op")
            assert row["total_ns"].strip() == fmt_ns(sum(us_to_ns(e["dur"]) for e in raw))
            assert row["count"].strip() == str(len(raw))
            assert str(view.query_one(".view-takeaway").render()).startswith("Host collectives")
            # no kernels: the other views say so
            launches = await show(pilot, "launches")
            assert status(launches).startswith("No launches in this trace")
            assert not launches.query_one(FrameTable).row_count

    asyncio.run(go())


def test_empty_states_on_a_cpu_training_run(imported) -> None:
    async def go() -> None:
        app = ProfuiApp(OpenTarget("trace", imported["mlp"]), poll_s=600)
        async with app.run_test(size=(80, 24)) as pilot:
            lines = {v: status(await show(pilot, v)) for v in KEYS}
        assert lines["comm"].startswith(
            "No collectives in this trace: no host collectives (gloo:*"
        )  # no GPU: no NCCL kernels
        assert lines["launches"].startswith("No launches in this trace")
        assert lines["idle"].startswith(
            "Does not apply: no device work was traced"
        )  # no device: no stream idles
        assert lines["sync"].startswith("No synchronization in this trace")

    asyncio.run(go())


def test_sync_and_idle_on_nccl(imported) -> None:
    events = raw_events(NCCL)
    event_syncs = [e for e in events if e["name"] == "cudaEventSynchronize"]

    async def go() -> None:
        app = ProfuiApp(OpenTarget("trace", imported[NCCL]), poll_s=600)
        async with app.run_test(size=(80, 24)) as pilot:
            view = await show(pilot, "sync")
            rows = {r["name"]: r for r in cells(view.query_one(FrameTable))}
            assert rows["cudaEventSynchronize"]["calls"].strip() == str(len(event_syncs))
            total = sum(us_to_ns(e["dur"]) for e in event_syncs)
            assert rows["cudaEventSynchronize"]["total_ns"].strip() == fmt_ns(total)
            idle = await show(pilot, "idle")
            categories = [r["category"] for r in cells(idle.query_one(FrameTable))]
            assert sorted(categories) == ["host_wait", "kernel_wait", "other"]
            assert idle.query_one(FrameTable).sort_by == "idle_ns"

    asyncio.run(go())


def test_enter_on_a_kernel_opens_the_timeline_at_it(imported) -> None:
    async def go() -> None:
        app = ProfuiApp(OpenTarget("trace", imported[NCCL]), poll_s=600)
        calls: list[dict] = []
        real = app.goto_timeline

        def spy(**where):
            calls.append(where)
            return real(**where)

        app.goto_timeline = spy  # type: ignore[method-assign]
        async with app.run_test(size=(80, 24)) as pilot:
            view = await show(pilot, "launches")
            for _ in range(3):
                await pilot.press("right_square_bracket")
            assert view.section.title == "Per kernel" and view.section.kernel == "name"
            table = view.query_one(FrameTable)
            table.focus()
            await pilot.press("down", "enter")
            assert calls == [{"kernel": table.shown_frame()["name"][1]}]
            assert app.screen.current == "timeline"

    asyncio.run(go())
