#!/usr/bin/env python
"""Timeline speed on a 10M-event synthetic trace (8 GPUs on 2 nodes, 3 compute streams + NCCL, steps).

Each phase runs in its own process so its peak memory is its own:

1. generate the trace with samples/generate_synthetic.py (the "import": it writes the trace
   format, as ``profui import`` does for Kineto JSON),
2. build the timeline's LOD index (``profui.analysis.lod.build_lod``),
3. open the cached index and render full 200×60 frames (all lanes unfolded) at fit-all, at one
   step and at the deepest zoom (1 µs), panning a little between frames so nothing is cached;
   p50/p95 per zoom.

Targets (issue 7): p95 frame ≤ 16 ms at every zoom; LOD build ≤ 2× import time; memory ≤ 2 GB.
On a shared machine wall times follow the load (printed first); the frame lines also give the
render thread's CPU time, which the load hardly changes.
Prints the LOD-build / import time ratio last. ``--events`` and ``--keep DIR`` for other sizes.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent


def _peak_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def phase_generate(out: str, events: int) -> dict:
    sys.path.insert(0, str(REPO / "samples"))
    import generate_synthetic as gen

    w, c = time.perf_counter(), time.process_time()
    info = gen.generate(out, events=events, nodes=2, gpus_per_node=4, streams=3, steps=10, seed=0)
    return {
        "wall": time.perf_counter() - w,
        "cpu": time.process_time() - c,
        "peak_mb": _peak_mb(),
        "events": info.events,
        "files": info.files,
    }


def phase_build(trace: str) -> dict:
    from profui.analysis.lod import build_lod

    w, c = time.perf_counter(), time.process_time()
    build_lod(trace, force=True)
    return {"wall": time.perf_counter() - w, "cpu": time.process_time() - c, "peak_mb": _peak_mb()}


def phase_render(trace: str, frames: int) -> dict:
    import numpy as np

    from profui.analysis.lod import open_lod
    from profui.tui.timeline.heap import freeze_loaded
    from profui.tui.timeline.render import Renderer
    from profui.tui.timeline.state import TimelineState

    w = time.perf_counter()
    ix = open_lod(trace)
    open_s = time.perf_counter() - w
    st = TimelineState(ix)
    st.set_all(False)  # every lane unfolded, metrics included: the most rows there can be
    r = Renderer(st)
    freeze_loaded()  # as the timeline view does once its index is open
    out = {"open": open_s, "n_index": ix.n_events, "rows": len(st.visible_rows())}

    def measure(name: str, setup) -> None:
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
        ms, cms = np.array(times) * 1e3, np.array(cpu) * 1e3
        out[name] = [
            float(np.percentile(ms, 50)),
            float(np.percentile(ms, 95)),
            float(np.percentile(cms, 50)),
            float(np.percentile(cms, 95)),
        ]

    def deepest() -> None:
        st.goto_step(5)
        while st.t1 - st.t0 > st.MIN_SPAN * 1.001:
            st.zoom(2.0)

    measure("fit-all", st.fit)
    measure("step", lambda: st.goto_step(5))
    measure("deepest", deepest)
    out["peak_mb"] = _peak_mb()
    return out


def _child(args: list[str]) -> dict:
    proc = subprocess.run([sys.executable, __file__, *args], capture_output=True, text=True, check=False)
    if proc.returncode != 0:
        sys.stderr.write(proc.stderr)
        raise SystemExit(f"phase {args[0]} failed")
    return json.loads(proc.stdout.strip().splitlines()[-1])


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--events", type=int, default=10_000_000)
    ap.add_argument("--frames", type=int, default=60, help="frames rendered per zoom")
    ap.add_argument("--keep", help="write the trace here (kept) instead of a temporary folder")
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
        print(f"load average at start: {os.getloadavg()[0]:.1f} on {os.cpu_count()} CPUs", flush=True)
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
        r = _child(["--phase", "render", "--trace", str(trace), "--frames", str(a.frames)])
        print(
            f"open     {r['open'] * 1e3:.0f} ms (cached index, {r['n_index']:,} event instances, {r['rows']} lane rows)"
        )
        for zoom in ("fit-all", "step", "deepest"):
            p50, p95, c50, c95 = r[zoom]
            print(
                f"{zoom:8s} p50 {p50:.1f} ms  p95 {p95:.1f} ms  (200×60 frame; CPU time p50 {c50:.1f} ms  p95 {c95:.1f} ms)"
            )
        print(f"peak memory: build {b['peak_mb']:.0f} MB, open + render {r['peak_mb']:.0f} MB")
        print(f"LOD build / import: {b['wall'] / g['wall']:.2f}x wall, {b['cpu'] / g['cpu']:.2f}x cpu")
    finally:
        if tmp is not None:
            tmp.cleanup()


if __name__ == "__main__":
    main()
