"""``profui summary TRACE [--json] [--top N] [--hta-compat] [--bucket MS]``: every number, headless.

TRACE is a profui trace folder, or Kineto JSON file(s) / a folder of them (imported once into
the cache, with a progress bar on stderr when it is a terminal). Text output is a series of
rich tables with readable units; ``--json`` prints :meth:`Summary.to_json_dict` as one document.
"""

from __future__ import annotations

import gc
import json
import os
import re
import sys
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any

import typer

from profui.analysis.devices import GPU, fmt_devices, words_for
from profui.analysis.formatting import (
    elide,
    fmt_bytes,
    fmt_count,
    fmt_flops,
    fmt_gbps,
    fmt_level,
    fmt_ns,
    fmt_pct,
    fmt_tflops,
    plural,
)
from profui.analysis.top_n import TOP_N

from .errors import UserError
from .markdown import MarkdownSink, chosen_format, format_option
from .ranks_opts import run_summary_stage, scheduler_option, skip_option, where_and_options, workers_option
from .sources import resolve_sources

if TYPE_CHECKING:
    import polars as pl

Fmt = Callable[[Any], str]
Col = tuple[str, str, Fmt]  # column, header, formatter


def _num(v: Any) -> str:
    if v is None:
        return "-"
    return f"{v:,}" if isinstance(v, int) else f"{float(v):.3g}"


def _text(v: Any) -> str:
    return "-" if v is None else str(v)


def _name(width: int = 60) -> Fmt:
    """A kernel or op name, without ``void``; the table elides it in the middle to at most
    ``width`` (:mod:`.fit_table`)."""

    def f(v: Any) -> str:
        return re.sub(r"^void ", "", str(v))

    f.cap = width  # type: ignore[attr-defined]
    return f


# -- progress ---------------------------------------------------------------------------------


@contextmanager
def import_progress(enabled: bool) -> Iterator[Callable[[str], None] | None]:
    """A rich progress bar on stderr fed by status lines: resolve_source's ("importing: 42%")
    and :func:`stage_progress`' ("analysing: 42%"); a line with no percentage is its text."""
    if not enabled:
        yield None
        return
    from rich.console import Console
    from rich.progress import BarColumn, Progress, TextColumn, TimeElapsedColumn

    with Progress(
        TextColumn("{task.description}"),
        BarColumn(),
        TimeElapsedColumn(),
        console=Console(stderr=True),
        transient=True,
    ) as bar:
        task = bar.add_task("opening", total=None)

        def update(message: str) -> None:
            m = re.search(r"(\d+(?:\.\d+)?)%", message)
            if m:
                what = message.split(":", 1)[0] if ":" in message[: m.start()] else "importing"
                rest = message[m.end() :].strip()  # the stage just done: "(steps)"
                label = elide(f"{what} {rest}" if rest else what, 40, bare=False)
                bar.update(task, completed=float(m.group(1)), total=100, description=label)
            else:
                bar.update(task, description=elide(message, 58, bare=False))

        yield update


def stage_progress(progress: Callable[[str], None], stages: list[str]) -> Callable[[str, Any], None]:
    """An in-memory run's ``on_stage`` that tells ``progress`` how many of ``stages`` (the run's,
    upstream ones included) are done: ``analysing: 42% (steps)``."""
    done: set[str] = set()

    def on_stage(name: str, _outputs: Any) -> None:
        done.add(name)
        progress(f"analysing: {100 * len(done) / max(len(stages), 1):.0f}% ({name})")

    return on_stage


# -- text rendering -----------------------------------------------------------------------------


def _table(title: str, df: pl.DataFrame, cols: Sequence[Col], limit: int | None = None) -> Any:
    """``df``'s columns ``cols`` as a table that fits the terminal (:mod:`.fit_table`): numbers
    whole, names elided in the middle; the leading text columns identify a row."""
    from .fit_table import Column, FittedTable

    if df.is_empty():
        # a table the summary does not hold (no columns: a run by ranks or --sections left it
        # out, as a note says) is not a table without rows
        return f"[bold]{title}[/bold]: " + ("left out (see the notes)" if df.width == 0 else "none")
    present = [c for c in cols if c[0] in df.columns]
    rows = df.head(limit) if limit else df
    columns = []
    leading = True
    for col, header, fmt in present:
        numeric = df.schema[col].is_numeric()
        cap = getattr(fmt, "cap", None)
        leading = leading and (fmt is _text or cap is not None)
        columns.append(
            Column(
                header,
                [fmt(v) for v in rows[col].to_list()],
                text=not numeric and (fmt is _text or cap is not None),
                kernel=cap is not None,
                key=leading,
                cap=cap,
                right=numeric,
            )
        )
    caption = f"{df.height - limit} more row(s) not shown" if limit and df.height > limit else None
    return FittedTable(title, columns, caption)


