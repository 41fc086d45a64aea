"""profui analysis vs Holistic Trace Analysis (HTA) on the largest shared GPU traces.

For each trace, in one run, every measurement in a fresh process (so wall time includes the
interpreter and library imports, and peak RSS is that process's own); the three kinds of run
alternate, so both tools see the same machine load:

- ``ours e2e``      : Kineto JSON -> profui import -> open -> full summary (``summarize``);
- ``ours e2e-py``   : the same with ``PROFUI_PURE_PYTHON=1`` (no C scan: a user without a compiler);
- ``ours imported`` : already imported trace -> open -> full summary;
- ``HTA``           : ``TraceAnalysis`` parse + gpu kernel breakdown + temporal breakdown +
                      idle time breakdown + comm/comp overlap + CUDA kernel launch stats.

Three figures per run, the same for both tools: ``wall`` (the fresh process from outside:
interpreter start, library imports and the work), ``in-process`` (the work alone, after the
library imports) and ``cpu`` (user + system CPU seconds of the process and its children, whole
process; the steadiest figure on a shared, loaded machine — Polars' threads count here, so it
does not flatter our multi-threaded side). Medians of ``--repeat`` runs; a child that fails
(HTA's parser occasionally loses a rank under memory pressure) is retried up to twice.
HTA runs in its own venv (``.venv-bench``; ``hta_env.py`` says how to make it).
The last lines print the ratios (HTA / ours, times summed over the traces; peak RSS: HTA / ours
on the worst trace) for the issue's yardstick, the two largest GPU traces (df_index, mtia), and
for all traces measured; then the start-up floor: what a fresh Python process with our
libraries costs before any work, against a 20th of HTA's time.

``--without allocations flops`` adds, with a baseline, two more sides: ours end to end and from
imported with those sections left empty (each named stage's outputs replaced by its declared
empty tables before the run; only stages no other stage but ``summary`` reads). It answers one
question: how much of a change against the baseline is the sections added since it.

HTA's own time moves from machine to machine and day to day (df_index's HTA run has measured
3.3 s and 6.8 s on machines of the same kind), and the ratio with it, so "did profui regress"
is answered by a paired run: ``--baseline-python`` names an interpreter with another profui
installed (another commit: ``git worktree add ../base COMMIT``, a venv there, ``pip install -e
../base``); its runs alternate with the others, and the ratios are printed for it too, with
ours-now / baseline per side (below 1.00x: now is faster).

    .venv/bin/python benchmarks/analysis_vs_hta.py [--repeat 3] [--traces name ...]
                                                   [--baseline-python ../base/.venv/bin/python]
                                                   [--without STAGE ...]
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

from hta_env import HTA_PYTHON, HTA_SETUP
from precompile import compile_sources

REPO = Path(__file__).resolve().parent.parent
DEFAULT_TRACES = (
    "hta-df_index_resolver-df_index_resolver.json.gz",  # largest CUDA trace (54 MB JSON, 216k events)
    "hta-mtia_trace_single_rank-mtia_rank_0.json.gz",  # biggest file (87 MB JSON, 456k events)
    "hta-ns_resolution_trace-rank-0.Apr_03_18_51_38.1102.pt.trace.json.gz",
    "hta-nccl_parser_config-nccl_data.json.gz",
)

_REPORT = """
import json, resource, sys, time
_self, _kids = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
print(json.dumps({"inner_s": time.perf_counter() - _T0, "compute_s": time.perf_counter() - _T1,
                  "cpu_s": _self.ru_utime + _self.ru_stime + _kids.ru_utime + _kids.ru_stime,
                  "rss_mb": max(_self.ru_maxrss, _kids.ru_maxrss) / 1024}))
"""

OURS_E2E = (
    """
import time; _T0 = time.perf_counter()
import sys
from pathlib import Path
from profui.capture.ingest import import_trace
from profui.analysis import open_trace
from profui.analysis.summary import summarize
_T1 = time.perf_counter()
out = Path(sys.argv[2])
import_trace([Path(sys.argv[1])], out)
summarize(open_trace(out))
"""
    + _REPORT
)

OURS_IMPORTED = (
    """
