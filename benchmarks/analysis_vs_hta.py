"""profui analysis vs Holistic Trace Analysis (HTA) on the largest shared GPU traces.

For each trace, in one run, every measurement in a fresh process (so wall time includes the
interpreter and library imports, and peak RSS is that process's own):

- ``ours e2e``      : Kineto JSON -> profui import -> open -> full summary (``summarize``);
- ``ours imported`` : already imported trace -> open -> full summary;
- ``HTA``           : ``TraceAnalysis`` parse + gpu kernel breakdown + temporal breakdown +
                      idle time breakdown + comm/comp overlap + CUDA kernel launch stats.

Medians of ``--repeat`` runs. HTA runs in its own venv (``.venv-bench``; create it with
``python3 -m venv .venv-bench && .venv-bench/bin/pip install HolisticTraceAnalysis``).
The last line prints the ratios (HTA time / ours, HTA peak RSS / ours), all traces together.

    .venv/bin/python benchmarks/analysis_vs_hta.py [--repeat 3] [--traces name ...]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
DEFAULT_TRACES = (
    "hta-df_index_resolver-df_index_resolver.json.gz",  # largest CUDA trace (54 MB JSON, 216k events)
    "hta-mtia_trace_single_rank-mtia_rank_0.json.gz",  # biggest file (87 MB JSON, 456k events)
    "hta-ns_resolution_trace-rank-0.Apr_03_18_51_38.1102.pt.trace.json.gz",
    "hta-nccl_parser_config-nccl_data.json.gz",
)

_REPORT = """
import json, resource, sys, time
print(json.dumps({"inner_s": time.perf_counter() - _T0, "compute_s": time.perf_counter() - _T1,
                  "rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024}))
"""

OURS_E2E = """
import time; _T0 = time.perf_counter()
import sys
from pathlib import Path
from profui.capture.kineto import import_kineto
from profui.analysis import open_trace
from profui.analysis.summary import summarize
_T1 = time.perf_counter()
out = Path(sys.argv[2])
import_kineto([Path(sys.argv[1])], out)
summarize(open_trace(out))
""" + _REPORT

OURS_IMPORTED = """
import time; _T0 = time.perf_counter()
import sys
from profui.analysis import open_trace
from profui.analysis.summary import summarize
_T1 = time.perf_counter()
summarize(open_trace(sys.argv[1]))
""" + _REPORT

HTA = """
import time; _T0 = time.perf_counter()
import logging, sys
logging.disable(logging.WARNING)
from hta.trace_analysis import TraceAnalysis
_T1 = time.perf_counter()
a = TraceAnalysis(trace_dir=sys.argv[1])
ranks = a.t.get_ranks()
a.get_gpu_kernel_breakdown(visualize=False)
a.get_temporal_breakdown(visualize=False)
a.get_idle_time_breakdown(ranks=ranks, visualize=False)
a.get_comm_comp_overlap(visualize=False)
a.get_cuda_kernel_launch_stats(ranks=ranks, visualize=False)
""" + _REPORT


def run(python: str, code: str, *args: str) -> dict:
    """Run ``code`` in a fresh ``python``; wall time measured from outside."""
    t0 = time.perf_counter()
    proc = subprocess.run([python, "-c", code, *args], capture_output=True, text=True, cwd=REPO,
                          env={**os.environ, "PYTHONWARNINGS": "ignore"})
    wall = time.perf_counter() - t0
    if proc.returncode != 0:
        raise RuntimeError(f"benchmark child failed:\n{proc.stderr[-3000:]}")
    out = json.loads(proc.stdout.strip().splitlines()[-1])
    out["wall_s"] = wall
    return out


def median_of(runs: list[dict]) -> dict:
    return {k: statistics.median(r[k] for r in runs) for k in runs[0]}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--traces", nargs="*", default=list(DEFAULT_TRACES))
    ap.add_argument("--traces-dir", default=os.environ.get("PROFUI_TRACES", str(REPO.parent / "shared" / "traces")))
    ap.add_argument("--python", default=sys.executable, help="interpreter with profui installed")
    ap.add_argument("--hta-python", default=str(REPO / ".venv-bench" / "bin" / "python"))
    opts = ap.parse_args()
    if not Path(opts.hta_python).exists():
        sys.exit(f"no HTA interpreter at {opts.hta_python}: create .venv-bench (see the docstring)")

    rows = []
    with tempfile.TemporaryDirectory(prefix="profui-bench-") as tmp_s:
        tmp = Path(tmp_s)
        for i, name in enumerate(opts.traces):
            src = Path(opts.traces_dir) / name
            if not src.is_file():
                print(f"skip {name}: not found in {opts.traces_dir}")
                continue
            hta_dir = tmp / f"hta{i}"
            hta_dir.mkdir()
            (hta_dir / src.name).symlink_to(src)
            imported = tmp / f"imported{i}"
            run(opts.python, OURS_E2E, str(src), str(imported))  # warm-up, and the imported trace
            r_e2e, r_imp, r_hta = [], [], []
            for k in range(opts.repeat):
                out = tmp / f"e2e{i}-{k}"
                r_e2e.append(run(opts.python, OURS_E2E, str(src), str(out)))
                shutil.rmtree(out, ignore_errors=True)
                r_imp.append(run(opts.python, OURS_IMPORTED, str(imported)))
                r_hta.append(run(opts.hta_python, HTA, str(hta_dir)))
            rows.append((name, src.stat().st_size, median_of(r_e2e), median_of(r_imp), median_of(r_hta)))

    if not rows:
        sys.exit("no traces to measure")
    print(f"{'trace':<50} {'MB':>5} {'ours e2e s':>10} {'imported s':>10} {'HTA s':>6} "
          f"{'e2e x':>6} {'imp x':>6} {'compute e2e/imp x':>17} {'RSS e2e/imp/HTA MB':>19}")
    tot: dict[str, float] = {}
    mem = []
    for name, size, e2e, imp, hta in rows:
        for key, r in (("e2e", e2e), ("imp", imp), ("hta", hta)):
            tot[key] = tot.get(key, 0.0) + r["wall_s"]
            tot[key + "_c"] = tot.get(key + "_c", 0.0) + r["compute_s"]
        mem.append(hta["rss_mb"] / max(e2e["rss_mb"], imp["rss_mb"]))
        print(f"{name[4:54]:<50} {size / 2**20:5.1f} {e2e['wall_s']:10.2f} {imp['wall_s']:10.2f} {hta['wall_s']:6.2f} "
              f"{hta['wall_s'] / e2e['wall_s']:6.1f} {hta['wall_s'] / imp['wall_s']:6.1f} "
              f"{hta['compute_s'] / e2e['compute_s']:8.1f}/{hta['compute_s'] / imp['compute_s']:<8.1f} "
              f"{e2e['rss_mb']:6.0f}/{imp['rss_mb']:5.0f}/{hta['rss_mb']:6.0f}")
    print(f"wall = fresh process incl. interpreter start and library imports; compute = after imports "
          f"(HTA: parse + analyses; ours: import + open + summary, or open + summary); medians of {opts.repeat} runs; "
          f"memory = HTA peak RSS / our larger peak, worst trace")
    print(f"compute-only ratio HTA/ours: end-to-end {tot['hta_c'] / tot['e2e_c']:.1f}x, "
          f"from imported {tot['hta_c'] / tot['imp_c']:.1f}x")
    print(f"ratio HTA/ours (wall): end-to-end {tot['hta'] / tot['e2e']:.1f}x, from imported {tot['hta'] / tot['imp']:.1f}x, "
          f"peak memory {min(mem):.2f}x lower")

if __name__ == "__main__":
    main()
