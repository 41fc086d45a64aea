"""``profui analyze`` (run the analysis pipeline, whole or selectively) and ``profui runs``."""

from __future__ import annotations

import json
import os
import signal
import sys
import textwrap
from pathlib import Path
from typing import TYPE_CHECKING, Any

import typer

if TYPE_CHECKING:
    from rich.console import Console
    from rich.table import Table

    from profui.analysis.pipeline import RunRecord, StageEvent
    from profui.analysis.pipeline.records import Damaged

    from .fit_table import FittedTable

# The pipeline (and Polars with it) is imported by the commands that run, not with the CLI:
# `profui open` of a warm trace never needs it.

from .errors import UserError
from .ranks_opts import by_ranks, rank_progress, scheduler_option, skip_option, workers_option
from .sources import resolve_source


def _out() -> Console:
    """Console for stdout; wide when piped, so tables stay one row per stage in logs."""
    from rich.console import Console

    c = Console(highlight=False, soft_wrap=True)
    return c if c.is_terminal else Console(highlight=False, soft_wrap=True, width=200)


_SYMBOL = {"succeeded": "✓", "failed": "✗", "stopped": "■", "skipped": "·", "running": "…"}


def _resolve(trace: Path, err: Console, quiet: bool = False) -> Path:
    """A trace folder for ``trace`` (Kineto JSON is imported into the cache first)."""
    return resolve_source(
        trace, progress=None if quiet else lambda line: err.print(line, style="dim", markup=False)
    )


def _fmt_s(seconds: float | None) -> str:
    if seconds is None:
        return "-"
    return f"{seconds * 1000:.0f} ms" if seconds < 1 else f"{seconds:.2f} s"


def _provenance(st: Any) -> str:
    if st.status != "succeeded":
        return "-"
    if st.provenance == "reused":
        return f"reused {st.source_run}"
    if st.provenance == "cache":
        return f"cache ({st.origin_run})" if st.origin_run else "cache"
    return st.provenance or "-"


def _fmt_value(v: Any) -> str:
    return json.dumps(v) if isinstance(v, str) else str(v)


def _plan_table(
    trace_dir: Path, stages: str | None, reference: str | None, resume: str | None, sets: list[str]
) -> tuple[Table, Table]:
    from rich.table import Table

    from profui.analysis.pipeline import REGISTRY, TRACE, parse_assignments, plan_run
    from profui.capture.format import open_trace_dir

    td = open_trace_dir(trace_dir)
    plan = plan_run(
        td,
        REGISTRY,
        stages=stages.split(",") if stages else None,
        reference=reference,
        resume=resume,
        overrides=parse_assignments(sets),
    )
    dag = Table(title=f"profui analyze {trace_dir} --plan", title_justify="left")
    for col in ("stage", "inputs", "parameters", "outputs", "this run"):
        dag.add_column(col)
    for name in REGISTRY.order:
        s = REGISTRY.stages[name]
        if name in plan.selection:
            action = "run (or cache)"
        elif name in plan.reused:
            action = f"reuse {plan.reference.id}" if plan.reference else "reuse"
        elif s.on_demand:
            action = "skip (on demand: --stages " + name + ")"
        else:
            action = "skip"
        dag.add_row(
            name,
            ", ".join("TRACE" if i == TRACE else i for i in s.inputs),
            ", ".join(s.params) or "-",
            ", ".join(s.outputs),
            action,
        )
    params = Table(title="parameters (--set name=value)", title_justify="left")
    for col in ("name", "type", "default", "this run", "used by", "meaning"):
        params.add_column(col)
    for name, p in REGISTRY.params.items():
        value = plan.params[name]
        params.add_row(
            name,
            p.type,
            _fmt_value(p.default),
            _fmt_value(value) if value != p.default else "",
            ", ".join(sorted(REGISTRY.users_of(name))) or "-",
            p.help,
        )
    return dag, params


def stage_table(rec: RunRecord) -> FittedTable:
    """Per-stage table of one run, laid out for the terminal (:mod:`.fit_table`: numbers and
    names whole, parameters elided in the middle, parts under the stage names when too wide)."""
    from .fit_table import Column, FittedTable

    stages = list(rec.stages.values())
    errors = [(st.error or "")[:120] for st in stages]
    return FittedTable(
        f"{rec.id}  {rec.status}",
        [
            Column("stage", [st.name for st in stages], key=True),
            Column("status", [f"{_SYMBOL.get(st.status, '')} {st.status}" for st in stages]),
            Column("output", [_provenance(st) for st in stages]),
            Column("attempt", [str(st.attempt or "-") for st in stages], right=True),
            Column(
                "time",
                [_fmt_s(st.seconds) if st.provenance != "reused" else "-" for st in stages],
                right=True,
            ),
            Column(
                "parameters",
                [" ".join(f"{k}={_fmt_value(v)}" for k, v in st.params.items()) or "-" for st in stages],
                text=True,
            ),
            # only where a stage has one: a column of blanks took a part of its own at 80 columns
            *([Column("error", errors, text=True)] if any(errors) else []),
        ],
    )


