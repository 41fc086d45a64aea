"""Findings view: what to change, ranked by the time it would save per step (the ``findings``
stage), the selected finding's evidence, where to look and its next step; Enter opens the
timeline at the finding's worst instance with that step's critical path highlighted.

Nothing is computed here: the rows are the stage's tables as :mod:`profui.analysis.schemas`
declares them, each cell read by its column's declared unit (the evidence's ``value`` by its
row's own ``unit``).
"""

from __future__ import annotations

from typing import Any

import polars as pl
from rich.text import Text
from textual import on, work
from textual.app import ComposeResult
from textual.widgets import DataTable, Static

from profui.analysis import schemas
from profui.analysis.findings_base import RISKS
from profui.analysis.formatting import plural
from profui.analysis.pipeline.result import Result

from ..widgets.frame_table import FrameTable
from . import dashboard_charts as dc
from .base import TraceView

STAGE = "findings"
FINDINGS = "findings.parquet"
EVIDENCE = "evidence.parquet"
#: The columns of the findings table, in order (the numbers first: titles run long), and the
#: short names they are shown by (80 columns leave the title room).
COLUMNS = ["position", "category", "recoverable_ns_per_step", "recoverable_share", "finding"]
SHOWN_AS = {"position": "#", "recoverable_ns_per_step": "per_step_ns", "recoverable_share": "share"}
EVIDENCE_COLUMNS = ["label", "value", "source"]


def shown_as(per: str = "step") -> dict[str, str]:
    """The short names of the table's columns; the recoverable time is ``per_step_ns``, or
    ``per_trace_ns`` on a trace without step markers (``per``: :func:`~profui.analysis.findings_base.unit_of`)."""
    return {**SHOWN_AS, "recoverable_ns_per_step": f"per_{per}_ns"}


def units(file: str, per: str = "step") -> dict[str, str]:
    """The declared unit of each column of the findings stage's ``file`` (and of the short name
    it is shown by)."""
    declared = {c.name: c.unit for c in schemas.table(STAGE, file).columns}
    names = shown_as(per)
    return (
        declared
        | {names[c]: u for c, u in declared.items() if c in names}
        | {"finding": declared.get("title", "text")}
    )


#: A time finding's title ends with the two numbers the table's columns show
#: (:func:`profui.analysis.findings.recoverable_title`); the table's title cell leaves them out,
#: so that its 80 columns show the words (the panel below shows the title whole).
RECOVERABLE_TAIL = r": [^:]+ per (?:step|trace) \([^)]*of (?:step|trace) time\) recoverable$"


def shown(findings: pl.DataFrame, per: str = "step") -> pl.DataFrame:
    """The findings with the table's columns under their short names as well (every column
    kept: Enter reads the worst instance's), and ``finding``: the title less the numbers the
    columns show. A risk (memory, precision, idle: no replay measures its time) shows no
    recoverable time, ``-``, where its row holds 0: not a measured nothing."""
    risk = pl.col("category").is_in(list(RISKS))
    timed = ("recoverable_ns_per_step", "recoverable_share")
    return findings.with_columns(
        *(
            (pl.when(~risk).then(pl.col(c)) if c in timed else pl.col(c)).alias(a)
            for c, a in shown_as(per).items()
        ),
        pl.col("title").str.replace(RECOVERABLE_TAIL, "").alias("finding"),
    )


def evidence_of(evidence: pl.DataFrame, position: int) -> pl.DataFrame:
    """The evidence rows of the finding at ``position``, in the stage's order."""
    if evidence.is_empty():
        return evidence
    return evidence.filter(pl.col("position") == position)


def where_text(row: dict[str, Any], width: int, per: str = "step") -> Text:
    """The finding ``row`` whole: its title, its worst instance (rank, step: no step on a trace
    without step markers, ``per`` "trace"), where to look (one line of ``width``: the names run
    long) and its next step."""
    keys = ("rank", "step") if per == "step" else ("rank",)
    where = [f"{k} {row[f'at_{k}']}" for k in keys if row.get(f"at_{k}") is not None]
    names = ", ".join(n for n in (row.get("look_at") or []) if n) or "-"
    t = Text(overflow="fold")
    t.append(str(row.get("title") or ""), style="bold")
    t.append(f"\nworst at {', '.join(where)}" if where else "\n")
    room = max(width - len("look at: "), 8)
    t.append("\nlook at: ", style="bold")
    t.append(names if len(names) <= room else names[: room - 1] + "…")
    t.append("\nnext: ", style="bold")
    t.append(row.get("next_step") or "-")
    return t