def _ranks(ranks: Sequence[int]) -> str:
    """The ranks a trace holds: ``rank 0``, ``ranks 0,1``, ``no rank`` (a lone ``ranks 0``
    reads as none)."""
    if not ranks:
        return "no rank"
    return ("rank " if len(ranks) == 1 else "ranks ") + ",".join(map(str, ranks))


def _where(df: pl.DataFrame, lane: str = "gpu") -> list[Col]:
    """Location columns worth showing: node only when several, then rank, device (headed
    ``lane``: ``gpu``, or ``cpu`` for XLA's CPU devices), stream."""
    cols: list[Col] = []
    if "node" in df.columns and df["node"].n_unique() > 1:
        cols.append(("node", "node", _text))
    for c, h in (("rank", "rank"), ("device", lane), ("stream", "stream")):
        if c in df.columns:
            cols.append((c, h, _text))
    return cols


def summary_headline(summary: Any) -> str:
    """The summary's first line: the top finding, or why there is none
    (:func:`profui.analysis.headline.headline`); a summary without the findings section (a run by
    ranks whose ranks could not send their share of the critical path's inputs) says so."""
    from profui.analysis.headline import headline

    if "findings" not in summary.sections:
        return (
            "No finding: this summary has no critical path or findings (its notes say which rank "
            "could not send its share; profui explain computes them)."
        )
    return headline(
        summary.table("findings", "findings"),
        summary.table("steps", "windows") if "steps" in summary.sections else None,
        summary.table("critical_path", "steps") if "critical_path" in summary.sections else None,
    )


