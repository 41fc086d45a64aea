"""Speed, peak memory and size of ``profui import`` against HolisticTraceAnalysis' parse.

For every shared Kineto trace (``*.json``/``*.json.gz`` of ``PROFUI_TRACES`` that profui imports
as one; the smallest included) it prints, in one run:

* ``import_trace`` time against HTA's ``TraceAnalysis(trace_dir=...)`` parse of the same file:
  wall and CPU seconds (user + system, children included), median of ``--repeats`` runs each,
  every run in a fresh process, module import excluded on both sides, the two sides alternating
  run by run, which goes first rotating each repeat, so both see the same machine load;
* peak memory of each run's process: its own high-water mark, or its children's where that is
  more (``benchmarks/peak.py``). Not ``ru_maxrss`` of a child of the benchmark: Linux carries it
  over ``fork`` and ``exec``, so a child reported at least the benchmark's own size when it was
  started (186 MB for both tools on a 10 MB trace);
* the ratios HTA / profui for time (wall and CPU) and memory, and Parquet bytes against the
  JSON text and the ``.json.gz``;
* with ``--base-python`` (an interpreter of another profui checkout, the baseline): the
  baseline's import of every trace too, in the same rotation, its wall, CPU and peak beside
  this profui's, and base / new for each;
* the worst ratio over the traces against the targets of issue #40 (import >= 10x HTA's parse,
  peak memory >= 1.3x below HTA's), naming the trace;
* with ``--scale`` (default ``/tmp/profui-scale/x20.json`` when it exists): import of that
  synthetic trace (a shared trace replicated along time by ``benchmarks/replicate_trace.py``),
  wall, CPU and peak, and with ``--base-python`` (an interpreter of another profui checkout, the
  baseline) the same for the baseline, the two alternating (the first rotating);
* the smallest trace's peak right after the modules' import, before any work, on both sides:
  the floor of a small import's memory (``--system-pool`` runs profui with Arrow's default pool
  set to the system allocator, as a CLI would by ``ARROW_DEFAULT_MEMORY_POOL=system``);
* the floor of an import's time: a 1-event Kineto trace (written by the benchmark: one
  ``cpu_op``, the smallest trace profui imports) imported by profui (and the baseline) and
  parsed by HTA, the same alternation and medians, wall, CPU and peak: what neither side can
  go below per file, whatever the trace. Its CPU is also given on the threads besides the main
  one: right after the modules' import that is OpenBLAS's worker, started by numpy's import
  (pyarrow imports numpy), still spinning for work (~0.1 s after it starts; none with
  ``OPENBLAS_NUM_THREADS=1``): CPU of the modules' import that lands in a small import's;
* with ``--decoders``: JSON decoding alone of the two largest traces (msgspec typed and
  generic, stdlib ``json``, ``orjson`` when installed).

The machine's load average is printed at the start and the end.

HTA is not a profui dependency: set up its environment once, as ``hta_env.py`` says, then::

    .venv/bin/python benchmarks/import_size_speed.py

Run it with an interpreter that has profui; HTA is looked for in this interpreter, then in
``.venv-bench/bin/python`` (``--hta-python PATH`` names another); without it the comparison is
skipped with a message.
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
from pathlib import Path

from hta_env import HTA_PYTHON, HTA_SETUP
from peak import run as measure
from precompile import compile_sources

REPO = Path(__file__).resolve().parent.parent
DEFAULT_TRACES = Path(os.environ.get("PROFUI_TRACES", REPO.parent / "shared" / "traces"))
DEFAULT_SCALE = Path("/tmp/profui-scale/x20.json")
MARK = "@@BENCH@@"
#: Issue #40, target 3.
TARGET_SPEED, TARGET_MEMORY = 10.0, 1.3

_MEASURE = """
import resource
def peak_mb():
    hwm = next(int(ln.split()[1]) for ln in open("/proc/self/status") if ln.startswith("VmHWM:"))
    return max(hwm, resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss) / 1024
def cpu_s():
    own = resource.getrusage(resource.RUSAGE_SELF)
    kids = resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + kids.ru_utime + kids.ru_stime
def sys_s():
    own = resource.getrusage(resource.RUSAGE_SELF)
    return own.ru_stime + resource.getrusage(resource.RUSAGE_CHILDREN).ru_stime
def faults():
    return resource.getrusage(resource.RUSAGE_SELF).ru_minflt
