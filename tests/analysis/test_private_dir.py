"""One cache store: everything derived from a trace lives in its private folder — inside the trace
when it can be written, in the user's cache when it cannot (a shared, read-only trace)."""

from __future__ import annotations

import profui.capture.format.layout as layout
from profui.analysis.pipeline import analyze, list_runs
from profui.analysis.pipeline.answers import answers
from profui.capture.format import open_trace_dir
from profui.capture.ingest import import_trace

from realdata import shared_trace


def test_a_read_only_trace_is_analysed_into_the_user_cache(tmp_path, monkeypatch):
    out = tmp_path / "t"
    import_trace([shared_trace("hta-trace_compare-base-base.json.gz")], out)
    monkeypatch.setenv("PROFUI_CACHE", str(tmp_path / "cache"))
    # tests run as root, who may write anywhere: the permission check is what is faked
    monkeypatch.setattr(layout.os, "access", lambda path, mode: False)
    private = open_trace_dir(out).private_dir
    assert private.parent == tmp_path / "cache" / "traces"

    rec = analyze(out, stages=["ingest", "kernels"])
    assert rec.status == "succeeded" and [r.id for r in list_runs(out)] == [rec.id]
    assert (private / "runs" / f"{rec.id}.json").is_file()
    assert not (out / ".profui").exists()

    # the dashboard's path records its run there too, and the next open reads it back
    cold = answers(out, ("kernels", "steps"), trace=lambda: None)
    assert cold.source.startswith("computed (run-")
    warm = answers(out, ("kernels", "steps"), trace=lambda: None)
    assert warm.source == "cache"
    assert warm.outputs["kernels"]["stats.parquet"].equals(cold.outputs["kernels"]["stats.parquet"])
    assert not (out / ".profui").exists()


def test_a_writable_trace_keeps_its_outputs_inside(tmp_path, monkeypatch):
    out = tmp_path / "t"
    import_trace([shared_trace("hta-trace_compare-base-base.json.gz")], out)
    monkeypatch.setenv("PROFUI_CACHE", str(tmp_path / "cache"))
    assert open_trace_dir(out).private_dir == out / ".profui"
    analyze(out, stages=["ingest"])
    assert (out / ".profui" / "runs").is_dir() and not (tmp_path / "cache" / "traces").exists()
