"""The error raised for a file that cannot be imported as a Kineto trace."""

from __future__ import annotations

import msgspec

from profui.capture.format import TraceFormatError


class KinetoFormatError(TraceFormatError):
    """A source file is missing, unreadable, truncated or not a PyTorch Profiler (Kineto) trace.

    ``str(err)`` is one line naming the file and the problem.
    """


#: The range every integer and time of the trace format holds (int64; times in nanoseconds).
INT64_MIN, INT64_MAX = -(1 << 63), (1 << 63) - 1


class BadValue(ValueError):
    """A value in a source file that no trace can hold as it is (an integer beyond 64 bits, a
    time beyond the int64 nanosecond range, a number that is not one). Raised by the value
    rules, which do not know the file; :func:`~profui.capture.kineto.convert.convert_events`
    turns it into a :class:`KinetoFormatError` naming the file."""


def checked_int64(value: int, what: str) -> int:
    """``value`` when it fits int64, else :class:`BadValue` naming ``what`` it is."""
    if not INT64_MIN <= value <= INT64_MAX:
        text = str(value)
        shown = text if len(text) <= 24 else f"{text[:10]}…({len(text)} digits)"
        raise BadValue(f"{what} {shown} does not fit a 64-bit integer")
    return value


def undecodable(exc: Exception) -> str:
    """What msgspec could not decode in JSON it had already checked the shape of: a number
    beyond a double (ValidationError, the only one an untyped decode raises), or else text
    that is not UTF-8."""
    if isinstance(exc, msgspec.ValidationError):
        return "a number beyond the range of a double"
    return str(exc).replace("Invalid UTF-8 encoded string", "text that is not UTF-8")
