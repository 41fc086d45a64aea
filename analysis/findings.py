"""Findings: what to change and what it would save, ranked by the time each would recover per
step on the critical path (the ``critical_path`` stage's what-if replays).

A time finding's ``recoverable_ns_per_step`` is the what-if's saving, job-level: per analysed
step, the slowest rank's critical path before minus the slowest rank's path with that change
(the job waits for its slowest rank), then the mean over the analysed steps. Its
``recoverable_share`` is the analysed steps' total saving over their total critical-path length
(the slowest rank's, per step): a share of step time, at most 1 (a mean saving over the median
step mixes two statistics and passes 1 on skewed steps). Never a share of time times the step
time.

Risk findings (``memory``, ``precision``, ``idle``) save nothing the graph can replay: they
carry ``recoverable_ns_per_step`` 0 and a ``severity``.

The order (:func:`ranked`): high-severity risks first (a memory floor rising every step ends in
an out-of-memory error; a peak within 5% of the device's memory is one allocation from it), then
the rest by recoverable time per step. A "compute if 2x faster" finding exists on every run, so
by time alone a risk could never come first.

One rule per finding, each in one function: here :func:`time_findings` (the what-if changes)
and :func:`straggler_finding`; the risks in :mod:`.findings_risks`; :func:`consistent` removes
findings another one explains (the late rank's own cause, launch delays queued behind copies);
:func:`ranked` orders and numbers them. :mod:`.findings_path` reads the critical path's tables,
:mod:`.findings_doc` makes ``profui explain``'s document of the outputs.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, cast

import polars as pl

from . import findings_risks as risks
from .devices import NONE, DeviceWords, words_for
from .findings_base import (
    BY_KIND_SRC,
    CATEGORIES,
    CATEGORY_NAMES,
    HIGH_SHARE,
    MEDIUM_SHARE,
    MIN_SHARE,
    PATH_KINDS,
    RISKS,
    SEVERITIES,
    STEPS_SRC,
    TIME_CATEGORIES,
    VERSION,
    WHAT_IF_SRC,
    Finding,
    next_step,
    precision_next_step,
    unit_of,
)
from .findings_path import (
    job_paths,
    listed_kinds,
    longest_start,
    look_at,
    mean_length,
    path_time,
    savings,
    stretches,
)
from .formatting import fmt_ns, fmt_pct, plural
from .result_tables import CriticalPathOutputs, StageAccessors
from .schemas import TABLES

__all__ = [
    "CATEGORIES",
    "HIGH_SHARE",
    "MEDIUM_SHARE",
    "MIN_SHARE",
    "PATH_KINDS",
    "SEVERITIES",
    "TIME_CATEGORIES",
    "VERSION",
    "Finding",
    "next_step",
    "precision_next_step",
    "ranked",
    "recoverable_title",
    "stage",
    "tables",
]


def _lead(category: str, words: DeviceWords) -> str:
    """The words a time finding's title starts with: what is on the path (and, where the
    what-if halves it rather than removing it, that it is halved: ``critical_path``'s replays)."""
    compute = "Ops' compute" if words.kind == NONE else f"{words.Work}s and host ops"
    return {
        "input": "Data loading on the critical path",
        "host": "Host time outside any op on the critical path",
        "compute": f"{compute} on the critical path, if 2x faster",
        "launch": f"{words.Work} {words.launch} delay on the critical path",
        "sync": "Synchronize calls removed",
        "transfer": "Memory copies on the critical path",
        "communication": "Communication on the critical path, if 2x faster",
        "straggler": "Waiting for a late rank on the critical path",
    }[category]


def on_path_label(category: str, words: DeviceWords, unit: str = "step") -> str:
    """The evidence label of a time finding's own kinds on the path (:data:`PATH_KINDS`), named
    for what they are: the straggler's is only the wait for a rank, not the late rank's lateness
    its replay removes; per ``unit`` (:func:`~.findings_base.unit_of`)."""
    compute = "ops" if words.kind == NONE else f"host ops and {words.work}s"
    what = {
        "input": "data loading",
        "host": "host time outside ops",
        "compute": compute,
        "launch": f"{words.launch} delay",
        "sync": "sync wait",
        "transfer": "memory copies",
        "communication": "communication and waiting for a rank",
        "straggler": "waiting for a rank",
    }[category]
    return f"{what} on the path per {unit}"


