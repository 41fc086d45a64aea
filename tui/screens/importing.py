"""Progress screen while Kineto JSON is imported into the cache.

The import itself is the ``resolve`` callable the command line hands over
(:func:`profui.capture.ingest.cache.resolve_trace`); this screen only shows its progress.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path
from typing import cast

from textual import work
from textual.app import ComposeResult
from textual.containers import Vertical
from textual.screen import Screen
from textual.widgets import Log, ProgressBar, Static

from profui.capture.format import TraceFormatError, is_trace_dir

from ..widgets.keyline import KeyLine


class ImportScreen(Screen):
    """Imports ``source`` in a worker thread, showing each progress line; then opens the trace (or, for files of several jobs, their jobs list)."""

    DEFAULT_CSS = """
    ImportScreen Vertical { padding: 1 2; }
    ImportScreen #import-title { text-style: bold; height: auto; }
    ImportScreen ProgressBar { height: 1; margin: 1 0; }
    ImportScreen Log { height: 1fr; border: round $panel; }
    """

    def __init__(self, source: Path, resolve: Callable[..., Path]) -> None:
        super().__init__()
        self.source = source
        self.resolve = resolve
        self.started = time.monotonic()
        self.lines: list[str] = []

    def compose(self) -> ComposeResult:
        with Vertical():
            yield Static(f"Importing {self.source} …", id="import-title")
            yield ProgressBar(total=None, show_eta=False, id="import-bar")
            yield Log(id="import-log", highlight=False)
        yield KeyLine()

    def on_mount(self) -> None:
        self._import()

    def _progress(self, *args: object) -> None:
        # The importer reports (bytes done, bytes total); resolve reports text lines.
        if len(args) == 2 and all(isinstance(a, int) for a in args):
            done, total = cast("tuple[int, int]", args)
            self.query_one(ProgressBar).update(total=max(int(total), 1), progress=int(done))
            return
        line = " ".join(map(str, args))
        self.lines.append(line)
        self.query_one(Log).write_line(f"{time.monotonic() - self.started:6.1f}s  {line}")

    @work(thread=True, exclusive=True, group="import")
    def _import(self) -> None:
        def progress(*args: object) -> None:
            self.app.call_from_thread(self._progress, *args)

        try:
            trace = self.resolve(self.source, progress=progress)
        except TraceFormatError as exc:
            self.app.call_from_thread(self.app.fail, str(exc))  # type: ignore[attr-defined]
            return
        except Exception as exc:  # an importer bug must still end in one line, not a traceback
            msg = f"{self.source}: import failed ({type(exc).__name__}: {exc})"
            self.app.call_from_thread(self.app.fail, msg)  # type: ignore[attr-defined]
            return
        if is_trace_dir(trace):
            self.app.call_from_thread(self.app.open_trace, trace, True)  # type: ignore[attr-defined]
        else:  # files of several jobs: one trace folder each, listed
            self.app.call_from_thread(self.app.open_jobs, trace, str(self.source))  # type: ignore[attr-defined]
