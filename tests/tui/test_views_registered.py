"""Every registered view imports and is a trace view; the app itself does not import the heavy ones.

The views other than the dashboard are imported when first shown, so this test is what makes a
broken view fail here rather than in a user's session.
"""

from __future__ import annotations

import subprocess
import sys

from profui.tui.app import VIEWS
from profui.tui.views.base import TraceView


def test_every_registered_view_imports_and_is_a_trace_view() -> None:
    names = [spec.name for spec in VIEWS]
    assert len(set(names)) == len(names)
    assert len({spec.key for spec in VIEWS}) == len(VIEWS)
    for spec in VIEWS:
        cls = spec.view_class()
        assert isinstance(cls, type) and issubclass(cls, TraceView), spec


def test_opening_the_app_does_not_import_the_timeline_or_numpy() -> None:
    # a fresh interpreter: what `profui open` pays before its dashboard is drawn
    code = (
        "import sys; import profui.tui.app, profui.tui.cli.open_cmd; "
        "print(sorted(m for m in ('numpy', 'profui.analysis.lod', 'profui.tui.timeline') if m in sys.modules))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"
