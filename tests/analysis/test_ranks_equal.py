"""A summary run by ranks equals the whole-trace summary table for table (issue 35): the same
sections, the same tables in the same order, each with the same schema, rows and values, but
for the tables a run by ranks leaves out, which its note names.

The oracle is the whole-trace run of the same trace (``store.compute`` of the summary). Two
jobs: (a) four ranks built from real traces of two GPU models (two A100 ranks of HTA's NCCL
trace on one node, two MI250 ranks of HTA's ROCm trace on another: real events files, a
relabelled layout); (b) a 4-rank gloo DDP run on the CPU recorded here with profcap under
torchrun, summarised through a ``dask scheduler`` and ``dask worker`` processes started in
another working directory and given the trace's relative path.

Where the two runs cannot agree to the bit, :mod:`ranks_compare` says why and bounds it (a
quotient 1 ulp apart). The critical path and the findings are equal to the bit, every one of
their stage outputs (the summary's tables, the path's stretches and what-if replays): each
rank's second task sends its share of the graph's inputs, the job builds the graph.
"""

from __future__ import annotations

import json
import pickle
import shutil
import subprocess
import sys
from pathlib import Path

import polars as pl
import pytest
from dask_cluster import dask_cluster
from ranks_compare import ULP, ulps

from profui.analysis.critical_path_inputs import RANK_TIME, ThreadTime
from profui.analysis.distributed import job_outputs, job_result
from profui.analysis.jobreduce import PATH_SHARE, PATH_TABLES
from profui.analysis.pipeline.params import typed_params
from profui.analysis.pipeline.registry import REGISTRY
from profui.analysis.pipeline.store import compute
from profui.analysis.ranks import RankResult, path_shares, rank_parts, rank_result
from profui.analysis.summary import Summary
from profui.analysis.trace import open_trace
from profui.capture.ingest import import_trace

from ddp_job import record_ddp
from realdata import shared_trace

PROFUI = str(Path(sys.executable).with_name("profui"))

#: What a run by ranks leaves out without its second tasks (:func:`path_shares`): the critical
#: path's graph joins every rank's inputs, and the findings read it.
LEFT_OUT = {
    "critical_path": {"steps", "by_kind"},
    "findings": {"findings", "evidence"},
}


def assert_equal_table_for_table(
    by_ranks: Summary, whole: Summary, left_out: dict | None = None, said: str | None = None
) -> int:
    """Every table of ``whole`` but ``left_out`` in ``by_ranks``, in the same order, equal;
    nothing else there; the note says what is left out (``said``: what it names, by default the
    path and the findings). Returns the number of tables compared."""
    left_out = left_out or {}
    want_sections = [s for s in whole.sections if set(whole.sections[s]) - left_out.get(s, set())]
    assert list(by_ranks.sections) == want_sections
    n = 0
    for stage, tables in whole.sections.items():
        names = [t for t in tables if t not in left_out.get(stage, set())]
        assert list(by_ranks.sections.get(stage, {})) == names, stage
        for name in names:
            got, want = by_ranks.sections[stage][name], tables[name]
            assert got.schema == want.schema, f"{stage}/{name}"
            loose = ULP.get((stage, name), set())
            exact = [c for c in want.columns if c not in loose]
            assert got.select(exact).equals(want.select(exact)), f"{stage}/{name} differs"
            for c in loose:
                worst = max((ulps(a, b) for a, b in zip(got[c], want[c], strict=True)), default=0)
                assert worst <= 1, f"{stage}/{name}.{c}: {worst} ulps"
            n += 1
    assert by_ranks.trace == whole.trace
    assert by_ranks.params == whole.params
    # every takeaway whose tables a run by ranks has, word for word
    for chart, text in by_ranks.takeaways.items():
        assert text == whole.takeaways[chart], chart
    note = [x for x in by_ranks.notes if x.startswith("a run over ranks leaves out ")]
    said = said or "the critical path and the findings"
    whole_note = (
        f"a run over ranks leaves out {said}: they need every rank's events in one process (profui "
        "summary without --scheduler/--workers)"
    )
    assert note == ([whole_note] if left_out else [])
    assert [x for x in by_ranks.notes if x not in note] == whole.notes
    return n


