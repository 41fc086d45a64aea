"""The modules a ``profui summary`` and a cold ``profui open`` pass through, file to file (issue #35).

Each command runs in this process on a fresh copy of the trace with a fresh ``PROFUI_CACHE``:
``summary`` through the command line's own app (its output thrown away), ``open`` headless at
80×24 through Textual's Pilot until the dashboard has drawn every chart. ``sys.setprofile`` (and
``threading.setprofile`` for the workers) sees every Python call; a call whose code is profui's
and whose nearest profui caller is in another module is one step of the path, ``caller →
callee``. Per command it prints:

* the modules the path passes through and the distinct ``caller → callee`` pairs;
* the steps, and how many are **returns**: a call into a module the path had already left
  (``A → B → … → A``), and of those how many go **back into the stack**: into a module whose
  call is still running further up (a cycle at run time: the house sends work back to a room it
  has not finished with);
* the modules returned to most, and the pairs of modules that call each other both ways.

``--json OUT`` keeps the record; ``compare A B`` prints two records side by side (before and
after a restructuring: run the script once with each checkout's interpreter)::

    python benchmarks/call_path.py run --trace samples/mlp_cpu --json /tmp/after.json
    /tmp/base/.venv/bin/python benchmarks/call_path.py run --trace samples/mlp_cpu --json /tmp/before.json
    python benchmarks/call_path.py compare /tmp/before.json /tmp/after.json

Wall time under the profiler means nothing and is not printed; the counts do not depend on the
machine's load, but Textual's own timing decides how often it repaints, so ``open``'s counts can
move by a few steps between runs.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import io
import json
import os
import shutil
import sys
import tempfile
import threading
from collections import Counter
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent


class PathRecorder:
    """Records the steps between profui modules, per thread, while installed."""

    def __init__(self) -> None:
        self.steps: list[tuple[str, str, bool]] = []
        self._lock = threading.Lock()

    @staticmethod
    def _module(frame: Any) -> str | None:
        name = frame.f_globals.get("__name__", "")
        return name if isinstance(name, str) and name.startswith("profui.") else None

    def _profile(self, frame: Any, event: str, arg: Any) -> None:
        if event != "call":
            return
        callee = self._module(frame)
        if callee is None:
            return
        up, caller, below = frame.f_back, None, False
        while up is not None:
            mod = self._module(up)
            if mod is not None:
                if caller is None:
                    if mod == callee:
                        return
                    caller = mod
                elif mod == callee:
                    below = True
                    break
            up = up.f_back
        if caller is not None:
            with self._lock:
                self.steps.append((caller, callee, below))

    def __enter__(self) -> PathRecorder:
        threading.setprofile(self._profile)
        sys.setprofile(self._profile)
        return self

    def __exit__(self, *exc: object) -> None:
        sys.setprofile(None)
        threading.setprofile(None)  # type: ignore[arg-type]


def describe(steps: list[tuple[str, str, bool]]) -> dict[str, Any]:
    """The record's numbers: modules, pairs, steps, returns (calls into a module left before),
    and calls back into a module still on the stack (a cycle at run time)."""
    seen: set[str] = set()
    returns: Counter[str] = Counter()
    back: Counter[tuple[str, str]] = Counter()
    for caller, callee, below in steps:
        seen.add(caller)
        if callee in seen:
            returns[callee] += 1
        if below:
            back[caller, callee] += 1
        seen.add(callee)
    pairs = Counter((a, b) for a, b, _ in steps)
    both_ways = sorted({tuple(sorted(p)) for p in pairs if (p[1], p[0]) in pairs})
    return {
        "modules": sorted(seen),
        "pairs": len(pairs),
        "steps": len(steps),
        "returns": sum(returns.values()),
        "returned_to": returns.most_common(12),
        "back_into_stack": sum(back.values()),
        "back_pairs": [[a, b, n] for (a, b), n in back.most_common()],
        "both_ways": [list(p) for p in both_ways],
        "pair_counts": [[a, b, n] for (a, b), n in pairs.most_common()],
    }


def run_summary(trace: Path) -> list[tuple[str, str, bool]]:
    """``profui summary TRACE`` through the command line's app, recorded."""
    from profui.tui.cli import app

    with PathRecorder() as rec, contextlib.redirect_stdout(io.StringIO()):
        try:
            app([ "summary", str(trace)], standalone_mode=False)  # fmt: skip
        except SystemExit:
            pass
    return rec.steps


