"""Size and speed of ``profui import`` against the raw Kineto JSON and HolisticTraceAnalysis.

For the largest shared Kineto traces it prints, in one run:

* Parquet bytes (all events files of the imported trace) vs raw JSON bytes vs ``.json.gz`` bytes;
* ``import_kineto`` wall time vs HTA's ``TraceAnalysis(trace_dir=...)`` parse time on the same
  file (median of ``--repeats`` runs each, every run in a fresh subprocess, module import
  excluded on both sides);
* peak memory of each (``ru_maxrss`` of the subprocess, children included);
* JSON decoding alone on the two largest files: msgspec (profui's typed path and generic),
  stdlib ``json`` and ``orjson`` when installed.

The last line prints the ratios (worst case over the files). Targets: Parquet <= 1/20 of the JSON
and <= 0.7x the .json.gz; import >= 5x faster than HTA's parse; lower peak memory.

HTA is not a profui dependency. Set up the benchmark environment once (``.venv-bench`` is
git-ignored)::

    python3 -m venv .venv-bench
    .venv-bench/bin/pip install HolisticTraceAnalysis orjson -e .
    .venv-bench/bin/python benchmarks/import_size_speed.py

Run with any interpreter that has profui; without HTA the comparison is skipped with a message
(``--hta-python PATH`` points at another interpreter that has HTA; default: this one, then
``.venv-bench/bin/python``).
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
from pathlib import Path

from precompile import compile_sources

REPO = Path(__file__).resolve().parent.parent
DEFAULT_TRACES = Path(os.environ.get("PROFUI_TRACES", REPO.parent / "shared" / "traces"))
LARGEST = [
    "hta-mtia_trace_single_rank-mtia_rank_0.json.gz",
    "hta-df_index_resolver-df_index_resolver.json.gz",
    "hta-ns_resolution_trace-rank-0.Apr_03_18_51_38.1102.pt.trace.json.gz",
    "hta-nccl_parser_config-nccl_data.json.gz",
]
MARK = "@@BENCH@@"

_PEAK = """
import resource
def peak_mb():
    own = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    kids = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
    return max(own, kids) / 1024
def cpu_s():
    own = resource.getrusage(resource.RUSAGE_SELF)
    kids = resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + kids.ru_utime + kids.ru_stime
"""

PROFUI_CHILD = (
    _PEAK
    + """
import json, sys, time
from pathlib import Path
from profui.capture.kineto import import_kineto
src, out = Path(sys.argv[1]), Path(sys.argv[2])
c, t = cpu_s(), time.perf_counter()
import_kineto([src], out)
run_s, run_cpu = time.perf_counter() - t, cpu_s() - c
print("@@BENCH@@" + json.dumps({"run_s": run_s, "cpu_s": run_cpu, "rss_mb": peak_mb()}))
"""
)

HTA_CHILD = (
    _PEAK
    + """
import json, logging, sys, time
logging.disable(logging.CRITICAL)
from hta.trace_analysis import TraceAnalysis
c, t = cpu_s(), time.perf_counter()
TraceAnalysis(trace_dir=sys.argv[1])
run_s, run_cpu = time.perf_counter() - t, cpu_s() - c
print("@@BENCH@@" + json.dumps({"run_s": run_s, "cpu_s": run_cpu, "rss_mb": peak_mb()}))
"""
)

DECODE_CHILD = (
    _PEAK
    + """
import json, sys, time
from pathlib import Path
from profui.capture.kineto.reader import read_bytes
def rss_mb():
    with open("/proc/self/statm") as fh:
        return int(fh.read().split()[1]) * 4096 / 2**20
data = read_bytes(Path(sys.argv[1]))  # one buffer: the high-water mark is the text itself
which = sys.argv[2]
before = rss_mb()
if which == "msgspec-typed":
    from profui.capture.kineto.reader import decode, event_decoder
    t = time.perf_counter()
    doc = decode(Path(sys.argv[1]), data)
    n = sum(1 for raw in doc.event_list() if event_decoder.decode(raw).ph)
elif which == "msgspec-generic":
    import msgspec
    t = time.perf_counter()
    n = len(msgspec.json.decode(data)["traceEvents"])
