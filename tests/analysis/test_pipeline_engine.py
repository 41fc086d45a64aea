"""The analysis pipeline on a real trace (HTA's nccl_parser_config rank 0, imported with profui's
importer): cache hits, parameter changes, selective runs, refusals, failure and resume.

Every test works on its own copy of the imported trace, since runs write into ``TRACE/.profui``.
Failures are produced with the test knob ``debug_fail`` of :mod:`pipeline_knobs` (a parameter of a
test-only registry that never enters a cache key), or by removing an artifact the way a user's
``rm`` would; the engine is never mocked.
"""

from __future__ import annotations

import io
import json
import os
import shutil
from pathlib import Path

import polars as pl
import pytest
from polars.testing import assert_frame_equal

from profui.analysis.pipeline import REGISTRY, PipelineError, analyze, latest_outputs, list_runs, load_output
from profui.analysis.pipeline.artifacts import verify

from pipeline_knobs import KNOBBED

TRACE_NAME = "nccl_parser_config-nccl_data"


@pytest.fixture()
def trace(imported_trace, tmp_path: Path) -> Path:
    """A private copy of the imported real trace (without any analysis folder)."""
    src = imported_trace(TRACE_NAME).path
    dst = tmp_path / "trace"
    shutil.copytree(src, dst, ignore=shutil.ignore_patterns(".profui"))
    return dst


def available() -> list[str]:
    return REGISTRY.default_order  # a run without --stages: the on-demand timeline left out


def succeeded(rec) -> dict[str, object]:
    return {n: s for n, s in rec.stages.items() if s.status == "succeeded"}


def by_provenance(rec, provenance: str) -> set[str]:
    return {n for n, s in rec.stages.items() if s.status == "succeeded" and s.provenance == provenance}


def artifact_bytes(trace: Path, rec) -> dict[str, dict[str, bytes]]:
    out = {}
    for name, st in succeeded(rec).items():
        folder = trace / ".profui" / st.artifact
        out[name] = {p.name: p.read_bytes() for p in sorted(folder.iterdir()) if p.name != "meta.json"}
    return out


def test_first_run_computes_every_available_stage_with_real_numbers(trace: Path) -> None:
    rec = analyze(trace)
    assert rec.status == "succeeded"
    assert by_provenance(rec, "computed") == set(available())
    inventory = load_output(trace, "ingest", "inventory.parquet")
    # The importer's own count of events is the ground truth for the inventory.
    from profui.capture.format import open_trace_dir

    assert inventory["events"].sum() == open_trace_dir(trace).num_events
    kernels = inventory.filter(pl.col("kind") == "kernel")["events"].sum()
    launches = load_output(trace, "correlate", "launches.parquet")
    # Every launched kernel appears once at most; the trace's README counts 2,700 kernels.
    assert kernels == 2700
    assert 0 < launches.filter(pl.col("kind") == "kernel").height <= kernels
    assert launches.select(pl.struct("node", "rank", "correlation", "ts").is_unique().all()).item()


def test_unchanged_rerun_is_all_cache_with_identical_outputs(trace: Path) -> None:
    first = analyze(trace)
    second = analyze(trace)
    assert second.status == "succeeded"
    assert by_provenance(second, "computed") == set()
    assert by_provenance(second, "cache") == set(available())
    for name in available():
        a, b = first.stages[name], second.stages[name]
        assert (a.artifact, a.output_hash) == (b.artifact, b.output_hash)
        assert b.origin_run == first.id
    assert artifact_bytes(trace, first) == artifact_bytes(trace, second)


def test_parameter_change_recomputes_exactly_the_stages_downstream(trace: Path) -> None:
    first = analyze(trace)
    second = analyze(trace, overrides={"slow_launch_us": "5"})
    users = REGISTRY.users_of("slow_launch_us")
    expected = (users | REGISTRY.descendants(users)) & set(available())
    assert expected == {"launch", "summary"}
    assert by_provenance(second, "computed") == expected
    assert by_provenance(second, "cache") == set(available()) - expected
    # The threshold really changed the answer: more launch calls count as slow at 5 µs than at 50.
    s1 = load_file(trace, first, "launch", "outliers.parquet")
    s2 = load_file(trace, second, "launch", "outliers.parquet")
    assert s2.height > s1.height
    assert second.stages["launch"].params["slow_launch_us"] == 5.0


def load_file(trace: Path, rec, stage: str, file: str) -> pl.DataFrame:
    return pl.read_parquet(trace / ".profui" / rec.stages[stage].artifact / file)


