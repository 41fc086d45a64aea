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


#: A later Typer whose coercion layer changed shape: its RuntimeParam wants one more field.
CHANGED_TYPER = r"""
import sys
import typer._coercion as c
orig = c.RuntimeParam.__init__
def needs_more(self, *a, extra, **k):
    orig(self, *a, **k)
c.RuntimeParam.__init__ = needs_more
sys.argv = ["profui", *sys.argv[1:]]
from profui.tui.cli import main
main()
"""


def test_a_typer_whose_layer_changed_keeps_every_command_working(tmp_path) -> None:
    """The plain coercion is an optimisation: where Typer's layer is not the one it knows, Typer's
    own coercion stays, and every command, ``info`` included, parses and runs as before."""
    import os
    import subprocess
    import sys

    from realdata import REPO

    env = {**os.environ, "PROFUI_CACHE": str(tmp_path / "cache")}
    for args in (
        ["summary", "--help"],
        ["info", "--help"],
        ["info", str(REPO / "samples" / "mlp_cpu"), "--json"],
    ):
        proc = subprocess.run(
            [sys.executable, "-c", CHANGED_TYPER, *args], capture_output=True, text=True, env=env
        )
        assert proc.returncode == 0, (args, proc.stderr[-1500:])
        assert "Traceback" not in proc.stderr and proc.stdout.strip(), args
