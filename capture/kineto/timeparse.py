"""Exact conversion of Kineto's microsecond numbers (as JSON text) into integer nanoseconds.

Kineto writes ``ts``/``dur`` in microseconds, either as integers or as decimals with up to three
(sometimes more) fractional digits. A float64 cannot hold ``1712195495519689.047`` exactly, so the
number is converted from its JSON text, never through a float.
"""

from __future__ import annotations

from decimal import ROUND_HALF_EVEN, Decimal, InvalidOperation


def us_text_to_ns(text: bytes) -> int:
    """Integer nanoseconds of a JSON number of microseconds given as its text.

    Digits beyond the nanosecond are rounded half-to-even. Raises ``ValueError`` on text that
    is not a JSON number.
    """
    int_part, dot, frac = text.partition(b".")
    if not dot:
        if b"e" in text or b"E" in text:
            return _slow(text)
        return int(text) * 1000
    if len(frac) <= 3 and frac.isdigit():
        ns = int(int_part) * 1000
        frac_ns = int(frac.ljust(3, b"0")) if frac else 0
        return ns - frac_ns if int_part.startswith(b"-") else ns + frac_ns
    return _slow(text)


def _slow(text: bytes) -> int:
    try:
        value = Decimal(text.decode("ascii")) * 1000
    except (InvalidOperation, UnicodeDecodeError):
        raise ValueError(f"not a number: {text[:40]!r}") from None
    if not value.is_finite():
        raise ValueError(f"not a finite number: {text[:40]!r}")
    return int(value.quantize(Decimal(1), rounding=ROUND_HALF_EVEN))


def int_text(text: bytes) -> int:
    """An integer given as JSON text (``baseTimeNanoseconds``), exactly."""
    if text.startswith(b'"'):
        text = text.strip(b'"')
    try:
        return int(text)
    except ValueError:
        return int(Decimal(text.decode("ascii")))


def us_texts_to_ns(texts: list[bytes]):
    """Vectorised :func:`us_text_to_ns` over many numbers: an Arrow int64 array.

    Arrow parses the decimal text exactly (``decimal128`` with 3 fractional digits); numbers
    with more fractional digits, or anything Arrow refuses, go through the exact Python path.
    """
    import pyarrow as pa
    import pyarrow.compute as pc

    if not texts:
        return pa.array([], pa.int64())
    strings = pa.array(texts, pa.binary()).cast(pa.string())
    try:
        micro = pc.cast(strings, pa.decimal128(22, 3))
        return pc.cast(pc.multiply(micro, pa.scalar(1000, pa.decimal128(4, 0))), pa.int64())
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError):
        return pa.array([us_text_to_ns(t) for t in texts], pa.int64())


def us_joined_to_ns(joined: bytes, count: int):
    """:func:`us_texts_to_ns` of ``count`` numbers given as one newline-joined text, or None
    when the text does not split into ``count`` numbers (the caller then goes number by number).

    Splitting inside Arrow avoids one Python bytes object per number; integer texts (epoch µs)
    take Arrow's plain integer cast, which is several times cheaper than the decimal one.
    """
    import pyarrow as pa
    import pyarrow.compute as pc

    try:
        strings = pa.array([joined], pa.large_binary()).cast(pa.large_string())
    except pa.ArrowInvalid:
        return None
    parts = pc.split_pattern(strings, "\n").flatten()
    if len(parts) != count:
        return None
    if b"." not in joined:
        try:
            return pc.multiply_checked(pc.cast(parts, pa.int64()), pa.scalar(1000, pa.int64()))
        except (pa.ArrowInvalid, pa.ArrowNotImplementedError):
            pass
    try:
        micro = pc.cast(parts, pa.decimal128(22, 3))
        return pc.cast(pc.multiply(micro, pa.scalar(1000, pa.decimal128(4, 0))), pa.int64())
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError):
        return None
