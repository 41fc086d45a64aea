"""The clock every injected script keeps: each whole loop iteration timed with perf_counter, the
median of the steps after warm-up printed as JSON on the script's last line. Works without profui."""

from __future__ import annotations

import argparse
import json
import statistics
import time

#: Loop iterations not counted: the first steps pay for allocator growth and lazy initialisation.
WARMUP = 3


def parse(description: str, steps: int = 12) -> argparse.Namespace:
    """``--no-cause`` (run the same loop with the injected bottleneck removed) and ``--steps``."""
    p = argparse.ArgumentParser(description=description)
    p.add_argument("--no-cause", action="store_true", help="remove the injected bottleneck")
    p.add_argument("--steps", type=int, default=steps, help="loop iterations (optimizer steps)")
    return p.parse_args()


class Clock:
    """Per-iteration wall times: ``with clock: ...`` around one whole loop iteration."""

    def __init__(self) -> None:
        self.times_ns: list[int] = []

    def __enter__(self) -> Clock:
        self._t0 = time.perf_counter()
        return self

    def __exit__(self, *exc) -> None:
        self.times_ns.append(round((time.perf_counter() - self._t0) * 1e9))

    def median_ns(self) -> int:
        """Median iteration time after the warm-up steps."""
        return round(statistics.median(self.times_ns[WARMUP:]))


def report(clock: Clock, cause: bool, **extra) -> None:
    """Print the run's JSON line (last line of stdout)."""
    out = {"median_step_ns": clock.median_ns(), "cause": cause, "steps_ns": clock.times_ns, **extra}
    print(json.dumps(out), flush=True)
