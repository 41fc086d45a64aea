"""Time to the first full dashboard of ``profui open`` vs ``profui summary``, cold and warm.

On the largest shared Kineto trace (``hta-df_index_resolver``, 216k events) it measures, each in
a fresh subprocess (interpreter start and imports included on both sides, as a user sees it):

* ``profui summary TRACE --json`` with an empty import cache (import + every analysis);
* **cold open**: ``profui open TRACE`` with an empty cache, from the spawn until the app reports
  every dashboard chart drawn (import with its progress screen, the dashboard's analysis stages,
  rendering);
* **warm open**: the same again with the cache filled by the cold open (the import and the
  pipeline's stage outputs are reused; nothing is recomputed).

The app runs headless at 80×24 and exits as soon as the dashboard reports every chart drawn; the
time to that exit is printed for the warm open too.
Medians of ``--repeats`` runs. Targets: warm open < 1 s; cold open within 1.5× of summary.
The last line prints the two ratios.

    .venv/bin/python benchmarks/tui_open.py [--trace FILE] [--repeats 5]
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

from precompile import compile_sources

REPO = Path(__file__).resolve().parent.parent
DEFAULT = "hta-df_index_resolver-df_index_resolver.json.gz"


def traces_dir() -> Path:
    return Path(os.environ.get("PROFUI_TRACES", REPO.parent / "shared" / "traces"))


def child_open(path: str) -> None:
    """Run the app headless on ``path``; exit when the dashboard is complete (child process)."""
    import asyncio

    from profui.tui.app import ProfuiApp
    from profui.tui.cli.open_cmd import plan_open
    from profui.tui.views.dashboard import DashboardView

    app = ProfuiApp(plan_open(Path(path)), poll_s=3600)

    async def pilot_fn(pilot) -> None:
        while True:
            await asyncio.sleep(0.005)
            views = app.screen.query(DashboardView)
            if views and views.first().complete:
                await pilot.pause()  # until the drawn dashboard has been painted
                charts = [p.data is not None for p in views.first().panels()]
                v = views.first()
                print(
                    f"CHARTS {sum(charts)}/{len(charts)} SOURCE {v.session.source} IN_APP {v.seconds:.2f} "
                    f"DRAWN_AT {time.time():.4f}",
                    flush=True,
                )
                app.exit()
                return

    app.run(headless=True, size=(80, 24), auto_pilot=pilot_fn)


def timed(cmd: list[str], env: dict[str, str]) -> tuple[float, str, float]:
    """``(seconds to exit, stdout, seconds to the full dashboard)`` of one fresh process; the
    last is from the spawn to the moment the child reported every chart drawn (what the user
    waits for; the first adds the app's and the interpreter's shutdown)."""
    t0, w0 = time.perf_counter(), time.time()
    res = subprocess.run(cmd, env=env, capture_output=True, text=True)
    elapsed = time.perf_counter() - t0
    if res.returncode != 0:
        raise SystemExit(f"{' '.join(cmd)} failed ({res.returncode}): {res.stderr.strip()[-500:]}")
    drawn = _word_after(res.stdout, "DRAWN_AT")
    return elapsed, res.stdout, drawn - w0 if drawn == drawn else elapsed


def _word_after(out: str, key: str) -> float:
    words = out.split()
    return float(words[words.index(key) + 1]) if key in words else float("nan")


def in_app(out: str) -> float:
    """The child's ``IN_APP`` seconds (dashboard load() to the last chart drawn)."""
    return _word_after(out, "IN_APP")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--trace", default=str(traces_dir() / DEFAULT))
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--child-open", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.child_open:  # the parent compiled the sources before it started this child
        child_open(args.child_open)
        return
    compile_sources()
    src = Path(args.trace)
    if not src.is_file():
        raise SystemExit(f"trace not found: {src} (set PROFUI_TRACES or --trace)")
    py = sys.executable
    summary_cmd = [py, "-c", "from profui.tui.cli import main; main()", "summary", str(src), "--json"]
    open_cmd = [py, str(Path(__file__).resolve()), "--child-open", str(src)]
    summary, cold, warm, cold_in, warm_in, warm_exit = [], [], [], [], [], []
    notes = set()
    for _ in range(args.repeats):
        with tempfile.TemporaryDirectory(prefix="profui-bench-") as tmp:
            env = dict(os.environ, PROFUI_CACHE=str(Path(tmp) / "summary"))
            summary.append(timed(summary_cmd, env)[0])
            env = dict(os.environ, PROFUI_CACHE=str(Path(tmp) / "open"))
            _, out, t = timed(open_cmd, env)
            cold.append(t)
            cold_in.append(in_app(out))
            t_exit, out, t = timed(open_cmd, env)
            warm.append(t)
            warm_exit.append(t_exit)
            warm_in.append(in_app(out))
            notes.add(" ".join(out.strip().split()[:4]) if out.strip() else "")
            shutil.rmtree(tmp, ignore_errors=True)
    s, c, w = (statistics.median(x) for x in (summary, cold, warm))
    print(f"trace: {src.name} ({src.stat().st_size / 1e6:.1f} MB gz), {args.repeats} runs each, medians")
    for line in sorted(notes):
        print(f"  dashboard: {line}")
    print(f"profui summary --json (cold cache) {s:6.2f} s   runs: {', '.join(f'{x:.2f}' for x in summary)}")
    print(f"profui open, cold (to full dash)  {c:6.2f} s   runs: {', '.join(f'{x:.2f}' for x in cold)}")
    print(f"profui open, warm (to full dash)  {w:6.2f} s   runs: {', '.join(f'{x:.2f}' for x in warm)}")
    print(
        f"  of which in the app, dashboard load to last chart: cold {statistics.median(cold_in):.2f} s, "
        f"warm {statistics.median(warm_in):.2f} s (the rest: interpreter start, imports, import of the JSON)"
    )
    print(
        f"  warm, to the process's exit (adds the app's and the interpreter's shutdown): {statistics.median(warm_exit):.2f} s"
    )
    print(
        f"targets: warm < 1 s ({'met' if w < 1 else 'NOT met'}); cold <= 1.5x summary "
        f"({'met' if c <= 1.5 * s else 'NOT met'})"
    )
    print(f"RATIO cold_open/summary {c / s:.2f}  warm_open_s {w:.2f}  warm_open/summary {w / s:.2f}")


if __name__ == "__main__":
    main()
