"""DashboardView (being written)."""

from __future__ import annotations

from textual.widgets import Static

from .base import TraceView


class DashboardView(TraceView):
    """Placeholder."""

    def compose(self):
        yield Static("dashboard")
