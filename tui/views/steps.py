"""Steps view: one row per training step (per rank) from the ``steps`` stage, outliers marked;
Enter shows the step in the timeline."""

from __future__ import annotations

import polars as pl
from textual import on, work
from textual.app import ComposeResult
from textual.widgets import Static

from profui.analysis.comm import usual_straggler
from profui.analysis.devices import CPU
from profui.analysis.formatting import fmt_ns, plural
from profui.analysis.pipeline.result import Result

from ..widgets.frame_table import FrameTable
from ..widgets.heatmap import rank_heatmap
from . import dashboard_charts as dc
from .base import TraceView

#: Shown first when present; every other column of the per-step frame follows.
LEADING = [
    "step",
    "node",
    "rank",
    "outlier",
    "dur_ns",
    "vs_rank_median",
    "busy_ns",
    "idle_ns",
    "computation_ns",
    "communication_ns",
    "data_loading_ns",
    "memory_ns",
    "cpu_dur_ns",
    "n_launches",
    "n_device_events",
]
#: Rank rows of the heatmap before ranks are banded (at 80×24 the table keeps ~8 rows).
HEATMAP_ROWS = 8
HIDDEN = {"start", "end", "ts", "cpu_start_ns", "cpu_end_ns", "start_ns", "end_ns", "mapped"}


def with_rank_ratio(frame: pl.DataFrame) -> pl.DataFrame:
    """``frame`` with ``vs_rank_median`` for every step, not only the outliers (which is all
    ``outliers.parquet`` keeps): analysis' own column (:func:`profui.analysis.steps.step_outliers`,
    the step's time ÷ its rank's median step), so the table, the bars and the outliers agree."""
    if frame.height == 0 or not {"node", "rank", "dur_ns"} <= set(frame.columns):
        return frame
    from profui.analysis.steps import step_outliers

    ratio = step_outliers(frame.select("node", "rank", "dur_ns")).select("vs_rank_median")
    return frame.drop("vs_rank_median", strict=False).with_columns(ratio.collect().to_series())


def per_step_frame(result: Result) -> pl.DataFrame:
    """One row per step and rank: the steps stage's windows with the outliers marked and its
    per-step breakdown (busy, idle, by kernel type) joined (no row when the stage did not run)."""
    if not result.ran("steps"):
        return pl.DataFrame()
    windows = result.steps.windows
    if windows.height == 0:
        return windows
    frame = with_rank_ratio(dc.mark_outliers(windows, result.steps.outliers))
    breakdown = result.steps.breakdown
    if breakdown.height:
        extra = [c for c in breakdown.columns if c not in frame.columns or c in dc.STEP_KEYS]
        frame = frame.join(breakdown.select(extra), on=dc.STEP_KEYS, how="left")
    return frame


