"""How profui's cost grows with the trace (issue #40, target 1): import and summary of a real
trace replicated 1× to 33× along time, each stage's time at each size, base against new.

**Synthetic scale, built from real data**: the shared df_index trace (216k JSON events, 151k
trace rows) is replicated along time by ``replicate_trace.py`` (copies shifted, ids offset, step
numbers going on). 20× is 3.0M trace rows, 33× 5.0M.

Every figure is a fresh process measured by ``benchmarks/peak.py`` (wall time includes the
interpreter and its imports; CPU seconds are the child's user+sys, Polars' threads included; peak
RSS is the child's own); medians of ``--repeat`` runs, base and new alternating:

- ``import``  : ``profui import FILE -o DIR --force`` (each side into its own folder);
- ``summary`` : ``profui summary DIR --json`` (every stage, in memory, as a user runs it);
- ``stages``  : a child that opens the trace and runs the stage graph one stage at a time
                (``store.compute(trace, [stage], store=…)`` in the registry's order, so each call
                runs only that stage), timing each call's wall and process CPU. This is the
                documented instrumentation behind the per-stage figures: stages run in turn, not
                overlapped as in ``summary``, and reading the events (shared by all stages) is
                counted in the first stage that reads them, ``ingest``.

Growth of a stage from the smallest size to a larger one is its CPU-seconds ratio divided by the
events ratio: ≤ 1.0 is linear or better. The targets are printed met / not met with the load
they were measured at (the issue's wall target is for an idle 2-core machine).

    .venv/bin/python benchmarks/scale.py [--copies 1,5,20,33] [--repeat 3] [--keep DIR]
        [--base /tmp/basevenv/bin/profui] [--base-copies 20,33] [--no-import] [--malloc-conf CONF]

``--keep DIR`` keeps the replicated JSON files and the imported folders in DIR, and a rerun reuses
the JSON (the 33× file takes ~30 s to write); with ``--no-import`` it also reuses the imported
folders and measures only the summary and the stages.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

from machine import line as machine_line
from peak import run as measure
from precompile import compile_sources
from replicate_trace import replicate

REPO = Path(__file__).resolve().parent.parent
DEFAULT = "hta-df_index_resolver-df_index_resolver.json.gz"
BASE = "/tmp/basevenv/bin/profui"
#: What the header says of jemalloc's settings where ``--malloc-conf`` sets none: each side's
#: ``profui`` sets its own (this version: per-CPU arenas and ``muzzy_decay_ms:0``, on Linux) after
#: Polars' defaults.
_SET_BY_PROFUI = (
    "as each side's profui sets it (this version: per-CPU arenas, muzzy_decay_ms:0; Linux) over Polars'"
)

#: Issue #40's target 1: the ~5M-row size's import + summary wall and peak, the 3M summary's CPU.
TARGET_WALL_S, TARGET_PEAK_MB, TARGET_CPU_S = 16.0, 2000.0, 8.0

#: Runs the stage graph one stage at a time and prints each stage's wall and process CPU.
STAGES_CHILD = """
import json, sys, time
from profui.analysis.trace import open_trace
from profui.analysis.pipeline.registry import REGISTRY
from profui.analysis.pipeline.store import compute
trace, store, out = open_trace(sys.argv[1]), {}, {}
# the stages a summary's run has (an on-demand one, the timeline's index, is not one)
for name in [s for s in REGISTRY.order if not getattr(REGISTRY.stages[s], "on_demand", False)]:
    w, c = time.perf_counter(), time.process_time()
    compute(trace, [name], store=store)
    out[name] = [time.perf_counter() - w, time.process_time() - c]
print("@@STAGES@@" + json.dumps(out))
"""


def traces_dir() -> Path:
    return Path(os.environ.get("PROFUI_TRACES", REPO.parent / "shared" / "traces"))


def load() -> str:
    """The 1-, 5- and 15-minute load averages."""
    return " ".join(f"{x:.2f}" for x in os.getloadavg())


#: ``--malloc-conf``: Polars' allocator settings (jemalloc's ``_RJEM_MALLOC_CONF``) for every
#: command measured, both sides; None leaves the environment as it is.
MALLOC_CONF: str | None = None


def measured(cmd: list[str], quiet: bool = True) -> tuple[dict[str, float], str]:
    """``({wall, cpu, mb}, stdout)`` of ``cmd`` measured by ``benchmarks/peak.py``: the CPU
    seconds and the peak are that command's alone (MB: 10**6 bytes)."""
    env = None if MALLOC_CONF is None else {**os.environ, "_RJEM_MALLOC_CONF": MALLOC_CONF}
    m = measure(cmd, env=env, stdout=subprocess.DEVNULL if quiet else subprocess.PIPE)
    if m.code != 0:
        raise SystemExit(f"{' '.join(cmd[:4])}… failed ({m.code}): {m.stderr.strip()[-600:]}")
    return {"wall": m.wall, "cpu": m.cpu, "mb": m.peak_mb * 2**20 / 1e6}, m.stdout or ""