def recoverable_title(lead: str, ns: int, share: float, unit: str = "step") -> str:
    """A time finding's title: ``LEAD: X per step (Y% of step time) recoverable`` — the numbers
    of its first two evidence rows (X the mean saving per analysed step, Y the steps' total
    saving over their total critical-path length); ``per trace`` and ``of trace time`` where the
    one window analysed is the whole trace (``unit``: :func:`~.findings_base.unit_of`)."""
    return f"{lead}: {fmt_ns(ns)} per {unit} ({fmt_pct(share, 0)} of {unit} time) recoverable"


# -- the rules ----------------------------------------------------------------------------------


def severity_of(share: float) -> str:
    """A time finding's severity from its share of the step."""
    return "high" if share >= HIGH_SHARE else "medium" if share >= MEDIUM_SHARE else "low"


def time_findings(cp: CriticalPathOutputs, words: DeviceWords, unit: str = "step") -> list[Finding]:
    """One finding per what-if change that saves time: its mean job-level saving per step, where
    it occurs (ranks and steps whose own replay saved time), its worst instance (the rank and
    step whose replay saved the most, at the start of its longest stretch of that kind). Its
    words are per ``unit`` (:func:`~.findings_base.unit_of`): the whole trace, one window, says
    no step and has no "most saved in one step" or step count."""
    steps, what_if, by_kind = cp.steps, cp.what_if, cp.by_kind
    if not steps.height:
        return []
    jobs = job_paths(steps)
    per_step = mean_length(jobs)
    per_change = savings(steps, what_if, TIME_CATEGORIES).group_by("change").agg(pl.col("saved_ns").mean())
    saved = dict(zip(per_change["change"], per_change["saved_ns"], strict=True))
    st = stretches(cp.events)
    out = []
    for category in TIME_CATEGORIES:
        mean = int(round(saved.get(category) or 0))
        rows = what_if.filter(pl.col("change") == category, pl.col("saved_ns") > 0)
        if mean <= 0 or not rows.height or not per_step:
            continue
        share = mean / per_step
        worst = rows.sort("saved_ns", "step", "rank", descending=[True, False, False]).row(0, named=True)
        kinds = PATH_KINDS[category]
        on_path = path_time(jobs, by_kind, kinds)
        listed = look_at(st, kinds, ops_only=category == "compute")
        f = Finding(
            category,
            severity_of(share),
            recoverable_title(_lead(category, words), mean, share, unit),
            next_step(category, words, listed=listed_kinds(st, kinds, listed)),
            mean,
            share,
            sorted(set(rows["rank"].to_list())),
            sorted(set(rows["step"].to_list())),
            listed,
            worst["rank"],
            worst["step"],
            longest_start(st, kinds, worst["rank"], worst["step"]),
        )
        f.evidence = [
            (f"recoverable per {unit}", float(mean), "ns", WHAT_IF_SRC),
            (f"share of {unit} time", share, "fraction", WHAT_IF_SRC),
            (on_path_label(category, words, unit), on_path, "ns", BY_KIND_SRC),
            (f"critical path per {unit}", per_step, "ns", STEPS_SRC),
        ]
        if unit == "step":
            f.evidence += [
                ("most saved in one step", float(worst["saved_ns"]), "ns", WHAT_IF_SRC),
                ("steps analysed", float(jobs.height), "count", STEPS_SRC),
            ]
        out.append(f)
    return out