elif which == "orjson":
    import orjson
    t = time.perf_counter()
    n = len(orjson.loads(data)["traceEvents"])
else:
    t = time.perf_counter()
    n = len(json.loads(data)["traceEvents"])
run_s = time.perf_counter() - t
print("@@BENCH@@" + json.dumps({"run_s": run_s, "rss_mb": peak_mb(), "extra_mb": peak_mb() - before, "n": n}))
"""
)


def run_child(python: str, code: str, *args: str, env: dict | None = None) -> dict:
    proc = subprocess.run([python, "-c", code, *args], capture_output=True, text=True, timeout=900, env=env)
    for line in proc.stdout.splitlines():
        if line.startswith(MARK):
            return json.loads(line[len(MARK) :])
    tail = (proc.stderr or proc.stdout).strip().splitlines()[-3:]
    raise RuntimeError(f"benchmark child failed ({proc.returncode}): {' | '.join(tail)}")


def has_module(python: str, module: str) -> bool:
    proc = subprocess.run([python, "-c", f"import {module}"], capture_output=True, timeout=300)
    return proc.returncode == 0


def find_hta_python(explicit: str | None) -> str | None:
    candidates = [explicit] if explicit else [sys.executable, str(REPO / ".venv-bench" / "bin" / "python")]
    for c in candidates:
        if c and Path(c).exists() and has_module(c, "hta.trace_analysis"):
            return c
    return None


def summarize(runs: list[dict]) -> dict:
    return {
        "run_s": statistics.median(r["run_s"] for r in runs),
        "cpu_s": statistics.median(r["cpu_s"] for r in runs),
        "rss_mb": statistics.median(r["rss_mb"] for r in runs),
        "all_s": [round(r["run_s"], 3) for r in runs],
    }


def bench_file(src: Path, work: Path, repeats: int, hta_python: str | None) -> dict:
    """Import and HTA parse of ``src``, alternating run by run so both see the same machine load."""
    raw_bytes = len(gzip.decompress(src.read_bytes()))
    gz_bytes = src.stat().st_size
    hta_dir = work / f"hta-{src.stem}"
    if hta_python:
        hta_dir.mkdir(exist_ok=True)
        shutil.copyfile(src, hta_dir / src.name)
    ours, theirs = [], []
    for i in range(repeats):
        out = work / f"out-{src.stem}-{i}"
        ours.append(run_child(sys.executable, PROFUI_CHILD, str(src), str(out)))
        if hta_python:
            theirs.append(run_child(hta_python, HTA_CHILD, str(hta_dir)))
    parquet_bytes = sum(p.stat().st_size for p in (work / f"out-{src.stem}-0").rglob("*.parquet"))
    mine = summarize(ours)
    row = {
        "file": src.name,
        "raw_json_bytes": raw_bytes,
        "gz_bytes": gz_bytes,
        "parquet_bytes": parquet_bytes,
        "import_s": mine["run_s"],
        "import_cpu_s": mine["cpu_s"],
        "import_runs_s": mine["all_s"],
        "import_rss_mb": mine["rss_mb"],
    }
    if hta_python:
        hta = summarize(theirs)
        row.update(
            hta_parse_s=hta["run_s"],
            hta_cpu_s=hta["cpu_s"],
            hta_runs_s=hta["all_s"],
            hta_rss_mb=hta["rss_mb"],
        )
    return row


def bench_decoders(src: Path, python: str, repeats: int) -> list[dict]:
    rows = []
    for which in ("msgspec-typed", "msgspec-generic", "orjson", "stdlib-json"):
        if which == "orjson" and not has_module(python, "orjson"):
            rows.append({"file": src.name, "decoder": which, "skipped": "orjson not installed"})
            continue
        runs = [run_child(python, DECODE_CHILD, str(src), which) for _ in range(repeats)]
        rows.append(
            {
                "file": src.name,
                "decoder": which,
                "decode_s": statistics.median(r["run_s"] for r in runs),
                "extra_mb": statistics.median(r["extra_mb"] for r in runs),
            }
        )
    return rows


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--traces", type=Path, default=DEFAULT_TRACES, help="folder of the shared traces")
    ap.add_argument("--repeats", type=int, default=3, help="runs per measurement (median)")
    ap.add_argument("--files", type=int, default=len(LARGEST), help="how many of the largest traces")
    ap.add_argument("--hta-python", default=None, help="interpreter with HolisticTraceAnalysis")
    ap.add_argument("--no-decoders", action="store_true", help="skip the JSON decoder comparison")
    args = ap.parse_args()
    compile_sources()

    files = [args.traces / n for n in LARGEST[: args.files] if (args.traces / n).is_file()]
    if not files:
        sys.exit(f"no shared traces found in {args.traces}; set PROFUI_TRACES or --traces")
    hta_python = find_hta_python(args.hta_python)
    if hta_python is None:
        print(
            "HTA not found: skipping the HTA comparison. Set it up with:\n"
            "  python3 -m venv .venv-bench && .venv-bench/bin/pip install HolisticTraceAnalysis orjson -e .\n"
            "and run this script with .venv-bench/bin/python (or pass --hta-python)."
        )
    work = Path(tempfile.mkdtemp(prefix="profui-bench-"))
    rows = []
    try:
        print(
            f"{'file':<48} {'json MB':>8} {'gz MB':>7} {'pq MB':>7} {'pq/json':>8} {'pq/gz':>6} "
            f"{'import s':>8} {'HTA s':>7} {'speedup':>7} {'imp MB':>7} {'HTA MB':>7}"
        )
        for src in files:
            r = bench_file(src, work, args.repeats, hta_python)
            rows.append(r)
            hta_s = r.get("hta_parse_s")
            print(
                f"{src.name[:48]:<48} {r['raw_json_bytes'] / 1e6:8.1f} {r['gz_bytes'] / 1e6:7.2f} "
                f"{r['parquet_bytes'] / 1e6:7.2f} {r['parquet_bytes'] / r['raw_json_bytes']:8.4f} "
                f"{r['parquet_bytes'] / r['gz_bytes']:6.2f} {r['import_s']:8.2f} "
                + (
                    f"{hta_s:7.2f} {hta_s / r['import_s']:6.1f}x {r['hta_cpu_s'] / r['import_cpu_s']:5.1f}x "
                    if hta_s
                    else f"{'-':>7} {'-':>7} {'-':>6} "
                )
                + f"{r['import_rss_mb']:7.0f} "
                + (f"{r['hta_rss_mb']:7.0f}" if hta_s else f"{'-':>7}"),
                flush=True,
            )
        if not args.no_decoders:
            print(
                "\nJSON decoding alone, whole file to Python objects (median s; peak MB above the JSON text):"
            )
            py = hta_python or sys.executable
            for src in files[:2]:
                for d in bench_decoders(src, py, args.repeats):
                    if "skipped" in d:
                        print(f"  {d['file'][:40]:<40} {d['decoder']:<16} skipped: {d['skipped']}")
                    else:
                        print(
                            f"  {d['file'][:40]:<40} {d['decoder']:<16} {d['decode_s']:6.2f} s {d['extra_mb']:7.0f} MB"
                        )
    finally:
        shutil.rmtree(work, ignore_errors=True)

    def ratios(sel: list[dict]) -> str:
        pq_json = max(r["parquet_bytes"] / r["raw_json_bytes"] for r in sel)
        pq_gz = max(r["parquet_bytes"] / r["gz_bytes"] for r in sel)
        text = f"parquet/json={pq_json:.4f} (1/{1 / pq_json:.0f}) parquet/gz={pq_gz:.2f}"
        if hta_python:
            speed = min(r["hta_parse_s"] / r["import_s"] for r in sel)
            cpu = min(r["hta_cpu_s"] / r["import_cpu_s"] for r in sel)
            mem = max(r["import_rss_mb"] / r["hta_rss_mb"] for r in sel)
            text += f" hta_parse/import={speed:.1f}x (cpu {cpu:.1f}x) import_rss/hta_rss={mem:.2f}"
        else:
            text += " hta: skipped (not installed)"
        return text

    biggest = rows[:2]
    line = f"RATIOS worst of the {len(biggest)} largest: {ratios(biggest)}"
    if len(rows) > len(biggest):
        line += f" | worst of all {len(rows)}: {ratios(rows)}"
    print(line)


if __name__ == "__main__":
    main()
