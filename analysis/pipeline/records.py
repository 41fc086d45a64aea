"""Run records: one JSON file per run under ``TRACE/.profui/runs/<id>.json``, written atomically."""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import Annotated, Any, Literal, get_args

import msgspec

from profui.capture.format import TraceFormatError, write_bytes_atomic
from profui.capture.format.liveness import capture_gone, this_host
from profui.capture.format.regular import not_regular

from .errors import PipelineError

RUNS = "runs"
RunStatus = Literal["executing", "succeeded", "failed", "stopped", "interrupted"]
#: pending: not started yet; skipped: not selected and not needed (downstream of the selection,
#: or after a failure); succeeded covers computed, cache and reused outputs.
StageStatus = Literal["pending", "running", "succeeded", "failed", "stopped", "skipped"]
Provenance = Literal["computed", "cache", "reused"]
RUN_STATUSES: tuple[str, ...] = get_args(RunStatus)
STAGE_STATUSES: tuple[str, ...] = get_args(StageStatus)
PROVENANCES: tuple[str, ...] = get_args(Provenance)
#: A parameter's value in a record (parameters are int, float, str or bool).
Scalar = bool | int | float | str | None
RunId = Annotated[str, msgspec.Meta(pattern=r"^run-[0-9]+$")]
_ID_RE = re.compile(r"^run-(\d+)$")
#: What a run whose process died before recording an outcome reads as.
INTERRUPTED = "ended without recording an outcome (its process is gone: killed?)"


def now_iso() -> str:
    """Current UTC time, ISO 8601 with milliseconds."""
    return datetime.now(timezone.utc).isoformat(timespec="milliseconds")


def seconds_between(start: str | None, end: str | None) -> float | None:
    """Seconds from ``start`` to ``end`` (ISO strings), or None if either is missing."""
    if not start or not end:
        return None
    return (datetime.fromisoformat(end) - datetime.fromisoformat(start)).total_seconds()


def _check_times(*times: str | None) -> None:
    """Raise ValueError unless each time is absent or an ISO 8601 time with its UTC offset (what
    :func:`now_iso` writes), so that :func:`seconds_between` of a decoded record cannot fail."""
    for t in times:
        if t is not None and datetime.fromisoformat(t).tzinfo is None:
            raise ValueError(f"time {t!r} has no UTC offset")


# The records are msgspec Structs that refuse unknown fields and hold only scalars below their
# declared containers: decoding a file checks every type, and no nesting deeper than the schema's
# own few levels is ever descended into (nothing is skipped unread).
class StageRecord(msgspec.Struct, forbid_unknown_fields=True):
    """What happened to one stage in one run.

    ``provenance`` says where a succeeded stage's output came from: ``computed`` here, ``cache``
    (an earlier identical computation, made by ``origin_run``) or ``reused`` from the reference
    run ``source_run`` (``origin_run`` is the run that computed it). ``attempt`` is 1 for a first
    try and n + 1 when the reference run's same stage failed or was stopped at attempt n (a
    resume). ``params`` are the output-affecting parameters the stage declares; ``key`` the
    cache key and ``artifact`` the output folder (relative to ``TRACE/.profui``).
    """

    name: str
    status: StageStatus = "pending"
    provenance: Provenance | None = None
    source_run: RunId | None = None
    origin_run: RunId | None = None
    start: str | None = None
    end: str | None = None
    attempt: Annotated[int, msgspec.Meta(ge=0)] = 0
    params: dict[str, Scalar] = {}
    code_version: str | None = None
    inputs: dict[str, str] = {}
    key: str | None = None
    # folder relative to TRACE/.profui: artifacts/<stage>/<key>, nothing that leads elsewhere
    artifact: Annotated[str, msgspec.Meta(pattern=r"^artifacts/[A-Za-z0-9_-]+/[0-9a-f]+$")] | None = None
    output_hash: str | None = None
    error: str | None = None
    traceback: str | None = None
    #: When the stage failed on input it cannot read (a TraceFormatError, not a bug): the file
    #: and the problem (``{"path", "problem"}``), to be said as every command says bad input.
    bad_input: dict[str, str] | None = None

    def __post_init__(self) -> None:
        _check_times(self.start, self.end)

    @property
    def seconds(self) -> float | None:
        """Wall time of the stage in this run."""
        return seconds_between(self.start, self.end)


class _RunFields(msgspec.Struct, forbid_unknown_fields=True):
    id: RunId
    created: str
    status: RunStatus = "executing"
    params: dict[str, Scalar] = {}
    selection: list[str] | None = None  # None: every stage
    reference: RunId | None = None
    resume_of: RunId | None = None
    ended: str | None = None
    error: str | None = None
    pid: Annotated[int, msgspec.Meta(ge=0, lt=2**31)] = 0  # a pid_t
    host: str | None = None

    def __post_init__(self) -> None:
        _check_times(self.created, self.ended)


class RunRecord(_RunFields):
    """One ``profui analyze`` run.

    ``selection`` is None for a full run; ``reference`` the run whose parameters (and, for a
    selective run, outputs) this one started from; ``resume_of`` the run a ``--resume`` finishes.
    ``pid`` and ``host`` are the process that executed it (used to tell a live run from a killed
    one: :func:`settle`).
    """

    stages: dict[str, StageRecord] = {}

    @property
    def seconds(self) -> float | None:
        """Wall time of the run (None while executing)."""
        return seconds_between(self.created, self.ended)

    def bad_input(self) -> TraceFormatError | None:
        """The error of the stage that failed on input it cannot read, when that is why the run
        failed (to be raised, so that it is said as all bad input is); else None."""
        for s in self.stages.values():
            bad = s.bad_input if s.status == "failed" and s.bad_input is not None else {}
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
        d: dict[str, Any] = msgspec.to_builtins(self)
        d["stages"] = list(d["stages"].values())
        d["seconds"] = self.seconds
        d["counts"] = self.counts()
        return d


