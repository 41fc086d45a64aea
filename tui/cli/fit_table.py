"""A table of formatted cells laid out for the terminal's width, cutting no number.

``profui summary`` prints tables of names and numbers. At 80 columns rich would shrink every
column and cut its cells at the end (``15.…``, ``213 M…``, two ``hta-trace_fil…`` rows). Here
numbers and their units are never cut: only text columns (names) give room, elided in the
middle by the one rule (:func:`profui.analysis.formatting.elide_all`), distinct rows kept
distinct. When the numbers alone do not fit beside the row keys, the table goes on in another
part under the same keys.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from rich.cells import cell_len
from rich.table import Table
from rich.text import Text

from profui.analysis.formatting import elide_all

#: A text column keeps at least this many cells (what :func:`elide_all` needs to tell rows apart).
MIN_TEXT = 14
#: A table's frame: a border left of each column and one at the end, a space either side of a cell.
_PER_COLUMN = 3


@dataclass
class Column:
    """One column: its header, its formatted cells, and how it may give room.

    ``text``: its cells may be elided (names); ``kernel``: they are kernel names (made bare
    before eliding); ``key``: it identifies the row and is repeated in every part of a split
    table; ``cap``: the widest a text column is drawn; ``right``: right-justified (numbers).
    """

    header: str
    cells: list[str]
    text: bool = False
    kernel: bool = False
    key: bool = False
    cap: int | None = None
    right: bool = False

    @property
    def natural(self) -> int:
        """The width that shows every cell whole (text columns: up to ``cap``)."""
        w = max([cell_len(self.header), *(cell_len(c) for c in self.cells)])
        return min(w, max(self.cap, cell_len(self.header))) if self.text and self.cap else w

    @property
    def least(self) -> int:
        """The narrowest this column is drawn."""
        if not self.text:
            return self.natural
        return min(self.natural, max(MIN_TEXT, cell_len(self.header)))

    def shown(self, width: int) -> list[str]:
        """The cells in ``width`` cells: text elided in the middle, distinct rows distinct."""
        if not self.text or all(cell_len(c) <= width for c in self.cells):
            return self.cells
        return elide_all(self.cells, width, bare=self.kernel)


def table_width(widths: Sequence[int]) -> int:
    """Cells a rich table with these column widths takes (its frame included)."""
    return sum(widths) + _PER_COLUMN * len(widths) + 1


def fit_widths(cols: Sequence[Column], room: int) -> list[int]:
    """Column widths within ``room``: numbers whole; text columns narrowed, widest first, down
    to their :attr:`Column.least` (the result may still exceed ``room``)."""
    widths = [c.natural for c in cols]
    over = table_width(widths) - room
    while over > 0:
        give = [(widths[i] - c.least, i) for i, c in enumerate(cols) if widths[i] > c.least]
        if not give:
            break
        _, i = max(give)
        # narrow the widest text column to the next one's width, never past what is needed
        others = [widths[j] for _, j in give if j != i]
        step = min(over, widths[i] - cols[i].least, max(1, widths[i] - max(others, default=0)))
        widths[i] -= step
        over -= step
    return widths


def split_parts(cols: Sequence[Column], room: int) -> list[list[int]]:
    """The columns (by index) of each part: one part when the table fits in ``room``, else the
    key columns in every part and the others, in order, in as many parts as they need."""
    keys = [i for i, c in enumerate(cols) if c.key]
    rest = [i for i, c in enumerate(cols) if not c.key]
    if table_width(fit_widths(cols, room)) <= room or not keys or not rest:
        return [list(range(len(cols)))]
    needs = {i: cols[i].natural + _PER_COLUMN for i in rest}

    def pack(capacity: int) -> list[list[int]]:
        parts: list[list[int]] = []
        used = 0
        for i in rest:
            if parts and used + needs[i] <= capacity:
                parts[-1].append(i)
                used += needs[i]
            else:
                parts.append([i])
                used = needs[i]
        return parts

    full = room - table_width([cols[i].least for i in keys])
    fewest = len(pack(full))
    # as few parts as the numbers need, and as even as they can be, so the keys keep room
    capacity = -(-sum(needs.values()) // fewest)
    while len(pack(capacity)) > fewest:
        capacity += 1
    return [sorted(keys + p) for p in pack(capacity)]


def fitted_tables(title: str, cols: Sequence[Column], room: int, caption: str | None = None) -> list[Table]:
    """``cols`` as rich tables that fit in ``room`` cells: usually one; when the numbers do not
    fit beside the keys, parts titled ``title (1/2)``, ``title (2/2)``, each with the keys."""
    parts = split_parts(cols, room)
    out = []
    for n, idx in enumerate(parts, 1):
        part = [cols[i] for i in idx]
        widths = fit_widths(part, room)
        name = title if len(parts) == 1 else f"{title} ({n}/{len(parts)})"
        t = Table(title=name, title_justify="left", title_style="bold", header_style="bold", expand=False)
        shown = []
        for c, w in zip(part, widths, strict=True):
            t.add_column(c.header, justify="right" if c.right else "left", width=w, no_wrap=True)
            shown.append(c.shown(w))
        for row in zip(*shown, strict=True):
            t.add_row(*map(Text, row))  # cells are text, never markup ("[memory]")
        if caption and n == len(parts):
            t.caption = caption
        out.append(t)
    return out


@dataclass
class FittedTable:
    """A renderable: :func:`fitted_tables` laid out for the width it is printed in."""

    title: str
    cols: Sequence[Column]
    caption: str | None = None

    def __rich_console__(self, console, options):  # noqa: ANN001, ANN204 - rich's protocol
        yield from fitted_tables(self.title, self.cols, options.max_width, self.caption)
