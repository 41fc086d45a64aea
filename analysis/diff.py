"""What changed between two runs: a profile of each from its stage outputs, and their difference.

:func:`profile` reduces one trace's stage outputs (the same ones ``profui summary`` and the
dashboard read, from the stage cache when warm) to a small JSON-ready dict: the job's step
durations, the headline numbers, and the kernel and annotation tables by normalised name.
:func:`diff` compares two profiles:

- **what the run ran on**: a change of GPU model, dominant precision, world size or of CUDA
  graphs (graph launches in one run only) is named before any number (``setup``);
- **step time** as a distribution: median, p90 and mean of the job's steps, and a 95% bootstrap
  interval of the difference of medians (seeded, 2,000 resamples); the change is *significant*
  when the interval excludes 0. One step on a side: no interval. A step's time is its **period**
  on the rank whose step is longest (the job waits for it; not the straggler rule's late rank,
  ``comm/stragglers``): from its marker's start to the next step's (its marker's host duration
  when no next step was traced), not its device window, which overlaps the next step whenever
  the GPU runs behind the host;
- **headline numbers** (GPU busy and idle, activity shares, kernel time and launches, exposed
  communication, launch latency, precision shares, copy time, achieved TFLOP/s and MFU, each
  device's peak allocated and reserved memory): a change counts when it is at least
  :data:`MATERIAL_REL` of the base (times, counts, bytes) or :data:`MATERIAL_PT` (shares);
- **kernels**, **host ops**, **runtime calls** (with the device events each name started: a
  CUDA graph launch starts many) and **annotations** matched by :func:`normalise_name` (ids,
  sequence numbers and addresses stripped), so a kernel that only moved stream, or a range whose
  name embeds an op id, still matches; ranked by the size of their change of total time, names
  in one run only marked new or gone;
- **per step**, aligned by step number where both traces have step markers;
- **findings** (the ``findings`` stage: what would save time on the critical path) matched by
  category (and the late rank for ``straggler``): each appeared, vanished, grew or shrank in its
  recoverable time per step, *material* when that change is beyond the step-time noise (half the
  width of the median's bootstrap interval); when one material change has the step's sign and
  at least :data:`EXPLAINS_SHARE` of its size, it is why the step changed (``why``:
  ``step −20.5 ms: host stall gone (−20.3 ms per step)``).

Regressions come first (worse in the metric's direction), the largest change first.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any, cast

import numpy as np

from .findings_base import CATEGORY_NAMES
from .flops import gpu_key
from .formatting import fmt_memory_device
from .pipeline.result import OutputMissing, Result
from .top_n import TOP_N

#: A change in a time or count smaller than this fraction of the base is not reported as one.
MATERIAL_REL = 0.02
#: A change in a share smaller than this (1 percentage point) is not reported as one.
MATERIAL_PT = 0.01
BOOTSTRAP = 2000
#: The stages (and their files) a profile reads.
STAGES = (
    "steps",
    "utilization",
    "activity",
    "kernels",
    "comm",
    "launch",
    "precision",
    "annotations",
    "memory",
    "flops",
    "allocations",
    "findings",
)
#: A finding's change explains the step's change when it has the same sign and at least this
#: share of its size ("most of it").
EXPLAINS_SHARE = 0.5
#: A finding still there after a material fall reads as gone when what is left is at most this
#: share of what it was (the words say how much is left; the other way: appeared).
GONE_SHARE = 0.1
#: The version of the diff's JSON (``profui diff --json``): 2 since ``gate`` is an object
#: (:func:`.gate.gate_json`, null without ``--fail-if``), no longer a list.
VERSION = 2
#: The version of a profile, as a saved baseline holds it: 2 since a step's time is its period.
#: A version-1 baseline without runtime calls was saved before that (both came in one change):
#: its step times are device windows, which :func:`diff` does not compare with periods.
PROFILE_VERSION = 2

_NOISE = (
    (re.compile(r", (?:seq|op_id|sequence|id) = \d+"), ""),  # NVTX: "aten::mm, seq = 12, op_id = 345"
    (re.compile(r"0x[0-9a-fA-F]+"), "0x…"),  # addresses
    (re.compile(r"#\d+$"), "#N"),  # "ProfilerStep#41"
    (re.compile(r"\s+"), " "),
)


def normalise_name(name: str) -> str:
    """``name`` with what differs between runs of the same code stripped: NVTX sequence and op
    ids, hex addresses, a trailing ``#N``, repeated whitespace."""
    for pattern, repl in _NOISE:
        name = pattern.sub(repl, name)
    return name.strip()


def _rows(read: Callable[[], list[Any]]) -> list[dict[str, Any]]:
    """The rows ``read`` returns from a :class:`Result`; none where the stage or output is missing
    (a stage that failed in the recorded run)."""
    try:
        return cast("list[dict[str, Any]]", read())
    except OutputMissing:
        return []


def _sum(rows: list[dict[str, Any]], key: str) -> float | None:
    vals = [r[key] for r in rows if r.get(key) is not None]
    return float(sum(vals)) if vals else None