def runs_table(runs: list[RunRecord], damaged: list[Damaged] | None = None) -> FittedTable:
    """One row per run, and one per damaged run record (status ``damaged``), by run number; laid
    out for the terminal (:mod:`.fit_table`: a run's id, time and counts whole)."""
    from profui.analysis.pipeline.records import Damaged, run_number

    from .fit_table import Column, FittedTable

    records: list[RunRecord | Damaged] = [*runs, *(damaged or [])]
    rows = []
    for *_, r in sorted(((run_number(r.id), r.id, r) for r in records), key=lambda row: row[:2]):
        if isinstance(r, Damaged):
            rows.append((r.id, "-", "damaged", "-", "-", "-", "-", "-", "-"))
            continue
        c = r.counts()
        rows.append(
            (
                r.id,
                r.created.replace("T", " ")[:19],
                r.status,
                str(c["computed"]),
                str(c["cache"]),
                str(c["reused"]),
                _fmt_s(r.seconds),
                ",".join(r.selection) if r.selection else "all",
                r.reference or "-",
            )
        )
    cells = list(zip(*rows, strict=True)) if rows else [()] * 9
    heads = ("run", "created", "status", "computed", "cached", "reused", "duration", "selection", "reference")
    return FittedTable(
        "analysis runs",
        [
            Column(
                h,
                list(col),
                key=h == "run",
                right=h in ("computed", "cached", "reused", "duration"),
                text=h in ("selection", "reference"),
                cap=40 if h == "selection" else None,
            )
            for h, col in zip(heads, cells, strict=True)
        ],
    )


def _sigterm_as_interrupt() -> None:
    def handler(signum: int, frame: Any) -> None:
        raise KeyboardInterrupt

    signal.signal(signal.SIGTERM, handler)


def _run_by_ranks(
    trace_dir: Path,
    sets: list[str],
    scheduler: str | None,
    workers: int | None,
    skip: bool,
    resume: str | None,
    as_json: bool,
    quiet: bool,
    out: Any,
) -> None:
    """``profui analyze`` by ranks (:mod:`profui.analysis.ranks_run`); its record printed."""
    from dataclasses import asdict

    from profui.analysis.cluster import ClusterError
    from profui.analysis.distributed import RankFailed
    from profui.analysis.pipeline import REGISTRY, PipelineError, parse_assignments
    from profui.analysis.pipeline.params import resolve_params
    from profui.analysis.ranks_run import analyze_ranks

    try:
        params = None if resume else resolve_params(REGISTRY.params, None, parse_assignments(sets))
        rec, _ = analyze_ranks(
            trace_dir,
            params,
            scheduler=scheduler,
            workers=workers,
            skip_bad_ranks=skip,
            resume=resume,
            on_rank=None if quiet else rank_progress,
        )
    except (PipelineError, ClusterError, RankFailed) as exc:
        raise UserError(str(exc)) from None
    if as_json:
        sys.stdout.write(json.dumps(asdict(rec), indent=1) + "\n")
        return
    c = rec.counts()
    out.print(
        f"{rec.id} {rec.status}: {c.get('computed', 0)} rank(s) computed, {c.get('cache', 0)} from cache, "
        f"{c.get('skipped', 0)} skipped; summary in .profui/{rec.summary}"
    )
    for label, r in rec.ranks.items():
        if r["status"] == "skipped":
            out.print(f"skipped {label}: {r['error']}")


