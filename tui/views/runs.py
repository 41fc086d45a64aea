"""Runs view (as ``profui runs``): the analysis runs (``profui analyze``, not training runs)
recorded under ``trace/.profui/runs``, and the stages of one."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import polars as pl
from textual import on, work
from textual.app import ComposeResult
from textual.widgets import DataTable, Static

from profui.analysis.formatting import plural

from ..widgets.frame_table import FrameTable
from .base import TraceView

RUN_COLUMNS = ["id", "status", "created", "seconds", "computed", "cache", "reused", "failed", "selection"]
STAGE_COLUMNS = ["name", "status", "provenance", "seconds", "source_run", "params", "error"]


def runs_frame(records: list, damaged: Sequence[Any] = ()) -> pl.DataFrame:
    """One row per run record (newest first), for the table; a damaged record's file (a
    :class:`~profui.analysis.pipeline.records.Damaged`) is a row of status ``damaged``."""
    from profui.analysis.pipeline.records import run_number

    rows = []
    for d in damaged:
        rows.append({"id": d.id, "status": "damaged", "created": "", "seconds": None, "selection": ""})
        rows[-1].update(computed=None, cache=None, reused=None, failed=None)
    for r in records:
        counts = r.counts()
        rows.append(
            {
                "id": r.id,
                "status": r.status,
                "created": (r.created or "")[:19].replace("T", " "),
                "seconds": r.seconds,
                "computed": counts["computed"],
                "cache": counts["cache"],
                "reused": counts["reused"],
                "failed": counts["failed"],
                "selection": ",".join(r.selection) if r.selection else "all",
            }
        )
    rows.sort(key=lambda row: (run_number(row["id"]), row["id"]), reverse=True)
    ints = dict.fromkeys(("computed", "cache", "reused", "failed"), pl.Int64)
    return pl.DataFrame(rows, schema_overrides={"seconds": pl.Float64, **ints}) if rows else pl.DataFrame()


def stages_frame(record) -> pl.DataFrame:
    """One row per stage of a run, in pipeline order."""
    rows = [
        {
            "name": s.name,
            "status": s.status,
            "provenance": s.provenance or "",
            "seconds": s.seconds,
            "source_run": s.source_run or s.origin_run or "",
            "params": ", ".join(f"{k}={v}" for k, v in (s.params or {}).items()),
            "error": s.error or "",
        }
        for s in record.stages.values()
    ]
    return pl.DataFrame(rows, schema_overrides={"seconds": pl.Float64}) if rows else pl.DataFrame()


class RunsView(TraceView):
    """Analysis runs (``profui analyze``) of this trace and, below, the stages of the highlighted run."""

    DEFAULT_CSS = """
    RunsView #runs-table { height: 1fr; }
    RunsView #stages-table { height: 1fr; }
    RunsView .view-status { height: auto; padding: 0 1; color: $text-muted; }
    """

    def compose(self) -> ComposeResult:
        yield Static("loading runs…", id="runs-status", classes="view-status")
        yield FrameTable(id="runs-table", sort_by=None)
        yield Static("", id="stages-title", classes="view-status")
        yield FrameTable(id="stages-table", sort_by=None)

    def focus_main(self) -> None:
        self.query_one("#runs-table").focus()

    def load(self) -> None:
        self._load()

    @work(thread=True, exclusive=True, group="runs")
    def _load(self) -> None:
        from profui.analysis.pipeline.records import scan, settle

        records, damaged = scan(self.session.dir.private_dir)
        self.app.call_from_thread(self._show, [settle(r) for r in records], damaged)

    def _show(self, records: list, damaged: Sequence[Any] = ()) -> None:
        self.records = {r.id: r for r in records}
        self.damaged = {d.id: d for d in damaged}
        status = self.query_one("#runs-status", Static)
        if not records and not damaged:
            status.update(
                f"No analysis runs of this trace yet (profui analyze; not training runs). Run: "
                f"profui analyze {self.session.path}"
            )
        else:
            status.update(
                f"{plural(len(records), 'analysis run')} of this trace (profui analyze; not training runs)"
                " · ↑↓ pick one · its stages below"
            )
        table = self.query_one("#runs-table", FrameTable)
        table.set_frame(runs_frame(records, damaged), RUN_COLUMNS)
        self._show_stages()
        self.ready = True

    def _show_stages(self) -> None:
        row = self.query_one("#runs-table", FrameTable).row_at_cursor()
        stages = self.query_one("#stages-table", FrameTable)
        title = self.query_one("#stages-title", Static)
        if row is None:
            stages.set_frame(pl.DataFrame())
            title.update("")
            return
        if row["id"] not in self.records:  # a damaged record: its problem, no stages
            self.stages_of = None
            bad = self.damaged[row["id"]]
            title.update(f"{bad.id}: damaged run record ({bad.problem}): {bad.path}")
            stages.set_frame(pl.DataFrame())
            return
        rec = self.records[row["id"]]
        if getattr(self, "stages_of", None) == (rec.id, rec.status, len(rec.stages)) and stages.row_count:
            return  # already shown
        self.stages_of = (rec.id, rec.status, len(rec.stages))
        title.update(f"Stages of {rec.id} ({rec.status})" + (f" · error: {rec.error}" if rec.error else ""))
        stages.set_frame(stages_frame(rec), STAGE_COLUMNS)

    @on(DataTable.RowHighlighted, "#runs-table")
    def _run_highlighted(self, event: DataTable.RowHighlighted) -> None:
        if getattr(self, "records", None) is not None:
            self._show_stages()
