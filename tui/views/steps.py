"""Steps view: one row per training step (per rank) from the ``steps`` stage, outliers marked;
Enter shows the step in the timeline."""

from __future__ import annotations

import polars as pl
from textual import on, work
from textual.app import ComposeResult
from textual.widgets import Static

from ..widgets.fmt import fmt_count
from ..widgets.frame_table import FrameTable
from . import dashboard_charts as dc
from .base import TraceView

#: Shown first when present; every other column of the stage's per-step frame follows.
LEADING = ["step", "node", "rank", "outlier", "dur_ns", "duration_ns", "step_ns"]
HIDDEN = {"start", "end", "ts"}


def mark_outliers(per_step: pl.DataFrame, outliers: pl.DataFrame) -> pl.DataFrame:
    """``per_step`` with a boolean ``outlier`` column: the row's step is in the outliers frame."""
    if "outlier" in per_step.columns or per_step.height == 0:
        return per_step
    keys = [k for k in ("node", "rank", "step") if k in per_step.columns and k in outliers.columns]
    if not keys or outliers.height == 0:
        return per_step.with_columns(pl.lit(False).alias("outlier"))
    flagged = outliers.select(keys).unique().with_columns(pl.lit(True).alias("outlier"))
    return per_step.join(flagged, on=keys, how="left").with_columns(pl.col("outlier").fill_null(False))


def per_step_frame(outputs: dict) -> pl.DataFrame:
    """The richest per-step frame the steps stage wrote (breakdown, else windows), outliers marked."""
    steps = outputs.get("steps", {})
    per_step = next(
        (steps[f] for f in ("breakdown.parquet", "per_step.parquet", "windows.parquet")
         if isinstance(steps.get(f), pl.DataFrame)),
        pl.DataFrame(),
    )
    return mark_outliers(per_step, dc.frame(outputs, "steps", "outliers.parquet"))


class StepsView(TraceView):
    """A table of steps; ``s`` sorts, ``r`` reverses, Enter opens the timeline on the step."""

    DEFAULT_CSS = """
    StepsView .view-status { height: auto; padding: 0 1; color: $text-muted; }
    StepsView FrameTable { height: 1fr; }
    """

    def compose(self) -> ComposeResult:
        yield Static("loading steps…", id="steps-status", classes="view-status")
        yield FrameTable(id="steps-table", sort_by=None)

    def focus_main(self) -> None:
        self.query_one(FrameTable).focus()

    def load(self) -> None:
        self._load()

    @work(thread=True, exclusive=True, group="steps")
    def _load(self) -> None:
        try:
            outputs = self.session.stage_outputs(dc.STAGES)
        except Exception as exc:
            self.app.call_from_thread(self._status, f"analysis failed: {type(exc).__name__}: {exc}")
            return
        self.app.call_from_thread(self._show, per_step_frame(outputs))

    def _status(self, line: str) -> None:
        self.query_one("#steps-status", Static).update(line)

    def _show(self, frame: pl.DataFrame) -> None:
        if frame.height == 0:
            why = self.session.unavailable.get("steps", "no step markers in this trace")
            self._status(f"No steps: {why}")
            self.query_one(FrameTable).set_frame(frame)
            return
        n_out = int(frame["outlier"].sum()) if "outlier" in frame.columns else 0
        self._status(f"{fmt_count(frame.height)} step rows · {n_out} outlier(s) ● · s sort · r reverse · "
                     "Enter: timeline")
        columns = [c for c in LEADING if c in frame.columns]
        columns += [c for c in frame.columns if c not in columns and c not in HIDDEN]
        self.query_one(FrameTable).set_frame(frame, columns)

    @on(FrameTable.Chosen, "#steps-table")
    def _chosen(self, event: FrameTable.Chosen) -> None:
        where = {"step": event.row["step"]}
        if "rank" in event.row:
            where["rank"] = event.row["rank"]
        if not self.app.goto_timeline(**where):  # type: ignore[attr-defined]
            self.app.notify("the timeline view is not available", severity="warning")
