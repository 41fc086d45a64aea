"""`profui` sub-command(s) of this module (placeholder until implemented)."""

from __future__ import annotations

import typer


def register(app: typer.Typer) -> None:
    """Add this module's command(s) to ``app``."""