def render_text(summary: Any, console: Any) -> None:
    """Print a Summary as readable tables on ``console``: a rich Console, or a
    :class:`~.markdown.MarkdownSink` (the same blocks as Markdown); its headline (the top finding)
    first."""
    import textwrap

    import polars as pl
    from rich.markup import escape

    from profui.analysis.idle import queue_words

    s = summary
    tr = s.trace
    words = words_for(tr)

    def where(df: pl.DataFrame) -> list[Col]:
        return _where(df, words.lane)

    # the headline may wrap: its continuation lines hang under it, as explain's do, so a reader
    # sees one sentence and not a second line of its own
    for line in textwrap.wrap(
        summary_headline(s), max(20, console.width), subsequent_indent="  ", break_on_hyphens=False
    ):
        console.print(f"[bold]{escape(line)}[/bold]")
    head = (
        f"[bold]{escape(tr['name'])}[/bold]  {escape(tr['path'])}\n"
        f"status {tr['status']} · {plural(len(tr['nodes']), 'node')} · {_ranks(tr['ranks'])}"
        f" · {fmt_devices(tr)} · {fmt_count(tr['events'])} events · span {fmt_ns(tr['duration_ns'])}"
    )
    if s.params.get("hta_compat"):
        head += " · [yellow]hta_compat[/yellow]"
    console.print(head)
    for note in s.notes:
        console.print(f"[dim]note: {escape(note)}[/dim]")  # "[memory]" is text, not markup
    if s.takeaways:
        from rich.table import Table

        t = Table(title="Takeaways", title_justify="left", title_style="bold", show_header=False, box=None)
        # headers unshown in the text; the Markdown table (a header row always) names them
        t.add_column("chart", style="cyan")
        t.add_column("takeaway")
        for chart, text in s.takeaways.items():
            # the answer's id names GPUs (gpu_active); the label names no GPU where none ran
            # escaped: a takeaway quotes names from the trace ("[param|...|forward]")
            t.add_row(chart if words.kind == "gpu" else chart.replace("gpu_", "device_"), escape(text))
        console.print(t)
    top = s.params.get("top_n") or None
    tb = s.table
    P = console.print

    busy = tb("utilization", "busy")
    P(
        _table(
            f"{words.Device} busy / idle",
            busy,
            [
                *where(busy),
                ("busy_ns", "busy", fmt_ns),
                ("idle_ns", "idle", fmt_ns),
                ("span_ns", "active span", fmt_ns),
                ("busy_share", "busy %", fmt_pct),
                ("sync_ns", "sync", fmt_ns),
                ("window_ns", "profiled window", fmt_ns),
                ("busy_share_window", "busy % of window", fmt_pct),
            ],
        )
    )
    per = tb("utilization", "gpu_over_time")
    P(
        _table(
            f"{words.Device} utilization over time (from the trace)",
            per,
            [
                *where(per),
                ("buckets", "buckets", _num),
                ("bucket_len_ns", "bucket", fmt_ns),
                ("mean", "mean", fmt_pct),
                ("p10", "p10", fmt_pct),
                ("p90", "p90", fmt_pct),
                ("max", "max", fmt_pct),
            ],
        )
    )
    P(
        _table(
            "CPU utilization",
            tb("utilization", "cpu_over_time"),
            [
                ("node", "node", _text),
                ("buckets", "buckets", _num),
                ("mean", "mean", fmt_pct),
                ("max", "max", fmt_pct),
                ("source", "from", _text),
            ],
        )
    )

    stats = tb("kernels", "stats")
    if not stats.is_empty():
        n, t = int(stats["count"].sum()), stats["total_ns"].sum()
        P(
            f"[bold]{words.Work}s[/bold]: "
            f"{fmt_count(n)} {words.work} {words.launches} of {plural(stats.height, words.work)}, {fmt_ns(t)} {words.time}"
        )
    kcols: list[Col] = [
        ("name", "kernel", _name()),
        ("kernel_type", "type", _text),
        ("count", "count", _num),
        ("total_ns", "total", fmt_ns),
        ("mean_ns", "mean", fmt_ns),
        ("p50_ns", "p50", fmt_ns),
        ("p95_ns", "p95", fmt_ns),
        ("max_ns", "max", fmt_ns),
        ("share", "time share", fmt_pct),
    ]
    P(_table(f"Top {top or ''} {words.work}s by time", tb("kernels", "top_by_time"), kcols))
    P(_table(f"Top {top or ''} {words.work}s by {words.launch} count", tb("kernels", "top_by_count"), kcols))
    P(
        _table(
            f"{words.Work} types (exclusive time, HTA's breakdown)",
            tb("kernels", "types"),
            [("kernel_type", "type", _text), ("time_ns", "time", fmt_ns), ("share", "%", fmt_pct)],
        )
    )
    act = tb("activity", "shares")
    P(
        _table(
            f"{words.Device} activity",
            act,
            [
                *where(act),
                ("activity", "activity", _text),
                ("time_ns", "time", fmt_ns),
                ("share", "share", fmt_pct),
            ],
        )
    )
    P(
        _table(
            "Memory operations",
            tb("memory", "ops"),
            [
                ("direction", "direction", _text),
                ("count", "count", _num),
                ("bytes", "bytes", fmt_bytes),
                ("time_ns", "time", fmt_ns),
                ("achieved_gbps", "achieved", fmt_gbps),
                ("gbps_p50", "p50 per op", fmt_gbps),
                ("gbps_max", "max per op", fmt_gbps),
                ("time_share", "time share", fmt_pct),
            ],
        )
    )
    mem = tb("allocations", "devices")
    mem_where: list[Col] = [
        *([("node", "node", _text)] if "node" in mem.columns and mem["node"].n_unique() > 1 else []),
        ("rank", "rank", _text),
        ("device_type", "device", _text),
        ("device", "id", _text),
    ]
    if "allocations" not in s.sections:
        P("[bold]Memory over time[/bold]: not analysed in this run (the notes above say why)")
    elif mem.is_empty():
        P("[bold]Memory over time[/bold]: no memory events (\\[memory]); the notes above say why")
    else:
        P(
            _table(
                "Memory over time (allocator's \\[memory] events)",
                mem,
                [
                    *mem_where,
                    ("events", "events", _num),
                    ("peak_allocated_bytes", "peak allocated", fmt_bytes),
                    ("peak_op", "at op", _name(40)),
                    ("peak_annotation", "annotation", _text),
                    ("peak_step", "step", _text),
                    ("peak_reserved_bytes", "peak reserved", fmt_bytes),
                    ("end_allocated_bytes", "at end", fmt_bytes),
                    ("oom_events", "OOM", _num),
                ],
            )
        )
        P(
            _table(
                "Memory per step",
                tb("allocations", "per_step"),
                [
                    *mem_where,
                    ("step", "step", _text),
                    ("start_allocated_bytes", "entering", fmt_bytes),
                    ("min_allocated_bytes", "floor", fmt_bytes),
                    ("peak_allocated_bytes", "peak", fmt_bytes),
                    ("growth_bytes", "growth", fmt_bytes),
                ],
                limit=top,
            )
        )
        P(
            _table(
                "Largest allocations live at the peak",
                tb("allocations", "live_at_peak"),
                [
                    *mem_where,
                    ("order", "#", _text),
                    ("bytes", "bytes", fmt_bytes),
                    ("peak_share", "of peak", fmt_pct),
                    ("op", "allocated in", _name(40)),
                ],
            )
        )
        oom = tb("allocations", "oom")
        if not oom.is_empty():
            P(
                _table(
                    "Out-of-memory events",
                    oom,
                    [
                        *mem_where,
                        ("bytes", "requested", fmt_bytes),
                        ("allocated_bytes", "allocated", fmt_bytes),
                        ("reserved_bytes", "reserved", fmt_bytes),
                        ("op", "op", _name(40)),
                        ("annotation", "annotation", _text),
                    ],
                )
            )
    P(
        _table(
            f"{words.Work} precision",
            tb("precision", "shares").filter(pl.col("count") > 0)
            if "count" in tb("precision", "shares").columns
            else tb("precision", "shares"),
            [
                ("precision", "precision", _text),
                ("count", "kernels", _num),
                ("time_ns", "time", fmt_ns),
                ("share", "share", fmt_pct),
            ],
        )
    )
    _render_flops(tb, P, top)

    win = tb("steps", "windows")
    # a step's time is its device window where GPU work ran; a CPU-only run's, and a JAX run's on
    # CPU (its device lanes are host threads), is its CPU window
    step_time = "device time" if words.kind == GPU else "step time"
    P(
        _table(
            "Steps",
            win,
            [
                *where(win),
                ("step", "step", _text),
                ("cpu_dur_ns", "CPU time", fmt_ns),
                ("dur_ns", step_time, fmt_ns),
                ("n_launches", "launches", _num),
                ("mapped", "mapped", _text),
            ],
            limit=top,
        )
    )
    bd = tb("steps", "breakdown")
    host = bd.filter(pl.col("work_on") == "host") if "work_on" in bd.columns else bd.head(0)
    if not host.is_empty():  # a rank without device work: what its host did in each step
        P(
            _table(
                "Host work per step (no device work)",
                host,
                [
                    *where(host),
                    ("step", "step", _text),
                    ("dur_ns", "length", fmt_ns),
                    ("busy_ns", "busy", fmt_ns),
                    ("computation_ns", "compute", fmt_ns),
                    ("communication_ns", "communication", fmt_ns),
                    ("data_loading_ns", "data loading", fmt_ns),
                    ("idle_ns", "outside ops", fmt_ns),
                ],
                limit=top,
            )
        )
    st = tb("steps", "stats")
    stat_cols = [
        ("count", "steps", _num),
        ("mean_ns", "mean", fmt_ns),
        ("min_ns", "min", fmt_ns),
        ("p50_ns", "p50", fmt_ns),
        ("p95_ns", "p95", fmt_ns),
        ("max_ns", "max", fmt_ns),
    ]
    if st.height > 1:  # several ranks: the job's step is its longest rank's
        P(_table("Step time of the job (longest rank per step)", tb("steps", "job_stats"), stat_cols))
    P(
        _table(
            "Step-time distribution per rank" if st.height > 1 else "Step-time distribution",
            st,
            [*where(st), *stat_cols],
        )
    )
    out = tb("steps", "outliers")
    if not out.is_empty():
        P(
            _table(
                "Outlier steps",
                out,
                [
                    *where(out),
                    ("step", "step", _text),
                    ("dur_ns", step_time, fmt_ns),
                    ("vs_rank_median", "× rank median", _num),
                ],
            )
        )

    ls = tb("launch", "stats")
    P(
        _table(
            "Launches (host launch call → device start, by correlation id)",
            ls,
            [
                *where(ls),
                ("launches", "launches", _num),
                ("cpu_mean_ns", "call mean", fmt_ns),
                ("cpu_p50_ns", "call p50", fmt_ns),
                ("gpu_mean_ns", "GPU mean", fmt_ns),
                ("delay_p50_ns", "delay p50", fmt_ns),
                ("delay_p90_ns", "delay p90", fmt_ns),
                ("delay_p99_ns", "delay p99", fmt_ns),
                ("delay_max_ns", "delay max", fmt_ns),
                ("launch_bound", "device < call", _num),
                ("runtime_outliers", "slow calls", _num),
                ("delay_outliers", "late starts", _num),
            ],
        )
    )
    P(
        _table(
            "Kernels with the most launch delay",
            tb("launch", "by_kernel"),
            [
                ("name", "kernel", _name(50)),
                ("launches", "launches", _num),
                ("cpu_mean_ns", "call mean", fmt_ns),
                ("gpu_mean_ns", "GPU mean", fmt_ns),
                ("delay_sum_ns", "delay total", fmt_ns),
                ("delay_p50_ns", "delay p50", fmt_ns),
                ("delay_max_ns", "delay max", fmt_ns),
                ("launch_bound", "device < call", _num),
            ],
            limit=top,
        )
    )

    tot = tb("sync", "totals")
    P(
        _table(
            "Host blocked in synchronize calls",
            tb("sync", "host"),
            [
                *where(tot),
                ("name", "call", _text),
                ("category", "kind", _text),
                ("calls", "calls", _num),
                ("total_ns", "total", fmt_ns),
                ("mean_ns", "mean", fmt_ns),
                ("max_ns", "max", fmt_ns),
                ("share", "of host time", fmt_pct),
            ],
        )
    )
    dev = tb("sync", "device")
    P(
        _table(
            "Device-side sync events (recorded on the device; host sync calls are above)",
            dev,
            [
                *where(dev),
                ("name", "event", _text),
                ("count", "count", _num),
                ("total_ns", "total", fmt_ns),
                ("mean_ns", "mean", fmt_ns),
                ("max_ns", "max", fmt_ns),
            ],
        )
    )

    idle = tb("idle", "breakdown")
    P(
        _table(
            "Idle time per stream (HTA's categories)",
            idle,
            [
                *where(idle),
                ("category", "category", _text),
                ("idle_ns", "idle", fmt_ns),
                ("ratio", "share", fmt_pct),
                ("count", "gaps", _num),
                ("mean_ns", "mean gap", fmt_ns),
                ("p50_ns", "p50 gap", fmt_ns),
                ("max_ns", "max gap", fmt_ns),
            ],
        )
    )
    q = tb("idle", "queue")
    P(
        _table(
            f"Launch queue length per stream ({queue_words(bool(s.params.get('hta_compat')))})",
            q,
            [
                *where(q),
                ("count", "changes", _num),
                ("mean", "mean in queue", fmt_level),
                ("time_mean", "time-weighted mean", fmt_level),
                ("p50", "p50", fmt_level),
                ("max", "max", fmt_level),
            ],
        )
    )

    bc = tb("comm", "by_collective")
    # a run by ranks has no by-collective table (it needs every rank's rows) but has the rest
    if not bc.is_empty() or not tb("comm", "per_rank").is_empty():
        if not bc.is_empty():
            P(
                _table(
                    "Communication by collective",
                    bc,
                    [
                        ("source", "source", _text),
                        ("collective", "collective", _text),
                        ("count", "calls", _num),
                        ("total_ns", "total", fmt_ns),
                        ("mean_ns", "mean", fmt_ns),
                        ("max_ns", "max", fmt_ns),
                        ("share", "share", fmt_pct),
                        ("bytes", "bytes", fmt_bytes),
                        ("algbw_gbps", "alg. bandwidth", fmt_gbps),
                    ],
                )
            )
        ov = tb("comm", "overlap")
        P(
            _table(
                "Communication / computation overlap",
                ov,
                [
                    *where(ov),
                    ("comm_ns", "comm", fmt_ns),
                    ("compute_ns", "compute", fmt_ns),
                    ("overlap_ns", "overlap", fmt_ns),
                    ("overlap_share", "of comm", fmt_pct),
                    ("exposed_comm_ns", "exposed", fmt_ns),
                ],
            )
        )
        pr = tb("comm", "per_rank")
        P(
            _table(
                "Communication per rank",
                pr,
                [
                    *where(pr),
                    ("source", "source", _text),
                    ("count", "calls", _num),
                    ("busy_ns", "comm time", fmt_ns),
                    ("span_ns", "span", fmt_ns),
                    ("share", "share", fmt_pct),
                ],
            )
        )
        sg = tb("comm", "stragglers")
        if not sg.is_empty():
            P(
                _table(
                    "Straggler per step (the rank that arrives last at the collectives)",
                    sg,
                    [
                        ("step", "step", _text),
                        ("ranks", "ranks", _num),
                        ("straggler_rank", "straggler", _text),
                        ("lateness_ns", "late by", fmt_ns),
                        ("wait_ns", "others' wait", fmt_ns),
                        ("cause", "cause", _text),
                        ("cause_ns", "cause excess", fmt_ns),
                    ],
                    limit=top,
                )
            )
    else:
        P("[bold]Communication[/bold]: none (no NCCL kernels, no host collectives)")

    br = tb("annotations", "breakdown")
    if not br.is_empty():
        br = br.sort("sum_ns", descending=True)
        P(
            _table(
                "Annotations",
                br,
                [
                    *[c for c in where(br) if c[0] == "rank"],
                    ("side", "side", _text),
                    ("name", "name", _name(50)),
                    ("count", "count", _num),
                    ("sum_ns", "total", fmt_ns),
                    ("mean_ns", "mean", fmt_ns),
                    ("max_ns", "max", fmt_ns),
                ],
                limit=top,
            )
        )
        avg = tb("annotations", "step_means")
        if not avg.is_empty():
            P(
                _table(
                    "Annotation share of a step (mean over steps)",
                    avg,
                    [
                        ("side", "side", _text),
                        ("name", "name", _name(50)),
                        ("time_ns", "time per step", fmt_ns),
                        ("share", "share of step", fmt_pct),
                    ],
                    limit=top,
                )
            )
    else:
        P("[bold]Annotations[/bold]: none")


