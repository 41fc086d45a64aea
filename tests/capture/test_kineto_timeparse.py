"""Exact µs-text -> int ns conversion (``us_to_ns``, the only one) against Decimal arithmetic."""

from __future__ import annotations

from decimal import ROUND_HALF_EVEN, Decimal

import pyarrow as pa
import pytest
from hypothesis import given
from hypothesis import strategies as st

from profui.capture.kineto.timeparse import us_list_to_ns, us_to_ns


def _oracle(text: str) -> int:
    return int((Decimal(text) * 1000).quantize(Decimal(1), rounding=ROUND_HALF_EVEN))


CASES = {
    "1712195495519689.047": 1712195495519689047,  # float64 would give ...689047 +- 250
    "4203669604595.407": 4203669604595407,
    "1669783687464300": 1669783687464300000,
    "0.5": 500,
    "-3.25": -3250,
    "1e3": 1_000_000,
    "1E-3": 1,
    "12.3456": 12346,  # sub-ns digit rounded half-even
    "12.3445": 12344,
    "12.0015": 12002,
    "12.0025": 12002,
    "-12.0025": -12002,
    "-0.0005": 0,
    "0.00050000000001": 1,
    "7.": 7000,
}


def test_known_values() -> None:
    # each tier alone (integers; <= 3 fractional digits; anything else) and all of them at once
    for text, ns in CASES.items():
        assert us_to_ns(pa.array([text])).to_pylist() == [ns], text
    assert us_to_ns(pa.array(list(CASES), pa.large_string())).to_pylist() == list(CASES.values())
    assert us_list_to_ns([t.encode() for t in CASES]) == list(CASES.values())
    assert float("1712195495519689.047") * 1000 != 1712195495519689047
    assert us_list_to_ns([]) == []
    mixed = pa.chunked_array([["1", "2.5"], ["12.0025", "1e3"]], pa.large_string())
    assert us_to_ns(mixed).to_pylist() == [1000, 2500, 12002, 1_000_000]


@pytest.mark.parametrize("text", ["abc", "", "1e400", '"12"', "null", "9223372036854775.808", "1-2"])
def test_what_is_not_a_time_is_a_value_error(text: str) -> None:
    with pytest.raises(ValueError, match="not a time in microseconds"):
        us_list_to_ns([b"1", text.encode()])


@given(st.integers(min_value=-(4 * 10**18), max_value=4 * 10**18))
def test_round_trip_any_ns(ns: int) -> None:
    text = str(Decimal(ns) / 1000)
    assert us_to_ns(pa.array([text])).to_pylist() == [ns]
    assert us_list_to_ns([text.encode(), b"1"]) == [ns, 1000]


@given(
    st.lists(
        st.tuples(
            st.integers(-(10**14), 10**14),  # x10 (E+1) still fits int64 ns
            st.text("0123456789", max_size=12),
            st.sampled_from(["", "e0", "e-2", "E+1"]),
        ),
        min_size=1,
        max_size=20,
    )
)
def test_any_digits_round_half_even_like_decimal(parts: list[tuple[int, str, str]]) -> None:
    texts = [f"{i}.{f}{e}" if f else f"{i}{e}" for i, f, e in parts]
    assert us_to_ns(pa.array(texts)).to_pylist() == [_oracle(t) for t in texts]
