"""Exact µs-text -> int ns conversion, scalar and vectorised, against Decimal arithmetic."""

from __future__ import annotations

from decimal import Decimal

from hypothesis import given
from hypothesis import strategies as st

from profui.capture.kineto.timeparse import us_text_to_ns, us_texts_to_ns


def test_known_values() -> None:
    cases = {
        b"1712195495519689.047": 1712195495519689047,  # float64 would give ...689047 +- 250
        b"4203669604595.407": 4203669604595407,
        b"1669783687464300": 1669783687464300000,
        b"0.5": 500,
        b"-3.25": -3250,
        b"1e3": 1_000_000,
        b"12.3456": 12346,  # sub-ns digit rounded half-even
        b"12.3445": 12344,
        b"7.": 7000,
    }
    for text, ns in cases.items():
        assert us_text_to_ns(text) == ns, text
    assert us_texts_to_ns(list(cases)).to_pylist() == list(cases.values())
    assert float(b"1712195495519689.047") * 1000 != 1712195495519689047


@given(st.integers(min_value=0, max_value=4 * 10**18))
def test_round_trip_any_ns(ns: int) -> None:
    text = str(Decimal(ns) / 1000).encode()
    assert us_text_to_ns(text) == ns
    assert us_texts_to_ns([text, b"1"]).to_pylist() == [ns, 1000]