def test_top_n_change_recomputes_kernels_and_summary_only(trace: Path) -> None:
    analyze(trace)
    rec = analyze(trace, overrides={"top_n": "3"})
    users = REGISTRY.users_of("top_n")
    assert by_provenance(rec, "computed") == (users | REGISTRY.descendants(users)) & set(available())
    top = load_file(trace, rec, "kernels", "top_by_time.parquet")
    # Three named kernels plus the "(other)" row folding the rest, summing to all kernel time.
    assert top.height == 4 and top["name"][-1] == "(other)"
    stats = load_file(trace, rec, "kernels", "stats.parquet")
    assert top["total_ns"].sum() == stats["total_ns"].sum()
    assert top["name"][:3].to_list() == stats.sort("total_ns", descending=True)["name"][:3].to_list()
    summary = load_output(trace, "summary", "summary.json")
    assert summary.table("kernels", "top_by_time")["name"].to_list() == top["name"].to_list()
    assert summary.top_n == 3


def test_selective_run_reuses_upstream_outputs_and_records_their_run(trace: Path) -> None:
    full = analyze(trace)
    sel = analyze(trace, stages=["launch", "summary"], overrides={"late_start_us": "1"})
    assert sel.status == "succeeded"
    assert sel.selection == ["launch", "summary"]
    assert sel.reference == full.id
    assert by_provenance(sel, "computed") == {"launch", "summary"}
    upstream = (REGISTRY.ancestors({"launch", "summary"}) - {"launch"}) & set(available())
    # Upstream stages keep the reference's outputs.
    assert by_provenance(sel, "reused") == set(available()) - {"launch", "summary"}
    assert "ingest" in upstream and "correlate" in upstream
    for name in set(available()) - {"launch", "summary"}:
        st, ref = sel.stages[name], full.stages[name]
        assert st.source_run == full.id and st.origin_run == full.id
        assert (st.artifact, st.output_hash) == (ref.artifact, ref.output_hash)  # the same files
        assert st.start == st.end  # not run
    # The selected stage saw the new parameter.
    assert (
        load_file(trace, sel, "launch", "outliers.parquet").height
        > load_file(trace, full, "launch", "outliers.parquet").height
    )


def test_selective_run_leaves_downstream_unrun_and_tui_keeps_older_output(trace: Path) -> None:
    full = analyze(trace)
    sel = analyze(trace, stages=["launch"], overrides={"slow_launch_us": "5"})
    assert sel.stages["summary"].status == "skipped"  # downstream of the selection: not run
    assert "not selected" in sel.stages["summary"].error
    latest = latest_outputs(trace)
    assert latest["launch"] == trace / ".profui" / sel.stages["launch"].artifact
    assert latest["summary"] == trace / ".profui" / full.stages["summary"].artifact
    assert set(latest) == set(available())


def test_selection_must_be_closed_under_paths(trace: Path) -> None:
    analyze(trace)
    with pytest.raises(PipelineError, match=r"not closed under paths: also select launch\b"):
        analyze(trace, stages=["correlate", "summary"])
    assert len(list_runs(trace)) == 1  # a refused request records no run


def test_unknown_parameter_and_stage_are_refused_with_the_valid_names(trace: Path) -> None:
    with pytest.raises(PipelineError) as exc:
        analyze(trace, overrides={"topn": "3"})
    msg = str(exc.value)
    assert "unknown parameter topn" in msg and all(p in msg for p in REGISTRY.params)
    with pytest.raises(PipelineError, match="takes a int"):
        analyze(trace, overrides={"top_n": "many"})
    with pytest.raises(PipelineError, match="unknown stage kernel;"):
        analyze(trace, stages=["kernel"])
    assert list_runs(trace) == []


def test_selective_run_needs_an_earlier_run(trace: Path) -> None:
    with pytest.raises(PipelineError, match="no earlier run"):
        analyze(trace, stages=["launch"])


def test_reference_missing_a_needed_output_is_refused_naming_the_stage(trace: Path) -> None:
    failed = analyze(trace, overrides={"debug_fail": "correlate"}, registry=KNOBBED)
    assert failed.status == "failed"
    with pytest.raises(
        PipelineError,
        match=r"reference run run-0001 lacks the output of stage correlate \(it failed in that run\)",
    ):
        analyze(trace, stages=["launch"], reference=failed.id)
    # A reference whose artifact was deleted from disk is refused the same way.
    ok = analyze(trace)
    shutil.rmtree(trace / ".profui" / ok.stages["correlate"].artifact)
    with pytest.raises(
        PipelineError, match="lacks the output of stage correlate .its output files are missing or damaged"
    ):
        analyze(trace, stages=["launch"], reference=ok.id)


