"""The regression gate: ``--fail-if "step_p50>+5%"`` conditions over a :func:`~.diff.diff` result.

A condition is ``METRIC OP VALUE[UNIT]``: ``METRIC`` a key of the diff's ``metrics``
(``step_p50``, ``idle_pct``, ``share_kernel``, ``kernel_time`` ...), ``OP`` one of ``> >= < <=``,
and ``VALUE`` the change that breaks it:

- ``%``: the change relative to the base (``step_p50>+5%``: the median step is more than 5% slower);
- ``pt``: the change of a share in percentage points (``idle_pct>+3pt``);
- ``ns``/``us``/``ms``/``s``: the change of a time (``launch_p50>+20us``);
- no unit: the change of a count (``kernel_count>+100``).

A condition is broken when the change satisfies it, unless it is a step-time change within
step-to-step noise (its 95% bootstrap interval over each run's steps holds 0): a gate must not
fail a build on noise. Drift between runs is not in that interval: a threshold must sit above
the runner's run-to-run drift. A metric missing from either trace, a unit
that does not fit the metric, or a malformed condition is a :class:`GateError` (bad input).

:func:`gate_json` is the gate's verdict as ``profui diff --json`` holds it (``gate``, null without
``--fail-if``; its schema is ``profui schema gate``).
"""

from __future__ import annotations

import operator
import re
from dataclasses import dataclass
from typing import Any

from .formatting import fmt_signed_ns

_EXPR = re.compile(r"^\s*([A-Za-z0-9_]+)\s*(>=|<=|>|<)\s*([+-]?\d+(?:\.\d+)?)\s*(%|pt|ns|us|µs|ms|s)?\s*$")
_OPS = {">": operator.gt, ">=": operator.ge, "<": operator.lt, "<=": operator.le}
_TIME_UNITS = {"ns": 1, "us": 1e3, "µs": 1e3, "ms": 1e6, "s": 1e9}


#: The version of the gate's JSON: raised when a key changes meaning or goes.
VERSION = 1
#: The gate's keys (``passed``: no condition broke).
KEYS = ("version", "passed", "conditions")
#: A condition's keys: the condition as given, its metric, operator, threshold and unit (``%``,
#: ``pt``, a time unit, or empty for a count), the observed change in that unit (``change``; as
#: text: ``shown``), whether it broke, whether only step-to-step noise kept it from breaking
#: (``within_noise``: met, but a step-time change within noise), and the sentence.
CONDITION_KEYS = (
    "condition",
    "metric",
    "op",
    "threshold",
    "unit",
    "change",
    "shown",
    "broken",
    "within_noise",
    "line",
)


class GateError(ValueError):
    """A condition that cannot be evaluated; ``str()`` is one line naming it."""


@dataclass(frozen=True)
class Condition:
    """One parsed ``--fail-if`` condition."""

    text: str
    metric: str
    op: str
    value: float
    unit: str


def parse_condition(text: str) -> Condition:
    """Parse ``METRIC OP VALUE[UNIT]``; :class:`GateError` when it is not one."""
    m = _EXPR.match(text)
    if not m:
        raise GateError(
            f"bad --fail-if {text!r}: write METRIC OP VALUE[UNIT], e.g. 'step_p50>+5%' or 'idle_pct>+3pt'"
        )
    return Condition(text.strip(), m[1], m[2], float(m[3]), m[4] or "")


