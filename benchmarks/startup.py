"""Start-up of the small commands (issue #40, target 2): ``profui --help``, every subcommand's
``--help`` and ``profui info`` of a small trace, against a baseline install, side by side.

Every run is a fresh process, as a user starts it (the console script), measured by benchmarks/peak.py:
wall seconds, CPU seconds (user + system of the process and its children: the steady figure on a
loaded machine) and peak RSS. For each command the baseline and this checkout alternate, run by
run, so both see the same load; figures are medians of ``--repeat`` runs. Two floors, run the
same way: ``python -c pass`` (the interpreter alone) and ``json.load`` of the small trace's JSON
(reading the file the trace came from, with nothing else); and what the libraries alone cost:
typer with the rich renderer of its help (every ``--help``), and typer with pyarrow's Parquet
reader (``info`` reads four event columns with it and counts them with numpy, which pyarrow loads),
with and without pydantic (typer 0.29 coerces every value given on the command line with it).

The last lines say whether the targets are met by this checkout (``info`` of a small trace
<= 0.2 s, each ``--help`` <= 0.15 s), on its median wall seconds as the targets are stated (for an
idle machine), and on its median CPU seconds: the load average is printed before and after, and on
a loaded machine the CPU seconds are the figure to compare.

    .venv/bin/python benchmarks/startup.py [--repeat 9] [--base /tmp/basevenv/bin/profui]
                                           [--trace hta-trace_filter-sampled_rank-0.json.gz]
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
        samples = {}
        for side in sides:  # a copy each: a command may write under .profui/ of the trace
            samples[side] = work / f"mlp-{side}"
            shutil.copytree(REPO / "samples" / "mlp_cpu", samples[side])

        cases: list[tuple[str, dict[str, list[str]]]] = [
            ("floor: python -c pass", {s: [sys.executable, "-c", "pass"] for s in ("new",)}),
            (
                f"floor: json.load of its JSON ({plain.stat().st_size / 1e6:.1f} MB)",
                {
                    s: [sys.executable, "-c", f"import json; json.load(open({str(plain)!r}, 'rb'))"]
                    for s in ("new",)
                },
            ),
            (
                "floor: typer + its rich help renderer",
                {"new": [sys.executable, "-c", "import typer.main, typer.rich_utils"]},
            ),
            (  # what `info` cannot do without, with typer 0.29
                "floor: typer + pydantic + pyarrow.parquet",
                {"new": [sys.executable, "-c", "import typer.main, typer._adapters, pyarrow.parquet"]},
            ),
            (  # the same without pydantic: what a typer that converts values itself would cost
                "floor: typer + pyarrow.parquet",
                {"new": [sys.executable, "-c", "import typer.main, pyarrow.parquet"]},
            ),
            ("profui --help", {s: [exe, "--help"] for s, exe in sides.items()}),
            *(
                (f"profui {c} --help", {s: [exe, c, "--help"] for s, exe in sides.items()})
                for c in SUBCOMMANDS
            ),
            (
                "profui info TRACE (the trace, imported)",
                {s: [exe, "info", str(folders[s])] for s, exe in sides.items()},
            ),
            (
                "profui info samples/mlp_cpu (a copy)",
                {s: [exe, "info", str(samples[s])] for s, exe in sides.items()},
            ),
        ]
        load_before = os.getloadavg()
        results: dict[str, dict[str, Runs]] = {}
        for name, argvs in cases:
            runs = {s: Runs() for s in argvs}
            for s, argv in argvs.items():  # one untimed run each: the first reads files from disk
                measure(argv, envs[s])
            for _ in range(args.repeat):
                for s, argv in argvs.items():  # the sides alternate, run by run
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