def threads_s():  # CPU of the process's threads but the main one (Linux; 0 elsewhere)
    import os
    try:
        tasks = [t for t in os.listdir("/proc/self/task") if t != str(os.getpid())]
        return sum(int(open(f"/proc/self/task/{t}/schedstat").read().split()[0]) for t in tasks) / 1e9
    except OSError:
        return 0.0
"""

PROFUI_CHILD = (
    _MEASURE
    + """
import json, sys, time
from pathlib import Path
from profui.capture.ingest import import_trace
mods_mb = peak_mb()
src, out = Path(sys.argv[1]), Path(sys.argv[2])
c, k, f, th, t = cpu_s(), sys_s(), faults(), threads_s(), time.perf_counter()
manifest = import_trace([src], out)
run_s, run_cpu, run_sys, run_faults = time.perf_counter() - t, cpu_s() - c, sys_s() - k, faults() - f
run_threads = threads_s() - th
rows = sum(s["num_events"] for s in manifest.sources)
print("@@BENCH@@" + json.dumps({"run_s": run_s, "cpu_s": run_cpu, "sys_s": run_sys, "faults": run_faults,
                                "rss_mb": peak_mb(), "mods_mb": mods_mb, "rows": rows, "threads_s": run_threads}))
"""
)

HTA_CHILD = (
    _MEASURE
    + """
import json, logging, sys, time
logging.disable(logging.CRITICAL)
from hta.trace_analysis import TraceAnalysis
mods_mb = peak_mb()
c, t = cpu_s(), time.perf_counter()
TraceAnalysis(trace_dir=sys.argv[1])
run_s, run_cpu = time.perf_counter() - t, cpu_s() - c
print("@@BENCH@@" + json.dumps({"run_s": run_s, "cpu_s": run_cpu, "rss_mb": peak_mb(), "mods_mb": mods_mb}))
"""
)

DECODE_CHILD = (
    _MEASURE
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


#: The children's working folder (``python -c`` imports from it first): the run's scratch folder.
SCRATCH: list[Path] = []
#: Environment of profui's children (``--system-pool``: Arrow's default pool set as a CLI would).
PROFUI_ENV: dict[str, str] = {}
#: Every child's (profui's, the baseline's and HTA's): numpy's OpenBLAS held to one thread, as
#: profui's entry point holds it (``tui/cli/__init__.py:main``). Its idle worker otherwise spins
#: for ~0.1 s after numpy's import, into the measured call: 8 of a 1-event import's 16.5 ms CPU.
BLAS_ENV = {"OPENBLAS_NUM_THREADS": "1"}


def run_child(python: str, code: str, *args: str, env: dict[str, str] | None = None) -> dict:
    """Run ``code`` in a fresh ``python`` (``env`` added to this environment) and return what it
    printed after :data:`MARK`, its ``rss_mb`` the process's peak as ``benchmarks/peak.py``
    measures it."""
    proc = measure(
        [python, "-c", code, *args],
        env={**os.environ, **BLAS_ENV, **(env or {})},
        cwd=str(SCRATCH[0]) if SCRATCH else None,
    )
    for line in proc.stdout.splitlines():
        if line.startswith(MARK):
            return json.loads(line[len(MARK) :]) | {"rss_mb": proc.peak_mb}
    tail = (proc.stderr or proc.stdout).strip().splitlines()[-1:]
    raise RuntimeError(f"exit {proc.code}: {' | '.join(tail)}")


def has_module(python: str, module: str) -> bool:
    proc = subprocess.run([python, "-c", f"import {module}"], capture_output=True, timeout=300)
    return proc.returncode == 0


def find_hta_python(explicit: str | None) -> str | None:
    candidates = [explicit] if explicit else [sys.executable, str(HTA_PYTHON)]
    for c in candidates:
        if c and Path(c).exists() and has_module(c, "hta.trace_analysis"):
            return c
    return None


def text_bytes(src: Path) -> int:
    """The JSON text's size without holding it here (a child started now would count it)."""
    from profui.capture.kineto.reader import text_size

    return text_size(src)


def median_of(runs: list[dict]) -> dict:
    keys = ("run_s", "cpu_s", "rss_mb", "mods_mb", "threads_s")
    return {k: statistics.median(r[k] for r in runs if k in r) for k in keys if any(k in r for r in runs)}


def load() -> str:
    one, five, fifteen = os.getloadavg()
    return f"load average {one:.2f} {five:.2f} {fifteen:.2f} on {os.cpu_count()} cores"