def profile(result: Result, trace: dict[str, Any]) -> dict[str, Any]:
    """The profile of one trace from its result (:data:`STAGES`); ``trace`` names it
    (``path``, ``name``, ``ranks``, ``gpus``...)."""
    try:
        steps_info: dict[str, Any] = dict(result.steps.steps)
    except OutputMissing:
        steps_info = {}
    total = (_rows(lambda: result.utilization.total_rows()) or [{}])[0]
    numbers: dict[str, float | None] = {}
    busy = total.get("busy_share")
    if total.get("n_gpus"):
        numbers["gpu_busy"] = busy
        numbers["idle_pct"] = None if busy is None else 1 - busy
    shares: dict[str, list[float]] = {}
    for r in _rows(lambda: result.activity.shares_rows()):
        if r.get("share") is not None:
            shares.setdefault(r["activity"], []).append(r["share"])
    for activity, vals in shares.items():
        if activity != "idle":  # idle_pct says it (over all GPUs' spans)
            numbers[f"share_{activity}"] = sum(vals) / len(vals)
    kernels = _rows(lambda: result.kernels.stats_rows())
    if kernels:
        numbers["kernel_time"] = _sum(kernels, "total_ns")
        numbers["kernel_count"] = _sum(kernels, "count")
    overlap = _rows(lambda: result.comm.overlap_rows())
    if overlap:
        numbers["comm_exposed"] = _sum(overlap, "exposed_comm_ns")
    launch = (_rows(lambda: result.launch.overall_rows()) or [{}])[0]
    if launch.get("launches"):
        numbers["launch_p50"] = launch.get("latency_p50_ns")
    for r in _rows(lambda: result.precision.shares_rows()):
        if r.get("in_shares") and r.get("count"):
            numbers[f"precision_{r['precision']}"] = r.get("share")
    for r in _rows(lambda: result.memory.ops_rows()):
        numbers[f"copy_{r['direction']}"] = r.get("time_ns")
    flops = (_rows(lambda: result.flops.totals_rows()) or [{}])[0]
    if flops.get("step_flops"):
        numbers["flops_per_step"] = flops["step_flops"] / flops["steps"]
        numbers["achieved_tflops"] = flops.get("tflops")
    if flops.get("mfu") is not None:
        numbers["mfu"] = flops["mfu"]
        trace = {**trace, "mfu_basis": _mfu_basis(flops)}
    precision = _dominant_precision(_rows(lambda: result.precision.shares_rows()))
    if precision:
        trace = {**trace, "precision": precision}
    mem = _rows(lambda: result.allocations.devices_rows())
    many = len({(r["node"], r["rank"]) for r in mem}) > 1
    for r in mem:  # "cuda1", "r1_cuda1" when several ranks (a name --fail-if can spell)
        where = (f"r{r['rank']}_" if many else "") + fmt_memory_device(r["device_type"], r["device"])
        numbers[f"peak_mem_{where}"] = r.get("peak_allocated_bytes")
        numbers[f"peak_reserved_{where}"] = r.get("peak_reserved_bytes")
    return {
        "version": PROFILE_VERSION,
        "trace": trace,
        "has_steps": bool(steps_info.get("has_markers")),
        # without step markers the one "step" is the whole traced span: no step time to compare
        "steps": step_periods(_rows(lambda: result.steps.windows_rows()))
        if steps_info.get("has_markers")
        else [],
        "numbers": numbers,
        "kernels": _by_name(kernels, "name"),
        "ops": _by_name(_rows(lambda: result.kernels.ops_rows()), "name"),
        "runtime": _by_name(_rows(lambda: result.kernels.runtime_rows()), "name"),
        "annotations": _by_name(_rows(lambda: result.annotations.names_rows()), "name"),
        "findings": _findings_of(result),
    }


def finding_key(row: dict[str, Any]) -> str:
    """How a finding is matched across two runs: its category, and for ``straggler`` the late
    rank too (``straggler:r1``): rank 1 late in one run and rank 3 in the other are two findings."""
    if row["category"] == "straggler" and row.get("at_rank") is not None:
        return f"straggler:r{row['at_rank']}"
    return str(row["category"])


def _findings_of(result: Result) -> dict[str, dict[str, Any]] | None:
    """:func:`_findings` of the result's findings; None where the findings stage gave none."""
    try:
        rows = result.findings.findings_rows()
    except OutputMissing:
        return None
    return _findings(cast("list[dict[str, Any]]", rows))


