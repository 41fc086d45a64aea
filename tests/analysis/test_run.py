"""``run(trace, stages, params, where=...)``: one entry point, three places to compute, one result.

On a real two-rank trace (HTA's sampled ranks 0 and 1) and on the MLP sample, the stage graph run
in memory, as a recorded ``profui analyze`` run, and rank by rank on a real local Dask cluster
gives equal tables, table for table (a run by ranks: every table it gives; those it leaves out
need every rank's events in one process). The numbers themselves are held to the events files
read with pyarrow in plain Python (kernels counted and summed per name), so three equal answers
are also right ones.
"""

from __future__ import annotations

import shutil
from collections import defaultdict
from pathlib import Path
from typing import Any

import polars as pl
import pyarrow.parquet as pq
import pytest
from ranks_compare import ULP, ulps
from ranksjob import import_two_ranks

from profui.analysis.distributed import ranks_stages
from profui.analysis.pipeline.errors import PipelineError
from profui.analysis.run import run
from profui.analysis.summary_document import Summary

from realdata import REPO

#: The sample's ranks: the MLP sample is one rank of one node.
SAMPLE = REPO / "samples" / "mlp_cpu"


def _copy(src: Path, dst: Path) -> Path:
    """A copy of ``src`` without analysis outputs (a recorded run writes into the folder)."""
    shutil.copytree(src, dst, ignore=shutil.ignore_patterns(".profui"))
    return dst