def _render_flops(tb: Callable[[str, str], pl.DataFrame], P: Callable[[Any], None], top: int | None) -> None:
    """FLOPs and MFU: one line saying the definition and the peak, then the op and kernel tables."""
    from rich.markup import escape

    tot = tb("flops", "totals")
    if tot.is_empty():
        return
    t = tot.row(0, named=True)
    if not t["counted_ops"]:
        P(f"[bold]FLOPs[/bold]: none counted{' — ' + t['note'] if t['note'] else ''}")
        return
    line = (
        f"[bold]FLOPs[/bold]: {fmt_flops(t['flops'])} counted in {plural(t['counted_ops'], 'op')}"
        f" · {fmt_flops(t['step_flops'])} in {fmt_count(t['steps'])} step window(s)"
        f" · achieved {fmt_tflops(t['tflops'])}"
    )
    if t["mfu"] is not None:
        basis = "the model FLOPs given (--model-flops)" if t["definition"] == "model" else "the counted FLOPs"
        line += (
            f"\nMFU {fmt_pct(t['mfu'])} from {basis}, peak {fmt_tflops(t['peak_tflops'])}"
            f" ({', '.join(x for x in (t['peak_gpu'], t['precision'], t['peak_source']) if x)})"
        )
    if t.get("mfu_problem"):
        line += f"\n[bold red]{escape(t['mfu_problem'])}[/bold red]"
    if t["note"]:
        line += f"\n[dim]note: {escape(t['note'])}[/dim]"
    P(line)
    P(
        _table(
            "FLOPs per op type",
            tb("flops", "op_types"),
            [
                ("op_type", "type", _text),
                ("share", "share", fmt_pct),
                ("flops", "FLOPs", fmt_flops),
                ("time_ns", "time", fmt_ns),
                ("tflops", "achieved", fmt_tflops),
            ],
        )
    )
    P(
        _table(
            "FLOPs per op",
            tb("flops", "ops"),
            [
                ("name", "op", _name(40)),
                ("op_type", "type", _text),
                ("precision", "precision", _text),
                ("count", "count", _num),
                ("flops", "FLOPs", fmt_flops),
                ("without_flops", "no FLOPs", _num),
                ("time_ns", "time", fmt_ns),
                ("tflops", "achieved", fmt_tflops),
                ("share", "share", fmt_pct),
            ],
            limit=top,
        )
    )
    k = tb("flops", "kernels")
    if not k.is_empty() and k["flops_count"].sum():
        P(
            _table(
                "Top kernels: FLOPs, achieved throughput, arithmetic intensity",
                k,
                [
                    ("name", "kernel", _name(50)),
                    ("count", "count", _num),
                    ("time_ns", "time", fmt_ns),
                    ("flops", "FLOPs", fmt_flops),
                    ("tflops", "achieved", fmt_tflops),
                    ("intensity", "FLOP/byte", _num),
                    ("share", "of kernel time", fmt_pct),
                ],
                limit=top,
            )
        )


