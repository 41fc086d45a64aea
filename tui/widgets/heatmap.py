"""A steps × ranks heatmap in text: one row per rank (or per band of ranks when there are more
ranks than rows), one column per step (or band of steps), each cell a shade of how much longer
the rank took than the step's median rank. Shades, not colours, so it reads without colour."""

from __future__ import annotations

import math

import polars as pl
from rich.text import Text

#: (upper bound of vs_step_median, glyph): the shades, lightest first.
SHADES: tuple[tuple[float, str], ...] = ((1.05, "·"), (1.15, "░"), (1.3, "▒"), (1.6, "▓"), (math.inf, "█"))


def shade(ratio: float | None) -> str:
    """The glyph of a rank's step time over the step's median (blank when unknown)."""
    if ratio is None or (isinstance(ratio, float) and math.isnan(ratio)):
        return " "
    return next(g for bound, g in SHADES if ratio <= bound)


def _bands(n: int, room: int) -> list[tuple[int, int]]:
    """``[a, b)`` index bands splitting ``n`` items into at most ``room`` contiguous groups."""
    per = max(1, math.ceil(n / max(room, 1)))
    return [(a, min(a + per, n)) for a in range(0, n, per)]


def rank_heatmap(ratios: pl.DataFrame, width: int, max_rows: int) -> Text:
    """The heatmap of the steps stage's ``rank_ratios`` table in ``width`` columns and at most
    ``max_rows`` rank rows (ranks banded, each band showing its slowest rank's shade)."""
    text = Text(no_wrap=True, overflow="ellipsis")
    if ratios.height == 0:
        return text
    ranks = ratios.select("node", "rank").unique().sort("node", "rank").rows()
    steps = sorted(ratios["step"].unique().to_list())
    # node names only where rank numbers repeat across nodes (global ranks say enough)
    multi_node = len({r for _, r in ranks}) < len(ranks)
    if not multi_node:
        ranks.sort(key=lambda nr: nr[1])
    label_w = 10 if multi_node else 8
    cols = _bands(len(steps), width - label_w - 1)
    rows = _bands(len(ranks), max_rows)
    cell = {
        (n, r, s): v for n, r, s, v in ratios.select("node", "rank", "step", "vs_step_median").iter_rows()
    }
    first, last = steps[cols[0][0]], steps[cols[-1][1] - 1]
    per = cols[0][1] - cols[0][0]
    head = f"steps {first}–{last}" + (f", {per} per column" if per > 1 else "")
    text.append(f"{'':<{label_w}} {head}\n", style="dim")
    for a, b in rows:
        group = ranks[a:b]
        if len(group) == 1:
            label = f"{group[0][0][:4]} r{group[0][1]}" if multi_node else f"rank {group[0][1]}"
        else:
            label = f"r{group[0][1]}–{group[-1][1]}"
        line = []
        for ca, cb in cols:
            cells = [cell.get((n, r, s)) for n, r in group for s in steps[ca:cb]]
            vals = [v for v in cells if v is not None and not math.isnan(v)]
            line.append(shade(max(vals)) if vals else " ")
        text.append(f"{label[:label_w]:<{label_w}} ", style="bold")
        text.append("".join(line) + "\n")
    top = max(b for b, _ in SHADES if math.isfinite(b))
    legend = "  ".join(f"{g} ≤{b:g}×" if math.isfinite(b) else f"{g} >{top:g}×" for b, g in SHADES)
    # a cell: the rank's step time over the step's median over the ranks (vs_step_median)
    text.append(f"{'':<{label_w}} {legend} the step's median over ranks", style="dim")
    return text
