"""``profui analyze`` by ranks: a recorded, resumable run of a job's ranks on Dask.

Each rank's tables (:func:`profui.analysis.ranks.rank_result`) are an artifact of their own,
``TRACE/.profui/artifacts/by-rank/<key>/`` (written whole under a temporary name and renamed, as
every stage output is: :func:`.pipeline.artifacts.write_artifact`), keyed by the rank's files (path, size,
mtime), the parameters and the code of the stages it runs; the job's summary is one JSON file
written atomically. The run's record, ``TRACE/.profui/ranks-runs/ranks-<n>.json``, is rewritten
atomically as ranks finish: ``executing``, then ``succeeded``, ``failed`` (naming the rank and
why) or ``stopped``. A rank already computed is never computed again, so ``--resume ranks-<n>``
of a failed or stopped run computes only the ranks that run did not finish.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Mapping
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import msgspec

from profui.capture.format import TraceFormatError, files_fingerprint, write_bytes_atomic
from profui.capture.format.regular import not_regular

from .pipeline.artifacts import artifact_dir, artifact_key, digest, load_files, verify, write_artifact
from .pipeline.errors import PipelineError
from .pipeline.records import Scalar, now_iso
from .pipeline.result import Result

RANKS_RUNS = "ranks-runs"
STAGE = "by-rank"
_ID_RE = re.compile(r"^ranks-(\d+)$")


@dataclass
class RanksRecord:
    """One run by ranks: its status, parameters and what became of each rank.

    ``ranks``: ``{"node=<host>/rank=<r>": {"status": computed | cache | failed | skipped,
    "error": one line or None}}``; ``message``: why the run failed; ``summary``: the job's
    summary file (relative to ``TRACE/.profui``) once it succeeded.
    """

    id: str
    created: str
    status: str = "executing"
    params: dict[str, Scalar] = field(default_factory=dict)
    resume_of: str | None = None
    ranks: dict[str, dict[str, str | None]] = field(default_factory=dict)
    message: str | None = None
    summary: str | None = None
    end: str | None = None

    def counts(self) -> dict[str, int]:
        """Ranks per status."""
        out: dict[str, int] = {}
        for r in self.ranks.values():
            status = str(r["status"])
            out[status] = out.get(status, 0) + 1
        return out


def runs_dir(private: Path) -> Path:
    """``TRACE/.profui/ranks-runs``."""
    return private / RANKS_RUNS


def save(private: Path, rec: RanksRecord) -> None:
    """Write ``rec`` atomically."""
    runs_dir(private).mkdir(parents=True, exist_ok=True)
    write_bytes_atomic(
        runs_dir(private) / f"{rec.id}.json", json.dumps(asdict(rec), indent=1).encode() + b"\n"
    )


def load(private: Path, run_id: str) -> RanksRecord:
    """The record of run ``run_id``; :class:`PipelineError` when there is none."""
    p = runs_dir(private) / f"{run_id}.json"
    problem = not_regular(p)  # a FIFO would block the read
    try:
        if problem is not None:
            raise ValueError(problem)
        # typed decoding: every field checked, scalars only below the declared containers
        return msgspec.json.decode(p.read_bytes(), type=RanksRecord)
    except FileNotFoundError:
        raise PipelineError(f"{p}: no run by ranks {run_id!r} here") from None
    except (OSError, ValueError, msgspec.MsgspecError, RecursionError) as exc:
        why = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
        raise PipelineError(f"{p}: damaged record of a run by ranks ({why})") from None


def is_ranks_run(run_id: str | None) -> bool:
    """Whether ``run_id`` names a run by ranks (``ranks-<n>``)."""
    return bool(run_id and _ID_RE.match(run_id))


def _next_id(private: Path) -> str:
    d = runs_dir(private)
    nums = (
        [int(m.group(1)) for p in d.glob("ranks-*.json") if (m := _ID_RE.match(p.stem))] if d.is_dir() else []
    )
    return f"ranks-{max(nums, default=0) + 1:04d}"


def rank_key(part: Any, params: Mapping[str, Any], code: str, outputs: list[str] | None = None) -> str:
    """The cache key of one rank's tables: its files, the parameters, the stages' code and the
    names of what a rank sends back (``outputs``: an artifact of fewer tables is not reused)."""
    files = files_fingerprint([f.path for f in (*part.events, *part.metrics)], part.path)
    inputs = {"files": digest(files)} | ({"outputs": digest(outputs)} if outputs is not None else {})
    return artifact_key(STAGE, code, params, inputs)


def _file(key: tuple[str, str]) -> str:
    return f"{key[0]}.{key[1]}" + ("" if key[1].endswith(".json") else ".parquet")


def analyze_ranks(
    path: str | Path,
    params: Mapping[str, Any] | None = None,
    *,
    scheduler: str | None = None,
    workers: int | None = None,
    skip_bad_ranks: bool = False,
    resume: str | None = None,
    on_rank: Callable[[int, int, Any], None] | None = None,
) -> tuple[RanksRecord, Result]:
    """Run the job's ranks on Dask, recording the run; returns the record and the job's
    :class:`~profui.analysis.pipeline.result.Result` (:func:`profui.analysis.distributed.job_result`).

    ``resume``: a failed or stopped run by ranks to finish (its parameters are taken). A rank
    that cannot be read fails the run, its record naming the rank, unless ``skip_bad_ranks``;
    a rank whose workers kept dying fails it too (:class:`profui.analysis.distributed.RankFailed`).
    """
    from profui.analysis import jobreduce
    from profui.analysis.cluster import dask_client
    from profui.analysis.distributed import RankFailed, job_result, rank_results
    from profui.analysis.ranks import RankResult, path_shares, rank_parts

    from .pipeline.params import typed_params
    from .pipeline.registry import REGISTRY

    layout, parts = rank_parts(path)
    private = layout.private_dir
    resume_of = None
    if resume is not None:
        old = load(private, resume)
        if old.status not in ("failed", "stopped"):
            raise PipelineError(
                f"{layout.path}: run {resume} is {old.status}; only a failed or stopped run resumes"
            )
        params, resume_of = old.params, old.id
    values = typed_params(REGISTRY.params, params)
    # the stages a rank runs (an on-demand one, the timeline's index, is never run by ranks)
    code = digest([REGISTRY.stages[s].code_version for s in REGISTRY.default_order])
    rec = RanksRecord(_next_id(private), now_iso(), params=dict(values), resume_of=resume_of)
    sent = jobreduce.rank_keys(values)
    files = [_file(k) for k in sent] + ["overview.json"]
    keys = {p.label: rank_key(p, values, code, files) for p in parts}
    results: dict[str, RankResult] = {}
    for p in parts:  # ranks an earlier run finished: from their artifacts
        folder = artifact_dir(private, STAGE, keys[p.label])
        if verify(folder) is not None:
            got = load_files([folder / f for f in files])
            tables = {k: got[folder / _file(k)] for k in sent}
            results[p.label] = RankResult(p.node, p.rank, tables, got[folder / "overview.json"])
            rec.ranks[p.label] = {"status": "cache", "error": None}
    save(private, rec)
    todo = [p for p in parts if p.label not in results]

    def finished(done: int, total: int, r: RankResult) -> None:
        label = f"node={r.node}/rank={r.rank}"
        if r.error is None:
            outputs = {_file(k): v for k, v in r.tables.items()} | {"overview.json": r.overview}
            write_artifact(private, STAGE, keys[label], outputs, tuple(files), {"rank": label})
            rec.ranks[label] = {"status": "computed", "error": None}
        else:
            status = "skipped" if skip_bad_ranks else "failed"
            rec.ranks[label] = {"status": status, "error": f"{r.error_path}: {r.error}"}
        save(private, rec)
        if on_rank is not None:
            on_rank(done + len(parts) - total, len(parts), r)

    try:
        if todo:
            with dask_client(scheduler, workers, len(todo)) as client:
                for r in rank_results(client, todo, values, finished):
                    results[f"node={r.node}/rank={r.rank}"] = r
        ordered = path_shares(None, parts, [results[p.label] for p in parts], values, skip_bad_ranks)
        result = job_result(layout, ordered, values, skip_bad_ranks)
        summary = result.outputs["summary"]["summary.json"]
    except KeyboardInterrupt:
        rec.status, rec.end = "stopped", now_iso()
        save(private, rec)
        raise
    except (TraceFormatError, RankFailed) as exc:
        rec.status, rec.message, rec.end = "failed", str(exc), now_iso()
        save(private, rec)
        then = f"; run {rec.id} failed (--resume {rec.id} finishes it)"
        if isinstance(exc, TraceFormatError):
            raise TraceFormatError(exc.path, exc.problem + then) from None
        raise RankFailed(str(exc) + then) from None
    rel = f"{RANKS_RUNS}/{rec.id}.summary.json"
    write_bytes_atomic(private / rel, json.dumps(summary.to_json_dict(), allow_nan=False).encode() + b"\n")
    rec.status, rec.summary, rec.end = "succeeded", rel, now_iso()
    save(private, rec)
    return rec, result