@pytest.fixture(scope="module")
def two_ranks(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return import_two_ranks(tmp_path_factory.mktemp("run") / "t2")


def assert_same_value(got: Any, want: Any, where: str) -> None:
    """Frames equal row for row (the :data:`ULP` columns within 1 ulp), summaries by their JSON
    document, other JSON outputs as values."""
    if isinstance(want, pl.DataFrame):
        assert isinstance(got, pl.DataFrame), where
        assert got.schema == want.schema, where
        stage, _, name = where.partition("/")
        loose = ULP.get((stage, name.removesuffix(".parquet")), set())
        exact = [c for c in want.columns if c not in loose]
        assert got.select(exact).equals(want.select(exact)), f"{where} differs"
        for c in loose:
            worst = max((ulps(a, b) for a, b in zip(got[c], want[c], strict=True)), default=0)
            assert worst <= 1, f"{where}.{c}: {worst} ulps"
    elif isinstance(want, Summary):
        assert isinstance(got, Summary), where
        assert got.to_json_dict() == want.to_json_dict(), where
    else:
        assert got == want, where


def assert_equal_outputs(
    got: dict[str, dict[str, Any]], want: dict[str, dict[str, Any]], stages: list[str] | None = None
) -> int:
    """Every output of ``got`` (of ``stages``: None, all) equal to ``want``'s of the same stage
    and file; the count."""
    n = 0
    for stage, files in got.items():
        if stages is not None and stage not in stages:
            continue
        for file, value in files.items():
            assert file in want.get(stage, {}), f"{stage}/{file} is not a whole-trace output"
            assert_same_value(value, want[stage][file], f"{stage}/{file}")
            n += 1
    return n


def kernels_by_name(folder: Path) -> dict[str, tuple[int, int]]:
    """``{kernel name: (count, total ns)}`` over every events file of the trace folder, read
    with pyarrow in plain Python: the oracle of the kernels stage."""
    out: dict[str, list[int]] = defaultdict(lambda: [0, 0])
    for f in sorted(folder.glob("node=*/rank=*/events-*.parquet")):
        rows = pq.read_table(f, columns=["kind", "name", "dur"]).to_pylist()
        for row in rows:
            if row["kind"] == "kernel":
                out[row["name"]][0] += 1
                out[row["name"]][1] += row["dur"]
    return {name: (c, d) for name, (c, d) in out.items()}


def assert_kernels_right(result: dict[str, dict[str, Any]], folder: Path) -> None:
    stats = result["kernels"]["stats.parquet"]
    got = {
        r["name"]: (r["count"], r["total_ns"]) for r in stats.select("name", "count", "total_ns").to_dicts()
    }
    assert got == kernels_by_name(folder)


@pytest.mark.parametrize("which", ["two_ranks", "sample"])
def test_memory_and_records_give_equal_tables(which: str, two_ranks: Path, tmp_path: Path) -> None:
    src = two_ranks if which == "two_ranks" else SAMPLE
    folder = _copy(src, tmp_path / "t")
    memory = run(folder, ["summary"])
    recorded = run(folder, ["summary"], where="records")
    assert memory.source == "computed in memory"
    assert recorded.source.startswith("computed (run-")
    # the recorded run ran (or reused) every stage the summary reads, as the memory one did
    assert set(recorded.outputs) == set(memory.outputs)
    assert assert_equal_outputs(recorded.outputs, memory.outputs) >= 70
    if which == "two_ranks":  # the sample has no kernels: its device work is the CPU's
        assert_kernels_right(memory.outputs, folder)
    # a second recorded run takes every stage from the first: the same tables again
    again = run(folder, ["summary"], where="records")
    assert again.source != recorded.source
    assert_equal_outputs(again.outputs, memory.outputs)


def test_ranks_give_the_whole_trace_tables(two_ranks: Path) -> None:
    memory = run(two_ranks, ["summary"])
    done: list[tuple[int, int]] = []
    by_ranks = run(
        two_ranks, ["summary"], where="ranks", workers=2, on_rank=lambda k, n, _: done.append((k, n))
    )
    assert by_ranks.source == "by ranks"
    assert sorted(done) == [(1, 2), (2, 2)]
    summary = by_ranks.outputs.pop("summary")
    assert assert_equal_outputs(by_ranks.outputs, memory.outputs, ranks_stages()) >= 60
    assert_kernels_right(by_ranks.outputs, two_ranks)
    # the summary: every section the whole trace's has but what the note says a run by ranks
    # leaves out, each table equal; the same takeaways where both have them
    whole = memory.outputs["summary"]["summary.json"]
    doc = summary["summary.json"]
    left_out = [n for n in doc.notes if n.startswith("a run over ranks leaves out ")]
    missing = [
        (s, n) for s, tables in whole.sections.items() for n in tables if n not in doc.sections.get(s, {})
    ]
    assert len(left_out) == (1 if missing else 0)
    for stage, tables in doc.sections.items():
        for name, frame in tables.items():
            assert_same_value(frame, whole.sections[stage][name], f"{stage}/{name}")
    assert doc.trace == whole.trace
    assert summary["takeaways.json"] == doc.takeaways
    for chart, text in doc.takeaways.items():
        assert text == whole.takeaways[chart], chart


def test_the_sample_by_ranks_is_its_one_rank(tmp_path: Path) -> None:
    folder = _copy(SAMPLE, tmp_path / "t")
    memory = run(folder, ["steps", "kernels", "utilization"])
    by_ranks = run(folder, ["steps", "kernels", "utilization"], where="ranks", workers=1)
    assert set(by_ranks.outputs) == set(memory.outputs) - {"ingest", "correlate"}
    assert assert_equal_outputs(by_ranks.outputs, memory.outputs) >= 15


def test_parameters_reach_every_place(tmp_path: Path) -> None:
    folder = _copy(SAMPLE, tmp_path / "t")
    params = {"top_n": 3, "bucket_ms": 2.5}
    memory = run(folder, ["summary"], params)
    recorded = run(folder, ["summary"], params, where="records")
    by_ranks = run(folder, ["summary"], params, where="ranks", workers=1)
    for result in (memory, recorded, by_ranks):
        doc = result.outputs["summary"]["summary.json"]
        assert doc.params == {"top_n": 3, "bucket_ns": 2_500_000, "hta_compat": False}
        assert doc.table("kernels", "ops").height == 3  # of the 15 a default run keeps
    assert assert_equal_outputs(recorded.outputs, memory.outputs) >= 70


def test_a_place_that_is_none_of_the_three_is_refused(two_ranks: Path) -> None:
    with pytest.raises(ValueError, match=r"where='disk': a run is computed in one of memory, records, ranks"):
        run(two_ranks, ["kernels"], where="disk")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="a run by ranks'"):
        run(two_ranks, ["kernels"], workers=2)


def test_a_stage_ranks_do_not_give_is_refused_before_any_rank_runs(two_ranks: Path) -> None:
    # correlate's launch table is each rank's own input, never sent back
    with pytest.raises(PipelineError, match="stage correlate: not computed by ranks"):
        run(two_ranks, ["correlate"], where="ranks", scheduler="tcp://127.0.0.1:1")


def test_ranks_give_the_critical_path_and_findings_asked_for_by_name(two_ranks: Path) -> None:
    memory = run(two_ranks, ["findings"])
    by_ranks = run(two_ranks, ["findings"], where="ranks", workers=2)
    assert {"critical_path", "findings"} <= set(ranks_stages())
    assert assert_equal_outputs(by_ranks.outputs, memory.outputs, ["critical_path", "findings"]) >= 6