import time; _T0 = time.perf_counter()
import sys
from profui.analysis import open_trace
from profui.analysis.summary import summarize
_T1 = time.perf_counter()
summarize(open_trace(sys.argv[1]))
"""
    + _REPORT
)

#: Prepended to ours' child code by ``--without``: the stages named in ``PROFUI_BENCH_WITHOUT``
#: return their declared empty outputs (a ``.json`` output: its keys, ``note`` "" and others 0).
WITHOUT = """
import dataclasses as _dc, os as _os
from profui.analysis.pipeline.registry import REGISTRY as _R
from profui.analysis.schemas import JSON_KEYS as _J, TABLES as _T
def _empty(stage):
    tables = {f: d.empty() for (s, f), d in _T.items() if s == stage}
    docs = {f: {k: "" if k == "note" else 0 for k in keys} for (s, f), keys in _J.items() if s == stage}
    return lambda ctx: {**tables, **docs}
for _name in _os.environ["PROFUI_BENCH_WITHOUT"].split(","):
    if _name not in _R.stages:
        raise SystemExit(f"--without {_name}: no such stage ({', '.join(_R.stages)})")
    if any(_name in s.inputs for s in _R.stages.values() if s.name != "summary"):
        raise SystemExit(f"--without {_name}: another stage reads it")
    _R.stages[_name] = _dc.replace(_R.stages[_name], run=_empty(_name))
"""


def without(code: str) -> str:
    """``code`` with :data:`WITHOUT` run right after its clock starts."""
    _, head, rest = code.split("\n", 2)
    return f"\n{head}\n{WITHOUT}\n{rest}"


HTA = (
    """
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
"""
    + _REPORT
)


RETRIES: list[str] = []


STARTUP = (
    """
