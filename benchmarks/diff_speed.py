"""``profui diff`` of two big traces from their cached stage outputs, against the 2 s target.

Builds two SYNTHETIC traces of ``--events`` events each (``samples/generate_synthetic.py``,
seeds 1 and 2: the shared real traces hold at most 0.5M events), records a full analysis of
each (``profui analyze``, which fills the stage cache the dashboard and the diff read), then
times ``profui diff A B`` in fresh processes: the first (cold: nothing cached yet is not
measured here, the analyses are) and ``--repeat`` warm runs, median wall time and peak RSS.

    .venv/bin/python benchmarks/diff_speed.py [--events 3000000] [--repeat 5]
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
TARGET_S = 2.0


def timed(cmd: list[str]) -> tuple[float, float]:
    """Wall seconds and peak RSS (MB) of ``cmd`` in a fresh process."""
    t0 = time.perf_counter()
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    _pid, status, usage = os.wait4(proc.pid, 0)
    wall = time.perf_counter() - t0
    if os.waitstatus_to_exitcode(status) not in (0, 1):
        err = proc.stderr.read().decode(errors="replace") if proc.stderr else ""
        raise SystemExit(f"{' '.join(cmd)} failed:\n{err[-2000:]}")
    return wall, usage.ru_maxrss / 1024


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--events", type=int, default=3_000_000)
    ap.add_argument("--repeat", type=int, default=5)
    args = ap.parse_args()
    profui = str(Path(sys.executable).with_name("profui"))
    with tempfile.TemporaryDirectory() as work:
        traces = []
        for seed in (1, 2):
            out = Path(work) / f"synthetic-{seed}"
            subprocess.run(
                [sys.executable, str(REPO / "samples" / "generate_synthetic.py"), "-o", str(out),
                 "--events", str(args.events), "--seed", str(seed)],
                check=True, stdout=subprocess.DEVNULL,
            )  # fmt: skip
            wall, rss = timed([profui, "analyze", str(out)])
            print(
                f"synthetic trace seed {seed}: {args.events:,} events; profui analyze {wall:.1f} s, {rss:.0f} MB"
            )
            traces.append(str(out))
        first = timed([profui, "diff", *traces])
        warm = [timed([profui, "diff", *traces]) for _ in range(args.repeat)]
    wall = statistics.median(w for w, _ in warm)
    rss = max(r for _, r in warm)
    print(f"profui diff, first run: {first[0]:.2f} s, {first[1]:.0f} MB")
    print(f"profui diff, warm: median {wall:.2f} s of {args.repeat}, peak {rss:.0f} MB")
    print(
        f"ratio to the {TARGET_S:.0f} s target: {wall / TARGET_S:.2f} ({'met' if wall <= TARGET_S else 'NOT met'})"
    )


if __name__ == "__main__":
    main()
