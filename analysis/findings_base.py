"""What every finding rule shares: the vocabulary (categories, severities, the thresholds of
time findings), the :class:`Finding` a rule returns, its next step per category, and the
critical path's own rules the findings read (which changes the what-if replays and which kinds
of path time each shrinks: ``critical_path``'s, imported, never restated).

:mod:`.findings` (time findings, ranking) and :mod:`.findings_risks` (risk findings) both
import from here, so neither imports the other's module at load time.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping
from dataclasses import dataclass, field

import polars as pl

from .critical_path import CHANGE_KINDS
from .critical_path_replay import CHANGES
from .devices import NONE, DeviceWords
from .steps import WHOLE_TRACE

#: A finding's ``category``: the fixed vocabulary ``profui explain`` speaks.
CATEGORIES: tuple[str, ...] = (
    "input",
    "host",
    "launch",
    "sync",
    "transfer",
    "compute",
    "communication",
    "straggler",
    "memory",
    "precision",
    "idle",
)

#: The categories the critical path's what-if replays (``what_if.parquet``'s ``change``).
TIME_CATEGORIES: tuple[str, ...] = CHANGES

#: The critical-path kinds each category's time is on the path as: the what-if's own
#: (``critical_path.CHANGE_KINDS``), and the device idle with no other cause (no replay).
PATH_KINDS: dict[str, tuple[str, ...]] = {**CHANGE_KINDS, "idle": ("device_overhead",)}

#: The risk categories: no time the what-if replays, a ``severity`` instead.
RISKS: tuple[str, ...] = ("memory", "precision", "idle")

#: A category's name in a word or two (``profui diff`` names findings by it).
CATEGORY_NAMES: dict[str, str] = {
    "input": "input wait",
    "host": "host stall",
    "launch": "launch delay",
    "sync": "sync wait",
    "transfer": "transfer",
    "compute": "compute",
    "communication": "communication",
    "straggler": "late rank",
    "memory": "memory risk",
    "precision": "precision risk",
    "idle": "device idle",
}

#: What is said where the trace has no step markers (explain's note; the findings' times are then
#: per trace: :func:`unit_of`).
NO_MARKERS_NOTE = "no step markers: the whole trace is analysed as one window"


def has_step_markers(windows: pl.DataFrame) -> bool:
    """Whether the steps stage found step markers (else its only window per rank is the whole
    trace, named :data:`~profui.analysis.steps.WHOLE_TRACE`)."""
    return windows.height > 0 and bool((windows["name"] != WHOLE_TRACE).any())


def unit_of(windows: pl.DataFrame | None) -> str:
    """What a finding's time is per, in words: ``step``, or ``trace`` where the steps stage's
    ``windows`` hold no step marker (the one window analysed is the whole trace). Without the
    table: ``step``."""
    return "step" if windows is None or windows.height == 0 or has_step_markers(windows) else "trace"


#: ``severity``, most severe first.
SEVERITIES: tuple[str, ...] = ("high", "medium", "low", "info")

#: A time finding saving less than this share of the step time is dropped.
MIN_SHARE = 0.01
#: A time finding's severity by its share of the step: high from 20%, medium from 5%.
HIGH_SHARE, MEDIUM_SHARE = 0.20, 0.05

#: ``explain --json``'s version: raised when a key changes meaning or goes.
VERSION = 2

STEPS_SRC = "critical_path/steps.parquet"
WHAT_IF_SRC = "critical_path/what_if.parquet"
BY_KIND_SRC = "critical_path/by_kind.parquet"


@dataclass
class Finding:
    """One finding before it is ranked: its columns of ``findings.parquet`` (less ``position``)
    and its evidence rows ``(label, value, unit, source)``."""

    category: str
    severity: str
    title: str
    next_step: str
    recoverable_ns_per_step: int = 0
    recoverable_share: float = 0.0
    ranks: list[int] = field(default_factory=list)
    steps: list[int] = field(default_factory=list)
    look_at: list[str] = field(default_factory=list)
    at_rank: int | None = None
    at_step: int | None = None
    at_ns: int | None = None
    evidence: list[tuple[str, float, str, str]] = field(default_factory=list)


def next_step(category: str, words: DeviceWords, listed: Collection[str] = ()) -> str:
    """The concrete change to try for a category (in the trace's device words); ``listed``: the
    path kinds of the names a compute finding lists (``host_compute``, ``device_compute``), so
    that its words name what the list holds: host ops, the device's work, or both."""
    if category == "compute" and words.kind != NONE and "host_compute" in listed:
        if "device_compute" in listed:
            return (
                f"Shorten the longest host ops and {words.work}s listed: torch.compile (fewer, larger "
                f"ops and fused {words.work}s), larger batches per op, or a cheaper formulation."
            )
        return "Shorten the longest host ops listed: torch.compile, fewer and larger ops, or a cheaper formulation."
    return {
        "input": "Load data ahead of the step: DataLoader(num_workers=N, pin_memory=True, "
        "persistent_workers=True), and keep the dataset's __getitem__ cheap.",
        "host": "Remove the stall between ops: move logging, checkpoint writes and other "
        "blocking work off the step (a background thread, or every N steps).",
        "compute": (
            f"Shorten the longest {words.work}s listed: fuse them with torch.compile, use larger "
            "batches per op, or a cheaper formulation."
            if words.kind != NONE
            else "Shorten the longest ops listed: torch.compile, fewer and larger ops, or a "
            "cheaper formulation; set torch.set_num_threads to the cores you have."
        ),
        "launch": f"Fewer, larger {words.launches} per step: capture the loop in CUDA graphs "
        "(torch.cuda.graphs) or compile it with torch.compile(mode='reduce-overhead').",
        "sync": "Remove .item(), .cpu(), .tolist() and torch.cuda.synchronize() from the step; "
        "accumulate metrics on the device and read them every N steps.",
        "transfer": "Copy from pinned memory with non_blocking=True (DataLoader pin_memory=True) "
        "and prefetch the next batch on a side stream, so copies overlap compute.",
        "communication": "Overlap communication with the backward pass: DDP bucket_cap_mb, "
        "gradient_as_bucket_view=True, and no sync point between buckets.",
        "straggler": "Even out the late rank's work before the collective (see its cause).",
        "memory": "Drop references to each step's activations and outputs (del, .detach(), "
        "loss.item() once per N steps), torch.no_grad() in eval, activation checkpointing.",
        "precision": precision_next_step({"TF32": 1.0, "BF16": 1.0}),
        "idle": f"Keep the {words.device} fed: look for host work between {words.launches} "
        "(see the path's host stretches) and queue work earlier.",
    }[category]


def precision_next_step(rates: Mapping[str, float]) -> str:
    """What to enable on a GPU with these rates: TF32 and bf16 where it has them (Volta: fp16
    autocast with a GradScaler, it has neither)."""
    ways = []
    if "TF32" in rates:
        ways.append("enable TF32 (torch.backends.cuda.matmul.allow_tf32 = True)")
    if "BF16" in rates:
        ways.append("train under torch.autocast('cuda', dtype=torch.bfloat16)")
    else:
        ways.append("train under torch.autocast('cuda', dtype=torch.float16) with a GradScaler")
    text = " or ".join(ways)
    return text[:1].upper() + text[1:] + "."
