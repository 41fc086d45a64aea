"""The name of a host stretch on the critical path: the innermost host event covering it.

Oracle: the trace's own events files read with pyarrow in plain Python; of the naming events
of the stretch's thread that cover it, the latest-starting, then the shortest, then the last
in the file (a profiler lists an op before the ops it calls, which may share its start and end:
``aten::to`` and its ``aten::_to_copy`` in HTA's sampled two-rank trace). A sort that did not
keep event order named such a stretch by whichever of the two came out last, and a run by ranks
named it differently from a whole-trace run.
"""

from __future__ import annotations

from pathlib import Path

import pyarrow.parquet as pq
import pytest
from ranksjob import import_two_ranks

from profui.analysis.run import run

NAMING = {"cpu_op", "python", "annotation", "runtime", "driver"}


@pytest.fixture(scope="module")
def two_ranks(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return import_two_ranks(tmp_path_factory.mktemp("names") / "t2")


def _naming_events(folder: Path) -> dict[tuple[int, int], list[dict]]:
    out: dict[tuple[int, int], list[dict]] = {}
    for f in sorted(folder.glob("node=*/rank=*/events-*.parquet")):
        rank = int(f.parent.name.removeprefix("rank="))
        for e in pq.read_table(f, columns=["kind", "name", "ts", "dur", "tid", "device"]).to_pylist():
            if e["kind"] in NAMING and (e["device"] is None or e["device"] < 0):
                out.setdefault((rank, e["tid"]), []).append(e)
    return out


def test_every_host_compute_stretch_is_named_by_its_innermost_event(two_ranks: Path) -> None:
    events = _naming_events(two_ranks)
    path = run(two_ranks, ["critical_path"]).outputs["critical_path"]["events.parquet"]
    stretches = path.filter(path["kind"] == "host_compute").to_dicts()
    assert len(stretches) > 500
    ties = 0
    for s in stretches:
        covering = [
            (e["ts"], -(e["ts"] + e["dur"]), i, e["name"])
            for i, e in enumerate(events[(s["rank"], s["tid"])])
            if e["ts"] <= s["start_ns"] and e["ts"] + e["dur"] >= s["end_ns"]
        ]
        best = max(covering)
        ties += sum(c[:2] == best[:2] for c in covering) > 1
        assert s["name"] == best[3], s
    assert ties > 0  # the case this holds: ops alike in start and end


def test_a_run_by_ranks_names_them_alike(two_ranks: Path) -> None:
    whole = run(two_ranks, ["critical_path"]).outputs["critical_path"]["events.parquet"]
    by_ranks = run(two_ranks, ["critical_path"], where="ranks", workers=2)
    assert by_ranks.outputs["critical_path"]["events.parquet"].equals(whole)
