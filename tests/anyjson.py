"""Hypothesis strategies for decoder property tests: any JSON value, and nesting past the
recursion limit written as text (``json.dumps`` could not write it), with the settings those
tests share (no per-example deadline, the same examples every run)."""

from __future__ import annotations

from hypothesis import HealthCheck, settings
from hypothesis import strategies as st

FUZZ = settings(
    max_examples=600,
    deadline=None,
    derandomize=True,
    database=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
)

scalar = (
    st.none()
    | st.booleans()
    | st.integers(min_value=-(2**80), max_value=2**80)
    | st.floats(allow_nan=True, allow_infinity=True)
    | st.text(max_size=8)
)
json_value = st.recursive(
    scalar,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=6), inner, max_size=4),
    max_leaves=20,
)
#: nesting far past the recursion limit, written as text
deep_text = st.tuples(st.integers(900, 200_000), st.sampled_from(["[", '{"a":'])).map(
    lambda t: t[1] * t[0] + "1" + ("]" if t[1] == "[" else "}") * t[0]
)
