"""Run records: one JSON file per run under ``TRACE/.profui/runs/<id>.json``, written atomically."""

from __future__ import annotations

import json
import re
from dataclasses import asdict, dataclass, field, fields
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from profui.capture.format import TraceFormatError, write_bytes_atomic

from .errors import PipelineError

RUNS = "runs"
RUN_STATUSES = ("executing", "succeeded", "failed", "stopped")
#: pending: not started yet; skipped: not selected and not needed (downstream of the selection,
#: or after a failure); succeeded covers computed, cache and reused outputs.
STAGE_STATUSES = ("pending", "running", "succeeded", "failed", "stopped", "skipped")
PROVENANCES = ("computed", "cache", "reused")
_ID_RE = re.compile(r"^run-(\d+)$")


def now_iso() -> str:
    """Current UTC time, ISO 8601 with milliseconds."""
    return datetime.now(timezone.utc).isoformat(timespec="milliseconds")


def seconds_between(start: str | None, end: str | None) -> float | None:
    """Seconds from ``start`` to ``end`` (ISO strings), or None if either is missing."""
    if not start or not end:
        return None
    return (datetime.fromisoformat(end) - datetime.fromisoformat(start)).total_seconds()


@dataclass
class StageRecord:
    """What happened to one stage in one run.

    ``provenance`` says where a succeeded stage's output came from: ``computed`` here, ``cache``
    (an earlier identical computation, made by ``origin_run``) or ``reused`` from the reference
    run ``source_run`` (``origin_run`` is the run that computed it). ``attempt`` is 1 for a first
    try and n + 1 when the reference run's same stage failed or was stopped at attempt n (a
    resume). ``params`` are the output-affecting parameters the stage declares; ``key`` the
    cache key and ``artifact`` the output folder (relative to ``TRACE/.profui``).
    """

    name: str
    status: str = "pending"
    provenance: str | None = None
    source_run: str | None = None
    origin_run: str | None = None
    start: str | None = None
    end: str | None = None
    attempt: int = 0
    params: dict[str, Any] = field(default_factory=dict)
    code_version: str | None = None
    inputs: dict[str, str] = field(default_factory=dict)
    key: str | None = None
    artifact: str | None = None  # folder relative to TRACE/.profui
    output_hash: str | None = None
    error: str | None = None
    traceback: str | None = None
    #: When the stage failed on input it cannot read (a TraceFormatError, not a bug): the file
    #: and the problem (``{"path", "problem"}``), to be said as every command says bad input.
    bad_input: dict[str, str] | None = None

    @property
    def seconds(self) -> float | None:
        """Wall time of the stage in this run."""
        return seconds_between(self.start, self.end)


@dataclass
class RunRecord:
    """One ``profui analyze`` run.

    ``selection`` is None for a full run; ``reference`` the run whose parameters (and, for a
    selective run, outputs) this one started from; ``resume_of`` the run a ``--resume`` finishes.
    ``pid`` is the process that executed it (used to tell a live run from a killed one).
    """

    id: str
    created: str
    status: str = "executing"
    params: dict[str, Any] = field(default_factory=dict)
    selection: list[str] | None = None  # None: every stage
    reference: str | None = None
    resume_of: str | None = None
    ended: str | None = None
    error: str | None = None
    pid: int = 0
    stages: dict[str, StageRecord] = field(default_factory=dict)

    @property
    def seconds(self) -> float | None:
        """Wall time of the run (None while executing)."""
        return seconds_between(self.created, self.ended)

    def bad_input(self) -> TraceFormatError | None:
        """The error of the stage that failed on input it cannot read, when that is why the run
        failed (to be raised, so that it is said as all bad input is); else None."""
        for s in self.stages.values():
            bad = s.bad_input if s.status == "failed" and isinstance(s.bad_input, dict) else {}
            if bad.get("path") and bad.get("problem"):
                return TraceFormatError(bad["path"], bad["problem"])
        return None

    def counts(self) -> dict[str, int]:
        """Stages by provenance (computed/cache/reused) and failed/stopped/skipped counts."""
        out = {k: 0 for k in ("computed", "cache", "reused", "failed", "stopped", "skipped")}
        for s in self.stages.values():
            if s.status == "succeeded" and s.provenance in out:
                out[s.provenance] += 1
            elif s.status in ("failed", "stopped", "skipped"):
                out[s.status] += 1
        return out

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready dict (stages in pipeline order)."""
        d = asdict(self)
        d["stages"] = [asdict(s) for s in self.stages.values()]
        d["seconds"] = self.seconds
        d["counts"] = self.counts()
        return d

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> RunRecord:
        """Inverse of :meth:`to_dict` (unknown keys ignored)."""
        known = {f.name for f in fields(cls)} - {"stages"}
        rec = cls(**{k: v for k, v in data.items() if k in known})
        sknown = {f.name for f in fields(StageRecord)}
        for s in data.get("stages", []):
            st = StageRecord(**{k: v for k, v in s.items() if k in sknown})
            rec.stages[st.name] = st
        return rec


def runs_dir(private_dir: Path) -> Path:
    """``TRACE/.profui/runs``."""
    return private_dir / RUNS


def save(private_dir: Path, record: RunRecord) -> Path:
    """Write a run record atomically (no fsync: it is rewritten at every stage change)."""
    path = runs_dir(private_dir) / f"{record.id}.json"
    write_bytes_atomic(path, json.dumps(record.to_dict(), indent=1).encode() + b"\n", fsync=False)
    return path


def load(private_dir: Path, run_id: str) -> RunRecord:
    """Read one run record; PipelineError if absent or unreadable."""
    path = runs_dir(private_dir) / f"{run_id}.json"
    try:
        return RunRecord.from_dict(json.loads(path.read_bytes()))
    except FileNotFoundError:
        raise PipelineError(f"{path.parent.parent.parent}: no run {run_id}") from None
    except (OSError, ValueError, TypeError) as exc:
        raise PipelineError(f"{path}: unreadable run record ({exc})") from None


def _number(run_id: str) -> int:
    m = _ID_RE.match(run_id)
    return int(m.group(1)) if m else -1


def list_runs(private_dir: Path) -> list[RunRecord]:
    """Every readable run record, oldest first."""
    folder = runs_dir(private_dir)
    if not folder.is_dir():
        return []
    out = []
    for p in folder.glob("run-*.json"):
        try:
            out.append(RunRecord.from_dict(json.loads(p.read_bytes())))
        except (OSError, ValueError, TypeError):
            continue  # a foreign or damaged file is not a run
    out.sort(key=lambda r: (_number(r.id), r.created))
    return out


def next_id(private_dir: Path) -> str:
    """The next run id (``run-0001``, ``run-0002``, ...); call while holding the lock."""
    folder = runs_dir(private_dir)
    nums = [_number(p.stem) for p in folder.glob("run-*.json")] if folder.is_dir() else []
    return f"run-{max(nums, default=0) + 1:04d}"


def normalise_id(spec: str) -> str:
    """Accept ``run-0007``, ``7`` or ``0007`` for a run id."""
    spec = spec.strip()
    if spec.isdigit():
        return f"run-{int(spec):04d}"
    return spec
