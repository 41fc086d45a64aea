#!/usr/bin/env python
"""Cold build of the timeline index, both ways it gets its inputs, against a baseline's build.

The index (the timeline stage; before it was one, ``lod_open.build_lod``, forced) takes the steps
and correlate stages' outputs either from a recorded run (``recorded``: built again alone, its
inputs the recorded ones) or computed in memory (``memory``: a running capture's way; the timeline
stage and the stages it reads run in memory, nothing recorded; before the index was a stage, its
inputs computed in memory on the columns they read). ``--python NAME=PYTHON`` (repeatable) times another side's code too, both ways where
it reads the stage graph's outputs (its own recorded run), else one (``built``: before 41411f3
the index joined launches itself). Each build runs in its own process (benchmarks/peak.py: wall, CPU
seconds, its own peak RSS), the sides alternating, ``--repeats`` times each; medians printed, with
the load average before and after. After each build that keeps its index, a fresh process opens
it warm (``open_lod``: wall and CPU inside the process, its peak), as ``profui open`` does again.

Usage: python benchmarks/timeline_cold_build.py TRACE [--python base=/tmp/wt-head/.venv/bin/python]
TRACE is copied (hard links of its events, nothing of its ``.profui``) under a temporary folder,
one copy per way, so no build reads another's index or run.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import sys
import tempfile
from pathlib import Path

from peak import run as measure

BUILD = """
import sys, time
w, c = time.perf_counter(), time.process_time()
try:
    from profui.analysis.lod_open import TIMELINE
except ImportError:  # before the index was a stage of the graph
    TIMELINE = None
if TIMELINE and sys.argv[2] == "memory":  # a running capture's way: the stage run in memory
    from profui.analysis.pipeline.run import in_memory
    from profui.analysis.trace import open_trace

    in_memory(open_trace(sys.argv[1]), [TIMELINE])
else:
    try:
        from profui.analysis.lod_open import build_lod
    except ImportError:  # a baseline from before the index read the stage graph's outputs
        from profui.analysis.lod import build_lod
    build_lod(sys.argv[1], force=True)
print('{"wall": %r, "cpu": %r}' % (time.perf_counter() - w, time.process_time() - c))
"""

#: A warm open in a fresh process, after a build: what ``profui open`` pays to show the timeline again.
OPEN = """
import sys, time
w, c = time.perf_counter(), time.process_time()
try:
    from profui.analysis.lod_open import open_lod
except ImportError:  # a baseline from before the index read the stage graph's outputs
    from profui.analysis.lod import open_lod
ix = open_lod(sys.argv[1])
print('{"wall": %r, "cpu": %r}' % (time.perf_counter() - w, time.process_time() - c))
"""

RECORD = """
import sys
try:
    from profui.analysis.lod_open import TIMELINE
    from profui.analysis.pipeline.registry import REGISTRY
    stages = [s for s in REGISTRY.order if s in REGISTRY.ancestors([TIMELINE])]
except ImportError:
    try:  # the index read the stages' outputs, as no stage itself
        from profui.analysis.lod_open import TIMELINE_STAGES
        stages = ["ingest", *TIMELINE_STAGES]
    except ImportError:  # its index reads no stage: nothing to record
        raise SystemExit(3)
from profui.analysis.pipeline.engine import analyze
analyze(sys.argv[1], stages=stages)
"""


def _copy(trace: Path, to: Path) -> Path:
    """``trace``'s manifest and events, hard-linked (its ``.profui``, runs and index, left out)."""
    to.mkdir(parents=True)
    for p in trace.iterdir():
        if p.name == ".profui":
            continue
        if p.is_dir():
            shutil.copytree(p, to / p.name, copy_function=os.link)
        else:
            shutil.copy2(p, to / p.name)
    return to


def _load() -> str:
    return f"load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} CPUs"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("trace", type=Path)
    ap.add_argument(
        "--python", action="append", default=[], help="NAME=PYTHON: another side (its own profui)"
    )
    ap.add_argument("--repeats", type=int, default=3)
    a = ap.parse_args()
    print(f"at start: {_load()}", flush=True)
    with tempfile.TemporaryDirectory(prefix="profui-coldbuild-") as tmp:
        sides = {"new": sys.executable} | dict(p.split("=", 1) for p in a.python)
        ways: dict[str, str] = {}
        copies: dict[str, Path] = {}
        for side, python in sides.items():
            for way in ("recorded", "memory"):
                copies[f"{side} {way}"] = _copy(a.trace, Path(tmp) / f"{side}-{way}")
            rec = measure([python, "-c", RECORD, str(copies[f"{side} recorded"])])
            if rec.code == 3:  # one way only
                del copies[f"{side} recorded"]
                copies[f"{side} built"] = copies.pop(f"{side} memory")
            elif rec.code != 0:
                raise SystemExit(f"recording the steps and correlate stages failed ({side}):\n{rec.stderr}")
            ways |= {w: python for w in copies if w.startswith(f"{side} ")}
        runs: dict[str, list] = {w: [] for w in ways}
        warm: dict[str, list] = {w: [] for w in ways}
        for i in range(a.repeats):
            order = list(ways) if i % 2 == 0 else list(reversed(ways))
            for w in order:
                m = measure([ways[w], "-c", BUILD, str(copies[w]), w.split(" ")[-1]])
                if m.code != 0:
                    raise SystemExit(f"{w} build failed:\n{m.stderr}")
                own = json.loads(str(m.stdout).strip().splitlines()[-1])
                runs[w].append((m.wall, m.cpu, m.peak_mb, own["cpu"]))
                if not w.endswith(" memory"):  # kept: open it again, warm, in a fresh process
                    o = measure([ways[w], "-c", OPEN, str(copies[w])])
                    if o.code != 0:
                        raise SystemExit(f"{w} warm open failed:\n{o.stderr}")
                    opened = json.loads(str(o.stdout).strip().splitlines()[-1])
                    warm[w].append((opened["wall"], opened["cpu"], o.peak_mb))
                print(
                    f"  {w:14s} run {i + 1}: {m.wall:5.1f} s wall {m.cpu:5.1f} CPU-s  peak {m.peak_mb:5.0f} MB  ({_load()})",
                    flush=True,
                )
        print(
            f"cold build of {a.trace}, medians of {a.repeats} (process: wall, CPU-s user+sys, peak RSS; build alone CPU-s)"
        )
        for w in ways:
            med = [statistics.median(r[k] for r in runs[w]) for k in range(4)]
            print(
                f"{w:14s} {med[0]:5.1f} s wall  {med[1]:5.1f} CPU-s  peak {med[2]:5.0f} MB  (build {med[3]:.1f} CPU-s)  {ways[w]}"
            )
        for w in ways:
            if warm[w]:
                med = [statistics.median(r[k] for r in warm[w]) for k in range(3)]
                print(
                    f"warm open {w:14s} {med[0] * 1e3:6.0f} ms wall  {med[1] * 1e3:6.0f} ms CPU (open_lod in the process)  peak {med[2]:5.0f} MB"
                )
    print(f"at end: {_load()}")


if __name__ == "__main__":
    main()
