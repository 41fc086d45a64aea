"""Markdown (CommonMark with GitHub's pipe tables) for ``--format markdown``: a CI job summary
or a pull-request comment.

:class:`MarkdownSink` stands where the rich console stands: the renderers of ``profui summary``,
``explain`` and ``diff`` print the same blocks to either, so the Markdown shows every row the
text shows. A table is a pipe table with every cell whole (Markdown wraps, nothing is elided),
under its title in bold, followed by its caption; a line of rich markup is its plain text, its
bold spans bold.

Every text is escaped so it renders as exactly itself: kernel names hold ``<``, ``>``, ``|``,
``*``, ``_``, backticks and brackets. No raw HTML is ever written.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

#: Characters that are markup wherever they stand (inline), or that GitHub reads so
#: (``~`` strikethrough, ``$`` math).
_INLINE = re.compile(r"([\\`*_\[\]<>|&~$])")
#: What opens a block at a line's start: a list item, a quote, a heading, a setext line.
_LINE_START = re.compile(r"^([+\-=>#]|\d{1,9}(?=[.)]))")
#: The width a renderer lays text out in: a line is never wrapped (Markdown wraps).
WIDE = 1_000_000


def escape(text: str) -> str:
    """``text`` as inline Markdown that renders as exactly ``text``, on one line (a newline or
    tab reads as a space: a table cell has no line break)."""
    one_line = re.sub(r"[\r\n\t\f\v]+", " ", str(text))
    return _INLINE.sub(r"\\\1", one_line)


def escape_line(text: str) -> str:
    """:func:`escape` for a paragraph of its own: what would open a block at the line's start
    (``- ``, ``1.``, ``>``, a setext ``===``) is escaped too, leading spaces (a code block) dropped."""
    return _line_start_safe(escape(text))


def table(headers: Sequence[str], rows: Sequence[Sequence[str]], right: Sequence[bool] | None = None) -> str:
    """A GFM pipe table of whole cells; ``right`` marks right-aligned (number) columns."""
    right = right or [False] * len(headers)
    for row in rows:
        if len(row) != len(headers):
            raise ValueError(f"a row of {len(row)} cells under {len(headers)} headers")
    lines = [
        "| " + " | ".join(escape(h) for h in headers) + " |",
        "|" + "|".join(" ---: " if r else " --- " for r in right) + "|",
    ]
    lines += ["| " + " | ".join(escape(c) for c in row) + " |" for row in rows]
    return "\n".join(lines)


def _plain(obj: Any) -> tuple[str, list[tuple[int, int]]]:
    """A printed object's text and its bold spans: rich markup (a str), or a rich Text."""
    from rich.text import Span, Text

    text = obj if isinstance(obj, Text) else Text.from_markup(str(obj))
    bold = []
    for span in [Span(0, len(text.plain), text.style), *text.spans]:
        style = str(span.style)
        if "bold" in style.split() and "not" not in style.split():
            bold.append((span.start, span.end))
    return text.plain, bold


def _text(obj: Any) -> Any:
    """A string as a rich Text of exactly its characters (markup off)."""
    from rich.text import Text

    return obj if isinstance(obj, Text) else Text(str(obj))


def _markup_plain(obj: Any) -> str:
    """The text rich shows for a renderable string (markup) or a Text."""
    from rich.text import Text

    return obj.plain if isinstance(obj, Text) else Text.from_markup(str(obj)).plain


def _with_bold(line: str, start: int, spans: Sequence[tuple[int, int]]) -> str:
    """One line (starting at ``start`` in the text) escaped, its bold spans as ``**...**``."""
    out, at = [], start
    end = start + len(line)
    for s, e in sorted(spans):
        s, e = max(s, at), min(e, end)
        inner = line[s - start : e - start]
        if e <= s or not inner.strip():
            continue
        # emphasis must not start or end on a space: keep spaces outside the asterisks
        lead = len(inner) - len(inner.lstrip())
        trail = len(inner) - len(inner.rstrip())
        out.append(escape(line[at - start : s - start] + inner[:lead]))
        out.append("**" + escape(inner.strip()) + "**")
        out.append(escape(inner[len(inner) - trail :] if trail else ""))
        at = e
    out.append(escape(line[at - start :]))
    return "".join(out)