def flops_assignments(peak_tflops: float | None, model_flops: float | None) -> list[str]:
    """``--peak-tflops`` / ``--model-flops`` as the ``--set`` assignments they stand for (the
    pipeline's parameters ``peak_tflops`` and ``model_flops`` check them)."""
    out = []
    if peak_tflops is not None:
        out.append(f"peak_tflops={peak_tflops!r}")
    if model_flops is not None:
        out.append(f"model_flops={model_flops!r}")
    return out


# -- command ----------------------------------------------------------------------------------


def run_summary(
    trace: Path | list[Path],
    top: int | None,
    hta_compat: bool,
    bucket_ms: float | None,
    assignments: list[str] | None = None,
    scheduler: str | None = None,
    workers: int | None = None,
    skip_bad_ranks: bool = False,
    on_rank: Callable[[int, int, Any], None] | None = None,
    freeze: bool = False,
    show_progress: bool = False,
) -> Any:
    """Resolve, open and summarize ``trace`` with the pipeline's parameters; returns the Summary.
    Several paths are the trace folders of one job (:func:`.sources.resolve_sources`).

    A large trace, or one asked to with ``scheduler``/``workers``/``skip_bad_ranks``, is
    summarised by ranks on Dask (:mod:`profui.analysis.distributed`), ``on_rank(done, total,
    result)`` called as each rank finishes (default: ``k/N ranks`` on stderr).

    ``assignments`` are ``--set name=value`` texts, as for ``profui analyze``; ``--top``,
    ``--hta-compat`` and ``--bucket`` are shorthands for ``top_n``, ``hta_compat`` and
    ``bucket_ms`` and win over them.

    ``freeze`` (the command line's, whose process ends with the summary): the objects alive once
    the modules and the trace are imported are frozen (:func:`gc.freeze`), so the collector's
    full passes skip them instead of walking ~70k objects for a handful of garbage (h100 export:
    2 passes, 40 ms of CPU). Process-wide: a server answering on several threads leaves it off.

    ``show_progress`` (the command line's, on a terminal): an in-memory run says how far it is
    on the import's bar (:func:`stage_progress`); a server's runs say nothing there.
    """
    from profui.analysis.pipeline import REGISTRY, PipelineError, parse_assignments
    from profui.analysis.pipeline.params import resolve_params

    if bucket_ms is not None and not bucket_ms > 0:
        raise UserError(f"--bucket: must be a positive number of milliseconds, got {bucket_ms}")
    try:
        params = resolve_params(REGISTRY.params, None, parse_assignments(assignments or []))
    except PipelineError as exc:
        raise UserError(str(exc)) from None
    for flag, (name, value) in {"--top": ("top_n", top), "--bucket": ("bucket_ms", bucket_ms)}.items():
        if value is not None:
            try:
                params[name] = REGISTRY.params[name].check(value)
            except PipelineError as exc:
                raise UserError(f"{flag}: {exc}") from None
    if hta_compat:
        params["hta_compat"] = True
    if freeze:
        gc.freeze()
    try:
        with import_progress(sys.stderr.isatty()) as progress:
            path = resolve_sources(trace if isinstance(trace, list) else [trace], progress=progress)
            if freeze:
                gc.freeze()
            options = where_and_options(path, scheduler, workers, skip_bad_ranks, on_rank)
            if show_progress and progress is not None and options.get("where") == "memory":
                told = stage_progress(progress, REGISTRY.with_ancestors(["summary"]))
                return run_summary_stage(path, params, {**options, "on_stage": told})
        # a run by ranks says its own progress (k/N ranks), a line the bar would hold
        return run_summary_stage(path, params, options)
    finally:
        if freeze:
            gc.unfreeze()  # the command goes on to print, a test's process to other tests


