"""The timeline's status line for a step's critical path fits 80 columns: it names the path's
largest kinds of time that are each at least 5% of it (the late_rank run's step 6 on rank 1 read
``… · critical path of step 6, rank 1: 46 ms · host 41.4 ms · comm 3.6 ms · op`` at 80x24, its
window width cut to ``…`` and its last kind cut), and a window width that does not fit whole is
left out, not cut. Hand-checked numbers."""

from __future__ import annotations

import numpy as np

from profui.tui.timeline.critical import StepPath

NONE = np.zeros(0, dtype=np.int64)


def path(by_kind: list[tuple[str, int]], length: int) -> StepPath:
    return StepPath(
        step=6, row=NONE, t0=NONE, t1=NONE, kind=NONE, kinds=[], rank=NONE,
        length={1: length}, by_kind={1: by_kind}, ranks=[0, 1, 2],
    )  # fmt: skip


def test_the_summary_names_kinds_of_at_least_five_percent() -> None:
    # 46 ms: host 41.4 (90%), comm 3.6 (7.8%), op 0.493 (1.1%: under 5%, left out)
    p = path(
        [("host_overhead", 41_400_000), ("communication", 3_600_000), ("host_compute", 493_000)], 46_000_000
    )
    line = p.summary(1, "kernel")
    assert line == "critical path of step 6, rank 1: 46 ms · host 41.4 ms · comm 3.6 ms"
    assert len(line) <= 78
    # 2.3 ms of 46 ms is exactly 5%: named
    p = path([("host_overhead", 41_400_000), ("host_compute", 2_300_000)], 46_000_000)
    assert p.summary(1, "kernel").endswith("· op 2.3 ms")


def test_a_window_width_that_does_not_fit_is_left_out() -> None:
    from types import SimpleNamespace

    from profui.tui.timeline.details import status_text

    message = "critical path of step 6, rank 1: 46 ms · host 41.4 ms · comm 3.6 ms"  # 69 cells
    ix = SimpleNamespace(steps=lambda: [])
    state = SimpleNamespace(span=46_900_000, ix=ix, pattern="", matches=NONE, message=message)
    assert status_text(state, 78).plain == message  # "Δ 46.9 ms · " would make it 81
    assert status_text(state, 200).plain.startswith("Δ 46.9 ms · " + message)