def bench_file(src: Path, work: Path, repeats: int, hta_python: str | None, base_python: str | None) -> dict:
    """Import (this profui's and, given, the baseline's) and HTA parse of ``src``, alternating
    run by run, which side goes first rotating each repeat."""
    hta_dir = work / f"hta-{src.name}"
    if hta_python:
        hta_dir.mkdir()
        shutil.copyfile(src, hta_dir / src.name)
    sides = ["profui", *(["base"] if base_python else []), "hta"]
    runs: dict[str, list[dict]] = {side: [] for side in sides}
    hta_error = None
    for i in range(repeats):
        for side in sides[i % len(sides) :] + sides[: i % len(sides)]:  # who goes first rotates
            if side in ("profui", "base"):
                out = work / f"out-{side}-{src.name}-{i}"
                python = sys.executable if side == "profui" else base_python
                runs[side].append(run_child(python, PROFUI_CHILD, str(src), str(out), env=PROFUI_ENV))
                if i or side == "base":
                    shutil.rmtree(out)
            elif hta_python and hta_error is None:
                try:
                    runs["hta"].append(run_child(hta_python, HTA_CHILD, str(hta_dir)))
                except RuntimeError as exc:
                    hta_error = str(exc)
    first = work / f"out-profui-{src.name}-0"
    ours = runs["profui"]
    row = {
        "file": src.name,
        "json_bytes": text_bytes(src),
        "gz_bytes": src.stat().st_size if src.name.endswith(".gz") else None,
        "parquet_bytes": sum(p.stat().st_size for p in first.rglob("*.parquet")),
        "rows": ours[0]["rows"],
        "profui": median_of(ours),
        "base": median_of(runs["base"]) if runs.get("base") else None,
        "hta": median_of(runs["hta"]) if runs["hta"] else None,
        "hta_error": hta_error,
    }
    shutil.rmtree(first)
    return row


#: The smallest trace profui imports: one complete CPU op (no metadata, no flows).
ONE_EVENT_TRACE = {
    "schemaVersion": 1,
    "traceEvents": [
        {
            "ph": "X",
            "cat": "cpu_op",
            "name": "aten::add",
            "pid": 1,
            "tid": 1,
            "ts": 1700000000000000,
            "dur": 10,
            "args": {"External id": 1},
        }
    ],
}


def bench_floor(work: Path, repeats: int, hta_python: str | None, base_python: str | None) -> dict:
    """:func:`bench_file` of :data:`ONE_EVENT_TRACE`, written into ``work``: the per-file floor."""
    folder = work / "one-event"
    folder.mkdir()
    src = folder / "one_event.json"
    src.write_text(json.dumps(ONE_EVENT_TRACE))
    return bench_file(src, work, repeats, hta_python, base_python)


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


def bench_scale(src: Path, work: Path, repeats: int, base_python: str | None) -> None:
    """Import of the synthetic scale trace ``src``: this profui and, given, the baseline's,
    alternating run by run; one line each and the ratio."""
    sides = [("new", sys.executable)] + ([("base", base_python)] if base_python else [])
    runs: dict[str, list[dict]] = {name: [] for name, _ in sides}
    for i in range(repeats):
        for name, python in sides if i % 2 == 0 else sides[::-1]:  # who goes first rotates
            out = work / f"scale-{name}-{i}"
            runs[name].append(run_child(python, PROFUI_CHILD, str(src), str(out), env=PROFUI_ENV))
            shutil.rmtree(out)
    rows = runs["new"][0]["rows"]
    print(
        f"\n{src.name} (synthetic: a shared trace replicated along time, {rows:,} rows, "
        f"{text_bytes(src) / 1e6:,.0f} MB of JSON), import median of {repeats}:"
    )
    med = {name: median_of(r) for name, r in runs.items()}
    for name, m in med.items():
        walls = ", ".join(f"{r['run_s']:.2f}" for r in runs[name])
        sys_s = statistics.median(r["sys_s"] for r in runs[name])
        faults = statistics.median(r["faults"] for r in runs[name])
        print(
            f"  {name:<5} wall {m['run_s']:6.2f} s  CPU {m['cpu_s']:6.2f} s (of it system {sys_s:5.2f} s, "
            f"{faults / 1e3:,.0f}k minor page faults)  peak {m['rss_mb']:6.0f} MB  (walls: {walls})"
        )
    if "base" in med:
        b, n = med["base"], med["new"]
        print(
            f"  base/new: wall {b['run_s'] / n['run_s']:.2f}x  CPU {b['cpu_s'] / n['cpu_s']:.2f}x  "
            f"peak {b['rss_mb'] / n['rss_mb']:.2f}x"
        )