def events_of(trace: Path) -> int:
    import pyarrow.parquet as pq

    return sum(pq.ParquetFile(p).metadata.num_rows for p in trace.rglob("events-*.parquet"))


class Side:
    """One profui to measure: its ``profui`` executable and the Python beside it."""

    def __init__(self, name: str, profui: str) -> None:
        self.name, self.profui = name, profui
        self.python = str(Path(profui).with_name("python"))

    def stages(self, trace: Path) -> dict[str, list[float]]:
        _, out = measured([self.python, "-c", STAGES_CHILD, str(trace)], quiet=False)
        line = [x for x in out.splitlines() if x.startswith("@@STAGES@@")]
        return json.loads(line[-1][len("@@STAGES@@") :])


def med(values: list[float]) -> float:
    return statistics.median(values)


def median_of(runs: list[dict[str, float]]) -> dict[str, float]:
    return {k: med([r[k] for r in runs]) for k in runs[0]}


def build(src: Path, copies: int, work: Path) -> Path:
    """The ``copies``× replica of ``src`` in ``work`` (written once, reused with ``--keep``)."""
    js = work / f"x{copies}.json"
    if not js.is_file():
        part = js.with_suffix(".part")
        n = replicate(src, copies, "distinct", part)
        part.rename(js)
        print(
            f"  built {js.name}: {n:,} JSON events ({copies} copies of {src.name}; synthetic scale)",
            flush=True,
        )
    return js


def measure_size(
    js: Path, copies: int, sides: list[Side], work: Path, repeat: int, do_import: bool
) -> dict[str, dict]:
    """Import, summary and per-stage figures of each side at one size, sides alternating."""
    runs: dict[str, dict[str, list]] = {s.name: {"import": [], "summary": [], "stages": []} for s in sides}
    for r in range(repeat):
        for side in sides if r % 2 == 0 else sides[::-1]:
            folder = work / f"x{copies}-{side.name}"
            got = runs[side.name]
            if do_import or not folder.is_dir():
                got["import"].append(
                    measured([side.profui, "import", str(js), "-o", str(folder), "--force"])[0]
                )
            got["summary"].append(measured([side.profui, "summary", str(folder), "--json"])[0])
            got["stages"].append(side.stages(folder))
    rows = {}
    for side in sides:
        got = runs[side.name]
        folder = work / f"x{copies}-{side.name}"
        stage_names = list(got["stages"][0])
        rows[side.name] = {
            "events": events_of(folder),
            "import": median_of(got["import"]) if got["import"] else None,
            "summary": median_of(got["summary"]),
            "stages": {
                n: {
                    "wall": med([s[n][0] for s in got["stages"]]),
                    "cpu": med([s[n][1] for s in got["stages"]]),
                }
                for n in stage_names
            },
        }
    return rows


def _fig(m: dict[str, float] | None) -> str:
    if m is None:
        return "not measured (kept folder)"
    return f"{m['wall']:6.2f} s wall {m['cpu']:6.2f} CPU-s {m['mb']:6.0f} MB"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--trace", default=str(traces_dir() / DEFAULT))
    ap.add_argument("--copies", default="1,5,20,33", help="sizes, comma-separated")
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--keep", help="keep the built JSON and imported folders here and reuse them")
    ap.add_argument("--no-import", action="store_true", help="reuse kept imported folders (with --keep)")
    ap.add_argument("--base", default=BASE, help="the baseline's profui executable ('' for none)")
    ap.add_argument("--base-copies", default="1,5,20,33", help="sizes the baseline runs at")
    ap.add_argument(
        "--malloc-conf",
        help="jemalloc settings for every measured command (e.g. dirty_decay_ms:0,muzzy_decay_ms:0: freed "
        "memory is returned at once, so the peak is what was held, at a CPU cost)",
    )
    args = ap.parse_args()
    global MALLOC_CONF
    MALLOC_CONF = args.malloc_conf
    compile_sources()
    src = Path(args.trace)
    if not src.is_file():
        raise SystemExit(f"trace not found: {src} (set PROFUI_TRACES or --trace)")
    new = Side("new", str(Path(sys.executable).with_name("profui")))
    base = Side("base", args.base) if args.base and Path(args.base).is_file() else None
    if base is not None:
        compile_sources(base.python)
    sizes = [int(x) for x in args.copies.split(",")]
    base_sizes = {int(x) for x in args.base_copies.split(",")} if base else set()
    print(
        f"synthetic scale from real data: {src.name} replicated along time (replicate_trace.py); "
        f"medians of {args.repeat} runs, each a fresh process; base {base.profui if base else 'none'}; "
        f"{os.cpu_count()} cores; load {load()}; _RJEM_MALLOC_CONF {MALLOC_CONF or _SET_BY_PROFUI}",
        flush=True,
    )
    print(machine_line(), flush=True)
    results: dict[int, dict[str, dict]] = {}
    with tempfile.TemporaryDirectory(prefix="profui-scale-") as tmp:
        work = Path(args.keep) if args.keep else Path(tmp)
        work.mkdir(parents=True, exist_ok=True)
        for copies in sizes:
            js = build(src, copies, work)
            sides = [s for s in (base, new) if s is not None and (s is new or copies in base_sizes)]
            results[copies] = measure_size(js, copies, sides, work, args.repeat, not args.no_import)
            for name, row in results[copies].items():
                print(
                    f"{copies:3d}× {name:4s} {row['events']:>10,} events | import {_fig(row['import'])}"
                    f" | summary {_fig(row['summary'])} | load {load()}",
                    flush=True,
                )
    report(results, sizes)


