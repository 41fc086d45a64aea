"""The error raised for a file that cannot be imported as a Kineto trace."""

from __future__ import annotations

from profui.capture.format import TraceFormatError


class KinetoFormatError(TraceFormatError):
    """A source file is missing, unreadable, truncated or not a PyTorch Profiler (Kineto) trace.

    ``str(err)`` is one line naming the file and the problem.
    """
