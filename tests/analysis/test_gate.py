"""The --fail-if gate on hand-made diff results (the numbers are written here, not computed)."""

from __future__ import annotations

import pytest

from profui.analysis.gate import GateError, check, parse_condition


def _result(**metrics) -> dict:
    base = {
        "label": "",
        "better": "lower",
        "changed": True,
        "significant": None,
        "ci95": None,
        "verdict": "regression",
    }
    return {"metrics": {n: {**base, **m} for n, m in metrics.items()}}


def test_relative_points_and_times() -> None:
    res = _result(
        step_p50={"unit": "ns", "base": 100.0, "new": 110.0, "delta": 10.0, "rel": 0.1, "significant": True},
        idle_pct={"unit": "share", "base": 0.10, "new": 0.14, "delta": 0.04, "rel": 0.4},
        launch_p50={"unit": "ns", "base": 5_000.0, "new": 30_000.0, "delta": 25_000.0, "rel": 5.0},
        kernel_count={"unit": "count", "base": 100, "new": 250, "delta": 150, "rel": 1.5},
    )
    conds = [
        "step_p50>+5%",
        "step_p50>+20%",
        "idle_pct>+3pt",
        "idle_pct>=+5pt",
        "launch_p50>+20us",
        "kernel_count>+100",
    ]
    got = {g["condition"]: g["broken"] for g in check([parse_condition(c) for c in conds], res)}
    assert got == {
        "step_p50>+5%": True,
        "step_p50>+20%": False,
        "idle_pct>+3pt": True,
        "idle_pct>=+5pt": False,
        "launch_p50>+20us": True,
        "kernel_count>+100": True,
    }


def test_step_time_within_noise_never_breaks() -> None:
    res = _result(
        step_p50={"unit": "ns", "base": 100.0, "new": 110.0, "delta": 10.0, "rel": 0.1, "significant": False}
    )
    (g,) = check([parse_condition("step_p50>+5%")], res)
    assert g["broken"] is False and g["within_noise"] is True
    assert g["line"] == "step_p50 changed +10.0%: holds step_p50>+5% (within step-to-step noise)"


def test_noise_is_said_only_when_it_is_why_a_condition_holds() -> None:
    """A step-time change within noise that does not meet the condition holds on its own: the
    line says nothing of noise, as ``within_noise`` is false (the walk's +0.0% case)."""
    res = _result(
        step_p50={"unit": "ns", "base": 100.0, "new": 100.0, "delta": 0.0, "rel": 0.0, "significant": False}
    )
    (g,) = check([parse_condition("step_p50>+5%")], res)
    assert (g["broken"], g["within_noise"]) == (False, False)
    assert g["line"] == "step_p50 changed +0.0%: holds step_p50>+5%"


def test_the_gates_verdict_in_one_line() -> None:
    from profui.analysis.gate import gate_json, verdict_line

    res = _result(
        step_p50={"unit": "ns", "base": 100.0, "new": 110.0, "delta": 10.0, "rel": 0.1, "significant": True},
        kernel_count={"unit": "count", "base": 100, "new": 250, "delta": 150, "rel": 1.5},
    )
    both = gate_json([parse_condition("step_p50>+5%"), parse_condition("kernel_count>+1000")], res)
    assert (
        verdict_line(both) == "gate broken: 1 of 2 conditions: step_p50 changed +10.0%: breaks step_p50>+5%"
    )
    one = gate_json([parse_condition("step_p50>+20%")], res)
    assert verdict_line(one) == "gate passed: 1 condition holds"
    assert verdict_line(None) is None


@pytest.mark.parametrize("text", ["step_p50 > 5 %%", "step_p50=5%", "p50>+5x", ""])
def test_malformed(text: str) -> None:
    with pytest.raises(GateError, match="bad --fail-if"):
        parse_condition(text)


def test_relative_change_from_zero_has_no_value() -> None:
    res = _result(comm_exposed={"unit": "ns", "base": 0.0, "new": 5.0, "delta": 5.0, "rel": None})
    with pytest.raises(GateError, match="is 0 in the base"):
        check([parse_condition("comm_exposed>+5%")], res)
