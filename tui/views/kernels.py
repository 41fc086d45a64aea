"""KernelsView (being written)."""

from __future__ import annotations

from textual.widgets import Static

from .base import TraceView


class KernelsView(TraceView):
    """Placeholder."""

    def compose(self):
        yield Static("kernels")