import time; _T0 = time.perf_counter(); _T1 = _T0
from profui.analysis import open_trace
from profui.analysis.summary import summarize
"""
    + _REPORT
)

NATIVE = "from profui.capture.kineto import native; print(native.available())"


def run(python: str, code: str, *args: str, tries: int = 3, env: dict | None = None) -> dict:
    """Run ``code`` in a fresh ``python``; wall time measured from outside. Retried on failure."""
    for attempt in range(tries):
        t0 = time.perf_counter()
        proc = subprocess.run(
            [python, "-c", code, *args],
            capture_output=True,
            text=True,
            cwd=REPO,
            env={**os.environ, "PYTHONWARNINGS": "ignore", **(env or {})},
        )
        wall = time.perf_counter() - t0
        if proc.returncode == 0:
            out = json.loads(proc.stdout.strip().splitlines()[-1])
            out["wall_s"] = wall
            return out
        RETRIES.append(
            f"{Path(python).parent.parent.name} {Path(args[0]).name}: {proc.stderr.strip().splitlines()[-1:]}"
        )
        if attempt == tries - 1:
            raise RuntimeError(f"benchmark child failed:\n{proc.stderr[-3000:]}")
    raise AssertionError("unreachable")


def median_of(runs: list[dict]) -> dict:
    return {k: statistics.median(r[k] for r in runs) for k in runs[0]}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--traces", nargs="*", default=list(DEFAULT_TRACES))
    ap.add_argument(
        "--traces-dir", default=os.environ.get("PROFUI_TRACES", str(REPO.parent / "shared" / "traces"))
    )
    ap.add_argument("--python", default=sys.executable, help="interpreter with profui installed")
    ap.add_argument("--hta-python", default=str(HTA_PYTHON))
    ap.add_argument(
        "--baseline-python",
        help="interpreter with another profui (a baseline commit), measured in the same run",
    )
    ap.add_argument(
        "--without",
        nargs="+",
        default=[],
        metavar="STAGE",
        help="with --baseline-python: also measure ours with these sections left empty",
    )
    opts = ap.parse_args()
    if opts.without and not opts.baseline_python:
        ap.error("--without compares with a baseline: give --baseline-python too")
    compile_sources()
    if opts.baseline_python:
        compile_sources(opts.baseline_python)
    if not Path(opts.hta_python).exists():
        sys.exit(f"no HTA interpreter at {opts.hta_python}: create it: {HTA_SETUP}")

    w_env = {"PROFUI_BENCH_WITHOUT": ",".join(opts.without)}
    if opts.without:  # a stage that cannot be left empty fails here, not after the first trace
        check = subprocess.run(
            [opts.python, "-c", without(STARTUP)], capture_output=True, text=True, env={**os.environ, **w_env}
        )
        if check.returncode:
            sys.exit((check.stderr.strip().splitlines() or ["--without: the check failed"])[-1])

    rows = []
    baseline_rows: list[tuple[str, dict, dict, tuple[dict, dict] | None]] = []
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
            r_e2e, r_py, r_imp, r_hta = [], [], [], []
            b_e2e, b_imp, w_e2e, w_imp = [], [], [], []
            if opts.baseline_python:
                base_imported = tmp / f"base-imported{i}"
                run(opts.baseline_python, OURS_E2E, str(src), str(base_imported))
            for k in range(opts.repeat):
                out = tmp / f"e2e{i}-{k}"
                r_e2e.append(run(opts.python, OURS_E2E, str(src), str(out)))
                shutil.rmtree(out, ignore_errors=True)
                r_py.append(run(opts.python, OURS_E2E, str(src), str(out), env={"PROFUI_PURE_PYTHON": "1"}))
                shutil.rmtree(out, ignore_errors=True)
                r_imp.append(run(opts.python, OURS_IMPORTED, str(imported)))
                r_hta.append(run(opts.hta_python, HTA, str(hta_dir)))
                if opts.baseline_python:
                    b_e2e.append(run(opts.baseline_python, OURS_E2E, str(src), str(out)))
                    shutil.rmtree(out, ignore_errors=True)
                    b_imp.append(run(opts.baseline_python, OURS_IMPORTED, str(base_imported)))
                    if opts.without:
                        w_e2e.append(run(opts.python, without(OURS_E2E), str(src), str(out), env=w_env))
                        shutil.rmtree(out, ignore_errors=True)
                        w_imp.append(run(opts.python, without(OURS_IMPORTED), str(imported), env=w_env))
            if opts.baseline_python:
                w = (median_of(w_e2e), median_of(w_imp)) if opts.without else None
                baseline_rows.append((name, median_of(b_e2e), median_of(b_imp), w))
            rows.append(
                (
                    name,
                    src.stat().st_size,
                    median_of(r_e2e),
                    median_of(r_py),
                    median_of(r_imp),
                    median_of(r_hta),
                )
            )
        startup = median_of([run(opts.python, STARTUP) for _ in range(max(opts.repeat, 3))])

    if not rows:
        sys.exit("no traces to measure")
    native_on = subprocess.run([opts.python, "-c", NATIVE], capture_output=True, text=True).stdout.strip()
    sides = ("e2e", "py", "imp", "hta")
    print(f"native C scan available: {native_on}")
    print(
        f"{'trace':<40} {'MB':>4} | {'wall s: e2e':>11} {'e2e-py':>6} {'imp':>5} {'HTA':>5} | "
        f"{'in-proc s: e2e':>14} {'e2e-py':>6} {'imp':>5} {'HTA':>5} | {'RSS MB: e2e':>11} {'imp':>4} {'HTA':>4}"
    )
    for name, size, *res in rows:
        r = dict(zip(sides, res, strict=True))
        print(
            f"{name[4:44]:<40} {size / 2**20:4.1f} | "
            f"{r['e2e']['wall_s']:11.2f} {r['py']['wall_s']:6.2f} {r['imp']['wall_s']:5.2f} {r['hta']['wall_s']:5.2f} | "
            f"{r['e2e']['compute_s']:14.2f} {r['py']['compute_s']:6.2f} {r['imp']['compute_s']:5.2f} "
            f"{r['hta']['compute_s']:5.2f} | {r['e2e']['rss_mb']:11.0f} {r['imp']['rss_mb']:4.0f} {r['hta']['rss_mb']:4.0f}"
        )
    print(
        f"wall = fresh process incl. interpreter start and library imports; in-proc = after the imports "
        f"(HTA: parse + analyses; ours: import + open + summary, or open + summary); cpu = user+sys of the whole "
        f"process; medians of {opts.repeat} runs"
    )
    for r in RETRIES:
        print(f"retried a failed run: {r}")

    def ratios(label: str, chosen: list) -> None:
        tot: dict[str, float] = {}
        for _name, _size, *res in chosen:
            for side, r in zip(sides, res, strict=True):
                for key in ("wall_s", "compute_s", "cpu_s"):
                    tot[f"{side}_{key}"] = tot.get(f"{side}_{key}", 0.0) + r[key]
        mem = min(res[3]["rss_mb"] / max(res[0]["rss_mb"], res[2]["rss_mb"]) for _n, _s, *res in chosen)

        def x(side: str, key: str) -> str:
            return f"{tot[f'hta_{key}'] / tot[f'{side}_{key}']:.1f}x"

        print(
            f"RATIOS HTA/ours, {label}: end-to-end wall {x('e2e', 'wall_s')} (in-process {x('e2e', 'compute_s')}, "
            f"cpu {x('e2e', 'cpu_s')}; pure Python {x('py', 'wall_s')}); from imported wall {x('imp', 'wall_s')} "
            f"(in-process {x('imp', 'compute_s')}, cpu {x('imp', 'cpu_s')}); peak memory {mem:.2f}x lower"
        )

    largest = [r for r in rows if r[0] in DEFAULT_TRACES[:2]]
    if largest:
        ratios("the largest GPU traces (df_index, mtia)", largest)
    ratios(f"all {len(rows)} traces", rows)
    if baseline_rows:
        baseline(opts.baseline_python, rows, baseline_rows, opts.without)
    floor = startup["wall_s"]
    budget = min(res[3]["wall_s"] for _n, _s, *res in (largest or rows)) / 20
    print(
        f"START-UP FLOOR: a fresh process that only imports profui.analysis takes {floor:.2f} s (median); "
        f"a 20th of HTA's fastest {'largest-trace' if largest else ''} run is {budget:.2f} s, so from an imported "
        f"trace the wall-time ratio is capped at {budget * 20 / floor:.0f}x before any work is done"
    )


def baseline(python: str, rows: list, baseline_rows: list, without_stages: list[str]) -> None:
    """The baseline interpreter's figures, and now / baseline and HTA / baseline, in the same run
    (and now without ``without_stages`` / baseline, where measured)."""
    print(f"BASELINE {python}:")
    tot = {
        "now_e2e": 0.0,
        "now_imp": 0.0,
        "base_e2e": 0.0,
        "base_imp": 0.0,
        "hta": 0.0,
        "w_e2e": 0.0,
        "w_imp": 0.0,
    }
    for (name, _size, e2e, _py, imp, hta), (_n, b_e2e, b_imp, w) in zip(rows, baseline_rows, strict=True):
        if w:
            tot["w_e2e"] += w[0]["wall_s"]
            tot["w_imp"] += w[1]["wall_s"]
            print(
                f"  {name[4:44]:<40} without {','.join(without_stages)}: wall s: e2e {w[0]['wall_s']:.2f}, "
                f"imp {w[1]['wall_s']:.2f}; in-proc s: e2e {w[0]['compute_s']:.2f}, imp {w[1]['compute_s']:.2f}"
            )
        print(
            f"  {name[4:44]:<40} wall s: e2e {b_e2e['wall_s']:.2f} (now {e2e['wall_s']:.2f}), imp "
            f"{b_imp['wall_s']:.2f} (now {imp['wall_s']:.2f}); in-proc s: e2e {b_e2e['compute_s']:.2f} "
            f"(now {e2e['compute_s']:.2f}), imp {b_imp['compute_s']:.2f} (now {imp['compute_s']:.2f})"
        )
        tot["now_e2e"] += e2e["wall_s"]
        tot["now_imp"] += imp["wall_s"]
        tot["base_e2e"] += b_e2e["wall_s"]
        tot["base_imp"] += b_imp["wall_s"]
        tot["hta"] += hta["wall_s"]
    print(
        f"RATIOS baseline, all {len(rows)} traces: HTA/baseline end-to-end wall {tot['hta'] / tot['base_e2e']:.1f}x, "
        f"from imported wall {tot['hta'] / tot['base_imp']:.1f}x; now/baseline wall: end-to-end "
        f"{tot['now_e2e'] / tot['base_e2e']:.2f}x, from imported {tot['now_imp'] / tot['base_imp']:.2f}x "
        f"(below 1.00x: now is faster)"
    )
    if without_stages:
        print(
            f"RATIOS without {','.join(without_stages)}: now/baseline wall: end-to-end "
            f"{tot['w_e2e'] / tot['base_e2e']:.2f}x, from imported {tot['w_imp'] / tot['base_imp']:.2f}x"
        )


if __name__ == "__main__":
    main()
