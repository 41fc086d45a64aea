"""Nsight Systems exports: profui's import + full summary, this code against a baseline profui and
against nsys-ai's ``info`` and ``diff``.

On the real 2-GPU H100 exports in ``../shared/traces/nsys/`` (2.3-2.7 MB SQLite), in one run, each
measurement in a fresh process, the tools alternating (their order rotating each repeat) so all
see the same machine load:

- ``profui``      : ``profui summary X.sqlite --json`` with an empty cache (import + every analysis),
  by this checkout's profui (``new``) and by ``--base`` (``base``, another checkout's venv);
- ``nsys-ai info``: ``nsys-ai info X.sqlite`` on a fresh copy of the file (nsys-ai caches beside it);
- ``diff``        : ``nsys-ai diff before.sqlite after.sqlite --no-ai`` on fresh copies, against
  ``profui diff before.sqlite after.sqlite`` with an empty cache (both imports, every analysis
  the diff reads, the diff), new and base.

Per run (``benchmarks/peak.py``): ``wall`` (spawn to exit), ``cpu`` (user + system of the process
and its children) and its own peak RSS; medians of ``--repeat`` runs; the machine's load before
and after. CPU seconds are the steady figure on a loaded machine. nsys-ai tries to download a DuckDB extension on every start
and falls back to sqlite3 when it cannot (no network here): that wait is in its wall time, not in
its cpu time. nsys-ai is installed in its own venv, never as a dependency:
``python3 -m venv .venv-nsysai && .venv-nsysai/bin/pip install nsys-ai``.

``--base`` may be given more than once, each ``LABEL=PATH`` (or a bare PATH, labelled ``base``):
every baseline is measured in the same rotation and the ratios are printed against each; the
target line is against the first. ``--floor`` also measures, per profui, what no summary can go
below (each in a fresh process of that profui's venv, alternating with the rest): the bare
interpreter, ``import polars, pyarrow.parquet`` (the libraries a cold summary of an export needs:
Polars for the analysis, pyarrow's Parquet writer for the cached import), the same with typer and
pydantic (the command line's parser, which converts every value through pydantic), and
``profui summary ONE.sqlite --json`` of a one-kernel export (the first export with every activity
table emptied but its first kernel: every import, every stage and the JSON of a trace with
nothing in it).

    .venv/bin/python benchmarks/formats.py [--repeat 5] [--base [LABEL=]/tmp/basevenv/bin/profui]... [--no-diff] [--floor]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sqlite3
import statistics
import subprocess
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path

from peak import run as measure

REPO = Path(__file__).resolve().parent.parent
#: Run in a child Python: ``profui summary X --json`` in-process, its CPU seconds (all threads)
#: split by phase. The modules the phases live in are imported first (to wrap them): their import
#: is a phase of its own, ``modules``.
PHASES = """
import functools, importlib, json, sys, time
t0 = time.process_time()
from profui.tui.cli import main
cpu = {"cli start-up": time.process_time() - t0}
t1 = time.process_time()
spent = {}
inside = set()
def wrap(module, name, label):
    # a phase's function where this profui has it (the analysis' entry moved between versions);
    # a call inside another of the same label is counted once, by the outer
    try:
        mod = importlib.import_module(module)
        fn = getattr(mod, name)
    except (ImportError, AttributeError):
        return
    @functools.wraps(fn)
    def timed(*a, **k):
        if label in inside:
            return fn(*a, **k)
        inside.add(label)
        c = time.process_time()
        try:
            return fn(*a, **k)
        finally:
            inside.discard(label)
            spent[label] = spent.get(label, 0) + time.process_time() - c
    setattr(mod, name, timed)
wrap("profui.tui.cli.sources", "resolve_sources", "import (resolve_sources)")
wrap("profui.capture.nsys.convert", "convert_nsys_file", "of which convert_nsys_file")
# the analysis: the command line's entry to it in this version (run) or in older ones (summarize)
wrap("profui.analysis.run", "run", "analysis (every stage)")
wrap("profui.analysis.summary", "summarize", "analysis (every stage)")
import profui.tui.cli.summary_cmd as cmd
cmd.resolve_sources = sys.modules["profui.tui.cli.sources"].resolve_sources
import profui.analysis.summary
cpu["modules"] = time.process_time() - t1
sys.argv = ["profui", "summary", sys.argv[1], "--json"]
out = sys.stdout
sys.stdout = open("/dev/null", "w")
try:
    main()