def straggler_finding(
    found: list[Finding],
    stragglers: pl.DataFrame,
    events: pl.DataFrame,
    words: DeviceWords,
    unit: str = "step",
) -> None:
    """The straggler finding names the rank that arrives last at the collectives most often and
    its cause (``comm/stragglers.parquet``); its title and evidence say so, and its worst
    instance is on that rank: the step it was latest in, at the longest stretch of its cause on
    its path. The late rank's own cause is this finding's, so a finding of that category is
    removed (:func:`consistent`)."""
    f = next((f for f in found if f.category == "straggler"), None)
    if f is None or not stragglers.height:
        return
    late = (
        stragglers.group_by("straggler_rank")
        .agg(pl.len().alias("n"), pl.col("step").min().alias("first"))
        .sort("n", "first", descending=[True, False])
        .row(0, named=True)
    )
    rank, n = late["straggler_rank"], late["n"]
    mine = stragglers.filter(pl.col("straggler_rank") == rank)
    cause = None
    if "cause" in mine.columns and mine["cause"].drop_nulls().len():
        cause = mine["cause"].drop_nulls().mode().sort()[0]
    because = f", {cause}" if cause else ""
    often = f" in {n} of {plural(stragglers.height, 'step')}" if unit == "step" else ""
    f.title = (
        f"Rank {rank} arrives last at the collectives{often}{because}: "
        f"{fmt_ns(f.recoverable_ns_per_step)} per {unit} ({fmt_pct(f.recoverable_share, 0)} of {unit} time) "
        "recoverable"
    )
    f.ranks = sorted({rank, *f.ranks})
    if "lateness_ns" in mine.columns:
        f.at_step = mine.sort("lateness_ns", "step", descending=[True, False], nulls_last=True)["step"][0]
    f.at_rank = rank
    if cause in PATH_KINDS:
        st = stretches(events.filter(pl.col("rank") == rank))
        f.at_ns = longest_start(st, PATH_KINDS[cause], rank, f.at_step) if f.at_step is not None else None
        f.look_at = look_at(st, PATH_KINDS[cause], ops_only=cause == "compute") or f.look_at
    f.evidence.append(("late rank", float(rank), "id", "comm/stragglers.parquet"))
    if unit == "step":
        f.evidence.append(("steps it is late", float(n), "count", "comm/stragglers.parquet"))
    for col, label in (("lateness_ns", "its median lateness"), ("wait_ns", "others' median wait")):
        if col in mine.columns and mine[col].drop_nulls().len():
            f.evidence.append(
                (label, float(cast(float, mine[col].median())), "ns", "comm/stragglers.parquet")
            )
    if cause in TIME_CATEGORIES and cause != "straggler":
        f.next_step = (
            f"Rank {rank} arrives late; its cause: {CATEGORY_NAMES[cause]}. {next_step(cause, words)}"
        )


def transfer_evidence(found: list[Finding], ops: pl.DataFrame | None) -> None:
    """The transfer finding's evidence gains the copies the path runs through: the direction
    with the most memory-operation time, its share of that time and its achieved bandwidth
    (``memory/ops.parquet``)."""
    f = next((f for f in found if f.category == "transfer"), None)
    if f is None or ops is None or not ops.height:
        return
    top = ops.sort("time_ns", "direction", descending=[True, False]).row(0, named=True)
    src = "memory/ops.parquet"
    f.evidence += [
        (f"{top['direction']} share of copy time", float(top["time_share"] or 0), "fraction", src),
        (f"{top['direction']} bandwidth", float(top["achieved_gbps"] or 0), "GB/s", src),
    ]


def queued_behind_copies(events: pl.DataFrame) -> bool:
    """Whether most of the path's launch delay comes right after a copy on the path: the
    kernels waited for copies, not for their launches."""
    st = stretches(events).filter(pl.col("kind") == "launch_delay")
    total = st["dur_ns"].sum()
    return bool(total) and st.filter(pl.col("prev_kind") == "transfer")["dur_ns"].sum() * 2 > total


