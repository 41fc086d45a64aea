"""Nsight Systems exports: profui's import + full summary against nsys-ai's ``info`` and ``diff``.

On the real 2-GPU H100 exports in ``../shared/traces/nsys/`` (2.3-2.7 MB SQLite), in one run, each
measurement in a fresh process, the kinds alternating so both tools see the same machine load:

- ``profui``      : ``profui summary X.sqlite --json`` with an empty cache (import + every analysis);
- ``nsys-ai info``: ``nsys-ai info X.sqlite`` on a fresh copy of the file (nsys-ai caches beside it);
- ``nsys-ai diff``: ``nsys-ai diff before.sqlite after.sqlite --no-ai`` on fresh copies, against
  ``profui diff before.sqlite after.sqlite`` with an empty cache (both imports, every analysis
  the diff reads, the diff).

Per run: ``wall`` (from outside), ``cpu`` (user + system of the process and its children) and
peak RSS; medians of ``--repeat`` runs. nsys-ai tries to download a DuckDB extension on every
start and falls back to sqlite3 when it cannot (no network here): that wait is in its wall
time, not in its cpu time, so both are printed. nsys-ai is installed in its own venv, never as a
dependency: ``python3 -m venv .venv-nsysai && .venv-nsysai/bin/pip install nsys-ai``.

    .venv/bin/python benchmarks/formats.py [--repeat 3] [--nsys-ai .venv-nsysai/bin/nsys-ai]
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
EXPORTS = ("h100_2gpu_1s", "mfu_2gpu_before", "mfu_2gpu_after")
PAIR = ("mfu_2gpu_before", "mfu_2gpu_after")


def run(cmd: list[str], env: dict[str, str] | None = None) -> dict[str, float]:
    """Wall seconds, CPU seconds and peak RSS (MB) of ``cmd`` in a fresh process."""
    t0 = time.perf_counter()
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, env=env)
    _pid, status, usage = os.wait4(proc.pid, 0)
    wall = time.perf_counter() - t0
    err = proc.stderr.read().decode(errors="replace") if proc.stderr else ""
    if os.waitstatus_to_exitcode(status) != 0:
        raise SystemExit(f"{' '.join(cmd)} failed:\n{err[-2000:]}")
    return {"wall": wall, "cpu": usage.ru_utime + usage.ru_stime, "rss": usage.ru_maxrss / 1024}


def median(runs: list[dict[str, float]]) -> dict[str, float]:
    return {k: statistics.median(r[k] for r in runs) for k in runs[0]}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--nsys-ai", default=str(REPO / ".venv-nsysai" / "bin" / "nsys-ai"))
    ap.add_argument(
        "--traces", default=os.environ.get("PROFUI_TRACES", str(REPO.parent / "shared" / "traces"))
    )
    args = ap.parse_args()
    nsys_dir = Path(args.traces) / "nsys"
    if not Path(args.nsys_ai).is_file():
        raise SystemExit(f"nsys-ai not found at {args.nsys_ai}: see this script's docstring")
    profui = str(Path(sys.executable).with_name("profui"))
    ours: dict[str, list] = {n: [] for n in EXPORTS}
    info: dict[str, list] = {n: [] for n in EXPORTS}
    diff: list = []
    ours_diff: list = []
    for _ in range(args.repeat):
        for name in EXPORTS:
            with tempfile.TemporaryDirectory() as cache:
                env = {**os.environ, "PROFUI_CACHE": cache}
                ours[name].append(run([profui, "summary", str(nsys_dir / f"{name}.sqlite"), "--json"], env))
            with tempfile.TemporaryDirectory() as work:
                copy = Path(work) / f"{name}.sqlite"
                shutil.copy(nsys_dir / f"{name}.sqlite", copy)
                info[name].append(run([args.nsys_ai, "info", str(copy)]))
        with tempfile.TemporaryDirectory() as work:
            copies = []
            for name in PAIR:
                copies.append(Path(work) / f"{name}.sqlite")
                shutil.copy(nsys_dir / f"{name}.sqlite", copies[-1])
            diff.append(run([args.nsys_ai, "diff", *map(str, copies), "--no-ai"]))
        with tempfile.TemporaryDirectory() as cache:
            env = {**os.environ, "PROFUI_CACHE": cache}
            ours_diff.append(run([profui, "diff", *(str(nsys_dir / f"{n}.sqlite") for n in PAIR)], env))
    print(f"{'file':<18} {'tool':<14} {'wall s':>8} {'cpu s':>8} {'peak MB':>8}")
    for name in EXPORTS:
        for tool, runs in (("profui", ours[name]), ("nsys-ai info", info[name])):
            m = median(runs)
            print(f"{name:<18} {tool:<14} {m['wall']:>8.2f} {m['cpu']:>8.2f} {m['rss']:>8.0f}")
    both = median(ours_diff)
    d = median(diff)
    print(
        f"{'before+after':<18} {'profui diff':<14} {both['wall']:>8.2f} {both['cpu']:>8.2f} {both['rss']:>8.0f}"
    )
    print(f"{'before+after':<18} {'nsys-ai diff':<14} {d['wall']:>8.2f} {d['cpu']:>8.2f} {d['rss']:>8.0f}")
    mi = {n: median(info[n]) for n in EXPORTS}
    mo = {n: median(ours[n]) for n in EXPORTS}
    info_wall = sum(mi[n]["wall"] for n in EXPORTS) / sum(mo[n]["wall"] for n in EXPORTS)
    info_cpu = sum(mi[n]["cpu"] for n in EXPORTS) / sum(mo[n]["cpu"] for n in EXPORTS)
    print(
        f"ratios (nsys-ai / profui, medians of {args.repeat}): info {info_wall:.1f}x wall, {info_cpu:.1f}x cpu; "
        f"diff (cold) {d['wall'] / both['wall']:.1f}x wall, {d['cpu'] / both['cpu']:.1f}x cpu; "
        f"peak RSS nsys-ai/profui {max(m['rss'] for m in mi.values()) / max(m['rss'] for m in mo.values()):.2f}x"
    )


if __name__ == "__main__":
    main()