def _change(cond: Condition, m: dict[str, Any]) -> tuple[float, str]:
    """The metric's change in the condition's unit, and how it reads."""
    if cond.unit == "%":
        if m["rel"] is None:
            raise GateError(
                f"--fail-if {cond.text!r}: {cond.metric} is 0 in the base, a relative change has no value"
            )
        return m["rel"] * 100, f"{m['rel'] * 100:+.1f}%"
    if cond.unit == "pt":
        if m["unit"] != "share":
            raise GateError(f"--fail-if {cond.text!r}: 'pt' is for shares; {cond.metric} is a {m['unit']}")
        return m["delta"] * 100, f"{m['delta'] * 100:+.1f}pt"
    if cond.unit in _TIME_UNITS:
        if m["unit"] != "ns":
            raise GateError(
                f"--fail-if {cond.text!r}: {cond.unit} is for times; {cond.metric} is a {m['unit']}"
            )
        return m["delta"] / _TIME_UNITS[cond.unit], fmt_signed_ns(m["delta"])
    if m["unit"] != "count":
        unit = {"share": "%, pt", "bytes": "%"}.get(m["unit"], "%, ns, us, ms or s")
        raise GateError(f"--fail-if {cond.text!r}: give {cond.metric}'s change a unit ({unit})")
    return m["delta"], f"{m['delta']:+,.0f}"


def _not_compared(metric: str, result: dict[str, Any]) -> str:
    """The diff's note saying why it did not compare step times (a side without step markers,
    a baseline saved by an older profui, and what to do), for a step metric; else ''."""
    if not metric.startswith("step_"):
        return ""
    why = (n for n in result.get("notes", []) if n.startswith(("step time not compared", "no step markers")))
    return next(why, "")


def check(conditions: list[Condition], result: dict[str, Any]) -> list[dict[str, Any]]:
    """Evaluate each condition on a diff result: a dict of :data:`CONDITION_KEYS` each."""
    out = []
    for cond in conditions:
        m = result["metrics"].get(cond.metric)
        if m is None or m["base"] is None or m["new"] is None:
            why = _not_compared(cond.metric, result)
            if why:
                raise GateError(f"--fail-if {cond.text!r}: {cond.metric} cannot be gated: {why}")
            known = ", ".join(sorted(n for n, v in result["metrics"].items() if v["delta"] is not None))
            raise GateError(f"--fail-if {cond.text!r}: {cond.metric} is not in both traces (there: {known})")
        change, shown = _change(cond, m)
        # a step-time change the bootstrap interval cannot tell from noise never fails a build
        met = _OPS[cond.op](change, cond.value)
        broken = met and m.get("significant") is not False
        within_noise = met and not broken
        # the noise is why it holds only when the condition was met
        noise = " (within step-to-step noise)" if within_noise else ""
        line = f"{cond.metric} changed {shown}: {'breaks' if broken else 'holds'} {cond.text}{noise}"
        out.append(
            {
                "condition": cond.text,
                "metric": cond.metric,
                "op": cond.op,
                "threshold": cond.value,
                "unit": cond.unit,
                "change": change,
                "shown": shown,
                "broken": broken,
                "within_noise": within_noise,
                "line": line,
            }
        )
    return out


def verdict_line(gate: dict[str, Any] | None) -> str | None:
    """The gate's verdict in one line (:func:`gate_json`'s object; None without conditions):
    ``gate passed: 2 conditions hold`` or ``gate broken: 1 of 2 conditions: step_p50 changed
    +12.0%: breaks step_p50>+5%`` (each broken one's line)."""
    if not gate:
        return None
    conds = gate["conditions"]
    broken = [c for c in conds if c["broken"]]
    n = len(conds)
    if not broken:
        return f"gate passed: {n} condition{'s' if n != 1 else ''} {'hold' if n != 1 else 'holds'}"
    return f"gate broken: {len(broken)} of {n} condition{'s' if n != 1 else ''}: " + "; ".join(
        c["line"] for c in broken
    )


def gate_json(conditions: list[Condition], result: dict[str, Any]) -> dict[str, Any] | None:
    """The gate's verdict on a diff result as JSON (:data:`KEYS`; each condition
    :data:`CONDITION_KEYS`), None without conditions; :class:`GateError` as :func:`check`."""
    if not conditions:
        return None
    checked = check(conditions, result)
    return {"version": VERSION, "passed": not any(c["broken"] for c in checked), "conditions": checked}
