"""The injected-bottleneck runs: which script holds which cause, how each is launched and
recorded under profcap, and its measured gain (the script's own clock, without profcap, with and
without the cause).

``python tests/analysis/injected/runs.py [OUT] [CAUSE...]`` records every cause (or the ones
named) into ``OUT/<cause>/trace`` (default OUT ``/tmp/injected``) and writes
``OUT/<cause>/measured.json``.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path

HERE = Path(__file__).resolve().parent
#: The traced optimizer steps of the 12 the scripts run (warm-up steps 0-3 left out).
TRACED_STEPS = "4-9"
NPROC = 3
#: Plain runs per side when measuring a gain, and the steps of each.
REPEATS = 2
PLAIN_STEPS = 20


@dataclass(frozen=True)
class Cause:
    """One injected bottleneck: its script, the finding category that names it, how it runs."""

    name: str
    category: str
    distributed: bool = False
    #: whether removing the cause is expected to shorten the step (risk findings and the run with
    #: nothing injected have no gain to measure)
    has_gain: bool = True
    profcap_args: tuple[str, ...] = field(default=())
    #: ranks of a distributed run
    nproc: int = NPROC
    #: the steps profcap traces (more where one disturbed step would weigh too much)
    traced_steps: str = TRACED_STEPS

    @property
    def script(self) -> Path:
        """The training script."""
        return HERE / f"{self.name}.py"

    def command(self, *args: str) -> list[str]:
        """The command that runs the script (torchrun for the distributed one)."""
        if self.distributed:
            launcher = ["-m", "torch.distributed.run", "--standalone", "--nproc-per-node", str(self.nproc)]
            return [sys.executable, *launcher, str(self.script), *args]
        return [sys.executable, str(self.script), *args]


CAUSES = {
    c.name: c
    for c in (
        Cause("dataloader_sleep", "input"),
        Cause("host_stall", "host"),
        Cause("late_rank", "straggler", distributed=True),
        Cause("late_before_backward", "straggler", distributed=True, nproc=2, traced_steps="4-15"),
        Cause("compute_heavy", "compute", has_gain=False),
        Cause("activations_alive", "memory", has_gain=False, profcap_args=("--memory",)),
    )
}


def _env() -> dict[str, str]:
    env = dict(os.environ)
    env["OMP_NUM_THREADS"] = "1"
    # the scripts import steploop from their own folder; torchrun's workers too
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(HERE), env.get("PYTHONPATH", "")) if p)
    return env


def run_plain(cause: Cause, with_cause: bool, timeout: float = 120) -> dict:
    """Run the script without profcap; its JSON line (median step after warm-up, own clock)."""
    args = ["--steps", str(PLAIN_STEPS)] + ([] if with_cause else ["--no-cause"])
    proc = subprocess.run(
        cause.command(*args), env=_env(), capture_output=True, text=True, timeout=timeout, cwd=HERE
    )
    if proc.returncode != 0:
        raise RuntimeError(f"{cause.name} {' '.join(args)} exited {proc.returncode}: {proc.stderr[-2000:]}")
    lines = [line for line in proc.stdout.splitlines() if line.startswith("{")]
    return json.loads(lines[-1])


def measure(cause: Cause, repeats: int = REPEATS) -> dict:
    """The gain of removing the cause: the median step with it minus the median step without it.

    Runs alternate (with, without, with, ...), ``PLAIN_STEPS`` steps each. Each side's figure is
    the least of its runs' median steps: on a shared machine other work only ever adds time to a
    step, so the least-disturbed run is the closest to the script's own cost, and alternating
    keeps a burst of load from landing on one side only. A cause without a gain runs once.
    """
    runs: dict[bool, list[dict]] = {True: [], False: []}
    for _ in range(repeats if cause.has_gain else 1):
        for with_cause in (True, False) if cause.has_gain else (True,):
            runs[with_cause].append(run_plain(cause, with_cause))
    out = {"cause": cause.name, "category": cause.category, "load": os.getloadavg()[0]}
    fig = {k: min(r["median_step_ns"] for r in v) for k, v in runs.items() if v}
    out["median_step_with_ns"] = fig[True]
    if cause.has_gain:
        out["median_step_without_ns"] = fig[False]
        out["gain_ns"] = fig[True] - fig[False]
    out["runs"] = runs[True] + runs[False]
    return out


def record(cause: Cause, trace: Path, timeout: float = 240) -> subprocess.CompletedProcess:
    """Run the script (with its cause) under ``profcap -o TRACE --steps 4-9 --no-perf``."""
    if trace.exists():
        shutil.rmtree(trace)
    trace.parent.mkdir(parents=True, exist_ok=True)
    profcap = [
        sys.executable,
        "-m",
        "profui.capture.profcap",
        "-o",
        str(trace),
        "--steps",
        cause.traced_steps,
        "--no-perf",
    ]
    return subprocess.run(
        [*profcap, *cause.profcap_args, "--", *cause.command()],
        env=_env(),
        capture_output=True,
        text=True,
        timeout=timeout,
        cwd=HERE,
    )


def main(argv: list[str]) -> int:
    """Record and measure the named causes (all by default) under OUT."""
    out = Path(argv[0]) if argv else Path("/tmp/injected")
    names = argv[1:] or list(CAUSES)
    unknown = [n for n in names if n not in CAUSES]
    if unknown:
        print(f"runs.py: no such cause {unknown[0]!r} (causes: {', '.join(CAUSES)})", file=sys.stderr)
        return 2
    for name in names:
        cause = CAUSES[name]
        proc = record(cause, out / name / "trace")
        if proc.returncode != 0:
            print(f"{name}: profcap exited {proc.returncode}: {proc.stderr[-1500:]}", file=sys.stderr)
            return 1
        m = measure(cause)
        (out / name / "measured.json").write_text(json.dumps(m, indent=1) + "\n")
        if "gain_ns" in m:
            ms = [m[k] / 1e6 for k in ("gain_ns", "median_step_with_ns", "median_step_without_ns")]
            print(f"{name}: gain {ms[0]:.2f} ms/step ({ms[1]:.2f} -> {ms[2]:.2f})")
        else:
            print(f"{name}: median step {m['median_step_with_ns'] / 1e6:.2f} ms (no gain to measure)")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
