"""The one error type of the trace format, carrying the file it is about."""

from __future__ import annotations

from pathlib import Path


class TraceFormatError(Exception):
    """A trace, or a file in it, cannot be read or written as asked.

    ``str(err)`` is one line that names the file and the problem, fit to print as is.
    """

    def __init__(self, path: str | Path, problem: str) -> None:
        self.path = Path(path)
        self.problem = problem
        super().__init__(f"{self.path}: {problem}")