def parse_sections(text: str | None) -> list[str] | None:
    """``--sections``' comma-separated names (``all``: every section) as a list; None: all."""
    if text is None:
        return None
    return [n.strip() for n in text.split(",") if n.strip()]


def check_sections(names: Sequence[str]) -> Sequence[str]:
    """``names``, each a section of the summary or ``all``; else UserError listing them."""
    from profui.analysis.summary import SECTIONS

    unknown = [n for n in names if n not in (*SECTIONS, "all")]
    if unknown:
        raise UserError(
            f"--sections {unknown[0]!r}: no such section (sections: {', '.join(SECTIONS)}; or all)"
        )
    return names


def json_document(s: Any, sections: Sequence[str] | None = None) -> dict[str, Any]:
    """``profui summary --json``'s document; with ``sections``, only those of ``sections``
    (``all`` keeps every one), and a note naming the ones left out. An unknown name raises
    UserError listing the names."""
    doc = s.to_json_dict()
    if sections is None or "all" in check_sections(sections):
        return doc
    left = [n for n in doc["sections"] if n not in sections]
    doc["sections"] = {n: t for n, t in doc["sections"].items() if n in sections}
    if left:
        doc["notes"] = [*doc["notes"], f"sections left out (ask for them by name): {', '.join(left)}"]
    return doc