except SystemExit:
    pass
cpu.update(spent)
total = time.process_time() - t0
cpu["rest"] = total - sum(v for k, v in cpu.items() if not k.startswith("of which"))
cpu["total (after the interpreter)"] = total
out.write(json.dumps(cpu))
"""
EXPORTS = ("h100_2gpu_1s", "mfu_2gpu_before", "mfu_2gpu_after")
PAIR = ("mfu_2gpu_before", "mfu_2gpu_after")


def run(cmd: list[str], env: dict[str, str] | None = None) -> dict[str, float]:
    """Wall seconds, CPU seconds and peak RSS (MB) of ``cmd`` in a fresh process (peak.run)."""
    m = measure(cmd, env=env, stdout=subprocess.DEVNULL)
    if m.code != 0:
        raise SystemExit(f"{' '.join(cmd)} failed:\n{m.stderr[-2000:]}")
    return {"wall": m.wall, "cpu": m.cpu, "rss": m.peak_mb}


def median(runs: list[dict[str, float]]) -> dict[str, float]:
    return {k: statistics.median(r[k] for r in runs) for k in runs[0]}


def profui_summary(profui: str, export: Path) -> dict[str, float]:
    with tempfile.TemporaryDirectory() as cache:
        return run([profui, "summary", str(export), "--json"], {**os.environ, "PROFUI_CACHE": cache})


def profui_diff(profui: str, exports: list[Path]) -> dict[str, float]:
    with tempfile.TemporaryDirectory() as cache:
        return run([profui, "diff", *map(str, exports)], {**os.environ, "PROFUI_CACHE": cache})


def nsys_ai(tool: str, command: str, exports: list[Path], *extra: str) -> dict[str, float]:
    with tempfile.TemporaryDirectory() as work:
        copies = []
        for export in exports:
            copies.append(Path(work) / export.name)
            shutil.copy(export, copies[-1])
        return run([tool, command, *map(str, copies), *extra])


def phases(python: str, export: Path) -> dict[str, float]:
    """CPU seconds of each phase of ``profui summary export --json`` run by ``python``."""
    with tempfile.TemporaryDirectory() as cache:
        done = subprocess.run(
            [python, "-c", PHASES, str(export)],
            capture_output=True,
            text=True,
            env={**os.environ, "PROFUI_CACHE": cache},
            check=True,
        )
    return json.loads(done.stdout)


#: The ``--floor`` measures each profui's venv runs as ``python -c CODE``: label -> CODE.
FLOOR_CODE = {
    "interpreter": "pass",
    "import polars, pyarrow.parquet": "import polars, pyarrow.parquet",
    "  + typer, pydantic": "import polars, pyarrow.parquet, typer, pydantic",
}
#: The activity tables the one-kernel export keeps no row of (its kernel table keeps one).
EMPTIED = (
    "CUPTI_ACTIVITY_KIND_MEMCPY",
    "CUPTI_ACTIVITY_KIND_MEMSET",
    "CUPTI_ACTIVITY_KIND_SYNCHRONIZATION",
    "CUPTI_ACTIVITY_KIND_RUNTIME",
    "NVTX_EVENTS",
)


def one_kernel_export(export: Path, out: Path) -> Path:
    """``export`` copied to ``out`` with its first kernel the only activity row left."""
    shutil.copy(export, out)
    out.chmod(0o644)
    db = sqlite3.connect(out, isolation_level=None)  # autocommit: VACUUM runs outside a transaction
    try:
        db.execute(
            "DELETE FROM CUPTI_ACTIVITY_KIND_KERNEL WHERE rowid <> (SELECT min(rowid) FROM CUPTI_ACTIVITY_KIND_KERNEL)"
        )
        tables = {r[0] for r in db.execute("SELECT name FROM sqlite_master WHERE type='table'")}
        for table in EMPTIED:
            if table in tables:
                db.execute(f'DELETE FROM "{table}"')
        db.execute("VACUUM")
    finally:
        db.close()
    return out


def floor_runs(profui: str, one: Path) -> dict[str, dict[str, float]]:
    """The ``--floor`` measures of one profui (module docstring), each in a fresh process."""
    python = str(Path(profui).with_name("python"))
    out = {label: run([python, "-c", code]) for label, code in FLOOR_CODE.items()}
    out["summary of a one-kernel export"] = profui_summary(profui, one)
    return out


def bases(given: list[str] | None) -> dict[str, str]:
    """``--base`` values as label -> profui executable (a bare path is ``base``)."""
    out: dict[str, str] = {}
    for value in given or []:
        label, sep, path = value.partition("=")
        if not sep:
            label, path = "base", value
        if label in out or label in ("new", "nsys-ai"):
            raise SystemExit(f"--base {value}: label {label!r} is taken; give each LABEL=PATH")
        if not Path(path).is_file():
            raise SystemExit(f"--base {value}: no such file {path}")
        out[label] = path
    return out


def load() -> str:
    return "/".join(f"{x:.1f}" for x in os.getloadavg())


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument(
        "--base",
        action="append",
        metavar="[LABEL=]PATH",
        help="a baseline profui executable (another checkout's venv); repeatable, the first is the target's",
    )
    ap.add_argument("--nsys-ai", default=str(REPO / ".venv-nsysai" / "bin" / "nsys-ai"))
    ap.add_argument("--no-diff", action="store_true", help="leave out the before/after diff")
    ap.add_argument("--phases", action="store_true", help="also split each summary's CPU by phase")
    ap.add_argument("--floor", action="store_true", help="also measure the floor (module docstring)")
    ap.add_argument(
        "--traces", default=os.environ.get("PROFUI_TRACES", str(REPO.parent / "shared" / "traces"))
    )
    args = ap.parse_args()
    nsys_dir = Path(args.traces) / "nsys"
    if not Path(args.nsys_ai).is_file():
        raise SystemExit(f"nsys-ai not found at {args.nsys_ai}: see this script's docstring")
    profuis = {"new": str(Path(sys.executable).with_name("profui")), **bases(args.base)}
    with tempfile.TemporaryDirectory() as work:
        one = one_kernel_export(nsys_dir / f"{EXPORTS[0]}.sqlite", Path(work) / "one_kernel.sqlite")
        measure_all(args, nsys_dir, profuis, one)


def rotated(names: list[str], i: int) -> list[str]:
    """``names`` starting at the ``i``-th (the order rotates each repeat)."""
    return names[i % len(names) :] + names[: i % len(names)]


def measure_all(args: argparse.Namespace, nsys_dir: Path, profuis: dict[str, str], one: Path) -> None:
    """Run and print every measure asked for (module docstring)."""
    labels = [label for label in profuis if label != "new"]
    first = labels[0] if labels else None
    tools: dict[str, Callable[[list[Path]], dict[str, float]]] = {
        label: (lambda e, exe=exe: profui_summary(exe, e[0])) for label, exe in profuis.items()
    }
    tools["nsys-ai"] = lambda e: nsys_ai(args.nsys_ai, "info", e)
    diffs: dict[str, Callable[[list[Path]], dict[str, float]]] = {
        label: (lambda e, exe=exe: profui_diff(exe, e)) for label, exe in profuis.items()
    }
    diffs["nsys-ai"] = lambda e: nsys_ai(args.nsys_ai, "diff", e, "--no-ai")

    print(f"load (1/5/15 min) before: {load()}", flush=True)
    runs: dict[tuple[str, str], list[dict[str, float]]] = {}
    split: dict[tuple[str, str], list[dict[str, float]]] = {}
    floors: dict[tuple[str, str], list[dict[str, float]]] = {}
    pair = [nsys_dir / f"{n}.sqlite" for n in PAIR]
    for i in range(args.repeat):
        for name in EXPORTS:
            for tool in rotated(list(tools), i):
                runs.setdefault((name, tool), []).append(tools[tool]([nsys_dir / f"{name}.sqlite"]))
        if args.floor:
            for label in rotated(list(profuis), i):
                for what, r in floor_runs(profuis[label], one).items():
                    floors.setdefault((what, label), []).append(r)
        if args.phases:
            pythons = {label: str(Path(exe).with_name("python")) for label, exe in profuis.items()}
            for name in EXPORTS:
                for side in rotated(list(pythons), i):
                    split.setdefault((name, side), []).append(
                        phases(pythons[side], nsys_dir / f"{name}.sqlite")
                    )
        if not args.no_diff:
            for tool in rotated(list(diffs), i):
                runs.setdefault(("before+after diff", tool), []).append(diffs[tool](pair))
    print(f"load (1/5/15 min) after:  {load()}")
    m = {key: median(r) for key, r in runs.items()}
    print(f"medians of {args.repeat}; profui summary --json (empty cache) vs nsys-ai info; diff: both diffs")
    print(f"{'file':<20} {'tool':<8} {'wall s':>8} {'cpu s':>8} {'peak MB':>8}")
    for (name, tool), r in m.items():
        print(f"{name:<20} {tool:<8} {r['wall']:>8.2f} {r['cpu']:>8.2f} {r['rss']:>8.0f}")

    def ratio(files: tuple[str, ...], a: str, b: str, key: str) -> float:
        return sum(m[(f, a)][key] for f in files) / sum(m[(f, b)][key] for f in files)

    rows = [(f,) for f in EXPORTS] + [EXPORTS]
    if not args.no_diff:
        rows.append(("before+after diff",))
    for files in rows:
        label = files[0] if len(files) == 1 else "all three summaries"
        parts = [
            f"new/{b} cpu {ratio(files, 'new', b, 'cpu'):.2f} wall {ratio(files, 'new', b, 'wall'):.2f}"
            for b in labels
        ]
        parts.append(
            f"new/nsys-ai cpu {ratio(files, 'new', 'nsys-ai', 'cpu'):.2f} wall {ratio(files, 'new', 'nsys-ai', 'wall'):.2f}"
        )
        parts += [f"{b}/nsys-ai cpu {ratio(files, b, 'nsys-ai', 'cpu'):.2f}" for b in labels]
        print(f"ratios {label:<20}: " + "; ".join(parts))
    if floors:
        print(
            f"floor, CPU-s (wall s), medians of {args.repeat}, each in a fresh process of that profui's venv:"
        )
        sides = list(profuis)
        print(f"  {'':<36}" + "".join(f" {side:>14}" for side in sides))
        for what in dict.fromkeys(w for w, _ in floors):
            cells = [median(floors[(what, side)]) for side in sides]
            print(f"  {what:<36}" + "".join(f" {c['cpu']:>6.3f} ({c['wall']:.2f})" for c in cells))
        whole = sum(m[(f, "new")]["cpu"] for f in EXPORTS) / len(EXPORTS)
        one_cpu = median(floors[("summary of a one-kernel export", "new")])["cpu"]
        print(
            f"  new: mean of the three summaries {whole:.3f} CPU-s, of which a one-kernel export's {one_cpu:.3f}"
        )
        for b in labels:
            theirs = sum(m[(f, b)]["cpu"] for f in EXPORTS) / len(EXPORTS)
            libs = median(floors[("import polars, pyarrow.parquet", "new")])["cpu"]
            print(
                f"  against {b}'s mean summary ({theirs:.3f} CPU-s): new's one-kernel summary "
                f"{one_cpu / theirs:.2f}x, polars + pyarrow.parquet alone {libs / theirs:.2f}x"
            )
    if split:
        print(f"CPU-s by phase of profui summary --json, in-process (per file, medians of {args.repeat}):")
        sides = list(dict.fromkeys(side for _, side in split))
        for name in EXPORTS:
            print(f"  {name:<30}" + "".join(f" {side:>8}" for side in sides))
            # every side's phases (a version may lack one: shown as -)
            for phase in dict.fromkeys(k for side in sides for r in split[(name, side)] for k in r):
                print(
                    f"    {phase:<28}"
                    + "".join(
                        f" {statistics.median(r[phase] for r in split[(name, side)]):>8.3f}"
                        if phase in split[(name, side)][0]
                        else f" {'-':>8}"
                        for side in sides
                    )
                )
    for b in labels:
        r = ratio(EXPORTS, "new", b, "cpu")
        target = " (the target's)" if b == first else ""
        print(f"summary CPU-s new/{b}{target} <= 0.5: {r:.2f}, {'met' if r <= 0.5 else 'not met'}")


if __name__ == "__main__":
    main()
