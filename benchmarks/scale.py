"""How profui's cost grows with the trace: import, full summary and warm dashboard open of a real
trace replicated 1× to 20× along time, against HTA's parse + temporal + kernel breakdown.

**Synthetic scale, built from real data**: the shared df_index trace (216k JSON events) is
replicated along time by ``replicate_trace.py`` — copies shifted, ids offset — once with the step
numbers going on (``distinct``) and once repeating them in every copy (``repeated``: what a
profiler restarted in one process writes). At 20× that is 4.3M JSON events, 3.0M trace rows.

Every measurement is a fresh process (wall time includes the interpreter and imports; peak RSS
is that process's own ``ru_maxrss``), medians of ``--repeat`` runs:

- ``import``  : ``profui import FILE -o DIR``;
- ``summary`` : ``profui summary DIR --json`` (every analysis, in memory);
- ``open``    : ``profui open DIR`` headless at 80×24 until every dashboard chart is drawn, warm
                (after one cold open has recorded the run), as ``tui_open.py`` measures it;
- ``HTA``     : ``TraceAnalysis`` parse + ``get_temporal_breakdown`` + ``get_gpu_kernel_breakdown``
                of the same JSON (in its own venv, ``--hta-python``; ``--hta-repeat`` runs, on the
                distinct files only: both modes are the same bytes to HTA).

The last lines print the issue's targets at the largest size and how time and memory grow from
the smallest size to the largest (ratio against the ratio of events: 1.0 is linear).

    .venv/bin/python benchmarks/scale.py [--copies 1,5,20] [--repeat 3] [--hta-python PY]
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

from precompile import compile_sources
from replicate_trace import replicate

REPO = Path(__file__).resolve().parent.parent
DEFAULT = "hta-df_index_resolver-df_index_resolver.json.gz"
#: Issue #13's targets at 20× (3M events) on a 2-core, 24 GiB machine: (seconds, MB).
TARGETS = {
    ("summary", "distinct"): (6.0, 1536),
    ("summary", "repeated"): (10.0, 2048),
    ("open", "distinct"): (3.0, None),
    ("open", "repeated"): (3.0, None),
    ("import", "distinct"): (None, 1536),
    ("import", "repeated"): (None, 1536),
}

HTA_CHILD = """
import json, logging, resource, sys, time
logging.disable(logging.CRITICAL)
t = time.perf_counter()
from hta.trace_analysis import TraceAnalysis
a = TraceAnalysis(trace_dir=sys.argv[1])
a.get_temporal_breakdown(visualize=False)
a.get_gpu_kernel_breakdown(visualize=False)
print("@@BENCH@@" + json.dumps({"s": time.perf_counter() - t}))
"""


def traces_dir() -> Path:
    return Path(os.environ.get("PROFUI_TRACES", REPO.parent / "shared" / "traces"))


_WRAP = """
import os, resource, subprocess, sys, time
t = time.perf_counter()
rc = subprocess.call(sys.argv[1:], stdout=subprocess.DEVNULL if os.environ.get("QUIET_CHILD") else None)
peak = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024
print(f"@@WRAP@@ {time.perf_counter() - t} {peak} {rc}", file=sys.stderr)
sys.exit(rc)
"""


def measured(cmd: list[str], quiet: bool = True) -> tuple[float, float, str]:
    """``(wall s, peak RSS MB, stdout)`` of ``cmd`` run by a small wrapper process, so the peak
    is that command's alone."""
    env = dict(os.environ, QUIET_CHILD="1" if quiet else "")
    proc = subprocess.run([sys.executable, "-c", _WRAP, *cmd], capture_output=True, text=True, env=env)
    line = [x for x in proc.stderr.splitlines() if x.startswith("@@WRAP@@")]
    if proc.returncode != 0 or not line:
        raise SystemExit(f"{' '.join(cmd[:4])}… failed ({proc.returncode}): {proc.stderr.strip()[-400:]}")
    _, wall, peak, _rc = line[-1].split()
    return float(wall), float(peak), proc.stdout


def events_of(trace: Path) -> int:
    py = (
        "import sys, pyarrow.parquet as pq; from pathlib import Path;"
        "print(sum(pq.ParquetFile(p).metadata.num_rows for p in Path(sys.argv[1]).rglob('events-*.parquet')))"
    )
    return int(subprocess.run([sys.executable, "-c", py, str(trace)], capture_output=True, text=True).stdout)


def open_warm(trace: Path) -> float:
    """Seconds to the full dashboard of a warm open (one cold open first fills the cache)."""
    cmd = [sys.executable, str(REPO / "benchmarks" / "tui_open.py"), "--child-open", str(trace)]
    subprocess.run(cmd, capture_output=True, check=True)
    t0 = time.time()
    out = subprocess.run(cmd, capture_output=True, text=True, check=True).stdout.split()
    return float(out[out.index("DRAWN_AT") + 1]) - t0


