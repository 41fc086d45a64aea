"""A selective re-run whose parameter changes a stage it would reuse computes that stage again
(issue 35, item 6): ``profui analyze --stages summary --set bucket_ms=2`` after a full run gave a
summary labelled 2 ms over the reference's 5 ms utilization tables. Recomputing, not refusing:
the user asked for the selection with that parameter, and what the parameter touches is known
from the registry (each stage declares the parameters it reads), as a build tool rebuilds what
a changed input touches.

On a real trace (HTA's nccl_parser_config rank 0, imported); the oracle is the bucket length
asked for, by hand: 2 ms is 2,000,000 ns.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from profui.analysis.pipeline import REGISTRY, analyze
from profui.analysis.pipeline.outputs import load_output

TRACE_NAME = "nccl_parser_config-nccl_data"


@pytest.fixture
def trace(imported_trace, tmp_path: Path) -> Path:
    src = imported_trace(TRACE_NAME).path
    dst = tmp_path / "t"
    shutil.copytree(src, dst, ignore=shutil.ignore_patterns(".profui"))
    return dst


def _provenance(rec, what: str) -> set[str]:
    return {n for n, s in rec.stages.items() if s.status == "succeeded" and s.provenance == what}


def test_changed_bucket_recomputes_what_reads_it(trace: Path) -> None:
    full = analyze(trace)
    assert load_output(trace, "summary", "summary.json").params["bucket_ns"] is None  # auto buckets
    sel = analyze(trace, stages=["summary"], overrides={"bucket_ms": "2"})
    assert sel.status == "succeeded" and sel.reference == full.id
    readers = {n for n, st in REGISTRY.stages.items() if "bucket_ms" in st.params}
    assert "utilization" in readers
    assert _provenance(sel, "computed") == readers | {"summary"}
    summary = load_output(trace, "summary", "summary.json")
    assert summary.params["bucket_ns"] == 2_000_000
    gpu = summary.table("utilization", "gpu")
    assert gpu.height and gpu["bucket_len_ns"].max() == 2_000_000
    # the stages that read no changed parameter are still the reference's
    assert _provenance(sel, "reused") == {n for n, s in full.stages.items() if s.status == "succeeded"} - (
        readers | {"summary"}
    )
    again = analyze(trace, stages=["summary"], overrides={"bucket_ms": "2"})  # nothing changed now
    assert _provenance(again, "computed") == set()
