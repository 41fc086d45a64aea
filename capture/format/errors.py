"""The one error type of the trace format, carrying the file it is about."""

from __future__ import annotations

from pathlib import Path


class TraceFormatError(Exception):
    """A trace, or a file in it, cannot be read or written as asked.

    ``str(err)`` is one line that names the file and the problem, fit to print as is.
    """

    def __init__(self, path: str | Path, problem: str) -> None:
        self.path = Path(path)
        self.problem = printable(problem)
        super().__init__(f"{self.path}: {self.problem}")

    def __reduce__(self) -> tuple:
        # raised in another process (a Dask worker converting a file), it arrives as itself:
        # pickling re-calls __init__ with its arguments, not with the one joined message
        return (type(self), (self.path, self.problem))


def printable(text: str) -> str:
    """``text`` with every character a terminal would act on (control bytes a reader's message
    quotes from a damaged file, a newline) written as its escape, so that it stays one line."""
    if text.isprintable():
        return text
    return "".join(
        c if c.isprintable() else c.encode("unicode_escape", "backslashreplace").decode() for c in text
    )