def register(app: typer.Typer) -> None:
    """Add ``profui analyze`` and ``profui runs``."""

    @app.command("analyze")
    def analyze_command(
        trace: Path = typer.Argument(
            ...,
            help="Trace folder, or Kineto JSON file(s) folder to import first.",
            readable=False,
        ),
        plan: bool = typer.Option(
            False, "--plan", help="Print the stage DAG and what this run would do; run nothing."
        ),
        stages: str | None = typer.Option(
            None,
            "--stages",
            help="Run only these stages (comma-separated); upstream outputs come from the reference run. "
            "The timeline index runs only when named (--stages timeline, after a first full run) "
            "or when `profui open` draws it.",
        ),
        reference: str | None = typer.Option(
            None,
            "--reference",
            help="Run to reuse outputs and parameters from (default: latest run not executing).",
        ),
        resume: str | None = typer.Option(
            None, "--resume", help="Re-run a failed or stopped run's unfinished stages, reusing the rest."
        ),
        sets: list[str] = typer.Option(
            [], "--set", help="Parameter override name=value (repeatable; see --plan)."
        ),
        no_wait: bool = typer.Option(
            False, "--no-wait", help="Refuse instead of waiting when another analysis holds the trace."
        ),
        no_cache: bool = typer.Option(
            False, "--no-cache", help="Recompute selected stages even when cached."
        ),
        as_json: bool = typer.Option(False, "--json", help="Print the run record as JSON."),
        quiet: bool = typer.Option(False, "--quiet", "-q", help="No progress on stderr."),
        peak_tflops: float | None = typer.Option(
            None, "--peak-tflops", help="Peak TFLOP/s of one device for MFU (--set peak_tflops=...)."
        ),
        model_flops: float | None = typer.Option(
            None, "--model-flops", help="Model FLOPs per step on each rank for MFU (--set model_flops=...)."
        ),
        scheduler: str | None = scheduler_option(),
        workers: int | None = workers_option(),
        skip_bad_ranks: bool = skip_option(),
    ) -> None:
        """Run the analysis pipeline (a DAG of cached stages); every run is recorded (see `profui runs`).

        \b
        Examples:
          profui analyze trace/ --stages kernels,summary --set top_n=30
          profui analyze job/ --workers 8 --skip-bad-ranks
          profui analyze job/ --scheduler tcp://10.0.0.5:8786
          profui analyze job/ --resume ranks-0001

        A job of many ranks (or with --workers/--scheduler) runs rank by rank on Dask: each rank's
        tables are cached, the run is recorded under .profui/ranks-runs/, and --resume of a failed
        run computes only the ranks it did not finish.
        """
        from rich.console import Console

        from profui.analysis.pipeline import PipelineError

        from .summary_cmd import flops_assignments

        sets = [*sets, *flops_assignments(peak_tflops, model_flops)]

        err = Console(stderr=True, highlight=False, soft_wrap=True)
        out = _out()
        trace_dir = _resolve(trace, err, quiet)
        from profui.analysis.ranks_run import is_ranks_run

        if (
            not plan
            and not stages
            and not reference
            and (
                is_ranks_run(resume)
                or (resume is None and by_ranks(trace_dir, scheduler, workers, skip_bad_ranks))
            )
        ):
            _run_by_ranks(trace_dir, sets, scheduler, workers, skip_bad_ranks, resume, as_json, quiet, out)
            return
        try:
            if plan:
                dag, params = _plan_table(trace_dir, stages, reference, resume, sets)
                out.print(dag)
                out.print(params)
                return
            _sigterm_as_interrupt()
            record = _run(trace_dir, stages, reference, resume, sets, no_wait, no_cache, err, quiet)
        except PipelineError as exc:
            raise UserError(str(exc)) from None
        if as_json:
            sys.stdout.write(json.dumps(record.to_dict(), indent=1) + "\n")
        else:
            out.print(stage_table(record))
            c = record.counts()
            out.print(
                f"{record.id} {record.status} in {_fmt_s(record.seconds)}: "
                f"{c['computed']} computed, {c['cache']} from cache, {c['reused']} reused"
            )
        bad = record.bad_input()
        if bad is not None:  # a file the stages cannot read: bad input, said as everywhere else
            raise bad
        if record.status != "succeeded":
            sys.stderr.write(f"profui: {trace_dir}: run {record.id} {record.status}: {record.error}\n")
            raise typer.Exit(1)

    @app.command("runs")
    def runs_command(
        trace: Path = typer.Argument(
            ..., help="Trace folder (or Kineto JSON analysed before).", readable=False
        ),
        run: str | None = typer.Argument(None, help="A run id (run-0003, 3 or latest): show its stages."),
        as_json: bool = typer.Option(False, "--json", help="JSON instead of a table."),
        prune_keep: int | None = typer.Option(
            None,
            "--prune",
            metavar="KEEP",
            help="Forget all but the newest KEEP runs; delete outputs no kept run uses.",
        ),
    ) -> None:
        """List the analysis runs of a trace, or show one run's stages."""
        from rich.console import Console

        from profui.analysis.pipeline import PipelineError, damaged_runs, list_runs, load_run, prune

        err = Console(stderr=True, highlight=False, soft_wrap=True)
        out = _out()
        trace_dir = _resolve(trace, err, quiet=True)
        try:
            if prune_keep is not None:
                gone = prune(trace_dir, prune_keep)
                out.print(
                    f"removed {gone['runs']} run record(s) and {gone['artifacts']} stage output folder(s)"
                )
                return
            if run is None:
                runs, damaged = list_runs(trace_dir), damaged_runs(trace_dir)
                if as_json:
                    rows = []
                    for r in runs:
                        d = r.to_dict()
                        d.pop("stages")
                        rows.append(d)
                    rows += [{"id": dmg.id, "status": "damaged", "error": dmg.problem} for dmg in damaged]
                    sys.stdout.write(json.dumps(rows, indent=1) + "\n")
                elif not runs and not damaged:
                    out.print(f"no analysis runs yet; run `profui analyze {trace}`")
                else:
                    out.print(runs_table(runs, damaged))
                    for dmg in damaged:
                        out.print(f"{dmg.id}: damaged run record ({dmg.problem}): {dmg.path}", markup=False)
                return
            rec = load_run(trace_dir, run)
        except PipelineError as exc:
            raise UserError(str(exc)) from None
        if as_json:
            sys.stdout.write(json.dumps(rec.to_dict(), indent=1) + "\n")
            return
        head = [
            f"run        {rec.id}   {rec.status}   created {rec.created}   duration {_fmt_s(rec.seconds)}",
            # ", " so that a terminal's line breaks fall between stages; printed as --stages takes it
            f"selection  {', '.join(rec.selection) if rec.selection else 'all stages'}",
        ]
        if rec.reference or rec.resume_of:
            head.append(
                f"reference  {rec.reference or '-'}"
                + (f"   resumes {rec.resume_of}" if rec.resume_of else "")
            )
        head.append("params     " + " ".join(f"{k}={_fmt_value(v)}" for k, v in rec.params.items()))
        for line in head:
            # on a terminal, wrapped at spaces under its value (the terminal broke it mid-word);
            # piped, one line each, as a log reads it
            parts = (
                textwrap.wrap(
                    line,
                    out.width,
                    subsequent_indent=" " * 11,
                    break_on_hyphens=False,
                    break_long_words=False,
                )
                if out.is_terminal
                else [line]
            )
            for part in parts:
                out.print(part.replace(", ", ",") if line.startswith("selection") else part, markup=False)
        if rec.error:
            out.print(f"error      {rec.error}", markup=False)
        out.print(stage_table(rec))


