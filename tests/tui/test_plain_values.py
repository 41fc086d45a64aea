"""Every profui command takes its values without pydantic (``plain_values.PlainValuesCommand``)
and takes them exactly as Typer's own coercion does.

The oracle is Typer itself: each command's function registered on a plain Typer app, parsed the
same command lines. Both must give the same values, or fail with the same error and message. The
command lines are made from each command's parameters: every option given each of a table of
values (integers, numbers, texts, paths written in ways pydantic's lax rules take or refuse),
with the arguments it needs, and the arguments alone.
"""

from __future__ import annotations

from pathlib import Path

import typer
import typer.main

from profui.tui.cli import app
from profui.tui.cli.plain_values import PlainValuesCommand

INTS = ["3", " 3 ", "\x1f5", "5\x1c", "\xa05", "+3", "-3", "0", "1", "1_000", "1.0", "1.00", " 2.0 ", "1.5", "1.", "1e3", "0x10", "",
        "nan", "\uff13", "\u0661", "3 4", "-0", "99999999999999999999", "1_0.0", "1__0", "_1", "1_", "\t7\n",
        "1.0_0", "00012", "+", "abc"]  # fmt: skip
FLOATS = ["2.5", "3", "1e3", "1e400", "nan", "NaN", "inf", "-inf", "Infinity", ".5", "1.", "x", "", "\uff11",
          "1_000", "1_000.5", "0", "-0", " 4 ", "1.0.0", "0x10"]  # fmt: skip
TEXTS = ["x", "", " a b ", "-", "--", "ç", "a=b", "^re(gex)$"]
PATHS = ["p", "", "-", "/", " trace ", "a b/ç/..//x", "/nonexistent/deep", "."]
#: The arguments a command line gives each positional parameter, by kind (one value, or several).
ARGS = {str: ["t"], "list": ["t1", "t2"]}
#: Whole command lines of the command alone: no arguments, an unknown option, help.
ALONE = [[], ["--bogus"], ["-h"], ["--help"]]


def _parse(command, name: str, argv: list[str]) -> tuple:
    try:
        ctx = command.make_context(name, list(argv), help_option_names=["-h", "--help"])
    except (typer.Exit, Exception) as exc:  # typer.Exit: -h shows the help and exits
        message = exc.format_message() if hasattr(exc, "format_message") else ""
        return type(exc).__name__, message, getattr(exc, "exit_code", None)
    return "ok", {k: (type(v).__name__, repr(v)) for k, v in ctx.params.items()}


def _commands(name: str):
    ours = typer.main.get_command(app).commands[name]
    (registered,) = [c for c in app.registered_commands if c.name == name]
    plain_app = typer.Typer(add_completion=False)
    plain_app.command(name)(registered.callback)
    theirs = typer.main.get_command(plain_app)
    return ours, theirs


def _values(annotation) -> list[str]:
    item = typer.main.get_args(annotation)[0] if typer.main.get_origin(annotation) is list else annotation
    return {int: INTS, float: FLOATS, str: TEXTS}.get(item, PATHS)


def _command_lines(name: str) -> list[list[str]]:
    """The arguments alone (each a value of the table), then each option with each value."""
    ours, _ = _commands(name)
    arguments = [p for p in ours.params if isinstance(p, typer.core.TyperArgument)]
    options = [p for p in ours.params if isinstance(p, typer.core.TyperOption)]
    base = [v for p in arguments for v in (ARGS["list"] if p.nargs == -1 else ARGS[str])]
    lines = [*ALONE, base]
    for p in arguments:
        for value in _values(p.type_descriptor.annotation):
            lines.append([value if a is base[0] and p is arguments[0] else a for a in base] or [value])
    for p in options:
        flag = p.opts[0]
        if p.is_flag:
            lines += [[*base, flag], [*base, flag, flag]]
            continue
        for value in _values(p.type_descriptor.annotation):
            lines.append([*base, flag, value])
            if p.multiple:
                lines.append([*base, flag, value, flag, "second"])
        lines.append([*base, flag])  # the value missing
    return lines


