"""``profui mcp``: serve profui's answers to an agent as a Model Context Protocol server on stdio.

The server is :mod:`profui.tui.cli.mcp.server`, on the official ``mcp`` SDK, an optional extra
(``pip install 'profui[mcp]'``): it is imported only when the server starts, so ``--help`` stays
light, and without it the command says how to install it (exit 2).
"""

from __future__ import annotations

import typer

from .errors import UserError

INSTALL = "profui mcp needs the mcp package: pip install 'profui[mcp]'"


def skill_text() -> str:
    """The agent skill file shipped in the package (``profui/tui/cli/mcp/SKILL.md``)."""
    from importlib.resources import files

    return files("profui.tui.cli.mcp").joinpath("SKILL.md").read_text(encoding="utf-8")


def register(app: typer.Typer) -> None:
    """Add ``profui mcp``."""

    @app.command("mcp")
    def mcp_command(
        skill: bool = typer.Option(
            False,
            "--skill",
            help="Print the agent skill file (SKILL.md: when and how to use profui) and exit.",
        ),
    ) -> None:
        """Serve profui's tools to an agent over the Model Context Protocol (stdio): list_traces,
        import_trace, summary, explain, diff, top (kernels, ops, annotations of a step), events (a
        window's rows, bounded) and memory_peak. Results equal the commands' --json.

        \b
        Examples:
          claude mcp add profui -- profui mcp
          a client's configuration file (Claude Desktop, Cursor, ...):
            {"mcpServers": {"profui": {"command": "profui", "args": ["mcp"]}}}
          the agent skill file:
            profui mcp --skill > ~/.claude/skills/profui/SKILL.md

        Nothing but the protocol goes to standard output; progress and warnings go to the client
        as notifications, tracebacks of bugs to standard error.
        """
        if skill:
            typer.echo(skill_text(), nl=False)
            return
        try:
            from profui.tui.cli.mcp.server import serve
        except ImportError as exc:
            if (exc.name or "").split(".")[0] in ("mcp", "mcp_types", "pydantic", "anyio"):
                raise UserError(INSTALL) from None
            raise
        serve()
