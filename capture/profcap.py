"""``profcap`` (placeholder until implemented)."""

from __future__ import annotations

import sys


def main() -> None:
    """Entry point of the ``profcap`` console script."""
    sys.stderr.write("profcap: not implemented yet\n")
    raise SystemExit(2)