def test_failed_stage_fails_the_run_and_a_selective_run_resumes_it(trace: Path) -> None:
    failed = analyze(trace, overrides={"debug_fail": "correlate"}, registry=KNOBBED)
    assert failed.status == "failed"
    st = failed.stages["correlate"]
    assert st.status == "failed" and "made to fail by debug_fail" in st.error and st.attempt == 1
    assert "stage correlate failed" in failed.error
    assert not (trace / ".profui" / "artifacts" / "correlate").exists()  # no output, not even half
    order = REGISTRY.order
    after = [n for n in available() if order.index(n) > order.index("correlate")]
    assert all(failed.stages[n].status == "skipped" for n in after)
    before = [n for n in available() if order.index(n) < order.index("correlate")]
    assert all(failed.stages[n].status == "succeeded" for n in before)

    resumed = analyze(trace, resume=failed.id, overrides={"debug_fail": ""}, registry=KNOBBED)
    assert resumed.status == "succeeded"
    assert resumed.resume_of == failed.id and resumed.reference == failed.id
    assert resumed.selection == ["correlate", *after]
    assert by_provenance(resumed, "reused") == set(before)
    assert all(resumed.stages[n].source_run == failed.id for n in before)
    assert resumed.stages["correlate"].provenance == "computed"
    assert resumed.stages["correlate"].attempt == 2
    # Resuming gives the same outputs as a clean full run (floats to 1e-9: parallel sums).
    clean = analyze(trace, use_cache=False)
    for name in available():
        a = trace / ".profui" / clean.stages[name].artifact
        b = trace / ".profui" / resumed.stages[name].artifact
        for f in REGISTRY.stages[name].outputs:
            if f.endswith(".parquet"):
                assert_frame_equal(
                    pl.read_parquet(a / f), pl.read_parquet(b / f), check_row_order=False, rel_tol=1e-9
                )


def test_resume_refuses_a_succeeded_run_and_mixed_options(trace: Path) -> None:
    ok = analyze(trace)
    with pytest.raises(PipelineError, match="nothing to resume"):
        analyze(trace, resume=ok.id)
    with pytest.raises(PipelineError, match="do not combine"):
        analyze(trace, resume=ok.id, stages=["launch"])
    with pytest.raises(PipelineError, match="no run run-0009"):
        analyze(trace, stages=["launch"], reference="9")


def test_parameters_start_from_the_reference_run(trace: Path) -> None:
    analyze(trace, overrides={"slow_launch_us": "7", "debug_fail": "nothing"}, registry=KNOBBED)
    sel = analyze(trace, stages=["launch"], overrides={"late_start_us": "3"}, registry=KNOBBED)
    assert sel.params["slow_launch_us"] == 7.0 and sel.params["late_start_us"] == 3.0
    assert sel.params["debug_fail"] == ""  # test knobs apply to the run that sets them only
    # A full run starts from the defaults: the stage goes back to its first (cached) output.
    full = analyze(trace)
    assert full.params["slow_launch_us"] == REGISTRY.params["slow_launch_us"].default


def test_run_record_file_is_complete_json(trace: Path) -> None:
    rec = analyze(trace)
    data = json.loads((trace / ".profui" / "runs" / f"{rec.id}.json").read_text())
    assert data["status"] == "succeeded" and data["id"] == rec.id
    assert [s["name"] for s in data["stages"]] == REGISTRY.order
    for s in data["stages"]:
        if s["status"] == "succeeded":
            assert s["start"] <= s["end"] and s["attempt"] == 1 and s["key"]
            assert verify(trace / ".profui" / s["artifact"]).output_hash == s["output_hash"]


def _close(a, b, path: str = "") -> None:
    """Equal JSON values, floats to 1e-9 relative (parallel float sums differ in the last bits)."""
    if isinstance(a, float) or isinstance(b, float):
        assert a == pytest.approx(b, rel=1e-9, abs=1e-12), path
    elif isinstance(a, dict):
        assert isinstance(b, dict) and set(a) == set(b), (path, set(a) ^ set(b))
        for k in a:
            _close(a[k], b[k], f"{path}.{k}")
    elif isinstance(a, list):
        assert isinstance(b, list) and len(a) == len(b), path
        for i, (x, y) in enumerate(zip(a, b, strict=True)):
            _close(x, y, f"{path}[{i}]")
    else:
        assert a == b, path


