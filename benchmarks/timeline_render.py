#!/usr/bin/env python
"""Timeline frame speed on a 10M-event synthetic trace (8 GPUs on 2 nodes, 3 compute streams + NCCL, steps).

Each phase runs in its own process so its peak memory is its own (benchmarks/peak.py):

1. generate the trace with samples/generate_synthetic.py (the "import": it writes the trace
   format, as ``profui import`` does for Kineto JSON),
2. build the timeline's LOD index (``profui.analysis.lod.build_lod``),
3. open the cached index and render full 200×60 frames at fit-all, at one step and at the
   deepest zoom (1 µs), panning a little and scrolling between frames so nothing is cached,
   in three views: every lane unfolded (the most rows), as the timeline opens (some lanes
   folded) and every rank folded (each line merges a rank's rows); p50/p95 per zoom.

With ``--keep DIR`` the trace is written there and reused by later runs (steps 1–2 skipped).
With ``--python OTHER`` (the baseline's interpreter, e.g. ``/tmp/basevenv/bin/python``) step 3
runs for both sides, alternating, ``--repeats`` times each; the figures are medians of the
repeats, CPU time of the render thread beside wall time (the load changes CPU time little),
with the base/new ratio per view and zoom, both sides' peak RSS, whether both drew the same
frames (a hash of every line), and whether p95 ≤ 6 ms of CPU holds at every zoom
(issue 40, target 5).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

from peak import run as measure

REPO = Path(__file__).resolve().parent.parent
#: Issue 40, target 5: the p95 frame's CPU time at every zoom (ms).
TARGET_P95_CPU_MS = 6.0
VIEWS = ("unfolded", "as opened", "folded")
ZOOMS = ("fit-all", "step", "deepest")


def phase_generate(out: str, events: int) -> dict:
    sys.path.insert(0, str(REPO / "samples"))
    import generate_synthetic as gen

    w, c = time.perf_counter(), time.process_time()
    info = gen.generate(out, events=events, nodes=2, gpus_per_node=4, streams=3, steps=10, seed=0)
    return {
        "wall": time.perf_counter() - w,
        "cpu": time.process_time() - c,
        "events": info.events,
        "files": info.files,
    }


def phase_build(trace: str) -> dict:
    from profui.analysis.lod_open import build_lod

    w, c = time.perf_counter(), time.process_time()
    build_lod(trace, force=True)
    return {"wall": time.perf_counter() - w, "cpu": time.process_time() - c}


def phase_render(trace: str, frames: int) -> dict:
    import numpy as np

    import profui.tui.timeline.render as render_module

    try:
        from profui.analysis.lod_open import open_lod
    except ImportError:  # a baseline from before the index read the stage graph's outputs
        from profui.analysis.lod import open_lod

    from profui.tui.timeline.heap import freeze_loaded
    from profui.tui.timeline.render import Renderer
    from profui.tui.timeline.state import TimelineState

    w = time.perf_counter()
    ix = open_lod(trace)
    open_s = time.perf_counter() - w
    states = {}
    for view in VIEWS:
        st = TimelineState(ix)
        if view == "unfolded":
            st.set_all(False)  # every lane unfolded, metrics included: the most rows there can be
        elif view == "folded":
            st.set_all(True)
        states[view] = (st, Renderer(st))
    freeze_loaded()  # as the timeline view does once its index is open
    out = {
        "open": open_s,
        "n_index": ix.n_events,
        "rows": {v: len(st.visible_rows()) for v, (st, _) in states.items()},
        "module": render_module.__file__,
        "lod_version": ix.folder.name,  # the index's key (its folder: a stage's, or the cache's)
    }
    digest = hashlib.sha256()
    style_text: dict = {}

    def measure(st, r, setup) -> list[float]:
        setup()
        times, cpu = [], []
        for i in range(frames):
            st.pan(0.002 if i % 2 == 0 else -0.001)  # a new viewport every frame
            st.top = (i * 7) % max(len(st.visible_rows()) - 58, 1)  # and different lanes
            t, c = time.perf_counter(), time.thread_time()
            lines = r.render(200, 60)
            times.append(time.perf_counter() - t)
            cpu.append(time.thread_time() - c)
            assert len(lines) == 60
            for strip in lines:  # what was drawn, to compare the two sides (outside the timing)
                for seg in strip:
                    key = style_text.get(seg.style)
                    if key is None:
                        key = style_text[seg.style] = str(seg.style)
                    digest.update(f"{seg.text}\x00{key}\x01".encode())
        ms, cms = np.array(times) * 1e3, np.array(cpu) * 1e3
        return [
            float(np.percentile(ms, 50)),
            float(np.percentile(ms, 95)),
            float(np.percentile(cms, 50)),
            float(np.percentile(cms, 95)),
        ]

    for view, (st, r) in states.items():

        def deepest(st=st) -> None:
            st.goto_step(5)
            while st.t1 - st.t0 > st.MIN_SPAN * 1.001:
                st.zoom(2.0)

        setups = {"fit-all": st.fit, "step": lambda st=st: st.goto_step(5), "deepest": deepest}
        for zoom in ZOOMS:
            out[f"{view}/{zoom}"] = measure(st, r, setups[zoom])
    out["frames_sha"] = digest.hexdigest()
    return out


def _child(args: list[str], python: str = sys.executable) -> dict:
    """A phase's figures, with its process's own peak (benchmarks/peak.py)."""
    m = measure([python, __file__, *args])
    if m.code != 0:
        sys.stderr.write(m.stderr)
        raise SystemExit(f"phase {args[0]} failed ({python})")
    return json.loads(m.stdout.strip().splitlines()[-1]) | {"peak_mb": m.peak_mb}


def _load() -> str:
    return f"load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} CPUs"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--events", type=int, default=10_000_000)
    ap.add_argument("--frames", type=int, default=60, help="frames rendered per view and zoom")
    ap.add_argument(
        "--keep", help="write the trace here (kept, and reused when there) instead of a temporary folder"
    )
    ap.add_argument("--python", help="the baseline's Python (its own profui): timed too, alternating")
    ap.add_argument("--repeats", type=int, default=3, help="render runs per side")
    ap.add_argument("--phase", help=argparse.SUPPRESS)
    ap.add_argument("--trace", help=argparse.SUPPRESS)
    a = ap.parse_args()
    if a.phase == "generate":
        print(json.dumps(phase_generate(a.trace, a.events)))
        return
    if a.phase == "build":
        print(json.dumps(phase_build(a.trace)))
        return
    if a.phase == "render":
        print(json.dumps(phase_render(a.trace, a.frames)))
        return

    tmp = None
    if a.keep:
        trace = Path(a.keep)
    else:
        tmp = tempfile.TemporaryDirectory(prefix="profui-bench-")
        trace = Path(tmp.name) / "trace"
    try:
        print(f"at start: {_load()}", flush=True)
        if (trace / "manifest.json").exists():
            print(f"trace    {trace} (kept from an earlier run: generation and LOD build skipped)")
        else:
            g = _child(["--phase", "generate", "--trace", str(trace), "--events", str(a.events)])
            print(
                f"trace    {g['events']:,} events, 2 nodes × 4 GPUs, 3 streams + NCCL, 10 steps, {g['files']} files"
            )
            print(
                f"import   {g['wall']:.1f} s wall  {g['cpu']:.1f} s cpu  peak {g['peak_mb']:.0f} MB  (generation)",
                flush=True,
            )
            b = _child(["--phase", "build", "--trace", str(trace)])
            print(
                f"LOD      {b['wall']:.1f} s wall  {b['cpu']:.1f} s cpu  peak {b['peak_mb']:.0f} MB  (build)",
                flush=True,
            )
            print(f"LOD build / import: {b['wall'] / g['wall']:.2f}x wall, {b['cpu'] / g['cpu']:.2f}x cpu")
        sides = {"new": sys.executable} | ({"base": a.python} if a.python else {})
        runs: dict[str, list[dict]] = {side: [] for side in sides}
        render_args = ["--phase", "render", "--trace", str(trace), "--frames", str(a.frames)]
        for i in range(a.repeats):
            order = list(sides) if i % 2 else list(reversed(sides))  # alternate which side goes first
            for side in order:
                runs[side].append(_child(render_args, sides[side]))
        # each side opens its own code's index (a stage's output, or a baseline's cache): they
        # are compared when they draw the same events on the same rows
        drawn = {(r["n_index"], json.dumps(r["rows"], sort_keys=True)) for rs in runs.values() for r in rs}
        if len(drawn) > 1:
            raise SystemExit("the two sides' indexes draw different events or rows: not comparable")
        first = runs["new"][0]
        rows = ", ".join(f"{v} {n}" for v, n in first["rows"].items())
        print(
            f"open     {first['open'] * 1e3:.0f} ms (cached index, {first['n_index']:,} event instances; lane rows: {rows})"
        )
        for side, path in sides.items():
            print(f"{side:4s} = {path} (renders with {runs[side][0]['module']})")
        print(
            f"200×60 frames, {a.frames} per view and zoom, medians of {a.repeats} runs per side; "
            "ms of the render thread's CPU (wall)"
        )
        met = True
        for view in VIEWS:
            for zoom in ZOOMS:
                key = f"{view}/{zoom}"
                med = {s: [statistics.median(r[key][k] for r in runs[s]) for k in range(4)] for s in sides}
                p50, p95, c50, c95 = med["new"]
                met &= c95 <= TARGET_P95_CPU_MS
                line = f"{key:20s} new  p50 {c50:5.2f} ({p50:5.2f})  p95 {c95:5.2f} ({p95:5.2f})"
                if "base" in med:
                    b50, b95, bc50, bc95 = med["base"]
                    line += (
                        f"  | base p50 {bc50:5.2f} ({b50:5.2f})  p95 {bc95:5.2f} ({b95:5.2f})"
                        f"  | base/new p95 CPU {bc95 / c95:4.2f}x  wall {b95 / p95:4.2f}x"
                    )
                print(line)
        for side in sides:
            print(
                f"peak RSS {side}: {statistics.median(r['peak_mb'] for r in runs[side]):.0f} MB (open + render)"
            )
        if "base" in sides:
            same = {r["frames_sha"] for rs in runs.values() for r in rs}
            print(f"frames identical, base and new: {'yes' if len(same) == 1 else 'NO'}")
        verdict = "met" if met else "NOT met"
        print(f"p95 frame ≤ {TARGET_P95_CPU_MS:g} ms CPU at every zoom and view (new): {verdict}")
        print(f"at end: {_load()}")
    finally:
        if tmp is not None:
            tmp.cleanup()


if __name__ == "__main__":
    main()
