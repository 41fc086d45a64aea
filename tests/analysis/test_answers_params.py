"""A surface's answers are those of the parameters it asks for: after ``profui analyze --set
hta_compat=true`` (the newest outputs HTA's) the default answers (``params={}``) are not HTA's;
asking for none (None) serves the newest, whatever they are, as before. On a real trace
(HTA's simple_add test trace, imported with the project's importer) and real recorded runs."""

from __future__ import annotations

from pathlib import Path

import pytest

from profui.analysis import open_trace
from profui.analysis.pipeline.answers import answers, cached
from profui.analysis.pipeline.engine import analyze
from profui.analysis.pipeline.store import compute
from profui.capture.ingest import import_trace

from realdata import shared_trace

SIMPLE_ADD = "hta-critical_path-simple_add-benchmark_result_493459_1694039959_trace.json.gz"
HTA = {"hta_compat": True}


@pytest.fixture(scope="module")
def trace(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("answers_params") / "t"
    import_trace([shared_trace(SIMPLE_ADD)], path)
    analyze(path, stages=["ingest", "correlate", "launch"])
    analyze(path, stages=["ingest", "correlate", "launch"], overrides={"hta_compat": "true"})  # the newest
    return path


def test_cached_serves_only_the_outputs_of_the_parameters_asked_for(trace: Path) -> None:
    default = compute(open_trace(trace), ["launch"])["launch"]["stats.parquet"]
    hta = compute(open_trace(trace), ["launch"], HTA)["launch"]["stats.parquet"]
    assert not default.equals(hta)  # HTA's launch matching counts other launches on this trace
    assert cached(trace, ["launch"], params={}) is None  # the newest are HTA's, not the defaults
    newest = cached(trace, ["launch"])
    assert newest is not None and newest.outputs["launch"]["stats.parquet"].equals(hta)
    got = cached(trace, ["launch"], params=HTA)
    assert got is not None and got.outputs["launch"]["stats.parquet"].equals(hta)


def test_answers_default_after_an_hta_run_are_the_defaults(trace: Path) -> None:
    default = compute(open_trace(trace), ["launch"])["launch"]["stats.parquet"]
    got = answers(trace, ["launch"], lambda: open_trace(trace), params={})  # a run reusing them
    assert got.outputs["launch"]["stats.parquet"].equals(default)
    got = cached(trace, ["launch"], params={})  # and now the newest
    assert got is not None and got.outputs["launch"]["stats.parquet"].equals(default)
