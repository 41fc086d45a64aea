"""Which traces are one job: the one identity rule every grouping of traces follows.

A trace source (a file being imported, or a trace folder) says what it can about the job it
belongs to, as a :class:`Part`: the capture's own job id (profcap's ``capture.job_id``), the host
name the trace records, ``distributedInfo``'s world size, backend and rank, and when it ran.

Two parts are one job when

- both carry a job id: exactly when the ids are equal (the capture knows, nothing else counts);
- otherwise: they overlap in time (a part still running is open-ended), and nothing they both
  state disagrees: the world size, the process group's backend, and no rank twice (two traces of
  rank 0 at the same time are two jobs).

Host names never join two parts (the ranks of one job run on many hosts); they only make the
reason clearer when two parts are apart. Jobs are the connected groups of that relation
(:func:`group_jobs`); :func:`not_one_job` is the one line that refuses a mix.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from pathlib import Path

from .errors import TraceFormatError
from .manifest import Manifest


@dataclass(frozen=True)
class Part:
    """What one trace source says about its job (``None``: it does not say)."""

    label: str  # how a message names the source (its file or folder name)
    start_ns: int | None = None
    end_ns: int | None = None  # None with a start: still running, open-ended
    host: str | None = None
    job_id: str | None = None
    world_size: int | None = None
    backend: str | None = None
    ranks: frozenset[int] = field(default_factory=frozenset)


class NotOneJob(TraceFormatError):
    """Sources that are several jobs where one was asked for; ``str()`` names them and why."""

    def __init__(self, labels: list[str], problem: str, path: str | Path) -> None:
        super().__init__(path, problem)
        self.labels = labels
        self.args = (f"{', '.join(labels)}: {self.problem}",)

    def __reduce__(self) -> tuple:
        return (type(self), (self.labels, self.problem, self.path))

    def __str__(self) -> str:
        return str(self.args[0])


def part_from_distributed_info(info: object) -> dict:
    """The ``world_size``, ``backend`` and ``rank`` a Kineto ``distributedInfo`` states, as
    :class:`Part` keyword arguments (``ranks`` a one-rank set)."""
    out: dict = {}
    if not isinstance(info, dict):
        return out
    ws = info.get("world_size")
    if isinstance(ws, int) and not isinstance(ws, bool) and ws > 0:
        out["world_size"] = ws
    backend = info.get("backend")
    if isinstance(backend, str) and backend:
        out["backend"] = backend
    rank = info.get("rank")
    if isinstance(rank, int) and not isinstance(rank, bool) and rank >= 0:
        out["ranks"] = frozenset({rank})
    return out


def part_of_manifest(manifest: Manifest, label: str) -> Part:
    """What a trace folder's manifest says about its job: profcap's job id and ranks (a capture
    knows them), an import's ``distributedInfo`` (ranks only where the file stated them); its
    host when it ran on one; a running capture open-ended."""
    capture = manifest.capture or {}
    job_id = capture.get("job_id") if isinstance(capture.get("job_id"), str) else None
    stated: dict = {}
    if manifest.source == "profcap":
        stated["ranks"] = frozenset(manifest.ranks)
    else:
        infos = [
            s.get("metadata", {}).get("distributedInfo") for s in manifest.sources if isinstance(s, dict)
        ]
        first = part_from_distributed_info(infos[0]) if infos else {}
        stated = {k: v for k, v in first.items() if k != "ranks"}
        stated["ranks"] = frozenset(
            s["rank"]
            for s in manifest.sources
            if isinstance(s, dict)
            and s.get("rank_from") == "distributedInfo"
            and isinstance(s.get("rank"), int)
        )
    running = manifest.status == "running"
    return Part(
        label=label,
        start_ns=manifest.start_ns,
        end_ns=None if running else manifest.end_ns,
        host=manifest.hosts[0] if len(manifest.hosts) == 1 and manifest.source == "profcap" else None,
        job_id=job_id,
        **stated,
    )


def _day(ns: int) -> str:
    return time.strftime("%Y-%m-%d", time.gmtime(ns / 1e9))


def _when(a: int, b: int) -> tuple[str, str]:
    """Two instants as dates, or as times of day when they fall on the same day."""
    da, db = _day(a), _day(b)
    if da != db:
        return da, db
    fmt = "%Y-%m-%d %H:%M:%S"
    return time.strftime(fmt, time.gmtime(a / 1e9)), time.strftime(fmt, time.gmtime(b / 1e9))


def _overlap(a: Part, b: Part) -> bool:
    if a.start_ns is None or b.start_ns is None:
        return False
    a_end = a.end_ns if a.end_ns is not None else float("inf")
    b_end = b.end_ns if b.end_ns is not None else float("inf")
    return a.start_ns <= b_end and b.start_ns <= a_end


def why_apart(a: Part, b: Part) -> str | None:
    """Why ``a`` and ``b`` cannot be one job, or None when they can (see the module docstring)."""
    if a.job_id is not None and b.job_id is not None:
        return None if a.job_id == b.job_id else f"different job ids: {a.job_id} vs {b.job_id}"
    reasons = []
    if a.host and b.host and a.host != b.host:
        reasons.append("different hosts")
    if not _overlap(a, b):
        if a.start_ns is None or b.start_ns is None:
            reasons.append("no times to compare")
        else:
            first, second = _when(a.start_ns, b.start_ns)
            reasons.append(f"no overlap in time: {first} vs {second}")
        return ", ".join(reasons)
    clashes = []
    if a.world_size and b.world_size and a.world_size != b.world_size:
        clashes.append(f"world sizes {a.world_size} vs {b.world_size}")
    if a.backend and b.backend and a.backend != b.backend:
        clashes.append(f"backends {a.backend} vs {b.backend}")
    both = a.ranks & b.ranks
    if both:
        clashes.append(f"both rank {min(both)}")
    if not clashes:
        return None
    return ", ".join([*reasons, *clashes])


def group_jobs(parts: list[Part]) -> list[list[int]]:
    """The jobs among ``parts``: lists of indexes into ``parts``, each in input order; the
    largest job first (ties: the one that started first), then by start."""
    parent = list(range(len(parts)))

    def root(i: int) -> int:
        while parent[i] != i:
            parent[i] = parent[parent[i]]
            i = parent[i]
        return i

    for i in range(len(parts)):
        for j in range(i + 1, len(parts)):
            if root(i) != root(j) and why_apart(parts[i], parts[j]) is None:
                parent[root(j)] = root(i)
    groups: dict[int, list[int]] = {}
    for i in range(len(parts)):
        groups.setdefault(root(i), []).append(i)

    def start(g: list[int]) -> int:
        starts = [parts[i].start_ns for i in g]
        return min((s for s in starts if s is not None), default=0)

    return sorted(groups.values(), key=lambda g: (-len(g), start(g), g[0]))


def not_one_job(parts: list[Part], groups: list[list[int]], hint: str, path: str | Path) -> NotOneJob:
    """The error for ``parts`` that are several jobs (``groups`` from :func:`group_jobs`): it
    names the parts outside the first job and why the first of them is apart from it, then
    ``hint`` (what to do instead). ``path`` is the error's path (a file outside the job)."""
    main, others = groups[0], [i for g in groups[1:] for i in g]
    why = why_apart(parts[others[0]], parts[main[0]]) or "not connected to it"
    job = ", ".join(parts[i].label for i in main[:3]) + (f" +{len(main) - 3}" if len(main) > 3 else "")
    labels = [parts[i].label for i in others]
    problem = f"not one job with {job} ({why}); {hint}"
    return NotOneJob(labels, problem, path)