def run_open(trace: Path) -> list[tuple[str, str, bool]]:
    """A cold ``profui open TRACE`` at 80×24 until the dashboard has drawn, recorded."""
    from profui.tui.app import OpenTarget, ProfuiApp
    from profui.tui.views.dashboard import DashboardView

    async def go() -> None:
        app = ProfuiApp(OpenTarget("trace", trace), poll_s=60)
        async with app.run_test(size=(80, 24)) as pilot:
            for _ in range(3000):
                await pilot.pause()
                views = app.screen.query(DashboardView)
                if views and views.first().complete:
                    break
                await asyncio.sleep(0.02)
            else:
                raise SystemExit("call_path: the dashboard never completed")
            await pilot.pause()

    with PathRecorder() as rec:
        asyncio.run(go())
    return rec.steps


def _fresh_copy(trace: Path, work: Path) -> Path:
    """A copy of the trace folder without its analysis cache (or the trace file itself)."""
    if trace.is_file():
        return trace
    dst = work / trace.name
    shutil.copytree(trace, dst, ignore=shutil.ignore_patterns(".profui"))
    return dst


def record(trace: Path) -> dict[str, Any]:
    """Both commands on ``trace``, each from a fresh copy and an empty cache."""
    out: dict[str, Any] = {"trace": str(trace), "python": sys.executable}
    for name, runner in (("summary", run_summary), ("open", run_open)):
        with tempfile.TemporaryDirectory(prefix="profui-callpath-") as tmp:
            os.environ["PROFUI_CACHE"] = str(Path(tmp) / "cache")
            out[name] = describe(runner(_fresh_copy(trace, Path(tmp))))
    return out


def show(rec: dict[str, Any]) -> None:
    """Print one record."""
    print(f"trace {rec['trace']} ({rec['python']})")
    for name in ("summary", "open"):
        d = rec[name]
        print(
            f"  {name:8} modules {len(d['modules']):4}  pairs {d['pairs']:5}  steps {d['steps']:8,}  "
            f"returns {d['returns']:8,}  back into the stack {d['back_into_stack']:6,}  "
            f"pairs both ways {len(d['both_ways'])}"
        )
        for a, b, n in d["back_pairs"][:8]:
            print(
                f"    back into the stack: {a.removeprefix('profui.')} -> {b.removeprefix('profui.')} {n:,}"
            )
        print(
            "    returned to most: "
            + ", ".join(f"{m.removeprefix('profui.')} {n:,}" for m, n in d["returned_to"][:6])
        )
        for a, b in d["both_ways"][:8]:
            print(f"    both ways: {a.removeprefix('profui.')} <-> {b.removeprefix('profui.')}")


def compare(a: dict[str, Any], b: dict[str, Any]) -> None:
    """Print two records side by side (before, after)."""
    print(f"before: {a['python']}\nafter:  {b['python']}\ntrace:  {a['trace']}")
    print(
        f"{'':10}{'modules':>16}{'pairs':>16}{'steps':>22}{'returns':>22}{'back into stack':>20}{'both ways':>14}"
    )
    for name in ("summary", "open"):
        x, y = a[name], b[name]
        cells = [
            f"{len(x['modules'])} → {len(y['modules'])}",
            f"{x['pairs']} → {y['pairs']}",
            f"{x['steps']:,} → {y['steps']:,}",
            f"{x['returns']:,} → {y['returns']:,}",
            f"{x['back_into_stack']:,} → {y['back_into_stack']:,}",
            f"{len(x['both_ways'])} → {len(y['both_ways'])}",
        ]
        print(
            f"{name:10}{cells[0]:>16}{cells[1]:>16}{cells[2]:>22}{cells[3]:>22}{cells[4]:>20}{cells[5]:>14}"
        )
        gone = sorted(set(map(tuple, x["both_ways"])) - set(map(tuple, y["both_ways"])))
        new = sorted(set(map(tuple, y["both_ways"])) - set(map(tuple, x["both_ways"])))
        for label, items in (("no longer both ways", gone), ("newly both ways", new)):
            for p, q in items:
                print(f"    {label}: {p.removeprefix('profui.')} <-> {q.removeprefix('profui.')}")


def main() -> None:
    """Command line."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0], epilog=__doc__.split("::")[-1])
    sub = parser.add_subparsers(dest="cmd", required=True)
    r = sub.add_parser("run", help="record profui summary and a cold profui open of a trace")
    r.add_argument("--trace", type=Path, default=REPO / "samples" / "mlp_cpu")
    r.add_argument("--json", type=Path, help="write the record here")
    c = sub.add_parser("compare", help="two records side by side")
    c.add_argument("before", type=Path)
    c.add_argument("after", type=Path)
    args = parser.parse_args()
    if args.cmd == "compare":
        compare(json.loads(args.before.read_text()), json.loads(args.after.read_text()))
        return
    rec = record(args.trace.resolve())
    show(rec)
    if args.json:
        args.json.write_text(json.dumps(rec, indent=1))


if __name__ == "__main__":
    main()