def _findings(rows: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    """A run's findings by :func:`finding_key`, the first in rank order where two share one."""
    out: dict[str, dict[str, Any]] = {}
    for r in sorted(rows, key=lambda r: r["position"]):
        out.setdefault(
            finding_key(r),
            {
                "category": r["category"],
                "rank": r.get("at_rank") if r["category"] == "straggler" else None,
                "title": r["title"],
                "severity": r["severity"],
                "recoverable_ns_per_step": int(r["recoverable_ns_per_step"] or 0),
                "recoverable_share": r["recoverable_share"],
            },
        )
    return out


def step_periods(windows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The job's time per step: each rank's step period (its marker's start to the start of
    the next step on that rank; its marker's host duration where the next step was not
    traced), the longest rank's per step. ``[{step, dur_ns}]`` by step."""
    by_rank: dict[tuple[Any, Any], list[dict[str, Any]]] = {}
    for w in windows:
        by_rank.setdefault((w["node"], w["rank"]), []).append(w)
    job: dict[int, int] = {}
    for rows in by_rank.values():
        rows.sort(key=lambda w: w["step"])
        for w, nxt in zip(rows, [*rows[1:], None], strict=True):
            follows = nxt is not None and nxt["step"] == w["step"] + 1
            period = (
                nxt["cpu_start_ns"] - w["cpu_start_ns"] if nxt is not None and follows else w["cpu_dur_ns"]
            )
            job[w["step"]] = max(job.get(w["step"], 0), int(period))
    return [{"step": step, "dur_ns": dur} for step, dur in sorted(job.items())]


def device_window_steps(prof: dict[str, Any]) -> bool:
    """Whether ``prof``'s step times are device windows, not periods: a version-1 baseline saved
    before runtime calls were kept, which came in with step periods."""
    return prof.get("version") == 1 and prof.get("runtime") is None


def _dominant_precision(shares: list[dict[str, Any]]) -> str | None:
    """The precision with the largest share of compute-kernel time (None without kernels)."""
    counted = [r for r in shares if r.get("in_shares") and r.get("count") and r.get("share")]
    return max(counted, key=lambda r: r["share"])["precision"] if counted else None


def _devices(manifest: Any) -> list[str]:
    """The models of the GPUs the trace's device work ran on (all listed GPUs when its sources
    do not say which ran)."""
    used = {
        (str(src.get("node")), str(d))
        for src in manifest.sources
        if isinstance(src, dict) and isinstance(src.get("devices"), list)
        for d in src["devices"]
    }
    names = {
        str(g["name"])
        for g in manifest.gpus
        if isinstance(g, dict) and g.get("name") and (not used or tuple(map(str, gpu_key(g))) in used)
    }
    return sorted(names)


def _world_size(manifest: Any) -> int:
    """The job's world size as the trace's sources give it (Kineto's distributedInfo), else its
    number of ranks."""
    sizes = [
        src.get("metadata", {}).get("distributedInfo", {}).get("world_size")
        for src in manifest.sources
        if isinstance(src, dict)
        and isinstance(src.get("metadata"), dict)
        and isinstance(src["metadata"].get("distributedInfo"), dict)
    ]
    sizes = [n for n in sizes if isinstance(n, int) and not isinstance(n, bool) and 0 < n < 2**31]
    return max(sizes) if sizes else len(manifest.ranks)


def _mfu_basis(totals: dict[str, Any]) -> str:
    """What an MFU rests on, in words: its definition and its peak (``counted FLOPs, H100 SXM
    BF16 989.5 TFLOP/s``)."""
    from .formatting import fmt_tflops

    what = "model FLOPs (--model-flops)" if totals.get("definition") == "model" else "counted FLOPs"
    peak = " ".join(str(x) for x in (totals.get("peak_gpu"), totals.get("precision")) if x)
    given = " (--peak-tflops)" if totals.get("peak_source") == "--peak-tflops" else ""
    return f"{what}, peak {(peak + ' ') if peak else ''}{fmt_tflops(totals.get('peak_tflops'))}{given}"


def profile_of(
    path: str | Path, label: str | None = None, say: Callable[[str], None] | None = None
) -> dict[str, Any]:
    """:func:`profile` of the trace folder ``path`` from its stage outputs, taken where the
    dashboard takes them (:func:`profui.analysis.pipeline.answers.answers`: cached when warm;
    its progress lines to ``say``)."""
    from .pipeline.answers import answers
    from .trace import open_trace

    trace = open_trace(path)
    m = trace.manifest
    got = answers(Path(path), STAGES, trace=lambda: trace, say=say)
    info = {
        "path": label or str(path),
        "folder": str(Path(path).resolve()),
        "name": m.name,
        "source": m.source,
        "ranks": list(m.ranks),
        "gpus": len(m.gpus),
        "devices": _devices(m),
        "world_size": _world_size(m),
    }
    return profile(got, info)


def _by_name(rows: list[dict[str, Any]], key: str) -> dict[str, dict[str, Any]]:
    out: dict[str, dict[str, Any]] = {}
    for r in rows:
        name = normalise_name(str(r[key]))
        acc = out.setdefault(name, {"count": 0, "total_ns": 0, "example": str(r[key])})
        acc["count"] += r.get("count") or 0
        acc["total_ns"] += r.get("total_ns") or 0
        if "device_events" in r:
            acc["device_events"] = acc.get("device_events", 0) + (r["device_events"] or 0)
    return out


# -- the difference ------------------------------------------------------------------------

#: Per headline number: its label, unit and which way is better (None: neither).
_META: dict[str, tuple[str, str, str | None]] = {
    "step_p50": ("step time (median)", "ns", "lower"),
    "step_p90": ("step time (p90)", "ns", "lower"),
    "step_mean": ("step time (mean)", "ns", "lower"),
    "gpu_busy": ("GPU busy", "share", "higher"),
    "idle_pct": ("GPU idle", "share", "lower"),
    "kernel_time": ("kernel time", "ns", None),
    "kernel_count": ("kernel launches", "count", None),
    "comm_exposed": ("exposed communication", "ns", "lower"),
    "launch_p50": ("launch latency (median)", "ns", "lower"),
    "flops_per_step": ("FLOPs per step", "FLOP", None),
    "achieved_tflops": ("achieved throughput per step", "TFLOP/s", "higher"),
    "mfu": ("MFU", "share", "higher"),
}


def metric_meta(name: str) -> tuple[str, str, str | None]:
    """``(label, unit, better)`` of a headline number (``better``: lower, higher or None)."""
    if name in _META:
        return _META[name]
    if name.startswith("share_"):
        activity = name.removeprefix("share_")
        return f"GPU time in {activity}", "share", "lower" if activity == "sync" else None
    if name.startswith("precision_"):
        return f"{name.removeprefix('precision_')} share of kernel time", "share", None
    if name.startswith("peak_mem_"):
        return f"peak allocated memory ({name.removeprefix('peak_mem_')})", "bytes", "lower"
    if name.startswith("peak_reserved_"):
        return f"peak reserved memory ({name.removeprefix('peak_reserved_')})", "bytes", "lower"
    if name.startswith("copy_"):
        what = name.removeprefix("copy_")
        return ("memset time" if what == "Memset" else f"{what} copy time"), "ns", "lower"
    return name, "count", None


def _quantile(values: list[float], q: float) -> float:
    return float(np.quantile(np.asarray(values, dtype=float), q))


def step_interval(base: list[float], new: list[float], seed: int = 0) -> tuple[float, float] | None:
    """95% bootstrap interval of median(new) - median(base); None with fewer than 2 steps a side."""
    if len(base) < 2 or len(new) < 2:
        return None
    rng = np.random.default_rng(seed)
    a, b = np.asarray(base, dtype=float), np.asarray(new, dtype=float)
    da = np.median(rng.choice(a, (BOOTSTRAP, a.size)), axis=1)
    db = np.median(rng.choice(b, (BOOTSTRAP, b.size)), axis=1)
    lo, hi = np.quantile(db - da, [0.025, 0.975])
    return float(lo), float(hi)


def _metric(name: str, base: float | None, new: float | None) -> dict[str, Any]:
    label, unit, better = metric_meta(name)
    delta = None if base is None or new is None else new - base
    rel = None if delta is None or not base else delta / abs(base)
    if delta is None:
        changed = base != new
    elif delta == 0:
        changed = False
    elif unit == "share":
        changed = abs(delta) >= MATERIAL_PT
    else:
        changed = rel is None or abs(rel) >= MATERIAL_REL  # from 0 to anything: a change
    return {
        "label": label,
        "unit": unit,
        "better": better,
        "base": base,
        "new": new,
        "delta": delta,
        "rel": rel,
        "changed": bool(changed),
        "significant": None,
        "ci95": None,
    }


def _direction(m: dict[str, Any]) -> str:
    if not m["changed"] or m["delta"] is None or m["better"] is None or m["significant"] is False:
        return "changed" if m["changed"] and m["significant"] is not False else "same"
    worse = m["delta"] > 0 if m["better"] == "lower" else m["delta"] < 0
    return "regression" if worse else "improvement"


def _size(m: dict[str, Any]) -> float:
    if m["delta"] is None:
        return math.inf
    return abs(m["delta"]) if m["unit"] == "share" else abs(m["rel"]) if m["rel"] is not None else math.inf


def diff(base: dict[str, Any], new: dict[str, Any], top: int = TOP_N) -> dict[str, Any]:
    """The difference of two :func:`profile` results (a JSON-ready dict; see the module docstring
    and ``docs`` in :data:`JSON_DOC` for its keys)."""
    metrics: dict[str, dict[str, Any]] = {}
    bs, ns = [s["dur_ns"] for s in base["steps"]], [s["dur_ns"] for s in new["steps"]]
    windows = [side for side, prof in (("base", base), ("new", new)) if device_window_steps(prof)]
    steps_compared = not windows
    if bs and ns and steps_compared:
        for name, q in (("step_p50", 0.5), ("step_p90", 0.9)):
            metrics[name] = _metric(name, _quantile(bs, q), _quantile(ns, q))
        metrics["step_mean"] = _metric("step_mean", float(np.mean(bs)), float(np.mean(ns)))
        ci = step_interval(bs, ns)
        for name in ("step_p50", "step_p90", "step_mean"):
            metrics[name]["ci95"] = None if name != "step_p50" or ci is None else list(ci)
            metrics[name]["significant"] = None if ci is None else bool(ci[0] > 0 or ci[1] < 0)
    stepless = [side for side, prof in (("base", base), ("new", new)) if not prof["steps"]]
    which = "either trace" if len(stepless) == 2 else f"the {stepless[0]} trace" if stepless else ""
    notes = [f"no step markers in {which}: step time is not compared"] if stepless else []
    if windows and bs and ns:
        notes.append(
            f"step time not compared: the {' and '.join(windows)} baseline was saved before step "
            "periods were kept (version 1): its step times are device windows; save it again with "
            "--save-baseline"
        )
    unkept = [side for side, prof in (("base", base), ("new", new)) if prof.get("runtime") is None]
    if unkept:
        notes.append(
            f"runtime calls not compared: the {' and '.join(unkept)} baseline was saved before they were kept"
        )
    bases = [prof["trace"].get("mfu_basis") for prof in (base, new)]
    if all(bases) and bases[0] != bases[1]:
        notes.append(f"MFU rests on different grounds: {bases[0]} (base) vs {bases[1]} (new)")
    for name in sorted(set(base["numbers"]) | set(new["numbers"])):
        metrics[name] = _metric(name, base["numbers"].get(name), new["numbers"].get(name))
    if "step_p50" in metrics and metrics["step_p50"]["significant"] is False:
        _step_derived_within_noise(metrics)
    for m in metrics.values():
        m["verdict"] = _direction(m)
    order = sorted(
        (n for n, m in metrics.items() if m["verdict"] != "same"),
        key=lambda n: (
            {"regression": 0, "improvement": 1, "changed": 2}[metrics[n]["verdict"]],
            n != "step_p50",  # the median leads the step numbers: it is the one tested against noise
            -_size(metrics[n]),
        ),
    )
    significant_steps = any(metrics[n]["significant"] for n in ("step_p50",) if n in metrics)
    step_noise = "step_p50" in metrics and metrics["step_p50"]["significant"] is False
    if step_noise:  # steps within step-to-step noise: the run is not faster or slower
        order = [n for n in order if not n.startswith("step_")]
    verdict = "no significant change" if not order else ("regression" if any(
        metrics[n]["verdict"] == "regression" for n in order) else "changed")  # fmt: skip
    unfound = [side for side, prof in (("base", base), ("new", new)) if prof.get("findings") is None]
    if unfound:
        notes.append(
            f"findings not compared: the {' and '.join(unfound)} baseline was saved before findings were kept"
        )
    findings = [] if unfound else findings_diff(base["findings"], new["findings"], step_noise_ns(metrics))
    return {
        "version": VERSION,
        "base": base["trace"],
        "new": new["trace"],
        "verdict": verdict,
        "setup": setup_changes(base, new),
        "notes": notes,
        "step_time_significant": significant_steps,
        "headline": order,
        "metrics": metrics,
        "kernels": _table_diff(base["kernels"], new["kernels"], top),
        "ops": _table_diff(base["ops"], new["ops"], top),
        "runtime": _table_diff(base["runtime"], new["runtime"], top) if not unkept else [],
        "annotations": _table_diff(base["annotations"], new["annotations"], top),
        "steps": _per_step(base, new) if base["has_steps"] and new["has_steps"] and steps_compared else [],
        "findings": findings,
        "why": why_step_changed(metrics, findings),
    }


#: Metrics computed from the step time (FLOPs per step over it): with the same FLOPs per step,
#: their change is the step time's, so it is noise when the step time's is.
STEP_DERIVED = ("achieved_tflops", "mfu")


def _step_derived_within_noise(metrics: dict[str, dict[str, Any]]) -> None:
    """Mark :data:`STEP_DERIVED` metrics not significant (verdict ``same``) when the median step
    is within noise and the FLOPs per step did not change: their change is then only the step's."""
    flops = metrics.get("flops_per_step")
    if flops is not None and flops["changed"]:
        return
    for name in STEP_DERIVED:
        if name in metrics and metrics[name]["delta"] is not None:
            metrics[name]["significant"] = False


def step_noise_ns(metrics: dict[str, dict[str, Any]]) -> float | None:
    """The step-time noise the diff estimates: half the width of the 95% bootstrap interval of
    the median step's change (None without one: fewer than 2 steps a side, or no steps)."""
    m = metrics.get("step_p50")
    if m is None or m["ci95"] is None:
        return None
    lo, hi = m["ci95"]
    return (hi - lo) / 2


#: How a finding's change reads, by its status.
_STATUS_WORDS = {"vanished": "gone", "appeared": "appeared", "grew": "grew", "shrank": "shrank"}


def finding_label(row: dict[str, Any]) -> str:
    """A finding's name in the diff: ``host stall``, ``late rank 1``."""
    label = CATEGORY_NAMES.get(row["category"], row["category"])
    return f"{label} {row['rank']}" if row.get("rank") is not None else label


def findings_diff(
    base: dict[str, dict[str, Any]], new: dict[str, dict[str, Any]], noise_ns: float | None
) -> list[dict[str, Any]]:
    """Each finding of either run by :func:`finding_key`: ``status``, its recoverable time per
    step before and after and the change, and whether that change is ``material``: beyond
    ``noise_ns`` (:func:`step_noise_ns`; without a noise estimate, at least :data:`MATERIAL_REL`
    of the base as for the headline times, any change from none; a risk finding, with no time to
    recover, that appears or vanishes always is). Largest change first.

    ``vanished``: in the base run only, or what is left in the new run after a material fall is
    at most :data:`GONE_SHARE` of what was (``left_ns_per_step`` says how much); ``appeared`` the
    same the other way; else ``grew``, ``shrank`` or ``same``."""
    rows = []
    for key in sorted(set(base) | set(new)):
        b, n = base.get(key), new.get(key)
        bn = b["recoverable_ns_per_step"] if b else 0
        nn = n["recoverable_ns_per_step"] if n else 0
        delta = nn - bn
        if noise_ns is not None:
            beyond = abs(delta) > noise_ns
        else:  # no noise estimate: the headline numbers' rule for times (from 0: any change)
            beyond = delta != 0 and (not bn or abs(delta) >= MATERIAL_REL * bn)
        small = {  # a side with a tenth of the other's time or less, after a material change
            side: beyond and 0 < ns <= GONE_SHARE * other
            for side, ns, other in (("base", bn, nn), ("new", nn, bn))
        }
        if b is None or (delta > 0 and small["base"]):
            status = "appeared"
        elif n is None or (delta < 0 and small["new"]):
            status = "vanished"
        else:
            status = "grew" if delta > 0 else "shrank" if delta < 0 else "same"
        left = nn if status == "vanished" and n else bn if status == "appeared" and b else None
        one = cast("dict[str, Any]", n or b)  # the key is in one of them at least
        risk = cast("dict[str, Any]", b or n)["recoverable_ns_per_step"] == 0 and status in (
            "appeared",
            "vanished",
        )
        rows.append(
            {
                "key": key,
                "category": one["category"],
                "rank": one["rank"],
                "label": finding_label(one),
                "status": status,
                "material": bool(beyond or risk),
                "base_ns_per_step": bn if b else None,
                "new_ns_per_step": nn if n else None,
                "delta_ns_per_step": delta,
                "left_ns_per_step": left,
                "noise_ns": noise_ns,
                "base_title": b["title"] if b else None,
                "new_title": n["title"] if n else None,
            }
        )
    rows.sort(key=lambda r: (not r["material"], -abs(r["delta_ns_per_step"]), r["key"]))
    return rows


def _left(f: dict[str, Any]) -> str:
    """What a finding that vanished (appeared) kept (had), in words."""
    from .formatting import fmt_ns

    if f.get("left_ns_per_step") is None:
        return ""
    return f"; {fmt_ns(f['left_ns_per_step'])} {'left' if f['status'] == 'vanished' else 'before'}"


def why_step_changed(metrics: dict[str, dict[str, Any]], findings: list[dict[str, Any]]) -> str | None:
    """Why the median step changed, in the findings' terms, when one material finding change
    has the step change's sign and at least :data:`EXPLAINS_SHARE` of its size: ``step −20.5
    ms: host stall gone (−20.3 ms per step)``; None otherwise (no step change beyond noise, or
    no finding that explains most of it)."""
    from .formatting import fmt_signed_ns

    step = metrics.get("step_p50")
    if step is None or step["delta"] is None or not step["delta"] or step["significant"] is False:
        return None
    d = step["delta"]
    fits = [
        f
        for f in findings
        if f["material"]
        and f["delta_ns_per_step"] * d > 0
        and abs(f["delta_ns_per_step"]) >= EXPLAINS_SHARE * abs(d)
    ]
    if not fits:
        return None
    f = max(fits, key=lambda f: abs(f["delta_ns_per_step"]))
    return (
        f"step {fmt_signed_ns(d)}: {f['label']} {_STATUS_WORDS[f['status']]}"
        f" ({fmt_signed_ns(f['delta_ns_per_step'])} per step{_left(f)})"
    )


def per_step_text(ns: int | None) -> str:
    """A finding's recoverable time per step as the diff shows it (``-`` where the run has no
    such finding)."""
    from .formatting import fmt_ns

    return "-" if ns is None else fmt_ns(ns)


def finding_sentence(f: dict[str, Any]) -> str:
    """One finding's change in words true of its numbers: ``host stall gone: 20.3 ms per step
    before, none after (−20.3 ms per step), beyond step-to-step noise.``"""
    from .formatting import fmt_ns, fmt_signed_ns

    def per_step(ns: int | None) -> str:
        return "none" if ns is None else "no time" if ns == 0 else f"{fmt_ns(ns)} per step"

    if f.get("noise_ns") is None:  # no step-time noise estimate: the 2% rule decided
        noise = "a material change" if f["material"] else "under 2% of before: not material"
    else:
        noise = "beyond step-to-step noise" if f["material"] else "within step-to-step noise"
    if f.get("left_ns_per_step") is not None:  # what a vanished one kept (an appeared one had)
        kept = "kept" if f["status"] == "vanished" else "had before"
        noise += f"; it {kept} {fmt_ns(f['left_ns_per_step'])}, a tenth or less"
    word = _STATUS_WORDS.get(f["status"], "unchanged")
    return (
        f"{f['label'][:1].upper()}{f['label'][1:]} {word}: {per_step(f['base_ns_per_step'])} before, "
        f"{per_step(f['new_ns_per_step'])} after ({fmt_signed_ns(f['delta_ns_per_step'])} per step), {noise}."
    )


#: Runtime / driver calls that launch a CUDA (or HIP) graph.
_GRAPH_LAUNCH = re.compile(r"^(?:cuda|hip|cu)GraphLaunch")


def _graphs(prof: dict[str, Any]) -> tuple[int, int]:
    """Graph launches and the device events they started."""
    rows = [r for name, r in (prof.get("runtime") or {}).items() if _GRAPH_LAUNCH.match(name)]
    return sum(r["count"] for r in rows), sum(r.get("device_events") or 0 for r in rows)


def setup_changes(base: dict[str, Any], new: dict[str, Any]) -> list[dict[str, Any]]:
    """What the two runs ran on, where it differs: GPU model, dominant precision of kernel time,
    world size, CUDA graphs. ``[{what, label, base, new}]``, values as text."""
    out = []
    b, n = base["trace"], new["trace"]
    for what, label in (("devices", "GPU"), ("precision", "precision"), ("world_size", "world size")):
        x, y = b.get(what), n.get(what)
        if what == "devices":
            x, y = ", ".join(x or []) or None, ", ".join(y or []) or None
        if x is not None and y is not None and x != y:
            out.append({"what": what, "label": label, "base": str(x), "new": str(y)})
    (bg, bd), (ng, nd) = _graphs(base), _graphs(new)
    kept = base.get("runtime") is not None and new.get("runtime") is not None
    if kept and (bg == 0) != (ng == 0):
        text = [
            "none" if not g else f"{g:,} graph launches ({d:,} device events)"
            for g, d in ((bg, bd), (ng, nd))
        ]
        out.append({"what": "cuda_graphs", "label": "CUDA graphs", "base": text[0], "new": text[1]})
    return out


def _table_diff(
    a: dict[str, dict[str, float]], b: dict[str, dict[str, float]], top: int
) -> list[dict[str, Any]]:
    rows: list[dict[str, Any]] = []
    for name in set(a) | set(b):
        x, y = a.get(name), b.get(name)
        status = "new" if x is None else "gone" if y is None else "both"
        bt, nt = (x or {}).get("total_ns", 0), (y or {}).get("total_ns", 0)
        bc, nc = (x or {}).get("count", 0), (y or {}).get("count", 0)
        events = {}
        if "device_events" in (x or {}) or "device_events" in (y or {}):
            events = {
                "base_device_events": (x or {}).get("device_events", 0),
                "new_device_events": (y or {}).get("device_events", 0),
            }
        rows.append(
            {
                "name": name,
                "base_example": (x or {}).get("example"),
                "new_example": (y or {}).get("example"),
                "status": status,
                "base_total_ns": bt,
                "new_total_ns": nt,
                "delta_ns": nt - bt,
                "base_count": bc,
                "new_count": nc,
                "base_mean_ns": bt / bc if bc else None,
                "new_mean_ns": nt / nc if nc else None,
                **events,
            }
        )
    # by the size of the change: a name new or gone by 1 ms is less than one that took 50 ms more
    rows.sort(key=lambda r: (-abs(r["delta_ns"]), r["name"]))
    return rows[:top] if top > 0 else rows


def _per_step(base: dict[str, Any], new: dict[str, Any]) -> list[dict[str, Any]]:
    b = {s["step"]: s["dur_ns"] for s in base["steps"]}
    n = {s["step"]: s["dur_ns"] for s in new["steps"]}
    return [
        {"step": s, "base_ns": b[s], "new_ns": n[s], "delta_ns": n[s] - b[s]} for s in sorted(set(b) & set(n))
    ]


def value_text(value: float | None, unit: str) -> str:
    """A metric's value as the diff shows it."""
    from .formatting import fmt_bytes, fmt_count, fmt_flops, fmt_ns, fmt_pct, fmt_tflops

    if value is None:
        return "-"
    if unit == "FLOP":
        return fmt_flops(value)
    if unit == "TFLOP/s":
        return fmt_tflops(value)
    if unit == "bytes":
        return fmt_bytes(value)
    return fmt_ns(value) if unit == "ns" else fmt_pct(value) if unit == "share" else fmt_count(value)


def change_text(m: dict[str, Any]) -> str:
    """A metric's change as the diff shows it: ``+12.3%``, ``+7.9pt`` for shares."""
    if m["delta"] is None:
        return "only in one"
    if m["unit"] == "share":
        return f"{m['delta'] * 100:+.1f}pt"
    return f"{m['rel'] * 100:+.1f}%" if m["rel"] is not None else "from 0"


def status_tag(row: dict[str, Any]) -> str:
    """`` [new]`` / `` [gone]`` after a kernel, op or annotation name that is in one trace only."""
    return {"new": " [new]", "gone": " [gone]"}.get(row["status"], "")


def verdict_text(result: dict[str, Any]) -> str:
    """The verdict in words true of its numbers: a ``regression`` names what regressed (the
    first three, largest first), and says so when the median step time improved all
    the same: ``regression in GPU busy, GPU idle (+1 more); step time improved 346 ms → 216 ms``."""
    verdict = result["verdict"]
    metrics = result["metrics"]
    if verdict != "regression":
        return verdict
    worse = [metrics[n]["label"] for n in result["headline"] if metrics[n]["verdict"] == "regression"]
    text = f"regression in {', '.join(worse[:3])}" + (f" (+{len(worse) - 3} more)" if len(worse) > 3 else "")
    step = metrics.get("step_p50")
    if step is not None and step["verdict"] == "improvement" and "step_p50" in result["headline"]:
        base, new = value_text(step["base"], step["unit"]), value_text(step["new"], step["unit"])
        text += f"; step time improved {base} → {new}"
    return text


def head_lines(result: dict[str, Any], setup: bool = True) -> list[str]:
    """The first lines of a diff: the two traces and the verdict, why the step changed in the
    findings' terms where one finding explains most of it (``why``), what the runs ran on where it
    differs (unless ``setup`` is False: the app lists it in its table), how the median step
    moved against step-to-step noise (its change and the interval of it), and the notes."""

    lines = [f"{result['base']['path']} → {result['new']['path']}: {verdict_text(result)}"]
    if setup:
        lines += [f"{c['label']} changed: {c['base']} → {c['new']}" for c in result.get("setup", [])]
    if result.get("why"):
        lines.append(result["why"])
    m = result["metrics"].get("step_p50")
    if m is not None and m["ci95"] is not None:
        lines.append(step_noise_line(m))
    elif m is not None:
        lines.append("step time: fewer than 2 steps on a side, no noise estimate")
    lines += [f"note: {n}" for n in result.get("notes", [])]
    return lines


def step_noise_line(m: dict[str, Any]) -> str:
    """How the median step (``step_p50``, with its ``ci95``) moved against step-to-step noise:
    ``step time (step period) within step-to-step noise: median 389 µs → 369 µs (-5.2%), 95%
    interval of its change -30 µs … +5 µs``."""
    from .formatting import fmt_signed_ns

    lo, hi = m["ci95"]
    base, new = value_text(m["base"], m["unit"]), value_text(m["new"], m["unit"])
    return (
        f"step time (step period) {'beyond' if m['significant'] else 'within'} step-to-step noise: "
        f"median {base} → {new} ({change_text(m)}), 95% interval of its change "
        f"{fmt_signed_ns(lo)} … {fmt_signed_ns(hi)}"
    )


def sentence(m: dict[str, Any]) -> str:
    """The takeaway of one changed metric, true of its numbers: ``GPU idle rose from 9.6% to
    17.4% (+7.9pt): a regression.``"""
    if m["delta"] is None:
        return f"{m['label']} is in only one of the two traces."
    verb = "rose" if m["delta"] > 0 else "fell" if m["delta"] < 0 else "stayed"
    words = {"regression": ": a regression", "improvement": ": an improvement"}.get(m["verdict"], "")
    noise = ""
    if m.get("significant") is True:
        noise = ", beyond step-to-step noise"
    elif m.get("significant") is False:
        noise = ", within step-to-step noise"
    base, new = value_text(m["base"], m["unit"]), value_text(m["new"], m["unit"])
    return f"{m['label'][:1].upper()}{m['label'][1:]} {verb} from {base} to {new} ({change_text(m)}{noise}){words}."


#: The keys of :func:`diff`'s result (``profui diff --json``), documented and held by a test.
JSON_DOC = {
    "version": "format version (2)",
    "base": "the base trace: path (as given; a saved baseline: 'NAME (baseline)'), name, ranks, gpus (listed), devices (GPU models that ran its work), "
    "world_size, precision (dominant in kernel time); mfu_basis (what its MFU rests on) where it has one",
    "new": "the new trace, as base",
    "verdict": "'no significant change', 'changed' or 'regression'",
    "setup": "what the runs ran on, where it differs, told before the numbers: [{what (devices|precision|"
    "world_size|cuda_graphs), label, base, new}]",
    "notes": "what the reader should know (a side without step markers: step time not compared; MFU "
    "against different definitions or peaks; a baseline saved before runtime calls were kept; one "
    "saved before step periods, whose device-window step times are not compared)",
    "step_time_significant": "true when the median step time (step period, longest rank) moved beyond "
    "step-to-step noise (the interval is over each run's steps: drift between runs is not in it)",
    "headline": "the metric names that changed, regressions first, largest first",
    "metrics": "per metric: label, unit (ns|share|count|FLOP|TFLOP/s|bytes), better (lower|higher|null), base, new, "
    "delta, rel, changed, significant (step_p50: the 95% bootstrap interval excludes 0; null "
    "without 2 steps a side; achieved_tflops and mfu: false when step_p50 is within noise and FLOPs "
    "per step did not change, as their change is then the step time's), ci95 ([lo, hi] ns of median(new) - median(base)), verdict "
    "(regression|improvement|changed|same)",
    "kernels": "per normalised kernel name: status (new|gone|both), base/new_example (a name as "
    "each trace spells it), base/new total_ns, count, mean_ns, delta_ns; largest |delta_ns| first",
    "ops": "the same for host ops (cpu_op: aten ops, NVTX op ranges), inclusive times",
    "runtime": "the same for runtime and driver calls, with base/new_device_events (the device "
    "events their correlation ids started)",
    "annotations": "the same for annotation names",
    "steps": "per step number both traces have: base_ns, new_ns, delta_ns (step periods)",
    "findings": "per finding of either run, matched by category (straggler: and the late rank): key "
    "(category, or straggler:rR), category, rank (the late rank of a straggler, else null), label, status "
    "(appeared|vanished|grew|shrank|same; vanished also when what is left after a material fall is "
    "at most a tenth of what was, appeared the other way), material (the change of recoverable time is beyond the "
    "step-time noise: half the width of step_p50's ci95, or without it at least 2% of the base; a risk "
    "finding appearing or vanishing), noise_ns (that half-width; null without an estimate), "
    "base/new_ns_per_step (recoverable time per step; null where the run has no such finding), "
    "delta_ns_per_step, left_ns_per_step (what a vanished finding kept, or an appeared one had: a "
    "tenth or less of the other side; else null), base/new_title; material first, largest change first. Empty when a baseline "
    "was saved before findings were kept (a note says so)",
    "why": "why the median step changed, in the findings' terms ('step -20.5 ms: host stall gone "
    "(-20.3 ms per step)'), when one material finding change has the step change's sign and at least "
    "half its size; else null",
    "gate": "the --fail-if verdict (profui schema gate): version, passed, conditions [{condition, metric, "
    "op, threshold, unit, change (in that unit), shown, broken, within_noise (it would break but the step "
    "time moved within step-to-step noise), line}]; null without --fail-if",
}
