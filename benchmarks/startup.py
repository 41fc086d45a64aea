"""Start-up of the small commands (issue #40, target 2): ``profui --help``, every subcommand's
``--help`` and ``profui info`` of each sample and of a small imported trace, cold and warm, against
a baseline install, side by side.

Every run is a fresh process, as a user starts it (the console script), measured by benchmarks/peak.py:
wall seconds, CPU seconds (user + system of the process and its children: the steady figure on a
loaded machine) and peak RSS. For each command the baseline and this checkout alternate, run by
run, so both see the same load; figures are medians of ``--repeat`` runs. Two floors, run the
same way: ``python -c pass`` (the interpreter alone) and ``json.load`` of the small trace's JSON
(reading the file the trace came from, with nothing else); and what the libraries alone cost:
typer (all a warm ``info`` loads and, since profui's help is click's plain text, every ``--help``),
typer with the rich renderer of its help (every ``--help`` before that; a baseline's may still),
and typer with pyarrow's Parquet reader (a first ``info`` reads four event columns with its core,
``pyarrow._parquet``, and counts them with numpy, which pyarrow loads), with and without pydantic (typer 0.29 coerces every
value of a command with it; profui's commands take theirs plainly, ``tui/cli/plain_values.py``).

``info`` runs cold and warm. Cold is the first ``info`` of a folder as it comes: a sample trace
folder copied without its cache store (never inventoried: this checkout counts its events and keeps
their tallies), the small trace's folder copied as ``profui import`` left it (this checkout counted
it then), the JAX sample with an empty import cache (that run imports it: no target); each cold run
gets a fresh copy, made untimed. Warm is every later ``info`` of the same folder. ``profui import``
of the small trace is timed too (into a fresh folder each run): this checkout counts a small trace
at import.

The last lines say whether the targets are met by this checkout (``info`` of a small trace
<= 0.2 s, each ``--help`` <= 0.15 s), on its median wall seconds as the targets are stated (for an
idle machine), and on its median CPU seconds: the load average is printed before and after, and on
a loaded machine the CPU seconds are the figure to compare.

    .venv/bin/python benchmarks/startup.py [--repeat 9] [--base /tmp/basevenv/bin/profui]
                                           [--trace hta-trace_filter-sampled_rank-0.json.gz] [--only info]
"""

from __future__ import annotations

import argparse
import gzip
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

from peak import run as run_measured

REPO = Path(__file__).resolve().parent.parent
TRACES = Path(os.environ.get("PROFUI_TRACES", REPO.parent / "shared" / "traces"))
SUBCOMMANDS = ["open", "import", "info", "summary", "explain", "analyze", "runs", "diff", "export"]
INFO_TARGET_S = 0.2
HELP_TARGET_S = 0.15


@dataclass
class Runs:
    """Measurements of one command line on one side."""

    wall: list[float] = field(default_factory=list)
    cpu: list[float] = field(default_factory=list)
    rss_mb: list[float] = field(default_factory=list)

    def med(self, what: str) -> float:
        return statistics.median(getattr(self, what))


def measure(argv: list[str], env: dict[str, str]) -> tuple[float, float, float]:
    """Wall s, CPU s (user + system, with children) and peak RSS MB of one fresh process
    (``benchmarks/peak.py``: its own peak, not the benchmark's carried over fork/exec)."""
    m = run_measured(argv, env=env, stdout=subprocess.DEVNULL)
    if m.code != 0:
        raise SystemExit(f"{' '.join(argv)}: exit {m.code}\n{m.stderr[-2000:]}")
    return m.wall, m.cpu, m.peak_mb


