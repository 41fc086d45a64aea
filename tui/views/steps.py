"""StepsView (being written)."""

from __future__ import annotations

from textual.widgets import Static

from .base import TraceView


class StepsView(TraceView):
    """Placeholder."""

    def compose(self):
        yield Static("steps")