def register(app: typer.Typer) -> None:
    """Add ``profui summary``."""

    @app.command("summary")
    def summary_command(
        trace: list[Path] = typer.Argument(
            ...,
            help="A profui trace folder, or Kineto .json/.json.gz file(s) or a folder of them; or several "
            "trace folders of one job (one per node): profui summary run-node1/ run-node2/",
            readable=False,
        ),
        as_json: bool = typer.Option(False, "--json", help="Print one JSON document instead of tables."),
        fmt: str | None = format_option(),
        top: int | None = typer.Option(
            None,
            "--top",
            help=f"Rows in the top-N tables (kernels, launches, annotations); top_n, {TOP_N} by default.",
        ),
        hta_compat: bool = typer.Option(
            False, "--hta-compat", help="Holistic Trace Analysis semantics (µs rounding, last step dropped)."
        ),
        bucket: float | None = typer.Option(
            None, "--bucket", help="Utilization bucket in ms (default: ~200 buckets)."
        ),
        assignments: list[str] | None = typer.Option(
            None,
            "--set",
            metavar="NAME=VALUE",
            help="A pipeline parameter, as for `profui analyze` (repeatable; `profui analyze TRACE --plan` lists them).",
        ),
        peak_tflops: float | None = typer.Option(
            None,
            "--peak-tflops",
            help="Peak TFLOP/s of one device for MFU (default: the datasheet table by GPU name and precision).",
        ),
        model_flops: float | None = typer.Option(
            None,
            "--model-flops",
            help="Your model's FLOPs per step on each rank: MFU from these instead of the counted FLOPs.",
        ),
        sections: str | None = typer.Option(
            None,
            "--sections",
            metavar="A,B",
            help="With --json, only these sections (comma-separated: utilization, kernels, activity, "
            "memory, allocations, precision, flops, steps, launch, sync, idle, comm, annotations, "
            "critical_path, findings; default all). The trace, takeaways and notes are always there.",
        ),
        scheduler: str | None = scheduler_option(),
        workers: int | None = workers_option(),
        skip_bad_ranks: bool = skip_option(),
    ) -> None:
        """Every number of the dashboard as tables (or JSON): GPU busy/idle, utilization, kernels,
        steps, memory, precision, launches, sync, idle causes, NCCL, annotations.

        \b
        Examples:
          profui summary trace/
          profui summary rank0.json.gz --json > summary.json
          profui summary trace/ --top 30 --set step_annotation='^train_step'
          profui summary run-node1/ run-node2/
          profui summary job/ --workers 8 --skip-bad-ranks
          profui summary job/ --scheduler tcp://10.0.0.5:8786 --json > job.json
          profui summary trace/ --format markdown >> "$GITHUB_STEP_SUMMARY"
          profui summary trace/ --json --sections steps,findings

        A job of many ranks is summarised rank by rank on Dask (a local cluster, or --scheduler):
        per-rank tables and the job's steps, stragglers and GPU time, never every event at once.
        """
        out_format = chosen_format(fmt, as_json)
        chosen = parse_sections(sections)
        if chosen is not None:
            if out_format != "json":
                raise UserError("--sections: chooses the sections of --json's document; add --json")
            check_sections(chosen)  # before the analysis
        s = run_summary(
            trace,
            top,
            hta_compat,
            bucket,
            [*(assignments or []), *flops_assignments(peak_tflops, model_flops)],
            scheduler,
            workers,
            skip_bad_ranks,
            freeze=True,
            show_progress=sys.stderr.isatty(),
        )
        if out_format == "json":
            sys.stdout.write(json.dumps(json_document(s, chosen), allow_nan=False) + "\n")
            return
        if out_format == "markdown":
            md = MarkdownSink()
            render_text(s, md)
            sys.stdout.write(md.getvalue())
            return
        from rich.console import Console

        # piped output keeps whole rows (rich would assume 80 columns) unless COLUMNS says a width
        width = None if sys.stdout.isatty() or os.environ.get("COLUMNS", "").isdigit() else 200
        render_text(s, Console(highlight=False, width=width))
