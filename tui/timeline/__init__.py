"""The host-to-device Timeline view: lane tree, time canvas, details, search.

Drawn with Textual's line API from the LOD index of :mod:`profui.analysis.lod`.
"""

from .app import TimelineApp
from .view import TimelineView

__all__ = ["TimelineApp", "TimelineView"]