def test_summary_stage_equals_profui_summary_of_the_same_trace(trace: Path) -> None:
    from profui.analysis import open_trace
    from profui.analysis.summary import summarize

    analyze(trace, overrides={"top_n": "7", "bucket_ms": "5"})
    ours = json.loads(json.dumps(load_output(trace, "summary", "summary.json").to_json_dict()))
    theirs = json.loads(json.dumps(summarize(open_trace(trace), top_n=7, bucket_ms=5.0).to_json_dict()))
    _close(ours, theirs)
    assert len(ours["sections"]["kernels"]["top_by_time"]) == 8  # 7 + "(other)"
    assert ours["takeaways"] and set(ours["sections"]) == set(theirs["sections"])


def test_step_annotation_redefines_steps_and_recomputes_only_what_reads_steps(trace: Path) -> None:
    first = analyze(trace)
    assert load_file(trace, first, "steps", "windows.parquet")["name"].str.starts_with("ProfilerStep#").all()
    rec = analyze(trace, overrides={"step_annotation": "^## forward ##$"})
    windows = load_file(trace, rec, "steps", "windows.parquet")
    forwards = (
        pl.scan_parquet(trace / "node=*" / "rank=*" / "*.parquet", hive_partitioning=False)
        .filter((pl.col("kind") == "annotation") & (pl.col("name") == "## forward ##"))
        .sort("ts")
        .collect()
    )
    assert forwards.height > 0
    assert windows["name"].unique().to_list() == ["## forward ##"]
    assert windows["cpu_start_ns"].to_list() == forwards["ts"].to_list()
    assert (windows["cpu_end_ns"] - windows["cpu_start_ns"]).to_list() == forwards["dur"].to_list()
    assert by_provenance(rec, "computed") <= {"steps"} | REGISTRY.descendants({"steps"})
    assert {"steps", "summary"} <= by_provenance(rec, "computed")
    assert {"kernels", "launch", "utilization"} <= by_provenance(rec, "cache")


def test_invalid_step_annotation_fails_the_steps_stage_with_the_reason(trace: Path) -> None:
    rec = analyze(trace, overrides={"step_annotation": "(unclosed"})
    assert rec.status == "failed"
    assert rec.stages["steps"].status == "failed"
    assert "step_annotation '(unclosed' is not a valid regular expression" in rec.stages["steps"].error


def test_progress_reports_each_executed_stage_in_order(trace: Path) -> None:
    events = []
    rec = analyze(trace, progress=events.append)
    ran = [e.stage for e in events if e.status == "running"]
    assert ran == available()
    done = [e for e in events if e.status != "running"]
    assert [e.stage for e in done] == ran and all(e.provenance == "computed" for e in done)
    assert [e.index for e in done] == list(range(1, len(ran) + 1)) and {e.total for e in done} == {len(ran)}
    assert all(e.run_id == rec.id and e.seconds >= 0 for e in done)


def test_a_changed_trace_file_recomputes_every_stage_reading_it(trace: Path) -> None:
    analyze(trace)
    events_file = next(trace.glob("node=*/rank=*/events-*.parquet"))
    st = events_file.stat()
    os.utime(events_file, ns=(st.st_atime_ns, st.st_mtime_ns + 1_000_000_000))
    rec = analyze(trace)
    # Every stage that reads the trace recomputes; launch reads only correlate's output, which
    # came out byte-identical, so its content-addressed key is unchanged.
    assert by_provenance(rec, "computed") == set(available()) - {"launch"}
    assert by_provenance(rec, "cache") == {"launch"}


def test_load_output_gives_all_files_of_a_stage_and_none_before_any_run(trace: Path) -> None:
    assert latest_outputs(trace) == {} and load_output(trace, "kernels") is None
    rec = analyze(trace)
    got = load_output(trace, "kernels")
    assert set(got) == set(REGISTRY.stages["kernels"].outputs)
    folder = trace / ".profui" / rec.stages["kernels"].artifact
    for name, frame in got.items():
        assert frame.equals(pl.read_parquet(folder / name))
    assert load_output(trace, "steps", "steps.json")["has_markers"] is True