def import_once(profui: str, source: Path, out: Path, env: dict[str, str]) -> Path:
    """``source`` imported by ``profui`` into the trace folder ``out`` (each side its own)."""
    subprocess.run([profui, "import", str(source), "-o", str(out)], check=True, env=env, capture_output=True)
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--repeat", type=int, default=9, help="runs of each command on each side (median)")
    ap.add_argument("--base", default="/tmp/basevenv/bin/profui", help="the baseline's profui script")
    ap.add_argument("--new", default=str(Path(sys.executable).with_name("profui")), help="this profui")
    ap.add_argument("--trace", default="hta-trace_filter-sampled_rank-0.json.gz", help="small Kineto trace")
    ap.add_argument("--only", action="append", help="run only the commands whose name holds this text")
    args = ap.parse_args()

    source = Path(args.trace) if Path(args.trace).exists() else TRACES / args.trace
    work = Path(tempfile.mkdtemp(prefix="profui-startup-"))
    sides = {"new": args.new}
    if args.base and Path(args.base).is_file():
        sides = {"base": args.base, **sides}
    else:
        print(f"no baseline at {args.base!r} (--base): this checkout alone", file=sys.stderr)
    envs = {
        side: {**os.environ, "COLUMNS": "100", "PROFUI_CACHE": str(work / f"cache-{side}")} for side in sides
    }
    try:
        plain = work / source.name.removesuffix(".gz")
        with gzip.open(source) if source.suffix == ".gz" else open(source, "rb") as f:
            plain.write_bytes(f.read())
        folders = {
            side: import_once(exe, source, work / f"trace-{side}", envs[side]) for side, exe in sides.items()
        }

        def fresh(src: Path, dst: Path, keep_store: bool) -> Path:
            """``dst`` made a copy of ``src`` (mtimes kept), its cache store left out unless kept."""
            shutil.rmtree(dst, ignore_errors=True)
            shutil.copytree(src, dst, ignore=None if keep_store else shutil.ignore_patterns(".profui"))
            return dst

        def info_cases(label: str, src: dict[str, Path], keep_store: bool) -> list:
            """``info`` of a copy of ``src[side]``: cold (a fresh copy each run), then warm."""
            slug = "".join(c if c.isalnum() else "_" for c in label)
            cold = {side: work / f"cold-{slug}-{side}" for side in sides}
            warm = {side: fresh(src[side], work / f"warm-{slug}-{side}", keep_store) for side in sides}
            return [
                (
                    f"profui info {label} cold",
                    {s: [exe, "info", str(cold[s])] for s, exe in sides.items()},
                    lambda side: fresh(src[side], cold[side], keep_store),
                ),
                (f"profui info {label} warm", {s: [exe, "info", str(warm[s])] for s, exe in sides.items()}),
            ]

        def empty_import_cache(side: str) -> None:
            shutil.rmtree(work / f"cache-{side}", ignore_errors=True)

        def fresh_out(side: str) -> None:
            shutil.rmtree(work / f"import-{side}", ignore_errors=True)

        sample_cases = [
            case
            for name in ("mlp_cpu", "synthetic_gpu")
            for case in info_cases(f"samples/{name}", {s: REPO / "samples" / name for s in sides}, False)
        ]
        jax = REPO / "samples" / "jax_cpu"
        sample_cases += [
            (
                "info samples/jax_cpu cold (imports it)",
                {s: [exe, "info", str(jax)] for s, exe in sides.items()},
                empty_import_cache,
            ),
            ("profui info samples/jax_cpu warm", {s: [exe, "info", str(jax)] for s, exe in sides.items()}),
        ]
        trace_cases = info_cases("TRACE (imported)", folders, True)
        import_case = (
            "import TRACE -o (a new folder)",
            {s: [exe, "import", str(source), "-o", str(work / f"import-{s}")] for s, exe in sides.items()},
            fresh_out,
        )
        cases: list[tuple] = [  # name, argv by side[, what to do before each run of a side]
            ("floor: python -c pass", {s: [sys.executable, "-c", "pass"] for s in ("new",)}),
            (
                f"floor: json.load of its JSON ({plain.stat().st_size / 1e6:.1f} MB)",
                {
                    s: [sys.executable, "-c", f"import json; json.load(open({str(plain)!r}, 'rb'))"]
                    for s in ("new",)
                },
            ),
            ("floor: typer", {"new": [sys.executable, "-c", "import typer.main"]}),
            (
                "floor: typer + its rich help renderer (a baseline's --help)",
                {"new": [sys.executable, "-c", "import typer.main, typer.rich_utils"]},
            ),
            (  # what a first `info` could not do without, with typer 0.29's own coercion
                "floor: typer + pydantic + pyarrow.parquet",
                {"new": [sys.executable, "-c", "import typer.main, typer._adapters, pyarrow.parquet"]},
            ),
            (  # the same without pydantic
                "floor: typer + pyarrow.parquet",
                {"new": [sys.executable, "-c", "import typer.main, pyarrow.parquet"]},
            ),
            (  # a first `info` (it counts the events) as this checkout reads them (parquet_read.py)
                "floor: typer + pyarrow._parquet",
                {"new": [sys.executable, "-c", "import typer.main, pyarrow._parquet"]},
            ),
            ("profui --help", {s: [exe, "--help"] for s, exe in sides.items()}),
            *(
                (f"profui {c} --help", {s: [exe, c, "--help"] for s, exe in sides.items()})
                for c in SUBCOMMANDS
            ),
            *trace_cases,
            *sample_cases,
            import_case,
        ]
        if args.only:
            cases = [c for c in cases if any(text in c[0] for text in args.only)]
        load_before = os.getloadavg()
        results: dict[str, dict[str, Runs]] = {}
        for name, argvs, *prep in cases:
            prepare = prep[0] if prep else (lambda side: None)
            runs = {s: Runs() for s in argvs}
            for s, argv in argvs.items():  # one untimed run each: the first reads files from disk
                prepare(s)
                measure(argv, envs[s])
            for _ in range(args.repeat):
                for s, argv in argvs.items():  # the sides alternate, run by run
                    prepare(s)
                    wall, cpu, rss = measure(argv, envs[s])
                    runs[s].wall.append(wall)
                    runs[s].cpu.append(cpu)
                    runs[s].rss_mb.append(rss)
            results[name] = runs
        load_after = os.getloadavg()
    finally:
        shutil.rmtree(work, ignore_errors=True)

    print(f"profui start-up, fresh processes, median of {args.repeat} runs each, base and new alternating")
    print(f"base: {args.base}\nnew:  {args.new}")
    print(f"TRACE: {source.name} ({source.stat().st_size / 1e6:.2f} MB as stored)")
    print(
        f"load average before {load_before[0]:.2f} {load_before[1]:.2f}, after {load_after[0]:.2f} {load_after[1]:.2f}"
    )
    head = f"{'command':<44} {'wall base':>9} {'new':>6} {'base/new':>8}   {'cpu base':>8} {'new':>6} {'base/new':>8}   {'rss MB base':>11} {'new':>5}"
    print(head)
    for name, runs in results.items():
        new = runs["new"]
        if "base" in runs:
            base = runs["base"]
            print(
                f"{name:<44} {base.med('wall'):>9.3f} {new.med('wall'):>6.3f} {base.med('wall') / new.med('wall'):>7.2f}x"
                f"   {base.med('cpu'):>8.3f} {new.med('cpu'):>6.3f} {base.med('cpu') / new.med('cpu'):>7.2f}x"
                f"   {base.med('rss_mb'):>11.0f} {new.med('rss_mb'):>5.0f}"
            )
        else:
            print(
                f"{name:<44} {'':>9} {new.med('wall'):>6.3f} {'':>8}   {'':>8} {new.med('cpu'):>6.3f} {'':>8}"
                f"   {'':>11} {new.med('rss_mb'):>5.0f}"
            )
    print(
        "targets (new, medians): on wall s, as the targets are stated (for an idle machine), and on CPU s,"
        " which a loaded machine inflates less (an idle machine's wall is about the CPU s of these starts)"
    )
    for name, runs in results.items():
        if not name.startswith("profui"):
            continue
        target = INFO_TARGET_S if name.startswith("profui info ") and "--help" not in name else HELP_TARGET_S
        wall, cpu = runs["new"].med("wall"), runs["new"].med("cpu")
        print(
            f"  {name:<42} <= {target:.2f} s: wall {wall:.3f} {'met' if wall <= target else 'not met':<7}"
            f"  cpu {cpu:.3f} {'met' if cpu <= target else 'not met'}"
        )


if __name__ == "__main__":
    main()
