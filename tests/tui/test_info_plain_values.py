"""``profui info`` takes its values without pydantic (``info_cmd.PlainValuesCommand``) and takes
them exactly as Typer's own coercion does.

The oracle is Typer itself: the same command function registered on a plain Typer app, parsed
the same command lines. Both must give the same values, or fail with the same error and message.
"""

from __future__ import annotations

import typer
import typer.main

from profui.tui.cli import app
from profui.tui.cli.info_cmd import PlainValuesCommand

ARGVS = [
    ["trace"],
    ["trace", "--json"],
    ["--json", "trace"],
    ["trace", "--json", "--json"],
    [""],
    ["-"],
    ["a b/ç/..//x"],
    [" trace "],
    ["/"],
    [],
    ["--json"],
    ["trace", "other"],
    ["trace", "--bogus"],
    ["trace", "--json=yes"],
    ["trace", "--no-json"],
    ["-h"],
    ["--help"],
    ["trace", "-h"],
]


def _parse(command, argv: list[str]) -> tuple:
    try:
        ctx = command.make_context("info", list(argv), help_option_names=["-h", "--help"])
    except (typer.Exit, Exception) as exc:  # typer.Exit: -h shows the help and exits
        message = exc.format_message() if hasattr(exc, "format_message") else ""
        return type(exc).__name__, message, getattr(exc, "exit_code", None)
    return "ok", {k: (type(v).__name__, str(v)) for k, v in ctx.params.items()}


def _commands():
    ours = typer.main.get_command(app).commands["info"]
    (registered,) = [c for c in app.registered_commands if c.name == "info"]
    plain_app = typer.Typer(add_completion=False)
    plain_app.command("info")(registered.callback)
    theirs = typer.main.get_command(plain_app)
    return ours, theirs


def test_info_is_a_plain_values_command() -> None:
    ours, theirs = _commands()
    assert isinstance(ours, PlainValuesCommand) and not isinstance(theirs, PlainValuesCommand)


def test_the_values_and_errors_are_typers(capsys) -> None:
    for argv in ARGVS:
        ours, theirs = _commands()  # fresh commands: a parse may cache what it built
        assert _parse(ours, argv) == _parse(theirs, argv), argv