class MarkdownSink:
    """A rich Console's place for the renderers: ``print`` takes what they print (rich markup
    strings, Text, :class:`~.fit_table.FittedTable`, a rich Table) and keeps it as Markdown
    blocks; :meth:`getvalue` is the document."""

    width = WIDE

    def __init__(self, markup: bool = True) -> None:
        #: as a Console's ``markup``: whether printed strings and tables' titles are rich markup
        self.markup_on = markup
        self.blocks: list[str] = []

    # -- what the renderers print ----------------------------------------------------------

    def print(self, *objects: Any) -> None:
        """Keep each object as Markdown (nothing: the blank line a console prints)."""
        from rich.table import Table

        from .fit_table import FittedTable

        for obj in objects:
            if isinstance(obj, FittedTable):
                self.fitted(obj)
            elif isinstance(obj, Table):
                self.rich_table(obj)
            else:
                self.markup(obj)

    def markup(self, obj: Any) -> None:
        """A line (or lines) of rich markup or a rich Text: each line a paragraph, bold kept."""
        text, bold = _plain(obj if self.markup_on else _text(obj))
        at = 0
        for line in text.split("\n"):
            if line.strip():
                self.blocks.append(_line_start_safe(_with_bold(line, at, bold)))
            at += len(line) + 1

    def fitted(self, t: Any) -> None:
        """A :class:`~.fit_table.FittedTable`: its title, every row and cell whole, its caption."""
        rows = list(zip(*(c.cells for c in t.cols), strict=True))  # cells are text, never markup
        # rich reads a table's title, headers and caption as markup ("\\[memory]"): so does this
        plain = self._plain
        headers = [plain(c.header) for c in t.cols]
        caption = plain(t.caption) if t.caption else None
        self.table(plain(t.title), headers, rows, [c.right for c in t.cols], caption)

    def rich_table(self, t: Any) -> None:
        """A rich Table (the summary's takeaways): its title, headers and cells as plain text."""
        plain = self._plain
        headers = [plain(c.header) for c in t.columns]
        cols = [[plain(c) for c in col._cells] for col in t.columns]
        right = [c.justify == "right" for c in t.columns]
        caption = plain(t.caption) if t.caption else None
        self.table(
            plain(t.title) if t.title else None, headers, list(zip(*cols, strict=True)), right, caption
        )

    def _plain(self, obj: Any) -> str:
        """The text rich shows for a string (markup, when on) or a Text."""
        return _text(obj).plain if not self.markup_on else _markup_plain(obj)

    # -- blocks ------------------------------------------------------------------------------

    def bold(self, text: str) -> None:
        """A paragraph in bold (a headline, a table's title)."""
        self.blocks.append(f"**{escape(text.strip())}**" if text.strip() else "")

    def heading(self, text: str, level: int = 3) -> None:
        """A heading."""
        self.blocks.append("#" * level + " " + escape(text).replace("#", "\\#"))  # "# x #" closes

    def paragraph(self, text: str, label: str | None = None) -> None:
        """A paragraph of plain text, after a bold ``label:`` when given."""
        if label:
            self.blocks.append(f"**{escape(label)}:** {escape(text)}")
        else:
            self.blocks.append(escape_line(text))

    def table(
        self,
        title: str | None,
        headers: Sequence[str],
        rows: Sequence[Sequence[str]],
        right: Sequence[bool] | None = None,
        caption: str | None = None,
    ) -> None:
        """A titled pipe table, its caption below it."""
        if title:
            self.bold(title)
        self.blocks.append(table(headers, rows, right))
        if caption:
            self.paragraph(caption)

    def getvalue(self) -> str:
        """The document: blocks apart by a blank line, and a blank line after the last, so that
        what is appended next (``>> report.md``) starts a block of its own: a line right under a
        table would be one more row of it."""
        return "\n\n".join(b for b in self.blocks if b) + "\n\n"


def _line_start_safe(md: str) -> str:
    """An escaped line (Markdown already) whose start cannot open a block."""
    s = md.lstrip(" ")
    m = _LINE_START.match(s)
    if not m:
        return s
    if m.group(1).isdigit():
        return s[: m.end()] + "\\" + s[m.end() :]
    return "\\" + s


# -- the --format option ----------------------------------------------------------------------

#: The output formats of ``summary``, ``explain`` and ``diff``.
FORMATS = ("text", "json", "markdown")


def format_option() -> Any:
    """``--format text|json|markdown`` (typer option; None when not given)."""
    import typer

    return typer.Option(
        None,
        "--format",
        metavar="text|json|markdown",
        help="Output: text (tables), json (as --json) or markdown (GitHub-flavoured, for a CI job "
        "summary or a pull-request comment).",
    )


def chosen_format(given: str | None, as_json: bool) -> str:
    """The format asked for by ``--format`` and ``--json`` (its shortcut); a bad name, or the two
    disagreeing, is a :class:`~.errors.UserError` (one line, exit 2)."""
    from .errors import UserError

    if given is not None and given not in FORMATS:
        raise UserError(f"--format {given!r}: one of {', '.join(FORMATS)}")
    if as_json and given not in (None, "json"):
        raise UserError(f"--json and --format {given} disagree: give one of them")
    return "json" if as_json else given or "text"
