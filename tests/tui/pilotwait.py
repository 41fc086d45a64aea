"""Waiting in Pilot tests for work that Textual runs in workers."""

from __future__ import annotations

import asyncio
from collections.abc import Callable


async def wait_for(pilot, cond: Callable[[], object], tries: int = 1500) -> bool:
    """Let the app run (pause + 20 ms) until ``cond()`` holds; False if it never did."""
    for _ in range(tries):
        await pilot.pause()
        if cond():
            return True
        await asyncio.sleep(0.02)
    return False


async def wait_dashboard(pilot, app) -> object:
    """The open trace's DashboardView once every chart has drawn."""
    from profui.tui.views.dashboard import DashboardView

    view = app.screen.query_one(DashboardView)
    if not await wait_for(pilot, lambda: view.complete):
        raise AssertionError("dashboard never completed")
    await pilot.pause()
    return view


async def wait_timeline(pilot, app) -> object:
    """The open trace's TimelineView once its index is loaded and its first frame drawn."""
    from profui.tui.timeline import TimelineView

    view = app.screen.query_one(TimelineView)
    if not await wait_for(pilot, lambda: view.ready):
        raise AssertionError("timeline never became ready")
    await pilot.pause()
    return view
