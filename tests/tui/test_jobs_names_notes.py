"""The jobs list over real imported traces: the notes an import carries from its sources, and
trace names cut in the middle as text, never made bare like kernel names.

The trace is a real shared Kineto trace. For the sources' notes it is first written back with a
``profui.notes`` entry, as ``profui export`` writes what its source's importer said; the Kineto
importer keeps those on the source of the manifest (the oracle: the string written in).
"""

from __future__ import annotations

import asyncio
import gzip
import json
from pathlib import Path

from profui.capture.ingest import import_trace
from profui.tui.app import OpenTarget, ProfuiApp
from profui.tui.screens.jobs import JobsScreen

from realdata import shared_trace

SOURCE = "hta-trace_compare-base-base.json.gz"
NOTE = "rank 3: 12 events without a timestamp left out"
# a namespace and a call-like tail: what the kernel-name rule (bare) strips
LONG_NAME = "team::resnet50_training_with_the_new_dataloader_on_eight_gpus_sweep_lr(0.001)"


async def _jobs(root: Path) -> tuple[list[str], str]:
    app = ProfuiApp(OpenTarget("jobs", root))
    async with app.run_test(size=(80, 24)) as pilot:
        screen = app.screen
        assert isinstance(screen, JobsScreen)
        table = screen.query_one("#jobs-table")
        for _ in range(300):
            await pilot.pause()
            if table.row_count:
                break
            await asyncio.sleep(0.02)
        else:
            raise AssertionError("jobs table never filled")
        await pilot.pause()
        names = [str(table.get_row_at(i)[0]) for i in range(table.row_count)]
        return names, screen.query_one("#jobs-notes").render().plain


def test_the_jobs_list_shows_the_notes_of_an_imports_sources(tmp_path: Path) -> None:
    doc = json.loads(gzip.decompress(shared_trace(SOURCE).read_bytes()))
    doc["profui"] = {"notes": [NOTE]}
    exported = tmp_path / "exported.json.gz"
    exported.write_bytes(gzip.compress(json.dumps(doc).encode()))
    root = tmp_path / "jobs"
    import_trace([exported], root / "exported")

    _names, notes = asyncio.run(_jobs(root))
    assert f"note: {NOTE}" in notes.splitlines(), notes  # was empty: only the import's own notes


def test_a_long_trace_name_is_cut_in_the_middle_as_text(tmp_path: Path) -> None:
    root = tmp_path / "jobs"
    import_trace([shared_trace(SOURCE)], root / "run", name=LONG_NAME)

    (shown,), _notes = asyncio.run(_jobs(root))
    assert shown != LONG_NAME and shown.count("…") == 1, shown  # 80 columns: the name is cut
    head, tail = shown.split("…")
    assert LONG_NAME.startswith(head) and LONG_NAME.endswith(tail), shown
    assert shown.endswith("(0.001)") and shown.startswith("team::"), shown  # bare cut both
