"""What ``profui explain`` costs next to ``profui summary`` (issue 36): "explain on the largest
shared traces costs ≤ 1.3× a summary, and the 3M-event trace stays within the summary's memory
bound".

Traces: the three largest shared Kineto traces (by their JSON's uncompressed size) and the 20×
df_index replica (3.0M trace rows; ``scale.py``'s ``build``, synthetic scale built from real data),
each imported once into a trace folder (kept under ``--keep``). Each command is a fresh process
measured by ``benchmarks/peak.py`` (wall, CPU seconds of the process and its threads, own peak
RSS); ``explain X --json`` and ``summary X --json`` alternate, medians of ``--repeat``. Both
compute in memory (nothing cached between runs). The machine's load is printed with each trace.

    .venv/bin/python benchmarks/explain_cost.py [--repeat 3] [--keep DIR] [--x20-json FILE]
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
from pathlib import Path

from precompile import compile_sources
from scale import DEFAULT, TARGET_PEAK_MB, build, events_of, load, measured, traces_dir

#: Issue 36's bound on explain's cost relative to a summary's.
TARGET_RATIO = 1.3


def json_size(path: Path) -> int:
    """The JSON's uncompressed size (a .gz file's size field; sizes here are far below 4 GiB)."""
    if path.name.endswith(".gz"):
        with path.open("rb") as f:
            f.seek(-4, os.SEEK_END)
            return int.from_bytes(f.read(4), "little")
    return path.stat().st_size


def largest_kineto(folder: Path, n: int) -> list[Path]:
    """The ``n`` largest Kineto JSON traces in ``folder`` by uncompressed size."""
    files = [p for p in folder.glob("*.json*") if p.name.endswith((".json", ".json.gz"))]
    return sorted(files, key=json_size, reverse=True)[:n]


def imported(profui: str, src: Path, folder: Path) -> Path:
    """``src`` imported into ``folder`` (once; reused when kept)."""
    if not (folder / "manifest.json").is_file():
        proc = subprocess.run(
            [profui, "import", str(src), "-o", str(folder), "--force"], capture_output=True, text=True
        )
        if proc.returncode != 0:
            raise SystemExit(f"import of {src} failed: {proc.stderr.strip()[-600:]}")
    return folder


def compare(profui: str, trace: Path, repeat: int) -> dict[str, dict[str, float]]:
    """Medians of ``repeat`` alternating fresh runs of explain and summary on ``trace``."""
    runs: dict[str, list[dict[str, float]]] = {"explain": [], "summary": []}
    for r in range(repeat):
        for what in ("explain", "summary") if r % 2 == 0 else ("summary", "explain"):
            runs[what].append(measured([profui, what, str(trace), "--json"])[0])
    return {w: {k: statistics.median(m[k] for m in ms) for k in ms[0]} for w, ms in runs.items()}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--keep", default="/tmp/explain_cost", help="imported folders (and x20.json) here")
    ap.add_argument("--x20-json", help="an existing 20× df_index replica to import instead of building one")
    args = ap.parse_args()
    compile_sources()
    profui = str(Path(sys.executable).with_name("profui"))
    work = Path(args.keep)
    work.mkdir(parents=True, exist_ok=True)
    shared = traces_dir()
    x20 = Path(args.x20_json) if args.x20_json else build(shared / DEFAULT, 20, work)
    traces = [(p.name, imported(profui, p, work / p.name.split(".")[0])) for p in largest_kineto(shared, 3)]
    traces.append(("df_index x20 (synthetic scale)", imported(profui, x20, work / "x20")))
    print(
        f"explain vs summary (--json), fresh processes alternating, medians of {args.repeat}; "
        f"{os.cpu_count()} cores; bound: explain ≤ {TARGET_RATIO}× summary",
        flush=True,
    )
    worst = 0.0
    for name, folder in traces:
        res = compare(profui, folder, args.repeat)
        e, s = res["explain"], res["summary"]
        ratio = {k: e[k] / s[k] for k in ("wall", "cpu", "mb")}
        worst = max(worst, ratio["cpu"], ratio["wall"])
        print(f"{name}: {events_of(folder):,} events; load {load()}")
        for what, m in res.items():
            print(f"  {what:8s} wall {m['wall']:6.2f} s  CPU {m['cpu']:6.2f} s  peak {m['mb']:6.0f} MB")
        print(
            f"  explain/summary: wall {ratio['wall']:.2f}  CPU {ratio['cpu']:.2f}  peak {ratio['mb']:.2f}",
            flush=True,
        )
        if name.startswith("df_index x20"):
            ok = e["mb"] <= max(s["mb"], TARGET_PEAK_MB)
            print(
                f"  3M-event peak: explain {e['mb']:.0f} MB, summary {s['mb']:.0f} MB, summary's bound "
                f"{TARGET_PEAK_MB:.0f} MB (scale.py): {'within' if ok else 'NOT within'}"
            )
    print(
        f"worst explain/summary ratio (wall or CPU): {worst:.2f} — {'met' if worst <= TARGET_RATIO else 'NOT met'}"
    )


if __name__ == "__main__":
    main()