def by_ranks_results(path: Path) -> tuple[object, list, list[RankResult]]:
    """The trace's layout and ranks, and every rank's result with its share of the critical
    path's inputs (both tasks of each rank run here, in turn)."""
    layout, parts = rank_parts(path)
    return layout, parts, path_shares(None, parts, [rank_result(p, _params()) for p in parts], _params())


def _params() -> dict:
    return typed_params(REGISTRY.params, {})


def whole_summary(path: Path) -> Summary:
    return compute(open_trace(path), ["summary"], _params())["summary"]["summary.json"]


@pytest.fixture(scope="module")
def two_models(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Ranks 0 and 1: HTA's A100 NCCL rank (node ``a100``); ranks 2 and 3: HTA's MI250 trace
    (node ``mi250``); the manifest lists both nodes' GPUs."""
    tmp = tmp_path_factory.mktemp("models")
    sources = {
        "a100": "hta-nccl_parser_config-nccl_data.json.gz",
        "mi250": "hta-amd_trace-mi250_minitoy_train_ROCm6_2_kineto.json.gz",
    }
    out = tmp / "job"
    out.mkdir()
    manifest: dict = {}
    gpus = []
    for i, (node, name) in enumerate(sources.items()):
        one = tmp / node
        import_trace([shared_trace(name)], one)
        m = json.loads((one / "manifest.json").read_text())
        manifest = manifest or m
        gpus += [{**g, "node": node} for g in m["gpus"]]
        part = next(one.glob("node=*/rank=0"))
        for rank in (2 * i, 2 * i + 1):
            dst = out / f"node={node}" / f"rank={rank}"
            dst.mkdir(parents=True)
            for f in part.glob("events-*.parquet"):
                shutil.copyfile(f, dst / f.name)
    manifest.update(name="two-models", hosts=list(sources), ranks=[0, 1, 2, 3], gpus=gpus, sources=[])
    (out / "manifest.json").write_text(json.dumps(manifest))
    return out


def test_two_gpu_models_by_ranks_equal_whole_trace(two_models: Path) -> None:
    whole = whole_summary(two_models)
    names = {g["name"] for g in json.loads((two_models / "manifest.json").read_text())["gpus"]}
    assert len(names) == 2  # the oracle's job really has two GPU models
    layout, parts, results = by_ranks_results(two_models)
    assert len(parts) == 4
    by_ranks = job_result(layout, results, _params(), False).summary.summary
    assert assert_equal_table_for_table(by_ranks, whole) >= 54
    # without the second tasks the path and the findings are left out, and the note says so
    first = [rank_result(p, _params()) for p in parts]
    assert (
        assert_equal_table_for_table(
            job_result(layout, first, _params(), False).summary.summary, whole, LEFT_OUT
        )
        >= 50
    )
    # the reductions of many ranks' rows really ran: job tables over both models' kernels
    kernels = by_ranks.sections["kernels"]["stats"]
    assert kernels["count"].sum() == whole.sections["kernels"]["stats"]["count"].sum() > 0
    # the FLOPs tables are the job's, not a rank's: counted FLOPs (the MI250 ranks' matmuls), the
    # A100 and MI250 kernels in one kernels table and one totals row
    flops = by_ranks.sections["flops"]
    assert list(flops) == ["ops", "op_types", "kernels", "steps", "totals"]
    assert flops["totals"].height == 1 and flops["totals"]["flops"][0] > 0
    assert flops["totals"]["kernels"][0] == kernels["count"].sum()


def test_two_gpu_models_critical_path_and_findings_outputs_equal_whole_trace(two_models: Path) -> None:
    """Every output of the two stages, the path's stretches and what-if replays too, equal to
    the whole-trace run's to the bit, rows in order; the graph really held ranks of both
    models (paths on all four ranks; the A100 ranks' NCCL collectives in their shares)."""
    whole = compute(open_trace(two_models), ["findings"], _params())
    layout, _, results = by_ranks_results(two_models)
    job = job_outputs([r.tables for r in results], _params(), layout.manifest.source, layout.manifest.gpus)
    assert {(s, f.removesuffix(".parquet")) for s in ("critical_path", "findings") for f in job[s]} == set(
        PATH_TABLES
    )
    for stage in ("critical_path", "findings"):
        assert list(job[stage]) == list(whole[stage])
        for file, want in whole[stage].items():
            got = job[stage][file]
            assert got.schema == want.schema and got.equals(want), f"{stage}/{file}"
    steps = job["critical_path"]["steps.parquet"]
    assert sorted(set(steps["rank"])) == [0, 1, 2, 3]
    collectives = {k: ri.collectives.height for r in results for k, ri in r.tables[PATH_SHARE].inputs.items()}
    assert collectives[("a100", 0)] == collectives[("a100", 1)] > 0
    assert job["findings"]["findings.parquet"].height > 0


def test_hta_compat_critical_path_and_findings_by_ranks_equal_whole_trace(two_models: Path) -> None:
    """Under ``hta_compat`` the critical path is HTA's, one rank's graph per window: each rank
    sends its tables, equal once concatenated to the whole-trace stage's outputs, every row; the
    findings are the whole-trace stage's function of the job's tables (the memory ops and
    precision shares among them, which read the trace's own events under ``hta_compat`` too).
    The summary's note names neither."""
    params = typed_params(REGISTRY.params, {"hta_compat": True})
    whole = compute(open_trace(two_models), ["summary"], params)
    layout, parts = rank_parts(two_models)
    results = path_shares(None, parts, [rank_result(p, params) for p in parts], params)
    job = job_outputs([r.tables for r in results], params, layout.manifest.source, layout.manifest.gpus)
    for stage in ("critical_path", "findings", "memory", "precision"):
        files = [f for f in whole[stage] if (stage, f) != ("precision", "kernels.parquet")]  # a detail table
        assert [f for f in job[stage]] == files, stage
        for file in files:
            got, want = job[stage][file], whole[stage][file]
            assert got.schema == want.schema and got.equals(want), f"{stage}/{file}"
    assert sorted(set(job["critical_path"]["steps.parquet"]["rank"])) == [0, 1, 2, 3]
    # no finding on this job under hta_compat (HTA's path has no what-if replays, no risk rule
    # fires), in both runs: the rows are the default run's test's
    assert job["findings"]["findings.parquet"].height == 0
    # the summary: every other table equal too, but those HTA's variants compute from every
    # rank's events (aten_op_kernels: HTA counts every rank's op instances up to each rank's)
    doc = job_result(layout, results, params, False).summary.summary
    left_out = {
        "utilization": {"gpu", "node", "cpu", "gpu_over_time", "cpu_over_time", "gpu_sampled"},
        "kernels": {"stats", "top_by_time", "top_by_count", "types", "ops", "runtime"},
        "launch": {"aten_op_kernels"},
        "comm": {"by_collective"},
        "annotations": {"names"},
    }
    said = (
        "the GPU and CPU utilization time series; the kernels tables stats, top_by_time, top_by_count, types, ops, "
        "runtime; the launch tables aten_op_kernels; the comm tables by_collective and the annotations tables names"
    )
    assert assert_equal_table_for_table(doc, whole["summary"]["summary.json"], left_out, said) >= 40


def test_a_ranks_share_sent_is_the_share_computed(two_models: Path) -> None:
    """A rank's share crosses to the job pickled (as Dask sends it): each thread's time line
    arrives with the same breakpoints, classes, cumulative times, stalls and names as the
    rank computed (the cumulative times remade from the classes, the names from codes); and it
    is smaller than the share pickled field by field. Prints each rank's bytes."""
    _, _, results = by_ranks_results(two_models)
    for r in results:
        share = r.tables[PATH_SHARE]
        first = len(
            pickle.dumps(RankResult(r.node, r.rank, {k: v for k, v in r.tables.items() if k != PATH_SHARE}))
        )
        sent = len(pickle.dumps(share))
        print(f"rank {r.node}/{r.rank}: first task {first} B, share {sent} B")
        for ri in share.inputs.values():
            for tt in ri.threads.values():
                back = pickle.loads(pickle.dumps(tt))
                for name in ("bp", "cls", "cum", "name_start", "name_end", "stall"):
                    assert (getattr(back, name) == getattr(tt, name)).all(), name
                    assert getattr(back, name).dtype == getattr(tt, name).dtype, name
                assert back.names == tt.names
                fields = (tt.bp, tt.cls, tt.cum, tt.name_start, tt.name_end, tt.names, tt.stall)
                assert len(pickle.dumps(back)) <= len(pickle.dumps(fields))
    assert isinstance(
        next(iter(results[0].tables[PATH_SHARE].inputs.values())).threads[RANK_TIME], ThreadTime
    )


@pytest.fixture(scope="module")
def ddp4(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A 4-rank gloo DDP run on the CPU, recorded by profcap under torchrun (steps 3-5)."""
    return record_ddp(tmp_path_factory.mktemp("ddp4"), 4)


@pytest.fixture
def elsewhere_cluster(tmp_path: Path):
    """A ``dask scheduler`` and two ``dask worker`` processes whose working directory is one the
    trace is not under."""
    cwd = tmp_path / "workers-cwd"
    cwd.mkdir()
    with dask_cluster(cwd / "dask", cwd=cwd) as (address, _):
        yield address


def test_ddp_run_on_an_external_scheduler_equals_whole_trace(ddp4: Path, elsewhere_cluster: str) -> None:
    """The client in the trace's folder's parent, given ``trace`` (relative); the workers in
    another folder: the paths they get are the client's, resolved."""
    res = subprocess.run(
        [PROFUI, "summary", ddp4.name, "--scheduler", elsewhere_cluster, "--json"],
        cwd=ddp4.parent,
        capture_output=True,
        text=True,
        timeout=240,
        stdin=subprocess.DEVNULL,
    )
    assert res.returncode == 0, res.stderr
    got = json.loads(res.stdout)
    whole = json.loads(
        subprocess.run(
            [PROFUI, "summary", ddp4.name, "--json"],
            cwd=ddp4.parent,
            capture_output=True,
            text=True,
            timeout=240,
        ).stdout
    )
    by_ranks, oracle = _summary(got, whole), _summary(whole, whole)
    assert assert_equal_table_for_table(by_ranks, oracle) >= 54
    # the graph joined the ranks: collectives on the path, the late rank's finding
    assert "communication" in set(by_ranks.sections["critical_path"]["by_kind"]["kind"])
    assert by_ranks.sections["findings"]["findings"].height > 0
    # the node's sampled CPU row once, as in the whole trace (it came back from each of 4 ranks)
    active = by_ranks.sections["utilization"]["cpu_active"]
    assert active.filter(pl.col("source") == "metrics").height == 1
    assert active.filter(pl.col("source") == "host_events")["rank"].to_list() == [0, 1, 2, 3]


def _summary(doc: dict, whole: dict) -> Summary:
    """A ``summary --json`` document as a Summary, each table typed as the whole run's."""
    sections = {
        s: {t: pl.DataFrame(rows, schema=_schema(whole, s, t)) for t, rows in ts.items()}
        for s, ts in doc["sections"].items()
    }
    return Summary(doc["trace"], doc["params"], sections, doc["takeaways"], doc["notes"])


def _schema(doc: dict, stage: str, table: str) -> dict:
    """The table's declared schema (JSON rows carry no dtypes)."""
    from profui.analysis.schemas import TABLES

    dtypes = {c.name: c.dtype for c in TABLES[(stage, f"{table}.parquet")].columns}
    rows = doc["sections"][stage][table]
    return {c: dtypes[c] for c in (list(rows[0]) if rows else dtypes)}


def test_every_rank_unreadable_is_one_line_without_the_skip_hint(two_models: Path, tmp_path: Path) -> None:
    """Every rank's events file cut in half (a lost write): the run fails naming the first rank
    and saying every other failed too; ``--skip-bad-ranks`` would leave nothing, so it is not
    suggested. One rank cut: the hint is there."""
    from profui.capture.format import TraceFormatError

    bad = tmp_path / "bad"
    shutil.copytree(two_models, bad)
    files = sorted(bad.glob("node=*/rank=*/events-*.parquet"))
    for f in files:
        f.write_bytes(f.read_bytes()[: f.stat().st_size // 2])
    layout, parts = rank_parts(bad)
    with pytest.raises(TraceFormatError) as err:
        job_result(layout, [rank_result(p, _params()) for p in parts], _params(), False)
    line = str(err.value)
    assert "\n" not in line and "rank=0" in line and "every other rank: 4 of 4" in line, line
    assert "--skip-bad-ranks" not in line
    shutil.copyfile(two_models / files[1].relative_to(bad), files[1])  # rank 1 whole again
    with pytest.raises(TraceFormatError) as err:
        job_result(layout, [rank_result(p, _params()) for p in parts], _params(), False)
    assert "(2 more bad rank(s)); --skip-bad-ranks analyses the others" in str(err.value)