def kineto_sources(folder: Path) -> list[Path]:
    files = [p for p in folder.iterdir() if p.is_file() and p.name.endswith((".json", ".json.gz"))]
    return sorted(files, key=text_bytes, reverse=True)


def header(with_base: bool) -> str:
    """The table's header: the trace, sizes, then per side time, CPU and peak."""
    line = (
        f"{'file':<44} {'json MB':>7} {'pq/json':>7} {'pq/gz':>5} {'rows':>8} | {'profui s':>8} {'cpu':>6} "
        f"{'HTA s':>7} {'cpu':>6} {'wall x':>6} {'cpu x':>6} | {'profui MB':>9} {'HTA MB':>7} {'mem x':>5}"
    )
    if with_base:
        line += f" | {'base s':>7} {'cpu':>6} {'MB':>5} {'b/n wall':>8} {'cpu':>5} {'mem':>5}"
    return line


def trace_line(r: dict, with_base: bool) -> str:
    """One trace's row of the table (:func:`header`)."""
    p, h, b = r["profui"], r["hta"], r["base"]
    gz = f"{r['parquet_bytes'] / r['gz_bytes']:5.2f}" if r["gz_bytes"] else f"{'-':>5}"
    line = (
        f"{r['file'][:44]:<44} {r['json_bytes'] / 1e6:7.2f} {r['parquet_bytes'] / r['json_bytes']:7.4f} "
        f"{gz} {r['rows']:8,} | {p['run_s']:8.4f} {p['cpu_s']:6.3f} "
    )
    if h:
        line += (
            f"{h['run_s']:7.4f} {h['cpu_s']:6.3f} {h['run_s'] / p['run_s']:5.1f}x "
            f"{h['cpu_s'] / p['cpu_s']:5.1f}x | {p['rss_mb']:9.0f} {h['rss_mb']:7.0f} "
            f"{h['rss_mb'] / p['rss_mb']:4.2f}x"
        )
    else:
        line += f"{'-':>7} {'-':>6} {'-':>6} {'-':>6} | {p['rss_mb']:9.0f} {'-':>7} {'-':>5}"
    if with_base and b:
        line += (
            f" | {b['run_s']:7.4f} {b['cpu_s']:6.3f} {b['rss_mb']:5.0f} {b['run_s'] / p['run_s']:7.2f}x "
            f"{b['cpu_s'] / p['cpu_s']:4.2f}x {b['rss_mb'] / p['rss_mb']:4.2f}x"
        )
    if not h and r["hta_error"]:
        line += f"  (HTA failed: {r['hta_error'][:60]})"
    return line


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--traces", type=Path, default=DEFAULT_TRACES, help="folder of the shared traces")
    ap.add_argument("--repeats", type=int, default=3, help="runs per measurement (median)")
    ap.add_argument("--only", action="append", default=[], help="only traces whose name holds this")
    ap.add_argument("--hta-python", default=None, help="interpreter with HolisticTraceAnalysis")
    ap.add_argument("--scale", type=Path, default=DEFAULT_SCALE if DEFAULT_SCALE.exists() else None)
    ap.add_argument("--no-scale", action="store_true", help="skip the synthetic scale trace")
    ap.add_argument("--scale-repeats", type=int, default=3)
    ap.add_argument(
        "--base-python", default=None, help="a baseline checkout's interpreter: every trace and --scale"
    )
    ap.add_argument("--decoders", action="store_true", help="also time JSON decoders on the two largest")
    ap.add_argument(
        "--system-pool",
        action="store_true",
        help="run profui (both sides of --scale) with ARROW_DEFAULT_MEMORY_POOL=system",
    )
    args = ap.parse_args()
    if args.system_pool:
        PROFUI_ENV["ARROW_DEFAULT_MEMORY_POOL"] = "system"
    compile_sources()
    if args.base_python:
        compile_sources(args.base_python)

    files = [f for f in kineto_sources(args.traces) if not args.only or any(o in f.name for o in args.only)]
    if not files:
        sys.exit(f"no shared traces found in {args.traces}; set PROFUI_TRACES or --traces")
    hta_python = find_hta_python(args.hta_python)
    if hta_python is None:
        print(
            "HTA not found: skipping the HTA comparison. Set it up with:\n"
            f"  {HTA_SETUP}\n"
            "(or pass --hta-python)."
        )
    pool = " with ARROW_DEFAULT_MEMORY_POOL=system" if PROFUI_ENV else ""
    print(f"start: {load()}; profui: {sys.executable}{pool}; HTA: {hta_python or '-'}")
    print(
        "times: median s of fresh processes, module import excluded; CPU = user + system; "
        "peak: the process's own (benchmarks/peak.py); x = HTA / profui; every process with "
        "OPENBLAS_NUM_THREADS=1 (as profui's command line runs)"
    )
    with_base = bool(args.base_python)
    if with_base:
        print(f"base: {args.base_python}; b/n = base / new (this profui)")
    print(header(with_base))
    work = Path(tempfile.mkdtemp(prefix="profui-bench-"))
    SCRATCH.append(work)
    rows, skipped, floor = [], [], None
    try:
        for src in files:
            try:
                r = bench_file(src, work, args.repeats, hta_python, args.base_python)
            except RuntimeError as exc:
                skipped.append(f"{src.name}: profui does not import it ({exc})")
                continue
            rows.append(r)
            print(trace_line(r, with_base), flush=True)
        try:
            floor = bench_floor(work, args.repeats, hta_python, args.base_python)
            print(trace_line(floor, with_base) + "  (written by this benchmark)", flush=True)
        except RuntimeError as exc:
            skipped.append(f"the 1-event trace: profui does not import it ({exc})")
        for s in skipped:
            print(f"skipped {s}")
        if args.decoders:
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
        if args.scale and not args.no_scale:
            bench_scale(args.scale, work, args.scale_repeats, args.base_python)
    finally:
        shutil.rmtree(work, ignore_errors=True)

    compared = [r for r in rows if r["hta"]]
    pq_json = max(rows, key=lambda r: r["parquet_bytes"] / r["json_bytes"])
    print(
        f"\nSIZE worst of {len(rows)}: parquet/json={pq_json['parquet_bytes'] / pq_json['json_bytes']:.4f} "
        f"({pq_json['file']})"
    )
    if compared:

        def worst(label: str, key, target: float) -> str:
            r = min(compared, key=key)
            verdict = "meets" if key(r) >= target else "MISSES"
            return f"{label} {key(r):.2f}x ({r['file']}; target >= {target}x: {verdict})"

        print(
            f"WORST of {len(compared)} traces, HTA / profui: "
            + worst("wall", lambda r: r["hta"]["run_s"] / r["profui"]["run_s"], TARGET_SPEED)
            + "; "
            + worst("CPU", lambda r: r["hta"]["cpu_s"] / r["profui"]["cpu_s"], TARGET_SPEED)
            + "; "
            + worst("peak memory", lambda r: r["hta"]["rss_mb"] / r["profui"]["rss_mb"], TARGET_MEMORY)
        )
        small = min(compared, key=lambda r: r["json_bytes"])
        p, h = small["profui"], small["hta"]
        print(
            f"FLOOR ({small['file']}, the smallest): peak after the modules' import alone, before any "
            f"work: profui {p['mods_mb']:.0f} MB of {p['rss_mb']:.0f}, HTA {h['mods_mb']:.0f} MB of {h['rss_mb']:.0f}"
        )
    if floor and floor["hta"]:
        p, h = floor["profui"], floor["hta"]
        base = floor["base"]
        was = f"; base {base['run_s'] * 1e3:.1f} ms wall, {base['cpu_s'] * 1e3:.1f} ms CPU" if base else ""
        print(
            f"FLOOR CPU (a 1-event trace, the least any import costs): profui {p['run_s'] * 1e3:.1f} ms wall, "
            f"{p['cpu_s'] * 1e3:.1f} ms CPU (of it {p['threads_s'] * 1e3:.1f} ms on other threads){was}; HTA {h['run_s'] * 1e3:.1f} ms wall, {h['cpu_s'] * 1e3:.1f} ms CPU "
            f"(HTA / profui: wall {h['run_s'] / p['run_s']:.2f}x, CPU {h['cpu_s'] / p['cpu_s']:.2f}x; "
            f"peak {p['rss_mb']:.0f} against {h['rss_mb']:.0f} MB)"
        )
    else:
        print("WORST: no trace compared with HTA")
    print(f"end: {load()}")


if __name__ == "__main__":
    main()