def consistent(found: list[Finding], stragglers: pl.DataFrame, events: pl.DataFrame) -> list[Finding]:
    """The findings less those another one explains: the causes of the late rank the straggler
    finding names (it names them too) and launch delay queued behind copies (a transfer
    problem)."""
    kept = {f.category: f for f in found if f.recoverable_share >= MIN_SHARE}  # those that stay
    drop = set()
    late = kept.get("straggler")
    if late is not None and stragglers.height and "cause" in stragglers.columns:
        causes = stragglers.filter(pl.col("straggler_rank") == late.at_rank)["cause"].drop_nulls()
        drop |= set(causes.to_list()) & (set(TIME_CATEGORIES) - {"straggler"})
    if "launch" in kept and queued_behind_copies(events):
        drop.add("launch")
    return [f for f in found if f.category not in drop]


def ranked(found: list[Finding]) -> list[Finding]:
    """Findings that save at least :data:`MIN_SHARE` of the step or carry a risk: high-severity
    risks first, then by recoverable time, then severity, then the vocabulary's order."""
    kept = [f for f in found if f.recoverable_share >= MIN_SHARE or f.category in RISKS]
    return sorted(
        kept,
        key=lambda f: (
            not (f.category in RISKS and f.severity == "high"),
            -f.recoverable_ns_per_step,
            SEVERITIES.index(f.severity),
            CATEGORIES.index(f.category),
        ),
    )


def tables(found: list[Finding]) -> dict[str, pl.DataFrame]:
    """``findings.parquet`` and ``evidence.parquet`` of ranked findings (positions 1..n)."""
    rows = [
        {
            "position": i,
            "category": f.category,
            "severity": f.severity,
            "title": f.title,
            "recoverable_ns_per_step": f.recoverable_ns_per_step,
            "recoverable_share": f.recoverable_share,
            "ranks": f.ranks,
            "steps": f.steps,
            "look_at": f.look_at,
            "next_step": f.next_step,
            "at_rank": f.at_rank,
            "at_step": f.at_step,
            "at_ns": f.at_ns,
        }
        for i, f in enumerate(found, 1)
    ]
    ev = [
        {"position": i, "label": label, "value": value, "unit": unit, "source": source}
        for i, f in enumerate(found, 1)
        for label, value, unit, source in f.evidence
    ]
    out = {}
    for file, data in (("findings.parquet", rows), ("evidence.parquet", ev)):
        empty = TABLES[("findings", file)].empty()
        out[file] = pl.DataFrame(data, schema=empty.schema) if data else empty
    return out


class _Inputs(StageAccessors):
    """The findings stage's inputs (``{stage: {file: value}}``) read through the typed accessors."""

    def __init__(self, outputs: Mapping[str, Mapping[str, Any]]) -> None:
        self.outputs = outputs

    def part(self, stage: str, name: str) -> bool:
        """Whether the inputs hold ``stage``'s table ``name``."""
        return f"{name}.parquet" in self.outputs.get(stage, {})


def stage(
    inputs: Mapping[str, Mapping[str, Any]],
    overview: Mapping[str, Any],
    gpus: Sequence[Mapping[str, Any]] = (),
) -> dict[str, Any]:
    """The ``findings`` stage's outputs from its input stages' outputs (``{stage: {file: value}}``),
    the trace's overview and its manifest's GPUs (their memory, where known)."""
    words = words_for(overview)
    got = _Inputs(inputs)
    # read when there: a run by ranks (jobreduce) hands over no memory stage
    steps, memory, flops = (
        got.part(s, f) for s, f in (("steps", "windows"), ("memory", "ops"), ("flops", "totals"))
    )
    unit = unit_of(got.steps.windows if steps else None)
    cp = got.critical_path
    stragglers = got.comm.stragglers
    found = time_findings(cp, words, unit)
    straggler_finding(found, stragglers, cp.events, words, unit)
    transfer_evidence(found, got.memory.ops if memory else None)
    found = consistent(found, stragglers, cp.events)
    found += risks.memory_findings(got.allocations)
    found += risks.near_capacity(got.allocations, gpus)
    found += risks.precision_finding(
        got.precision.shares,
        got.flops.totals if flops else None,
        words,
        int(overview.get("duration_ns") or 0),
    )
    found += risks.idle_finding(cp, words, unit)
    return tables(ranked(found))