class _RunFile(_RunFields):
    """A run record as :func:`save` writes it: the stages a list, the derived figures beside."""

    stages: list[StageRecord] = []
    seconds: float | None = None
    counts: dict[str, int] = {}


_DECODE = msgspec.json.Decoder(_RunFile).decode


class DamagedRecord(ValueError):
    """A run record file that is not one; ``str()`` says what is wrong, in one line."""


def decode(data: bytes) -> RunRecord:
    """The run record in ``data`` (a file's bytes), every field's type checked; DamagedRecord
    when it is not a run record (bad JSON, wrong types, unknown fields, a stage twice)."""
    try:
        doc = _DECODE(data)
    except msgspec.MsgspecError as exc:
        raise DamagedRecord(str(exc).splitlines()[0] if str(exc) else type(exc).__name__) from None
    except RecursionError:  # defence in depth: the closed schema stops any deep nesting first
        raise DamagedRecord("nested too deep") from None
    rec = RunRecord(**{f: getattr(doc, f) for f in _RunFields.__struct_fields__})
    for s in doc.stages:
        if s.name in rec.stages:
            raise DamagedRecord(f"stage {s.name} recorded twice")
        rec.stages[s.name] = s
    return rec


def process_gone(rec: RunRecord) -> bool:
    """Whether ``rec`` is ``executing`` but the process that executed it is gone (the capture's
    liveness rule; a record without a host, from before hosts were recorded, is this host's)."""
    return rec.status == "executing" and capture_gone({"pid": rec.pid, "host": rec.host or this_host()})


def interrupt(rec: RunRecord) -> None:
    """Mark ``rec``, whose process died while executing it, ``interrupted`` (its running stage
    ``stopped``), in place."""
    msg = f"process {rec.pid} {INTERRUPTED}"
    for s in rec.stages.values():
        if s.status == "running":
            s.status, s.error = "stopped", msg
    rec.status, rec.error = "interrupted", msg


def runs_dir(private_dir: Path) -> Path:
    """``TRACE/.profui/runs``."""
    return private_dir / RUNS


def save(private_dir: Path, record: RunRecord) -> Path:
    """Write a run record atomically (no fsync: it is rewritten at every stage change)."""
    path = runs_dir(private_dir) / f"{record.id}.json"
    write_bytes_atomic(path, json.dumps(record.to_dict(), indent=1).encode() + b"\n", fsync=False)
    return path


def read(path: Path) -> RunRecord:
    """The run record in file ``path``; DamagedRecord when it is not one (FileNotFoundError
    when absent). A FIFO or device is refused unopened: reading one would block."""
    problem = not_regular(path)
    if problem is not None:
        raise DamagedRecord(problem)
    try:
        data = path.read_bytes()
    except FileNotFoundError:
        raise
    except OSError as exc:
        raise DamagedRecord(exc.strerror or str(exc)) from None
    rec = decode(data)
    if rec.id != path.stem:  # the id names the file a repair rewrites: never another one
        raise DamagedRecord(f"it records run {rec.id}")
    return rec


def load(private_dir: Path, run_id: str) -> RunRecord:
    """Read one run record (settled: :func:`settle`); PipelineError if absent or damaged."""
    path = runs_dir(private_dir) / f"{run_id}.json"
    try:
        return settle(read(path))
    except FileNotFoundError:
        raise PipelineError(f"{path.parent.parent.parent}: no run {run_id}") from None
    except DamagedRecord as exc:
        raise PipelineError(f"{path}: damaged run record ({exc})") from None


def settle(rec: RunRecord) -> RunRecord:
    """``rec`` as it reads now: an ``executing`` run whose process is gone is ``interrupted``."""
    if process_gone(rec):
        interrupt(rec)
    return rec


def run_number(run_id: str) -> int:
    """The number of ``run-0007`` (7); -1 for what is not a run id."""
    m = _ID_RE.match(run_id)
    return int(m.group(1)) if m else -1


@dataclass(frozen=True)
class Damaged:
    """A file under ``runs/`` named like a run record that is not one."""

    id: str
    path: Path
    problem: str


def scan(private_dir: Path) -> tuple[list[RunRecord], list[Damaged]]:
    """Every run record as written (oldest first), and the damaged ones."""
    folder = runs_dir(private_dir)
    if not folder.is_dir():
        return [], []
    out: list[RunRecord] = []
    damaged: list[Damaged] = []
    for p in folder.glob("run-*.json"):
        try:
            out.append(read(p))
        except FileNotFoundError:
            continue  # removed since the listing (a prune)
        except DamagedRecord as exc:
            damaged.append(Damaged(p.stem, p, str(exc)))
    out.sort(key=lambda r: (run_number(r.id), r.created))
    damaged.sort(key=lambda d: (run_number(d.id), d.id))
    return out, damaged


def list_runs(private_dir: Path) -> list[RunRecord]:
    """Every readable run record, oldest first, settled (:func:`settle`); a damaged one is not
    a run (:func:`scan` names them)."""
    return [settle(r) for r in scan(private_dir)[0]]


def next_id(private_dir: Path) -> str:
    """The next run id (``run-0001``, ``run-0002``, ...); call while holding the lock."""
    folder = runs_dir(private_dir)
    nums = [run_number(p.stem) for p in folder.glob("run-*.json")] if folder.is_dir() else []
    return f"run-{max(nums, default=0) + 1:04d}"


def normalise_id(spec: str) -> str:
    """Accept ``run-0007``, ``7`` or ``0007`` for a run id."""
    spec = spec.strip()
    if spec.isdigit():
        return f"run-{int(spec):04d}"
    return spec