class StepsView(TraceView):
    """A table of steps; ``s`` sorts, ``r`` reverses, Enter opens the timeline on the step."""

    DEFAULT_CSS = """
    StepsView .view-status { height: auto; padding: 0 1; color: $text-muted; }
    StepsView FrameTable { height: 1fr; }
    StepsView #steps-heatmap { height: auto; max-height: 12; padding: 0 1; }
    """

    def compose(self) -> ComposeResult:
        yield Static("loading steps…", id="steps-status", classes="view-status")
        heat = Static("", id="steps-heatmap")
        heat.display = False
        yield heat
        yield FrameTable(id="steps-table", sort_by=None)

    def focus_main(self) -> None:
        self.query_one(FrameTable).focus()

    def load(self) -> None:
        self._load()

    @work(thread=True, exclusive=True, group="steps")
    def _load(self) -> None:
        call = self.app.call_from_thread
        try:
            self._compute(call)
        finally:
            call(setattr, self, "ready", True)

    def _compute(self, call) -> None:
        try:
            result = self.stage_result(dc.STAGES)
        except Exception as exc:
            if self.ended_on_bad_input(exc):
                return
            call(self._status, f"analysis failed: {type(exc).__name__}: {exc}")
            return
        steps = result.steps if result.ran("steps") else None  # failed in the recorded run
        call(
            self._show,
            per_step_frame(result),
            steps.job_stats if steps else pl.DataFrame(),
            steps is not None and steps.steps["renumbered"],
            dc.device_words(result, self).kind == CPU,
        )
        call(
            self._heatmap,
            steps.rank_ratios if steps else pl.DataFrame(),
            steps.job if steps else pl.DataFrame(),
            result.comm.stragglers if result.ran("comm") else pl.DataFrame(),
        )

    def _status(self, line: str) -> None:
        self.query_one("#steps-status", Static).update(line)

    def _show(
        self, frame: pl.DataFrame, job_stats: pl.DataFrame, renumbered: bool = False, cpu_device: bool = False
    ) -> None:
        if frame.height == 0:
            self._status("No steps: no step markers in this trace")
            self.query_one(FrameTable).set_frame(frame)
            return
        n_out = int(frame["outlier"].sum()) if "outlier" in frame.columns else 0
        ranks = frame.select("node", "rank").n_unique()
        median = f"median {fmt_ns(job_stats['p50_ns'][0])}" if job_stats.height else ""
        if ranks > 1:
            head = f"{plural(frame['step'].n_unique(), 'step')} × {ranks} ranks · job {median} (each step's longest rank)"
        else:
            head = f"{plural(frame.height, 'step')} · {median}"
        if renumbered:  # the markers' numbers repeat (a restarted profiler): the analysis' note
            head += " · numbered in time order (the markers' numbers repeat)"
        ratio = (
            " · vs rank median = step ÷ its rank's median step" if "vs_rank_median" in frame.columns else ""
        )
        on = set(frame["work_on"].drop_nulls().to_list()) if "work_on" in frame.columns else set()
        if cpu_device:  # XLA on CPU: the device's work is the XLA ops its threads ran in the step
            head += " · busy = XLA ops running on the CPU device"
        if on == {"host"}:  # analysis measured the host: there is no device work to break down
            head += (
                " · no device work: busy = host ops, collectives or DataLoader fetches running,"
                " idle = host time outside any op"
            )
        self._status(
            f"{head}{ratio} · {plural(n_out, 'outlier')} ● · "
            "s sort · r reverse · Enter: that rank's step in the timeline"
        )
        # one node (or one rank) needs no column saying so: 80 columns are precious; host names
        # are long, so several nodes' names go last and the numbers stay on screen
        same: set[str] = {
            c for c in ("node", "rank", "work_on") if c in frame.columns and frame[c].n_unique() == 1
        }
        if on == {"host"}:  # no memcpy on a host; a device-only column would read as measured 0
            same.add("memory_ns")
        elif on == {"device"}:
            same.add("data_loading_ns")
        columns = [c for c in LEADING if c in frame.columns and c not in same and c != "node"]
        columns += [c for c in frame.columns if c not in columns and c not in HIDDEN and c not in same]
        if "node" in columns:
            columns = [c for c in columns if c != "node"] + ["node"]
        self.query_one(FrameTable).set_frame(frame, columns, {"vs_rank_median": "times"})

    def _heatmap(self, ratios: pl.DataFrame, job: pl.DataFrame, stragglers: pl.DataFrame) -> None:
        """Steps × ranks at a glance (several ranks only): whose step is longest, in which steps,
        and the straggler (``comm/stragglers``: the rank that arrives last at the collectives)."""
        heat = self.query_one("#steps-heatmap", Static)
        ranks = ratios.select("node", "rank").n_unique() if ratios.height else 0
        heat.display = ranks > 1
        if ranks <= 1:
            return
        text = rank_heatmap(ratios, max(self.size.width - 2, 40), HEATMAP_ROWS)
        if job.height:
            who = job.group_by("node", "rank").len().sort(["len", "rank"], descending=[True, False]).row(0)
            text.append(
                f"\nlongest step: rank {who[1]} in {who[2]} of {plural(job.height, 'step')}", style="bold"
            )
        late = usual_straggler(stragglers)
        if late is not None:
            text.append(
                f"\narrives last at the collectives: rank {late.rank} in {late.steps} of "
                f"{plural(late.of, 'step')}",
                style="bold",
            )
        heat.update(text)

    @on(FrameTable.Chosen, "#steps-table")
    def _chosen(self, event: FrameTable.Chosen) -> None:
        where = {"step": event.row["step"]}
        for key in ("rank", "node"):  # that rank's own step, its lanes in view
            if event.row.get(key) is not None:
                where[key] = event.row[key]
        if not self.app.goto_timeline(**where):  # type: ignore[attr-defined]
            self.app.notify("the timeline view is not available", severity="warning")
