"""Client memory of a job summary by ranks (Dask) against the whole trace in one process.

Builds jobs of 8 and 64 ranks from the real two-rank trace (``hta-trace_filter-sampled_rank-0``
/``-1``: real events files copied to every rank, relabelled; see ``tests/analysis/ranksjob.py``)
and summarises each, in a fresh process, two ways:

- ``in-process``: the whole trace in one process (``profui summary``'s path for a small trace);
- ``cluster``   : by ranks on an embedded Dask ``LocalCluster`` of ``--workers`` processes
                  (``profui summary --workers N``); the client gathers per-rank tables only.

Per run: wall seconds (the fresh process from outside) and the client's own peak RSS
(``getrusage(RUSAGE_SELF)``: the workers are other processes). The last lines are the ratios:
client peak RSS at 64 ranks over 8 ranks for each path (flat for the cluster, growing with the
events for the whole trace), and cluster over in-process at 64 ranks.

    PROFUI_TRACES=/work/shared/traces .venv/bin/python benchmarks/ranks_scale.py [--workers 2] [--ranks 8,64]
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests" / "analysis"))

from ranksjob import import_two_ranks, job_of  # noqa: E402

CHILD = """
import json, resource, sys
from pathlib import Path
from profui.tui.cli.summary_cmd import run_summary
workers = int(sys.argv[2]) or None
s = run_summary(Path(sys.argv[1]), None, False, None, workers=workers)
doc = json.dumps(s.to_json_dict())
print(json.dumps({"rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, "tables":
    sum(len(t) for t in s.sections.values())}))
"""


def run(job: Path, workers: int) -> dict:
    """One summary of ``job`` in a fresh process (``workers`` 0: the whole trace in process)."""
    t = time.perf_counter()
    res = subprocess.run(
        [sys.executable, "-c", CHILD, str(job), str(workers)], capture_output=True, text=True, check=True
    )
    out = json.loads(res.stdout.strip().splitlines()[-1])
    out["wall_s"] = time.perf_counter() - t
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--ranks", default="8,64")
    args = ap.parse_args()
    sizes = [int(n) for n in args.ranks.split(",")]
    with tempfile.TemporaryDirectory(prefix="profui-ranks-") as tmp:
        two = import_two_ranks(Path(tmp) / "t2")
        rows = {}
        print(f"{'ranks':>5}  {'path':<10}  {'wall s':>7}  {'client peak RSS MB':>18}  tables")
        for n in sizes:
            job = job_of(two, Path(tmp) / f"job{n}", n)
            for mode, workers in (("in-process", 0), ("cluster", args.workers)):
                r = rows[(n, mode)] = run(job, workers)
                print(f"{n:>5}  {mode:<10}  {r['wall_s']:>7.1f}  {r['rss_mb']:>18.0f}  {r['tables']}")
        lo, hi = min(sizes), max(sizes)
        for mode in ("in-process", "cluster"):
            ratio = rows[(hi, mode)]["rss_mb"] / rows[(lo, mode)]["rss_mb"]
            print(f"client peak RSS {hi} / {lo} ranks, {mode}: {ratio:.2f}x")
        c, w = rows[(hi, "cluster")], rows[(hi, "in-process")]
        print(
            f"at {hi} ranks, cluster / in-process: client peak RSS {c['rss_mb'] / w['rss_mb']:.2f}x, "
            f"wall {c['wall_s'] / w['wall_s']:.2f}x"
        )


if __name__ == "__main__":
    main()
