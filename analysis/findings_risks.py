"""The risk findings: what the critical path cannot replay but a user should know — memory kept
across steps or near the device's capacity, FP32 on a GPU with tensor cores, the device idle on
the path with no other cause. Each saves no time (``recoverable_ns_per_step`` 0) and carries a
``severity``; one rule per function."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import polars as pl

from .devices import GPU, NONE, DeviceWords, words_for
from .findings_base import (
    BY_KIND_SRC,
    HIGH_SHARE,
    PATH_KINDS,
    STEPS_SRC,
    Finding,
    next_step,
    precision_next_step,
)
from .findings_path import job_paths, longest_start, look_at, mean_length, path_time, stretches
from .formatting import fmt_bytes, fmt_memory_device, fmt_ns, fmt_pct
from .result_tables import AllocationsOutputs, CriticalPathOutputs

#: FP32 of at least this share of compute time on a GPU with tensor cores is a precision finding,
#: when that FP32 time is at least FP32_SPAN of the trace's span (a few µs of FP32 is no risk).
FP32_SHARE, FP32_SPAN = 0.5, 0.01
#: Device idle on the path (no other cause) of at least this share of the step is an idle finding.
IDLE_SHARE = 0.05
#: A device's peak within this share of its capacity is near out of memory.
NEAR_CAPACITY = 0.05
#: A floor must rise over at least this many consecutive steps to read as "every step".
MIN_RISING_STEPS = 3


def memory_findings(alloc: AllocationsOutputs) -> list[Finding]:
    """A device whose floor (lowest allocated level of a step) rises in every analysed step, over
    at least :data:`MIN_RISING_STEPS` steps: activations kept alive across steps. Its rise per
    step is the median of the step-to-step rises: the first traced step's floor is the trace's
    own baseline (memory allocated before tracing is not seen), so its rise to the next step
    also holds what that step first allocated and kept (gradients, optimizer state)."""
    per = alloc.per_step if alloc.has("per_step.parquet") else None
    if per is None or not per.height:
        return []
    dev = ["node", "rank", "device_type", "device"]
    rises = (
        per.sort(*dev, "step")
        .group_by(dev, maintain_order=True)
        .agg(
            pl.len().alias("steps"),
            pl.col("step"),
            pl.col("start_ns").last().alias("last_start_ns"),
            pl.col("min_allocated_bytes").first().alias("first_floor"),
            pl.col("min_allocated_bytes").last().alias("last_floor"),
            (pl.col("min_allocated_bytes").diff().drop_nulls() > 0).all().alias("rising"),
            pl.col("min_allocated_bytes").diff().drop_nulls().median().alias("per_step"),
        )
        .filter(pl.col("rising"), pl.col("steps") >= MIN_RISING_STEPS)
    )
    out = []
    for r in rises.iter_rows(named=True):
        per_step = float(r["per_step"])
        name = fmt_memory_device(r["device_type"], r["device"])
        f = Finding(
            "memory",
            "high",
            f"Memory floor on {name} rises every step, by a median {fmt_bytes(per_step)} per step "
            f"over {r['steps']} steps: activations kept alive",
            next_step("memory", words_for(None)),
            ranks=[r["rank"]],
            steps=r["step"],
            at_rank=r["rank"],
            at_step=r["step"][-1],
            at_ns=r["last_start_ns"],
        )
        f.evidence = [
            ("median floor rise per step", per_step, "bytes", "allocations/per_step.parquet"),
            ("steps", float(r["steps"]), "count", "allocations/per_step.parquet"),
            ("first step's floor", float(r["first_floor"]), "bytes", "allocations/per_step.parquet"),
            ("last step's floor", float(r["last_floor"]), "bytes", "allocations/per_step.parquet"),
        ]
        out.append(f)
    return out


def near_capacity(alloc: AllocationsOutputs, gpus: Sequence[Mapping[str, Any]]) -> list[Finding]:
    """A GPU whose reserved peak (the allocator's hold; else the allocated peak) comes within
    :data:`NEAR_CAPACITY` of its memory (the manifest's ``totalGlobalMem``, where known)."""
    from profui.capture.format.manifest import gpu_key

    dev = alloc.devices if alloc.has("devices.parquet") else None
    capacity = {gpu_key(dict(g)): g.get("totalGlobalMem") for g in gpus if isinstance(g, Mapping)}
    if dev is None or not dev.height or not capacity:
        return []
    out = []
    for r in dev.filter(pl.col("device") >= 0).iter_rows(named=True):
        total = capacity.get((r["node"], r["device"]))
        peak = r["peak_reserved_bytes"] or r["peak_allocated_bytes"]
        if not isinstance(total, int) or total <= 0 or not peak or peak < (1 - NEAR_CAPACITY) * total:
            continue
        name = fmt_memory_device(r["device_type"], r["device"])
        f = Finding(
            "memory",
            "high",
            f"Memory peak on {name} is {fmt_bytes(peak)} of its {fmt_bytes(total)} ({fmt_pct(peak / total, 0)}): "
            "near out of memory",
            next_step("memory", words_for(None)),
            ranks=[r["rank"]],
            steps=[r["peak_step"]] if r["peak_step"] is not None else [],
            look_at=[x for x in (r["peak_op"], r["peak_annotation"]) if x],
            at_rank=r["rank"],
            at_step=r["peak_step"],
            at_ns=r["peak_reserved_ns"] if r["peak_reserved_bytes"] else r["peak_ns"],
        )
        f.evidence = [
            ("memory peak", float(peak), "bytes", "allocations/devices.parquet"),
            ("device memory", float(total), "bytes", "manifest.json gpus"),
            ("of the device's memory", peak / total, "fraction", "allocations/devices.parquet"),
        ]
        out.append(f)
    return out


def tensor_core_rates(gpu: str | None) -> dict[str, float]:
    """The peak table's rates of GPU row ``gpu`` when it has tensor cores (a half-precision rate
    above twice its FP32 rate: CUDA cores run FP16 at most at 2x FP32), else ``{}``."""
    from .peaks import PEAKS

    row = next((r for r in PEAKS if r.gpu == gpu), None)
    return row.tflops if row is not None and row.tflops.get("FP16", 0) > 2 * row.tflops["FP32"] else {}


def precision_finding(
    shares: pl.DataFrame, totals: pl.DataFrame | None, words: DeviceWords, span_ns: int
) -> list[Finding]:
    """FP32 of at least :data:`FP32_SHARE` of the compute kernels' time, and of at least
    :data:`FP32_SPAN` of the trace's span ``span_ns``, on a GPU with tensor cores (the flops
    stage's peak row names the GPU). GPU runs only."""
    if words.kind != GPU or not shares.height or totals is None or not totals.height:
        return []
    gpu = totals["peak_gpu"][0]
    fp32 = shares.filter(pl.col("precision") == "FP32", pl.col("in_shares"))
    rates = tensor_core_rates(gpu)
    if not fp32.height or not rates:
        return []
    share, ns = float(fp32["share"][0] or 0), int(fp32["time_ns"][0])
    if share < FP32_SHARE or not span_ns or ns / span_ns < FP32_SPAN:
        return []
    f = Finding(
        "precision",
        "medium",
        f"FP32 is {fmt_pct(share, 0)} of the {words.work_time} on {gpu}, which has tensor cores",
        precision_next_step(rates),
    )
    f.evidence = [
        ("FP32 share of compute time", share, "fraction", "precision/shares.parquet"),
        ("FP32 kernel time", float(ns), "ns", "precision/shares.parquet"),
        ("of the trace's span", ns / span_ns, "fraction", "ingest/trace.json"),
    ]
    return [f]


def idle_finding(cp: CriticalPathOutputs, words: DeviceWords, unit: str = "step") -> list[Finding]:
    """The device idle on the path between its own work, with no other cause (``device_overhead``
    time), of at least :data:`IDLE_SHARE` of step time (the analysed steps' total idle on the
    path over their total path length); per ``unit`` (:func:`~.findings_base.unit_of`)."""
    steps = cp.steps
    if words.kind == NONE or not steps.height:
        return []
    jobs = job_paths(steps)
    per_step = mean_length(jobs)
    kinds = PATH_KINDS["idle"]
    idle = path_time(jobs, cp.by_kind, kinds)
    if not per_step or idle / per_step < IDLE_SHARE:
        return []
    st = stretches(cp.events)
    share = idle / per_step
    worst = (
        cp.by_kind.filter(pl.col("kind").is_in(list(kinds)))
        .sort("ns", "step", "rank", descending=[True, False, False])
        .row(0, named=True)
    )
    f = Finding(
        "idle",
        "medium" if share >= HIGH_SHARE else "low",
        f"{words.Device} idle on the critical path with no other cause: {fmt_ns(idle)} per {unit} "
        f"({fmt_pct(share, 0)} of {unit} time)",
        next_step("idle", words),
        look_at=look_at(st, kinds),
        at_rank=worst["rank"],
        at_step=worst["step"],
        at_ns=longest_start(st, kinds, worst["rank"], worst["step"]),
    )
    f.evidence = [
        (f"idle on the path per {unit}", idle, "ns", BY_KIND_SRC),
        (f"share of {unit} time", share, "fraction", BY_KIND_SRC),
        (f"critical path per {unit}", per_step, "ns", STEPS_SRC),
    ]
    return [f]
