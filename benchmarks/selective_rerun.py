"""Selective re-run of one cheap stage vs a full analysis run, on the largest shared GPU trace.

What a user does after changing one parameter: ``profui analyze TRACE --stages launch --set
slow_launch_us=N`` (only the ``launch`` stage runs; every other stage's output is reused from the
latest run) instead of analysing everything again.

Each measurement is a fresh ``profui analyze`` process (wall time includes the interpreter and
library imports, as the user sees it); the engine's own time (the run record's duration) is
printed too. Full runs use ``--no-cache`` so every stage is computed; each selective run sets a
``slow_launch_us`` value never used before, so ``launch`` misses the cache and is computed.
Medians of ``--repeat`` runs. The trace is imported once into a temporary folder first.

    .venv/bin/python benchmarks/selective_rerun.py [--repeat 5] [--trace hta-...json.gz]

The last line prints the ratio: full-run wall time / selective-run wall time.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
# Largest CUDA trace of the corpus (54 MB JSON, 216k events); the MTIA file is bigger on disk but
# its events are mostly metadata and it has no kernels.
DEFAULT_TRACE = "hta-df_index_resolver-df_index_resolver.json.gz"
PROFUI = [sys.executable, "-c", "from profui.tui.cli import main; main()"]


def traces_dir() -> Path:
    return Path(os.environ.get("PROFUI_TRACES", REPO.parent / "shared" / "traces")).resolve()


def analyze(trace: Path, *args: str) -> tuple[float, dict]:
    """Wall seconds of one ``profui analyze`` process and its run record."""
    t0 = time.perf_counter()
    proc = subprocess.run(
        [*PROFUI, "analyze", str(trace), "-q", "--json", *args], capture_output=True, text=True
    )
    wall = time.perf_counter() - t0
    if proc.returncode != 0:
        raise SystemExit(f"profui analyze failed ({proc.returncode}): {proc.stderr.strip()}")
    return wall, json.loads(proc.stdout)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--trace", default=DEFAULT_TRACE, help="shared Kineto trace file name (or a path)")
    args = ap.parse_args()
    src = Path(args.trace) if Path(args.trace).exists() else traces_dir() / args.trace
    if not src.is_file():
        raise SystemExit(f"trace {src} not found; set PROFUI_TRACES to the shared traces folder")

    from profui.capture.format import open_trace_dir
    from profui.capture.ingest import import_trace

    with tempfile.TemporaryDirectory(prefix="profui-bench-") as tmp:
        trace = Path(tmp) / "trace"
        import_trace([src], trace)
        n_events = open_trace_dir(trace).num_events
        print(f"trace: {src.name} ({n_events:,} events), {args.repeat} repeats, one process per run")

        analyze(trace)  # warm the OS file cache and give the selective runs a reference run
        full_wall, full_engine = [], []
        for _ in range(args.repeat):
            wall, rec = analyze(trace, "--no-cache")
            assert rec["counts"]["computed"] == len(rec["stages"]), rec["counts"]
            full_wall.append(wall)
            full_engine.append(rec["seconds"])
        sel_wall, sel_engine = [], []
        for i in range(args.repeat):
            wall, rec = analyze(trace, "--stages", "launch", "--set", f"slow_launch_us={61 + i}")
            c = rec["counts"]
            assert c["computed"] == 1 and c["reused"] == len(rec["stages"]) - 2, (
                c
            )  # summary: downstream, skipped
            sel_wall.append(wall)
            sel_engine.append(rec["seconds"])

    fw, sw = statistics.median(full_wall), statistics.median(sel_wall)
    fe, se = statistics.median(full_engine), statistics.median(sel_engine)
    print(f"full run (all {len(rec['stages'])} stages computed): wall {fw:.2f} s, engine {fe:.3f} s")
    print(f"selective run (--stages launch, rest reused):  wall {sw:.2f} s, engine {se:.3f} s")
    print(f"engine-only ratio full/selective: {fe / se:.1f}x")
    print(f"ratio full/selective (wall, per process): {fw / sw:.1f}x")


if __name__ == "__main__":
    main()
