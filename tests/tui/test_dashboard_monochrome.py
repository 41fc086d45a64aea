"""``NO_COLOR``: every view renders in monochrome on a real trace, and the bars stay readable
(they are glyphs, not colours)."""

from __future__ import annotations

import asyncio
from pathlib import Path

from pilotwait import wait_for

from profui.capture.ingest import import_trace
from profui.tui.app import OpenTarget, ProfuiApp
from profui.tui.views.dashboard import DashboardView
from profui.tui.widgets.bars import Bars

from realdata import shared_trace

NCCL = "hta-nccl_parser_config-nccl_data.json.gz"


def test_every_view_renders_with_no_color(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setenv("NO_COLOR", "1")
    trace = tmp_path / "nccl"
    import_trace([shared_trace(NCCL)], trace)

    async def go() -> None:
        app = ProfuiApp(OpenTarget("trace", trace), poll_s=600)
        async with app.run_test(size=(80, 24)) as pilot:
            assert app.no_color
            view = app.screen.query_one(DashboardView)
            await wait_for(pilot, lambda: view.complete, 1500)
            lines = view.panel("top_time").query_one(Bars).render().plain.splitlines()
            assert lines and all("█" in line or "▏" in line or "▎" in line for line in lines[:3])
            for key in ("2", "3", "4", "5", "1"):
                await pilot.press(key)
                for _ in range(10):
                    await pilot.pause()
                    await asyncio.sleep(0.05)
                assert (
                    app.screen.current
                    == {"1": "dashboard", "2": "kernels", "3": "steps", "4": "runs", "5": "timeline"}[key]
                )
            # the screen really drew (a crash in a filter would have ended the app)
            assert app.is_running and app.return_code is None

    asyncio.run(go())