def med(values: list[float]) -> float:
    return statistics.median(values)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--trace", default=str(traces_dir() / DEFAULT))
    ap.add_argument("--copies", default="1,5,20", help="sizes to build, comma-separated")
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument(
        "--hta-python", help="a Python with HolisticTraceAnalysis (default: this one, if it has it)"
    )
    ap.add_argument("--hta-repeat", type=int, default=1)
    ap.add_argument("--work", help="folder for the built traces (default: a temporary folder)")
    args = ap.parse_args()
    compile_sources()
    src = Path(args.trace)
    if not src.is_file():
        raise SystemExit(f"trace not found: {src} (set PROFUI_TRACES or --trace)")
    if not args.hta_python:
        has_hta = subprocess.run([sys.executable, "-c", "import hta.trace_analysis"], capture_output=True)
        args.hta_python = sys.executable if has_hta.returncode == 0 else None
    if not args.hta_python:
        print("HTA not found (--hta-python, or run this with .venv-bench's Python): HTA left out")
    sizes = [int(x) for x in args.copies.split(",")]
    profui = [sys.executable, "-c", "from profui.tui.cli import main; main()"]
    rows: dict[tuple[int, str], dict[str, float]] = {}
    with tempfile.TemporaryDirectory(prefix="profui-scale-", dir=args.work) as tmp:
        work = Path(tmp)
        print(
            f"synthetic scale from real data: {src.name} replicated along time (replicate_trace.py); "
            f"medians of {args.repeat} runs, each a fresh process",
            flush=True,
        )
        for copies in sizes:
            for mode in ("distinct", "repeated"):
                js = work / f"x{copies}-{mode}.json"
                json_events = replicate(src, copies, mode, js)
                imp, summ, opened = [], [], []
                out = work / f"t{copies}-{mode}"
                for _ in range(args.repeat):
                    imp.append(measured([*profui, "import", str(js), "-o", str(out), "--force"]))
                    summ.append(measured([*profui, "summary", str(out), "--json"]))
                    opened.append(open_warm(out))
                hta = []
                if args.hta_python and mode == "distinct":
                    d = work / f"hta{copies}"
                    d.mkdir()
                    (d / js.name).symlink_to(js)
                    for _ in range(args.hta_repeat):
                        hta.append(measured([args.hta_python, "-c", HTA_CHILD, str(d)], quiet=False))
                row = {
                    "json_events": json_events,
                    "events": events_of(out),
                    "import_s": med([x[0] for x in imp]),
                    "import_mb": med([x[1] for x in imp]),
                    "summary_s": med([x[0] for x in summ]),
                    "summary_mb": med([x[1] for x in summ]),
                    "open_s": med(opened),
                }
                if hta:
                    row["hta_s"] = med([x[0] for x in hta])
                    row["hta_mb"] = med([x[1] for x in hta])
                rows[(copies, mode)] = row
                js.unlink()
                print(_line(copies, mode, row), flush=True)
    _report(rows, sizes)


def _line(copies: int, mode: str, r: dict[str, float]) -> str:
    s = (
        f"{copies:3d}× {mode:9s} {r['events']:>10,} events | import {r['import_s']:6.2f} s {r['import_mb']:6.0f} MB"
        f" | summary {r['summary_s']:6.2f} s {r['summary_mb']:6.0f} MB | open warm {r['open_s']:5.2f} s"
    )
    if "hta_s" in r:
        ours = r["import_s"] + r["summary_s"]
        s += (
            f" | HTA parse+temporal+kernels {r['hta_s']:7.2f} s {r['hta_mb']:6.0f} MB"
            f" = {r['hta_s'] / ours:.1f}× our import+summary, {r['hta_mb'] / max(r['import_mb'], r['summary_mb']):.1f}× our peak"
        )
    return s


def _report(rows: dict[tuple[int, str], dict[str, float]], sizes: list[int]) -> None:
    big, small = max(sizes), min(sizes)
    print(f"\ntargets at {big}× (issue #13's are for 20×):")
    for (what, mode), (secs, mb) in TARGETS.items():
        r = rows.get((big, mode))
        if r is None:
            continue
        parts = []
        if secs is not None:
            got = r[f"{what}_s"]
            parts.append(f"{got:.2f} s vs ≤ {secs:g} s ({'met' if got <= secs else 'NOT met'})")
        if mb is not None:
            got = r[f"{what}_mb"]
            parts.append(f"{got:.0f} MB vs ≤ {mb} MB ({'met' if got <= mb else 'NOT met'})")
        print(f"  {what:8s} {mode:9s} " + "; ".join(parts))
    if big == small:
        return
    print(f"\ngrowth {small}× → {big}× (cost ratio / events ratio; 1.0 = linear, below = sublinear):")
    for mode in ("distinct", "repeated"):
        a, b = rows.get((small, mode)), rows.get((big, mode))
        if not a or not b:
            continue
        n = b["events"] / a["events"]
        cells = [
            f"{k} {b[k] / a[k]:.1f}× ({b[k] / a[k] / n:.2f})"
            for k in ("import_s", "import_mb", "summary_s", "summary_mb", "open_s")
        ]
        print(f"  {mode:9s} events {n:.1f}×: " + ", ".join(cells))
    print(json.dumps({f"{c}x-{m}": r for (c, m), r in rows.items()}))


if __name__ == "__main__":
    main()
