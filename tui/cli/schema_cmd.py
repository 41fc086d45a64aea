"""``profui schema [NAME]``: the JSON Schema of a ``--json`` output, or the list of them.

The schemas are :func:`profui.analysis.json_schema.document`'s, generated from the declared
tables and key lists, so they are the ones the outputs are tested against.
"""

from __future__ import annotations

import json

import typer

from .errors import UserError


def schema_text(name: str | None) -> str:
    """What ``profui schema [NAME]`` prints: the schema of ``name`` (indent 2), or without a name
    one line per output (name, version, what it is). An unknown name is a :class:`UserError`."""
    from profui.analysis.json_schema import DESCRIPTIONS, NAMES, VERSIONS, document

    if name is None:
        width = max(map(len, NAMES))
        return "\n".join(f"{n:<{width}}  version {VERSIONS[n]}  {DESCRIPTIONS[n]}" for n in NAMES)
    if name not in NAMES:
        raise UserError(f"schema {name!r}: no such output (there: {', '.join(NAMES)})")
    return json.dumps(document(name), indent=2, ensure_ascii=False)


def register(app: typer.Typer) -> None:
    """Add ``profui schema``."""

    @app.command("schema")
    def schema_command(
        name: str | None = typer.Argument(
            None, help="summary, explain, diff, info or gate; without it, the list."
        ),
    ) -> None:
        """Print the JSON Schema (draft 2020-12) of a --json output, to validate it against: every
        document carries the version of its schema (its "version" key), and a key the schema
        lacks fails validation.

        \b
        Examples:
          profui schema
          profui schema summary > summary.schema.json
          profui schema diff | python -m json.tool
          profui schema gate
        """
        typer.echo(schema_text(name))
