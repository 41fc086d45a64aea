"""Which training steps to trace: ``--steps 40-45`` ranges or a wait/warmup/active/repeat schedule.

Steps are numbered from 0; step ``n`` ends at the ``n+1``-th optimizer step (or ``step()`` call).
Step 0 cannot be traced: tracing arms lazily at the first optimizer step, which ends step 0.
Pure standard library: this module is imported inside training processes.
"""

from __future__ import annotations

from dataclasses import dataclass

#: Traced when no window option is given: a few steps early in the run.
DEFAULT_STEPS = (10, 14)


@dataclass(frozen=True)
class Window:
    """Trace steps ``first``..``last`` (inclusive), preparing the profiler ``warmup`` steps ahead."""

    first: int
    last: int
    warmup: int = 0

    @property
    def arm_at(self) -> int:
        """The step at whose start the profiler is prepared (``first`` without warmup)."""
        return self.first - self.warmup


def parse_steps(text: str) -> list[Window]:
    """Parse ``"40-45"``, ``"12"`` or ``"10-14,100-104"`` into windows; raise ValueError if bad."""
    windows: list[Window] = []
    for part in text.split(","):
        part = part.strip()
        if not part:
            continue
        lo, sep, hi = part.partition("-")
        try:
            first = int(lo)
            last = int(hi) if sep else first
        except ValueError:
            raise ValueError(f"--steps: {part!r} is not a step or a range like 40-45") from None
        if first < 1:
            raise ValueError(f"--steps: {part!r}: steps are counted from 0 and step 0 cannot be traced")
        if last < first:
            raise ValueError(f"--steps: {part!r}: range ends before it starts")
        windows.append(Window(first, last))
    if not windows:
        raise ValueError("--steps: no steps given")
    windows.sort(key=lambda w: w.first)
    for a, b in zip(windows, windows[1:], strict=False):
        if b.first <= a.last:
            raise ValueError(f"--steps: ranges {a.first}-{a.last} and {b.first}-{b.last} overlap")
    return windows


@dataclass(frozen=True)
class Schedule:
    """``torch.profiler.schedule``-like cycles: skip ``wait`` steps, warm up, trace ``active``.

    ``repeat`` cycles (0 = until the job ends). Cycles start at step 1.
    """

    wait: int
    warmup: int
    active: int
    repeat: int

    def window(self, k: int) -> Window | None:
        """The ``k``-th window (0-based), or None past the last cycle."""
        if self.repeat and k >= self.repeat:
            return None
        period = self.wait + self.warmup + self.active
        first = 1 + k * period + self.wait + self.warmup
        return Window(first, first + self.active - 1, self.warmup)


def parse_schedule(text: str) -> Schedule:
    """Parse ``"wait,warmup,active,repeat"`` (repeat optional, default 1); raise ValueError if bad."""
    try:
        nums = [int(x) for x in text.split(",")]
    except ValueError:
        raise ValueError(f"--schedule: {text!r} is not wait,warmup,active,repeat (integers)") from None
    if len(nums) == 3:
        nums.append(1)
    if len(nums) != 4 or min(nums) < 0 or nums[2] < 1:
        raise ValueError(f"--schedule: {text!r}: need wait,warmup,active,repeat with active >= 1")
    return Schedule(*nums)


class WindowPlan:
    """The sequence of windows to trace, from explicit ranges or a schedule."""

    def __init__(self, windows: list[Window] | None = None, schedule: Schedule | None = None) -> None:
        self._windows = list(windows or [])
        self._schedule = schedule

    def window(self, k: int) -> Window | None:
        """The ``k``-th window, or None when there are no more."""
        if self._schedule is not None:
            return self._schedule.window(k)
        return self._windows[k] if k < len(self._windows) else None

    def to_config(self) -> dict:
        """JSON-ready form (for the job's environment and the manifest)."""
        if self._schedule is not None:
            s = self._schedule
            return {"schedule": [s.wait, s.warmup, s.active, s.repeat]}
        return {"steps": [[w.first, w.last, w.warmup] for w in self._windows]}

    @classmethod
    def from_config(cls, cfg: dict) -> WindowPlan:
        """Inverse of :meth:`to_config`."""
        if cfg.get("schedule"):
            return cls(schedule=Schedule(*cfg["schedule"]))
        return cls(windows=[Window(*w) for w in cfg.get("steps", [])])
