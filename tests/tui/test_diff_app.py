"""The diff app (``profui open --diff BASE NEW``) on the real Nsight pair, driven by keys: the
rows it shows are ``profui diff --json``'s, in its order, and Enter on a kernel opens both
timelines at that kernel."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from profui.analysis.diff import diff, profile_of
from profui.analysis.formatting import fmt_signed_ns
from profui.capture.ingest import import_trace
from profui.tui.screens.diff import DiffApp, TimelinesScreen
from profui.tui.timeline.view import TimelineView

from realdata import nsys_export

PROFUI = str(Path(sys.executable).with_name("profui"))


@pytest.fixture(scope="module")
def pair(tmp_path_factory) -> tuple[Path, Path]:
    d = tmp_path_factory.mktemp("diffapp")
    out = []
    for name in ("mfu_2gpu_before", "mfu_2gpu_after"):
        import_trace([nsys_export(name)], d / name)
        out.append(d / name)
    return out[0], out[1]


async def _until(pilot, check, what: str) -> None:
    for _ in range(1500):
        await pilot.pause()
        if check():
            return
        await asyncio.sleep(0.02)
    raise AssertionError(f"never: {what}")


def test_rows_are_the_json_diff_and_enter_opens_both_timelines(pair, tmp_path) -> None:
    base, new = pair
    env = {**os.environ, "PROFUI_CACHE": str(tmp_path / "cache")}
    proc = subprocess.run(
        [PROFUI, "diff", str(base), str(new), "--json"], capture_output=True, text=True, env=env, timeout=600
    )
    assert proc.returncode == 0, proc.stderr
    cli = json.loads(proc.stdout)
    result = diff(profile_of(base), profile_of(new))
    assert result["headline"] == cli["headline"] and result["metrics"] == cli["metrics"]
    assert result["findings"] == cli["findings"] and result["why"] == cli["why"]
    # the findings that changed beyond noise lead the table, as the CLI's Findings table lists them
    found = [f for f in cli["findings"] if f["material"]]

    async def go() -> None:
        app = DiffApp(base, new, result)
        async with app.run_test(size=(100, 40)) as pilot:
            await pilot.pause()
            table = app.query_one("#diff-headline")
            shown = [str(table.get_row_at(i)[0]) for i in range(table.row_count)]
            assert shown == [f"finding: {f['label']}" for f in found] + [
                cli["metrics"][n]["label"] for n in cli["headline"]
            ]
            takeaway = str(app.query_one("#diff-takeaway").render())
            if found:  # its change per step, as the JSON has it, and why it counts
                f = found[0]
                said = "beyond step-to-step noise" if f["noise_ns"] is not None else "a material change"
                assert takeaway.lower().startswith(f"→ {f['label']}") and said in takeaway
                assert fmt_signed_ns(f["delta_ns_per_step"]) in takeaway
            else:
                first = cli["metrics"][cli["headline"][0]]
                assert first["label"].lower() in takeaway.lower() and "regression" in takeaway
            await pilot.press("tab", "enter")  # the kernels table, its first row
            await _until(pilot, lambda: isinstance(app.screen, TimelinesScreen), "the timelines screen")
            views = list(app.screen.query(TimelineView))
            assert len(views) == 2
            await _until(
                pilot,
                lambda: all(v.state is not None and v.state.selected >= 0 for v in views),
                "both selected",
            )
            row = cli["kernels"][0]
            names = [v.state.ix.event(v.state.selected)["name"] for v in views]
            assert names == [row["base_example"], row["new_example"]]

    asyncio.run(go())


def test_open_diff_without_the_new_trace_is_one_line() -> None:
    proc = subprocess.run([PROFUI, "open", "--diff", "x"], capture_output=True, text=True, timeout=60)
    assert (
        proc.returncode == 2 and len(proc.stderr.splitlines()) == 1 and "needs the new trace" in proc.stderr
    )


def test_escape_goes_back_from_the_timelines(pair) -> None:
    base, new = pair
    result = diff(profile_of(base), profile_of(new))

    async def go() -> None:
        app = DiffApp(base, new, result)
        async with app.run_test(size=(80, 24)) as pilot:
            await pilot.pause()
            await pilot.press("tab", "enter")
            await _until(pilot, lambda: isinstance(app.screen, TimelinesScreen), "the timelines screen")
            await pilot.press("escape")
            await _until(pilot, lambda: not isinstance(app.screen, TimelinesScreen), "back on the diff")

    asyncio.run(go())
