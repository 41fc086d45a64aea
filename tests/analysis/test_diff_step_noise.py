"""Words true of a step time within step-to-step noise (issue 39): on hand-made profiles (the
step times and FLOPs are written here, the medians worked by hand), a metric computed from the
step time is not an improvement when the step time it rests on is noise, and one line says how
the median moved and the interval of that change."""

from __future__ import annotations

from profui.analysis.diff import diff, head_lines
from profui.analysis.formatting import fmt_signed_ns

US = 1_000
#: Ten steps spread from 300 to 600 µs: median (400 + 410) / 2 = 405 µs.
BASE_US = [400, 420, 380, 600, 300, 500, 350, 450, 390, 410]
FLOPS = 2e9


def _profile(path: str, steps_us: list[float], flops_per_step: float) -> dict:
    median_ns = sorted(steps_us)[4:6]
    median_ns = (median_ns[0] + median_ns[1]) / 2 * US
    return {
        "version": 2,
        "trace": {"path": path, "folder": path, "name": path, "source": "hand", "ranks": [0], "gpus": 0},
        "has_steps": True,
        "steps": [{"step": i, "dur_ns": round(d * US)} for i, d in enumerate(steps_us)],
        # FLOPs per step over the median step: what the flops stage's throughput rests on
        "numbers": {"flops_per_step": flops_per_step, "achieved_tflops": flops_per_step / median_ns / 1e3},
        "kernels": {},
        "ops": {},
        "runtime": {},
        "annotations": {},
        "findings": {},
    }


def test_a_throughput_resting_on_a_step_time_within_noise_is_no_improvement() -> None:
    # every step 5% shorter: median 405 -> 384.75 µs (-5.0%), throughput +5.3%, within the spread
    new_us = [d * 0.95 for d in BASE_US]
    res = diff(_profile("base", BASE_US, FLOPS), _profile("new", new_us, FLOPS))
    step = res["metrics"]["step_p50"]
    assert (step["base"], step["new"]) == (405 * US, 384.75 * US)
    lo, hi = step["ci95"]
    assert lo < 0 < hi and step["significant"] is False
    tput = res["metrics"]["achieved_tflops"]
    assert abs(tput["rel"] - (405 / 384.75 - 1)) < 1e-9  # +5.3%: over the 2% rule, yet noise
    assert tput["verdict"] == "same" and tput["significant"] is False
    assert res["headline"] == [] and res["verdict"] == "no significant change"
    lines = head_lines(res)
    assert lines[1] == (
        "step time (step period) within step-to-step noise: median 405 µs → 385 µs (-5.0%), "
        f"95% interval of its change {fmt_signed_ns(lo)} … {fmt_signed_ns(hi)}"
    )
    assert not any("improvement" in ln for ln in lines)


def test_a_throughput_whose_flops_changed_keeps_its_verdict() -> None:
    """Twice the FLOPs per step in the same (noisy) time: the throughput doubled for a reason of
    its own, not the step time's."""
    new_us = [d * 0.95 for d in BASE_US]
    res = diff(_profile("base", BASE_US, FLOPS), _profile("new", new_us, 2 * FLOPS))
    assert res["metrics"]["step_p50"]["significant"] is False
    tput = res["metrics"]["achieved_tflops"]
    assert tput["verdict"] == "improvement" and tput["significant"] is None
    assert "achieved_tflops" in res["headline"]


def test_a_step_time_beyond_noise_says_so_with_its_change() -> None:
    # every step twice as long: median 405 -> 810 µs (+100.0%), far outside the spread
    res = diff(_profile("base", BASE_US, FLOPS), _profile("new", [2 * d for d in BASE_US], FLOPS))
    assert res["metrics"]["step_p50"]["significant"] is True
    assert res["metrics"]["achieved_tflops"]["verdict"] == "regression"
    (line,) = [ln for ln in head_lines(res) if ln.startswith("step time (step period)")]
    assert line.startswith(
        "step time (step period) beyond step-to-step noise: median 405 µs → 810 µs (+100.0%)"
    )