def test_a_damaged_cached_output_is_recomputed_not_read(trace: Path) -> None:
    first = analyze(trace)
    damaged = trace / ".profui" / first.stages["correlate"].artifact / "launches.parquet"
    good = damaged.read_bytes()
    damaged.write_bytes(good[: len(good) // 2])  # e.g. a disk that filled up under another tool
    with pytest.raises(
        PipelineError, match="lacks the output of stage correlate .its output files are missing or damaged"
    ):
        analyze(trace, stages=["launch"], reference=first.id)
    rec = analyze(trace)
    assert rec.stages["correlate"].provenance == "computed"
    assert rec.stages["correlate"].artifact == first.stages["correlate"].artifact  # same key, healed in place
    assert verify(damaged.parent) is not None
    launches = pl.read_parquet(damaged)
    assert launches.height == pl.read_parquet(io.BytesIO(good)).height > 0


def test_leftovers_of_a_killed_writer_are_removed_and_never_read(trace: Path) -> None:
    first = analyze(trace)
    key = first.stages["kernels"].key
    # What a process killed inside write_artifact leaves: a temporary folder beside the real one.
    leftover = trace / ".profui" / "artifacts" / "kernels" / f".tmp-{key}-dead"
    leftover.mkdir()
    (leftover / "stats.parquet").write_bytes(b"PAR1 half")
    rec = analyze(trace)
    assert not leftover.exists()
    assert (
        rec.stages["kernels"].provenance == "cache"
        and rec.stages["kernels"].artifact == first.stages["kernels"].artifact
    )


def test_prune_keeps_the_newest_runs_and_every_output_they_use(trace: Path) -> None:
    from profui.analysis.pipeline import prune

    analyze(trace)  # run-0001
    analyze(trace, overrides={"top_n": "4"})  # run-0002: kernels and summary computed anew
    third = analyze(trace, stages=["launch"], overrides={"slow_launch_us": "9"})  # run-0003
    before = {p for p in (trace / ".profui" / "artifacts").glob("*/*")}
    gone = prune(trace, keep=1)
    assert gone["runs"] == 2
    assert [r.id for r in list_runs(trace)] == [third.id]
    kept = {trace / ".profui" / st.artifact for st in third.stages.values() if st.artifact}
    after = {p for p in (trace / ".profui" / "artifacts").glob("*/*")}
    assert after == kept and gone["artifacts"] == len(before - kept) > 0
    # The kept run is still a complete reference, and the TUI's view of it is intact.
    assert set(latest_outputs(trace)) == {n for n, s in third.stages.items() if s.status == "succeeded"}
    rec = analyze(trace, stages=["launch"], overrides={"slow_launch_us": "9"})
    assert rec.stages["launch"].provenance == "cache"
    assert prune(trace, keep=0) == {"runs": 2, "artifacts": len(after)}
    assert latest_outputs(trace) == {}


def test_hta_compat_and_include_last_step_reach_the_new_outputs(trace: Path) -> None:
    """``--set hta_compat=true --set include_last_step=true`` gives HTA's variants over HTA's
    view with the last step kept, in the memory, idle and launch stages; the default gives the
    exact analyses of the same names."""
    from profui.analysis import hta_variants as hv
    from profui.analysis import idle, launch, memory, open_trace

    stages = ["ingest", "correlate", "memory", "idle", "launch"]
    analyze(trace, stages=stages)
    t = open_trace(trace)
    ev = t.cached_events()
    assert_frame_equal(
        load_output(trace, "memory", "bandwidth.parquet"), memory.bandwidth_summary(ev).collect()
    )
    assert_frame_equal(
        load_output(trace, "launch", "aten_op_kernels.parquet"), launch.aten_op_kernels(ev).collect()
    )
    assert_frame_equal(
        load_output(trace, "idle", "blocked_on_full_queue.parquet"), idle.blocked_on_full_queue(ev).collect()
    )
    analyze(
        trace,
        stages=stages,
        overrides={"hta_compat": "true", "include_last_step": "true", "max_queue_length": "8"},
    )
    hev = t.hta_events(include_last_step=True)
    assert_frame_equal(
        load_output(trace, "memory", "bandwidth.parquet"), hv.hta_memory_bw_summary(hev).collect()
    )
    assert_frame_equal(
        load_output(trace, "launch", "aten_op_kernels.parquet"), hv.hta_aten_op_kernels(hev).collect()
    )
    blocked = load_output(trace, "idle", "blocked_on_full_queue.parquet")
    assert blocked.height == 1 and blocked["blocked_ns"].item() > 0
    assert_frame_equal(blocked, hv.hta_blocked_on_full_queue(hev, 8).collect())
    # the last step kept: more launches than with it dropped
    kept = load_output(trace, "correlate", "launches.parquet").height
    assert (
        kept
        == hv.hta_kernel_launches(hev).collect().height
        > hv.hta_kernel_launches(t.hta_events()).collect().height
    )
