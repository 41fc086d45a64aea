"""A job of many ranks assembled from the real two-rank trace (for the tests of runs by ranks).

The corpus has no trace of more than two ranks, so this builds one: the real
``hta-trace_filter-sampled_rank-0``/``-1`` Kineto files imported with profui's importer, and
their two ``rank=`` partitions copied (byte for byte) to ``n`` ranks, relabelled ``rank=k`` on
``node=host<k // 8>``, even ranks from rank 0, odd from rank 1. The manifest is rewritten to
list those hosts, ranks and GPUs. Every events file is real; only the layout is synthetic.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

from profui.capture.kineto import import_kineto

from realdata import shared_trace

SOURCES = ("hta-trace_filter-sampled_rank-0.json.gz", "hta-trace_filter-sampled_rank-1.json.gz")


def import_two_ranks(out: Path) -> Path:
    """The real two-rank trace, imported into ``out``."""
    import_kineto([shared_trace(n) for n in SOURCES], out)
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
