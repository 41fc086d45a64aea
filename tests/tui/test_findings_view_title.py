"""The Findings view's title cell leaves out the two numbers its columns show: a time
finding's title ends ``: X per step (Y% of step time) recoverable``, and at 80 columns the
elided cell showed ``…ep time) recoverable`` instead of the finding's words. Hand-checked."""

from __future__ import annotations

import polars as pl

from profui.analysis.findings import recoverable_title
from profui.tui.views.findings import shown


def test_the_title_cell_is_the_lead_without_the_numbers() -> None:
    lead = "Rank 1 arrives last at the collectives in 6 of 6 steps, host"
    titles = [
        recoverable_title(
            lead, 39_500_000, 0.844
        ),  # '...host: 39.5 ms per step (84% of step time) recoverable'
        "Memory peak within 5% of the GPU's capacity: 78.1 GB of 80 GB",  # a risk: kept whole
    ]
    assert titles[0].endswith(": 39.5 ms per step (84% of step time) recoverable")
    frame = pl.DataFrame(
        {
            "position": [1, 2],
            "category": ["straggler", "memory"],
            "recoverable_ns_per_step": [39_500_000, 0],
            "recoverable_share": [0.844, 0.0],
            "title": titles,
        }
    )
    assert shown(frame)["finding"].to_list() == [lead, titles[1]]
    # a risk's recoverable time is no replay's: shown as none ("-"), not as a measured 0 ns, 0%
    assert shown(frame)["per_step_ns"].to_list() == [39_500_000, None]
    assert shown(frame)["share"].to_list() == [0.844, None]
    # without step markers the numbers are per trace: left out alike
    whole = frame.with_columns(
        pl.Series("title", [recoverable_title(lead, 39_500_000, 0.844, "trace"), titles[1]])
    )
    assert whole["title"][0].endswith(": 39.5 ms per trace (84% of trace time) recoverable")
    assert shown(whole)["finding"].to_list() == [lead, titles[1]]