def _run(
    trace_dir: Path,
    stages: str | None,
    reference: str | None,
    resume: str | None,
    sets: list[str],
    no_wait: bool,
    no_cache: bool,
    err: Console,
    quiet: bool,
) -> RunRecord:
    from profui.analysis.pipeline import analyze, list_runs, parse_assignments
    from profui.analysis.pipeline.lock import describe_holder

    status = None
    if not quiet and err.is_terminal:
        status = err.status("starting analysis ...")
        status.start()

    def progress(ev: StageEvent) -> None:
        if quiet:
            return
        if ev.status in ("running", "progress"):
            text = f"[{ev.index}/{ev.total}] {ev.stage} ..."
            if ev.status == "progress":  # within a long stage (the timeline index: rank by rank)
                text = f"[{ev.index}/{ev.total}] {ev.stage}: {ev.message} ({ev.fraction or 0:.0%})"
            if status is not None:
                status.update(text)
            return
        how = ev.provenance or ev.status
        line = f"{_SYMBOL.get(ev.status, ' ')} [{ev.index}/{ev.total}] {ev.stage:<12} {how:<9} {_fmt_s(ev.seconds)}"
        if ev.message:
            line += f"  {ev.message}"
        err.print(line, markup=False)

    def on_wait(holder: dict[str, Any]) -> None:
        who = describe_holder(holder) or "(unknown)"
        err.print(
            f"profui: {trace_dir}: another profui analyze {who} holds the trace; waiting ...", markup=False
        )

    try:
        return analyze(
            trace_dir,
            stages=stages.split(",") if stages is not None else None,
            reference=reference,
            resume=resume,
            overrides=parse_assignments(sets),
            use_cache=not no_cache,
            wait=not no_wait,
            progress=progress,
            on_wait=on_wait,
        )
    except KeyboardInterrupt:
        if status is not None:
            status.stop()
        ours = [r for r in list_runs(trace_dir) if r.pid == os.getpid()]
        what = f"run {ours[-1].id} {ours[-1].status}" if ours else "interrupted before the run started"
        sys.stderr.write(f"profui: {trace_dir}: {what} (interrupted)\n")
        raise SystemExit(130) from None  # said: not Typer's Exit(130), which is a Ctrl-C unsaid
    finally:
        if status is not None:
            status.stop()
