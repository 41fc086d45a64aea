"""``profui import`` of many rank files: one by one in one process against the files as tasks on
a local Dask cluster (``--workers N``).

Synthetic layout from a real trace: the shared ``hta-df_index_resolver`` Kineto file (216k
events, 54 MB of JSON) written ``--ranks`` times as ``rank-<k>.json.gz``, its
``distributedInfo`` set to rank ``k`` of ``--ranks`` (every event is the real file's). Each run
is a fresh process, timed from outside; peak RSS is the importing process's own (``VmHWM``) and
the largest of its children's (the cluster's workers: each converts one file at a time). Medians of
``--repeat`` runs, the two kinds alternating so both see the same machine load. The last line
is the ratio one-by-one / cluster for wall time, and the peak memory of one worker against the
one-by-one process.

    PROFUI_TRACES=/work/shared/traces .venv/bin/python benchmarks/import_ranks.py [--ranks 8] [--workers 2] [--repeat 3]
"""

from __future__ import annotations

import argparse
import gzip
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

SOURCE = "hta-df_index_resolver-df_index_resolver.json.gz"

CHILD = """
import json, resource, sys
from pathlib import Path
from profui.tui.cli.import_cmd import run_import
files, out, workers = [Path(p) for p in sys.argv[3:]], Path(sys.argv[1]), int(sys.argv[2])
if workers:
    run_import(files, out, None, None, False, workers=workers)
else:  # one by one, in this process, whatever the default would choose
    from profui.capture.ingest import import_trace
    import_trace(files, out)
# VmHWM, not getrusage's ru_maxrss: that survives exec, so it would report this benchmark's own
# peak (it held the JSON while writing the files) for a child that never came near it
hwm = next(int(ln.split()[1]) for ln in open("/proc/self/status") if ln.startswith("VmHWM:"))
kids = resource.getrusage(resource.RUSAGE_CHILDREN)
print(json.dumps({"rss_mb": hwm / 1024, "child_rss_mb": kids.ru_maxrss / 1024}))
"""


def rank_files(src: Path, out: Path, n: int) -> list[Path]:
    doc = json.loads(gzip.decompress(src.read_bytes()))
    files = []
    for k in range(n):
        doc["distributedInfo"] = {**doc.get("distributedInfo", {}), "rank": k, "world_size": n}
        files.append(out / f"rank-{k}.json.gz")
        files[-1].write_bytes(gzip.compress(json.dumps(doc).encode(), compresslevel=1))
    return files


def run(files: list[Path], out: Path, workers: int) -> dict:
    shutil.rmtree(out, ignore_errors=True)
    t = time.perf_counter()
    res = subprocess.run(
        [sys.executable, "-c", CHILD, str(out), str(workers), *map(str, files)],
        capture_output=True,
        text=True,
        check=True,
    )
    got = json.loads(res.stdout.strip().splitlines()[-1])
    got["wall_s"] = time.perf_counter() - t
    return got


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--ranks", type=int, default=8)
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--repeat", type=int, default=3)
    opts = ap.parse_args()
    traces = Path(
        os.environ.get("PROFUI_TRACES", Path(__file__).resolve().parent.parent.parent / "shared/traces")
    )
    src = traces / SOURCE
    if not src.is_file():
        sys.exit(f"{src}: not found (set PROFUI_TRACES)")
    with tempfile.TemporaryDirectory(prefix="profui-import-ranks-") as tmp:
        work = Path(tmp)
        (work / "src").mkdir()
        files = rank_files(src, work / "src", opts.ranks)
        text_mb = opts.ranks * len(gzip.decompress(src.read_bytes())) / 1e6
        print(
            f"SYNTHETIC layout: {SOURCE} as {opts.ranks} ranks ({text_mb:,.0f} MB of JSON); "
            f"{os.cpu_count()} cores; medians of {opts.repeat}"
        )
        runs: dict[int, list[dict]] = {0: [], opts.workers: []}
        for _ in range(opts.repeat):
            for workers in runs:
                runs[workers].append(run(files, work / "out", workers))

        def med(workers: int, key: str) -> float:
            return statistics.median(r[key] for r in runs[workers])

        for workers, label in (
            (0, "one by one, one process"),
            (opts.workers, f"--workers {opts.workers} (Dask)"),
        ):
            print(
                f"{label:28s} wall {med(workers, 'wall_s'):6.2f} s   peak RSS: process {med(workers, 'rss_mb'):6.0f} MB,"
                f" largest child {med(workers, 'child_rss_mb'):6.0f} MB"
            )
        w = opts.workers
        print(
            f"RATIOS one-by-one / Dask: wall {med(0, 'wall_s') / med(w, 'wall_s'):.2f}x; peak RSS of one worker "
            f"{med(w, 'child_rss_mb') / med(0, 'rss_mb'):.2f}x the one-by-one process's "
            f"({w} workers hold up to {w}x that together)"
        )


if __name__ == "__main__":
    main()