def _stage_cpu(row: dict, stage: str) -> float:
    s = row["stages"]
    return sum(v["cpu"] for v in s.values()) if stage == "(all)" else s[stage]["cpu"]


def report(results: dict[int, dict[str, dict]], sizes: list[int]) -> None:
    """Per-stage table (CPU-s base and new at each size, growth ratios) and the targets."""
    small = min(sizes)
    sides = [s for s in ("base", "new") if any(s in results[c] for c in sizes)]
    stages = [*results[sizes[0]]["new"]["stages"], "(all)"]
    print(
        f"\nCPU-s per stage (stages in turn; medians), base → new; growth = CPU ratio ÷ events ratio"
        f" from {small}× (≤ 1.00: linear or better)"
    )
    head = "".join(f"{f'{c}× base':>10s}{f'{c}× new':>9s}" for c in sizes)
    grow = [c for c in sizes if c != small]
    head += "".join(f"{f'gr→{c} base':>12s}{'new':>6s}" for c in grow)
    print(f"  {'stage':12s}{head}")
    for st in stages:
        cells = ""
        for c in sizes:
            for side in ("base", "new"):
                r = results[c].get(side)
                cells += (
                    f"{_stage_cpu(r, st):{10 if side == 'base' else 9}.3f}"
                    if r
                    else f"{'-':>{10 if side == 'base' else 9}s}"
                )
        for c in grow:
            for side in ("base", "new"):
                a, b = results[small].get(side), results[c].get(side)
                w = 12 if side == "base" else 6
                if a and b and _stage_cpu(a, st) > 0:
                    g = _stage_cpu(b, st) / _stage_cpu(a, st) / (b["events"] / a["events"])
                    cells += f"{g:{w}.2f}"
                else:
                    cells += f"{'-':>{w}s}"
        print(f"  {st:12s}{cells}")
    print("\nbase → new, whole commands (new ÷ base):")
    for c in sizes:
        if "base" not in results[c]:
            continue
        for what in ("import", "summary"):
            bb, nn = results[c]["base"][what], results[c]["new"][what]
            if bb and nn:
                print(
                    f"  {c:3d}× {what:7s}: wall {bb['wall']:6.2f} → {nn['wall']:6.2f} s ({nn['wall'] / bb['wall']:.2f}),"
                    f" CPU {bb['cpu']:6.2f} → {nn['cpu']:6.2f} s ({nn['cpu'] / bb['cpu']:.2f}),"
                    f" peak {bb['mb']:5.0f} → {nn['mb']:5.0f} MB ({nn['mb'] / bb['mb']:.2f})"
                )
    print(
        f"\ntargets (issue #40, target 1; load now {load()}; the wall target is for an idle 2-core machine):"
    )
    for side in sides:
        big = max((c for c in sizes if side in results[c]), default=None)
        r = results[big][side]
        if r["import"] is not None:
            wall = r["import"]["wall"] + r["summary"]["wall"]
            peak = max(r["import"]["mb"], r["summary"]["mb"])
            print(
                f"  {side:4s} {big}× ({r['events']:,} rows) import+summary {wall:.2f} s wall vs ≤ {TARGET_WALL_S:g} s"
                f" ({'met' if wall <= TARGET_WALL_S else 'NOT met'}); peak {peak:.0f} MB vs ≤ {TARGET_PEAK_MB:.0f} MB"
                f" ({'met' if peak <= TARGET_PEAK_MB else 'NOT met'}; import {r['import']['mb']:.0f},"
                f" summary {r['summary']['mb']:.0f})"
            )
        if 20 in results and side in results[20]:
            cpu = results[20][side]["summary"]["cpu"]
            print(
                f"  {side:4s} 20× ({results[20][side]['events']:,} rows) summary {cpu:.2f} CPU-s vs ≤ {TARGET_CPU_S:g}"
                f" ({'met' if cpu <= TARGET_CPU_S else 'NOT met'})"
            )
        if side in results[small] and 20 in results and side in results[20]:
            a, b = results[small][side], results[20][side]
            n = b["events"] / a["events"]
            worse = [
                f"{st} {_stage_cpu(b, st) / _stage_cpu(a, st) / n:.2f}"
                for st in stages[:-1]
                if _stage_cpu(a, st) > 0 and _stage_cpu(b, st) / _stage_cpu(a, st) / n > 1.0
            ]
            print(
                f"  {side:4s} growth {small}×→20× linear or better for every stage: "
                + ("met" if not worse else f"NOT met ({', '.join(worse)})")
            )
    print(json.dumps({f"{c}x": r for c, r in results.items()}))


if __name__ == "__main__":
    main()