class FindingsView(TraceView):
    """The ``findings`` stage's findings, their evidence and where each is worst."""

    DEFAULT_CSS = """
    FindingsView #findings-status { height: 1; padding: 0 1; color: $text-muted; }
    FindingsView #findings { height: auto; max-height: 40%; }
    FindingsView #finding-where { height: auto; max-height: 8; padding: 0 1; }
    FindingsView #evidence { height: 1fr; min-height: 3; }
    """

    def __init__(self, session, id: str | None = None) -> None:
        super().__init__(session, id=id)
        self.findings = pl.DataFrame()
        self.evidence = pl.DataFrame()
        self.per = "step"

    def compose(self) -> ComposeResult:
        yield Static("loading findings…", id="findings-status")
        yield FrameTable(id="findings")
        yield Static("", id="finding-where")
        yield FrameTable(id="evidence")

    def focus_main(self) -> None:
        self.query_one("#findings", FrameTable).focus()

    def load(self) -> None:
        self._load()

    @work(thread=True, exclusive=True)
    def _load(self) -> None:
        try:
            result = self.stage_result(dc.STAGES)
        except Exception as exc:
            if self.ended_on_bad_input(exc):
                return
            self.app.call_from_thread(self._status, f"analysis failed: {type(exc).__name__}: {exc}")
            self.ready = True
            return
        self.app.call_from_thread(self._show, result)

    def _status(self, line: str) -> None:
        self.query_one("#findings-status", Static).update(Text(line, no_wrap=True, overflow="ellipsis"))

    def _show(self, result: Result) -> None:
        table = self.query_one("#findings", FrameTable)
        ran = result.ran(STAGE)
        self.findings = result.findings.findings if ran else pl.DataFrame()
        self.evidence = result.findings.evidence if ran else pl.DataFrame()
        if not ran:  # the stage (or one before it) failed: no claim about findings
            self._status("findings: not available (the findings stage has no output; profui runs says why)")
            table.set_frame(pl.DataFrame())
            self._select(None)
            self.ready = True
            return
        if self.findings.is_empty():  # why, in the dashboard headline's words
            self._status(dc.headline_line(result))
            table.set_frame(pl.DataFrame())
            self._select(None)
            self.ready = True
            return
        self.findings = self.findings.sort("position")
        from profui.analysis.findings_base import unit_of  # numpy and the critical path: when shown

        self.per = unit_of(result.steps.windows if result.ran("steps") else None)
        n = plural(self.findings.height, "finding")
        self._status(f"{n}, most time saved first · Enter: timeline at the worst instance")
        table.sort_by = None
        names = shown_as(self.per)
        table.set_frame(
            shown(self.findings, self.per), [names.get(c, c) for c in COLUMNS], units(FINDINGS, self.per)
        )
        self._select(table.row_at_cursor())
        self.ready = True

    def _select(self, row: dict[str, Any] | None) -> None:
        """Show the evidence and the where/next lines of finding ``row`` (none: blank)."""
        where = self.query_one("#finding-where", Static)
        ev = self.query_one("#evidence", FrameTable)
        if row is None:
            where.update("")
            ev.set_frame(pl.DataFrame())
            return
        where.update(where_text(row, (where.size.width or self.app.size.width) - 2, self.per))
        ev.set_frame(evidence_of(self.evidence, row["position"]), EVIDENCE_COLUMNS, units(EVIDENCE))

    @property
    def selected(self) -> dict[str, Any] | None:
        """The finding under the cursor (every column of its row)."""
        return self.query_one("#findings", FrameTable).row_at_cursor()

    @on(DataTable.RowHighlighted, "#findings")
    def _highlighted(self, event: DataTable.RowHighlighted) -> None:
        event.stop()
        self._select(self.selected)

    @on(FrameTable.Chosen, "#findings")
    def _chosen(self, event: FrameTable.Chosen) -> None:
        event.stop()
        self.open_worst(event.row)

    def open_worst(self, row: dict[str, Any]) -> None:
        """The timeline at the finding's worst instance (its rank's step, at its time), that
        step's critical path highlighted."""
        if row.get("at_step") is None:
            self.app.notify("this finding has no instance on the timeline", severity="warning")
            return
        where = {"step": row["at_step"], "rank": row.get("at_rank"), "ts_ns": row.get("at_ns")}
        if not self.app.goto_timeline(critical_path=True, **where):  # type: ignore[attr-defined]
            self.app.notify("the timeline view is not available", severity="warning")