COMMANDS = [c.name for c in app.registered_commands]


def test_every_command_is_a_plain_values_command() -> None:
    for name in COMMANDS:
        ours, theirs = _commands(name)
        assert isinstance(ours, PlainValuesCommand) and not isinstance(theirs, PlainValuesCommand), name


def test_a_bound_that_clamps_is_typers() -> None:
    """An integer option with ``clamp=True`` (none of profui's has one) is clamped as Typer does,
    not refused: the plain coercion leaves it to Typer."""

    def demo(n: int = typer.Option(5, min=1, max=10, clamp=True)) -> None:
        pass

    for argv in (["--n", "50"], ["--n", "0"], ["--n", "7"], ["--n", "x"]):
        ours_app, theirs_app = typer.Typer(), typer.Typer()
        ours_app.command(cls=PlainValuesCommand)(demo)
        theirs_app.command()(demo)
        ours, theirs = typer.main.get_command(ours_app), typer.main.get_command(theirs_app)
        assert _parse(ours, "demo", argv) == _parse(theirs, "demo", argv), argv


def test_the_plain_kinds_are_taken_plainly() -> None:
    """Every parameter of a kind this module takes has the plain coercion installed (else the
    comparison below would compare Typer with itself)."""
    from profui.tui.cli.plain_values import _plain_kind

    plain = 0
    for name in COMMANDS:
        ours, _ = _commands(name)
        for p in ours.params:
            desc = p.type_descriptor
            if _plain_kind(desc.annotation, desc.parameter_info) is not None:
                assert type(p._runtime_param).__name__ == "Plain", (name, p.name)
                plain += 1
    assert plain >= 60  # every option and argument of every command


def test_the_values_and_errors_are_typers() -> None:
    compared = 0
    for name in COMMANDS:
        for argv in _command_lines(name):
            ours, theirs = _commands(name)  # fresh commands: a parse may cache what it built
            assert _parse(ours, name, argv) == _parse(theirs, name, argv), (name, argv)
            compared += 1
    assert compared > 500  # every command's every option, each with the whole table


def test_a_path_is_checked_by_typers_rule(tmp_path) -> None:
    """A path parameter that asks for checks (it must exist, be a file, be resolved) is refused or
    taken as under Typer's coercion, with the same message (profui's own paths ask only that an
    existing one be readable, which a test run as root cannot see refused)."""

    def demo(
        must: Path = typer.Option(..., exists=True),
        file: Path | None = typer.Option(None, dir_okay=False),
        folder: Path | None = typer.Option(None, file_okay=False, resolve_path=True),
    ) -> None:
        pass

    (tmp_path / "f").write_text("x")
    given = [
        ["--must", ""],
        ["--must", str(tmp_path), "--file", ""],
        ["--must", str(tmp_path), "--folder", ""],
        ["--must", str(tmp_path / "missing")],
        ["--must", str(tmp_path / "f")],
        ["--must", str(tmp_path), "--file", str(tmp_path)],
        ["--must", str(tmp_path), "--file", str(tmp_path / "f")],
        ["--must", str(tmp_path), "--folder", str(tmp_path / "f")],
        ["--must", str(tmp_path), "--folder", str(tmp_path / "." / "x" / "..")],
    ]
    for argv in given:
        ours_app, theirs_app = typer.Typer(), typer.Typer()
        ours_app.command(cls=PlainValuesCommand)(demo)
        theirs_app.command()(demo)
        ours, theirs = typer.main.get_command(ours_app), typer.main.get_command(theirs_app)
        assert any(getattr(p, "_runtime_param", None) is not None for p in ours.params)
        assert _parse(ours, "demo", argv) == _parse(theirs, "demo", argv), argv


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
