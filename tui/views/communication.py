"""Communication view: collectives by kind, exposed vs overlapped time, per-rank time, and per
step the straggler (the rank that arrives last at the collectives), the others' wait for it and
its cause — the ``comm`` stage's tables."""

from __future__ import annotations

from typing import Any

from profui.analysis.devices import GPU

from . import dashboard_charts as dc
from .table_sections import Result, Section, SectionsView

STAGE = "comm"


def comm_sections(result: Result) -> list[Section]:
    """The Communication view's tables, from the ``comm`` stage's outputs (node names run long:
    they come last, so the numbers stay on screen at 80 columns)."""
    return [
        Section(
            "Collectives by kind",
            STAGE,
            "by_collective.parquet",
            result.comm.by_collective,
            [
                "collective",
                "total_ns",
                "count",
                "share",
                "bytes",
                "mean_ns",
                "max_ns",
                "algbw_gbps",
                "source",
            ],
            sort_by="total_ns",
            note="kernels, else host ops",
        ),
        Section(
            "Exposed vs overlapped, per rank",
            STAGE,
            "overlap.parquet",
            result.comm.overlap,
            [
                "rank",
                "comm_ns",
                "exposed_comm_ns",
                "overlap_ns",
                "overlap_share",
                "compute_ns",
                "source",
                "node",
            ],
        ),
        Section(
            "Communication time per rank",
            STAGE,
            "per_rank.parquet",
            result.comm.per_rank,
            ["rank", "busy_ns", "share", "total_ns", "count", "span_ns", "source", "node"],
        ),
        Section(
            "Straggler per step: last at the collectives",
            STAGE,
            "stragglers.parquet",
            result.comm.stragglers,
            [
                "step",
                "straggler_rank",
                "lateness_ns",
                "wait_ns",
                "cause",
                "cause_ns",
                "recurs",
                "ranks",
                "straggler_node",
            ],
            note="wait: the others' mean; cause: its extra time before arriving",
        ),
        Section(
            "Per step and rank",
            STAGE,
            "per_step.parquet",
            result.comm.per_step,
            ["step", "rank", "step_ns", "comm_ns", "exposed_comm_ns", "overlap_ns", "compute_ns", "node"],
        ),
    ]


#: What the comm stage looks for on the host, in every trace.
HOST_COLLECTIVES = "host collectives (gloo:*, nccl:*, c10d::* ranges)"


def comm_empty(result: Result, view: Any = None) -> str:
    """The empty state: why there is nothing to show, naming what was searched — NCCL/RCCL
    kernels only where the trace has GPUs (a CPU-only or JAX-on-CPU run has none to search)."""
    if not result.comm.by_collective.is_empty():
        return ""
    if dc.device_words(result, view).kind == GPU:
        return f"No communication in this trace: no NCCL kernels and no {HOST_COLLECTIVES}."
    return f"No collectives in this trace: no {HOST_COLLECTIVES}."


class CommunicationView(SectionsView):
    """Collectives, overlap, per-rank time and stragglers (the ``comm`` stage)."""

    TITLE = "Communication"
    STAGE = STAGE
    TAKEAWAY = "comm"

    def sections(self, result: Result) -> list[Section]:
        return comm_sections(result)

    def empty(self, result: Result) -> str:
        return comm_empty(result, self)
