"""How the CLI reports a user's mistake: one line on stderr, exit status 2, no traceback."""

from __future__ import annotations

import sys

EXIT_BAD_INPUT = 2


class UserError(Exception):
    """A problem with what the user asked for or gave us; ``str()`` is the one line to print."""


def report(message: str, code: int = EXIT_BAD_INPUT) -> None:
    """Print ``profui: <message>`` to stderr and exit with ``code``."""
    sys.stderr.write(f"profui: {message}\n")
    sys.stderr.flush()
    raise SystemExit(code)
