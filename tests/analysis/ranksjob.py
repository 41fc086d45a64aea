"""A job of many ranks assembled from the real two-rank trace (for the tests of runs by ranks).

:func:`kineto_rank_files` writes Kineto files for an import of many ranks: the two real files
(sampled ranks 0 and 1 of a 128-rank job) copied with ``distributedInfo.rank`` relabelled; every
other byte of their events is theirs.

The corpus has no trace of more than two ranks, so this builds one: the real
``hta-trace_filter-sampled_rank-0``/``-1`` Kineto files imported with profui's importer, and
their two ``rank=`` partitions copied (byte for byte) to ``n`` ranks, relabelled ``rank=k`` on
``node=host<k // 8>``, even ranks from rank 0, odd from rank 1. The manifest is rewritten to
list those hosts, ranks and GPUs. Every events file is real; only the layout is synthetic.
"""

from __future__ import annotations

import gzip
import json
import shutil
from pathlib import Path

import pyarrow.parquet as pq

from profui.capture.ingest import import_trace

from realdata import shared_trace

SOURCES = ("hta-trace_filter-sampled_rank-0.json.gz", "hta-trace_filter-sampled_rank-1.json.gz")


def import_two_ranks(out: Path) -> Path:
    """The real two-rank trace, imported into ``out``."""
    import_trace([shared_trace(n) for n in SOURCES], out)
    return out


def job_of(two_ranks: Path, out: Path, n: int, drop: tuple[int, ...] = ()) -> Path:
    """``n`` ranks relabelled from ``two_ranks``' partitions into ``out``; the files of ranks
    ``drop`` left out (the manifest still lists the job's ``n`` ranks, as a job's would)."""
    parts = sorted(two_ranks.glob("node=*/rank=*"))
    out.mkdir(parents=True)
    manifest = json.loads((two_ranks / "manifest.json").read_text())
    gpus = []
    for k in range(n):
        gpus.append({"node": f"host{k // 8:02d}", "id": k % len(parts)})
        if k in drop:
            continue
        dst = out / f"node=host{k // 8:02d}" / f"rank={k}"
        dst.mkdir(parents=True)
        for f in parts[k % len(parts)].glob("events-*.parquet"):
            shutil.copyfile(f, dst / f.name)
    manifest.update(
        name=f"job{n}",
        hosts=sorted({f"host{k // 8:02d}" for k in range(n)}),
        ranks=list(range(n)),
        gpus=gpus,
        sources=[],
    )
    (out / "manifest.json").write_text(json.dumps(manifest))
    return out


def kineto_rank_files(out: Path, n: int) -> list[Path]:
    """``n`` Kineto files ``rank-<k>.json.gz`` in ``out``: rank ``k`` is the real sampled rank
    ``k % 2`` with its ``distributedInfo.rank`` set to ``k`` (the job's world size, 128, kept)."""
    out.mkdir(parents=True, exist_ok=True)
    docs = [json.loads(gzip.decompress(shared_trace(name).read_bytes())) for name in SOURCES]
    files = []
    for k in range(n):
        doc = docs[k % 2]
        doc["distributedInfo"]["rank"] = k
        files.append(out / f"rank-{k}.json.gz")
        files[-1].write_bytes(gzip.compress(json.dumps(doc).encode(), compresslevel=1))
    return files


def assert_same_trace(got: Path, want: Path) -> None:
    """Every events file of ``got`` at ``want``'s path with an equal table; the manifests equal
    but for the trace's name; nothing else in ``got`` (its cache store, ``.profui/``, where
    ``profui import`` keeps the events' tallies, is no part of the trace)."""

    def listing(trace: Path) -> list[Path]:
        return sorted(
            p.relative_to(trace)
            for p in trace.rglob("*")
            if p.is_file() and ".profui" not in p.relative_to(trace).parts
        )

    files = listing(got)
    assert files == listing(want)
    for rel in files:
        if rel.suffix == ".parquet":
            assert pq.read_table(got / rel).equals(pq.read_table(want / rel)), rel
    manifests = [json.loads((t / "manifest.json").read_text()) for t in (got, want)]
    for m in manifests:
        m.pop("name")
    assert manifests[0] == manifests[1]
