"""How ``--help`` is laid out: click's plain help (Typer's ``rich_markup_mode=None``), with words
that hold a hyphen kept whole at a line's end.

Typer's rich panels import rich's console, markdown and traceback modules to draw a help, ~0.08 s
of every ``profui --help`` (issue #40: ``--help`` <= 0.15 s); click's plain formatter imports
nothing. Click wraps with :class:`textwrap.TextWrapper`, which also breaks a line after a hyphen
inside a word: ``--separate-jobs`` or ``dask-jobqueue`` split over two lines, one that a user
copies in halves. The formatter here hides such hyphens from the wrapper (a non-breaking hyphen
while it wraps, the ASCII one in what is printed).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

import typer
from typer.core import TyperCommand, TyperGroup

#: A hyphen between two word characters, where the wrapper may break a line.
_IN_WORD = re.compile(r"(?<=\w)-(?=\w)")
#: U+2011 NON-BREAKING HYPHEN: one column wide as '-', and not a point the wrapper breaks at.
_KEPT = "\u2011"


def _kept(text: str) -> str:
    return _IN_WORD.sub(_KEPT, text)


class HelpFormatter(typer.Context.formatter_class):  # type: ignore[valid-type,misc]
    """Click's help formatter, never breaking a line inside a hyphenated word."""

    def write_text(self, text: str) -> None:
        """A paragraph, wrapped to the width."""
        super().write_text(_kept(text))

    def write_dl(self, rows: Sequence[tuple[str, str]], *args: Any, **kwargs: Any) -> None:
        """Terms and their wrapped descriptions (the options, the commands)."""
        super().write_dl([(term, _kept(text)) for term, text in rows], *args, **kwargs)

    def getvalue(self) -> str:
        """The help as printed, its hyphens ASCII again."""
        return str(super().getvalue()).replace(_KEPT, "-")


class HelpContext(typer.Context):
    """A command's context, its help laid out by :class:`HelpFormatter`."""

    formatter_class = HelpFormatter


class HelpCommand(TyperCommand):
    """A profui command (its help by :class:`HelpFormatter`)."""

    context_class = HelpContext


class HelpGroup(TyperGroup):
    """The ``profui`` group (its help by :class:`HelpFormatter`)."""

    context_class = HelpContext
