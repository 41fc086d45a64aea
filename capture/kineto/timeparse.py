"""Exact conversion of Kineto's microsecond numbers (as JSON text) into integer nanoseconds.

Kineto writes ``ts``/``dur`` in microseconds, either as integers or as decimals with up to three
(sometimes more) fractional digits. A float64 cannot hold ``1712195495519689.047`` exactly, so the
number is converted from its JSON text, never through a float.

:func:`us_to_ns` is the only place where that happens, for every time of every event (rows from
the native scan and from Python alike, profiler spans, markers, flow links): Arrow parses the
text as a decimal and the value is rounded half-to-even to the nanosecond.
"""

from __future__ import annotations

import re
from decimal import Decimal

import pyarrow as pa
import pyarrow.compute as pc

from profui.capture.conversion.errors import BadValue, checked_int64

_THOUSAND_128 = pa.scalar(1000, pa.decimal128(4, 0))
_THOUSAND_256 = pa.scalar(1000, pa.decimal256(4, 0))
_THOUSAND = pa.scalar(1000, pa.int64())


def us_to_ns(texts: pa.Array | pa.ChunkedArray) -> pa.Array:
    """Integer nanoseconds (int64) of JSON numbers of microseconds given as Arrow strings.

    Digits beyond the nanosecond are rounded half-to-even. Raises ``ValueError`` naming a text
    that is not a number or whose value does not fit int64 nanoseconds.

    One rule, computed the cheapest way the column allows: integers (epoch µs) by an integer
    cast; at most three fractional digits exactly in ``decimal128(22, 3)``; the texts with more
    digits or an exponent through a wide decimal rounded to three fractional digits.
    """
    if isinstance(texts, pa.ChunkedArray):
        texts = texts.combine_chunks()
    _refuse_huge(texts)
    data = texts.buffers()[-1]  # all of the text (of a slice: more, which only costs a try)
    if data is None or not _DOT.search(memoryview(data)):
        try:
            return pc.multiply_checked(pc.cast(texts, pa.int64()), _THOUSAND)
        except (pa.ArrowInvalid, pa.ArrowNotImplementedError):
            pass  # exponents, or not numbers: the decimal casts say which
    try:
        return _short_us_to_ns(texts)
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError):
        pass
    short = pc.match_substring_regex(texts, _SHORT)
    rest = pc.invert(short)
    try:
        ns = _short_us_to_ns(pc.if_else(short, texts, pa.scalar("0", texts.type)))
        wide = pc.cast(pc.filter(texts, rest), pa.decimal256(60, 30))
        micro = pc.cast(pc.round(wide, ndigits=3, round_mode="half_to_even"), pa.decimal256(33, 3))
        return pc.replace_with_mask(ns, rest, pc.cast(pc.multiply(micro, _THOUSAND_256), pa.int64()))
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError) as exc:
        raise ValueError(f"not a time in microseconds: {exc}") from None


_DOT = re.compile(rb"[.]")

#: More than 16 integer digits of microseconds is beyond int64 nanoseconds (9.2e15 µs), and
#: Arrow's text-to-decimal cast wraps such values instead of refusing them.
_HUGE_DIGITS = 17
_HUGE = rf"^-?0*[1-9][0-9]{{{_HUGE_DIGITS - 1},}}"


def _refuse_huge(texts: pa.Array) -> None:
    # the regex reads only the texts long enough to hold that many digits (durations, integer
    # epoch µs: none); the lengths come from the offsets
    long = pc.fill_null(pc.greater_equal(pc.binary_length(texts), pa.scalar(_HUGE_DIGITS, pa.int64())), False)
    if not pc.any(long).as_py():
        return
    if not pc.all(long).as_py():
        texts = pc.filter(texts, long)
    huge = pc.fill_null(pc.match_substring_regex(texts, _HUGE), False)
    if pc.any(huge).as_py():
        text = str(pc.filter(texts, huge)[0].as_py())
        shown = text if len(text) <= 24 else f"{text[:10]}…({len(text)} characters)"
        raise BadValue(f"event time {shown} µs is beyond the int64 nanosecond range")


#: The texts :func:`_short_us_to_ns` takes: at most three fractional digits, no exponent.
_SHORT = r"^-?[0-9]+(\.[0-9]{0,3})?$"


def _short_us_to_ns(texts):
    micro = pc.cast(texts, pa.decimal128(22, 3))
    return pc.cast(pc.multiply(micro, _THOUSAND_128), pa.int64())


def us_list_to_ns(texts: list[bytes]) -> list[int]:
    """:func:`us_to_ns` of a few texts given as bytes (profiler spans, markers, flow links)."""
    if not texts:
        return []
    try:
        strings = pa.array(texts, pa.binary()).cast(pa.string())
    except pa.ArrowInvalid as exc:
        raise ValueError(f"not a time in microseconds: {exc}") from None
    return us_to_ns(strings).to_pylist()


def int_text(text: bytes) -> int:
    """An integer given as JSON text (``baseTimeNanoseconds``), exactly; :class:`BadValue` when
    it is not an integer or does not fit int64."""
    if text.startswith(b'"'):
        text = text.strip(b'"')
    try:
        value = int(text)
    except ValueError:
        whole: int | None
        try:
            exact = Decimal(text.decode("ascii", "replace"))
            whole = int(exact) if exact.is_finite() and exact == exact.to_integral_value() else None
        except (ArithmeticError, ValueError):  # decimal.InvalidOperation is an ArithmeticError
            whole = None
        if whole is None:
            raise BadValue(f"{text[:24].decode('ascii', 'replace')!r} is not an integer") from None
        value = whole
    return checked_int64(value, "the integer")
