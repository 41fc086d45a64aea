"""Runs by ranks on real Dask clusters started here (never a mock): a 64-rank job gives the same
tables on the cluster as the whole-trace ``profui summary --json`` (the oracle) wherever both
compute them; a worker killed mid-run is survived; a corrupt rank is named, or skipped when asked.

The 64-rank job is assembled from the real two-rank trace (:mod:`ranksjob`: real events files,
a relabelled layout — the corpus has no job of more ranks).
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import psutil
import pytest
from dask_cluster import dask_cluster
from ranksjob import assert_same_trace, import_two_ranks, job_of, kineto_rank_files

from profui.analysis import jobreduce
from profui.analysis.pipeline.bodies import DETAIL_TABLES
from profui.analysis.pipeline.params import typed_params
from profui.analysis.pipeline.registry import REGISTRY
from profui.analysis.pipeline.store import compute
from profui.analysis.run import run
from profui.analysis.trace import open_trace

from realdata import same_numbers

PROFUI = str(Path(sys.executable).with_name("profui"))
RANKS = 64


def profui(*args: str | Path, timeout: float = 240) -> subprocess.CompletedProcess:
    return subprocess.run(
        [PROFUI, *map(str, args)], capture_output=True, text=True, timeout=timeout, stdin=subprocess.DEVNULL
    )


@pytest.fixture(scope="module")
def two_ranks(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return import_two_ranks(tmp_path_factory.mktemp("two") / "t2")


@pytest.fixture(scope="module")
def job(two_ranks: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    return job_of(two_ranks, tmp_path_factory.mktemp("job") / "job64", RANKS)


@pytest.fixture(scope="module")
def oracle(job: Path) -> dict:
    """The existing whole-trace ``profui summary --json`` of the job, in one process."""
    res = profui("summary", job, "--json")
    assert res.returncode == 0, res.stderr
    return json.loads(res.stdout)


def assert_same_tables(got: dict, want: dict) -> int:
    """Every table of ``got`` (a run by ranks) equal, row for row, to ``want``'s of the same name;
    the job tables and the per-rank tables all present. Returns the number of tables compared."""
    names = {f"{s}/{t}" for s, tables in got["sections"].items() for t in tables}
    given = (*jobreduce.PER_RANK_TABLES, *jobreduce.JOB_TABLES, *jobreduce.PATH_TABLES)
    assert names == {f"{s}/{t}" for s, t in given if (s, t) not in DETAIL_TABLES}
    for s, tables in got["sections"].items():
        for t, rows in tables.items():
            assert same_numbers(rows, want["sections"][s][t]), f"{s}/{t} differs from the whole-trace summary"
    assert got["trace"] == want["trace"]
    for chart, text in got["takeaways"].items():  # those whose tables a run by ranks has
        assert text == want["takeaways"][chart]
    return len(names)


def test_reductions_are_the_whole_trace_stage_rules(two_ranks: Path) -> None:
    """The job tables reduced from a whole-trace run's own per-rank tables are that run's job
    tables: the reduction and the stage use one rule (the no-drift check)."""
    trace = open_trace(two_ranks)
    params = typed_params(REGISTRY.params, {})
    stages = [*jobreduce.stages_needed(), *(s for s, _ in jobreduce.JOB_TABLES)]
    store = compute(trace, list(dict.fromkeys(stages)), params)
    sent = jobreduce.rank_outputs(store, trace.cached_events(), params)
    reduced = jobreduce.job_tables(jobreduce.concat_ranks([sent]), params)
    for stage, table in jobreduce.JOB_TABLES:
        assert reduced[(stage, table)].equals(store[stage][f"{table}.parquet"]), f"{stage}/{table}"


def test_local_cluster_equals_whole_trace(job: Path, oracle: dict) -> None:
    done: list[tuple[int, int]] = []
    got = run(job, ["summary"], where="ranks", workers=2, on_rank=lambda k, n, r: done.append((k, n)))
    s = got.outputs["summary"]["summary.json"]
    assert done[-1] == (RANKS, RANKS) and len(done) == RANKS
    assert assert_same_tables(s.to_json_dict(), oracle) >= 20
    assert s.takeaways["steps"] == oracle["takeaways"]["steps"]
    # the job-level answers are there and cover every rank
    assert s.table("steps", "job")["ranks"].to_list() == [RANKS] * s.table("steps", "job").height
    assert s.table("comm", "stragglers")["ranks"].to_list() == [RANKS] * s.table("comm", "stragglers").height
    # the embedded cluster is gone with the run: no worker process left behind (the standard
    # library's resource tracker of spawned processes stays, and ends with this process)
    left = [
        p.cmdline()
        for p in psutil.Process().children(recursive=True)
        if p.is_running() and p.status() != psutil.STATUS_ZOMBIE
    ]
    assert not [c for c in left if "multiprocessing.resource_tracker" not in " ".join(c)], left


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory):
    """A Dask scheduler and two workers, each its own process on 127.0.0.1, started the Dask way."""
    with dask_cluster(tmp_path_factory.mktemp("dask")) as (address, workers):
        yield address, workers


def test_scheduler_in_other_processes_equals_whole_trace(job: Path, oracle: dict, cluster) -> None:
    address, _ = cluster
    res = profui("summary", job, "--scheduler", address, "--json")
    assert res.returncode == 0, res.stderr
    assert f"{RANKS}/{RANKS} ranks" in res.stderr.splitlines()
    assert_same_tables(json.loads(res.stdout), oracle)


def test_scheduler_from_the_environment(two_ranks: Path, tmp_path: Path, cluster) -> None:
    small = job_of(two_ranks, tmp_path / "job8", 8)
    want = json.loads(profui("summary", small, "--json").stdout)
    env = {**os.environ, "PROFUI_DASK_SCHEDULER": cluster[0]}
    res = subprocess.run(
        [PROFUI, "summary", str(small), "--workers", "1", "--json"],
        capture_output=True,
        text=True,
        timeout=240,
        env=env,
        stdin=subprocess.DEVNULL,
    )
    assert res.returncode == 0, res.stderr
    assert "8/8 ranks" in res.stderr.splitlines()
    assert_same_tables(json.loads(res.stdout), want)


def test_import_on_the_scheduler_equals_one_by_one(cluster, tmp_path: Path) -> None:
    """``profui import --scheduler``: each file a task on the workers in other processes; the
    trace is the one-by-one import's (the oracle), every events table and the manifest."""
    files = kineto_rank_files(tmp_path / "src", 8)
    assert profui("import", *files, "-o", tmp_path / "seq").returncode == 0
    res = profui("import", *files, "-o", tmp_path / "par", "--scheduler", cluster[0])
    assert res.returncode == 0, res.stderr
    assert_same_trace(tmp_path / "par", tmp_path / "seq")


def _truncated_job(two_ranks: Path, root: Path) -> Path:
    bad = job_of(two_ranks, root / "bad8", 8)
    f = next((bad / "node=host00" / "rank=5").glob("events-*.parquet"))
    data = f.read_bytes()
    f.write_bytes(data[: len(data) // 2])  # a real events file cut off half way (a lost write)
    return bad


def test_corrupt_rank_fails_the_run_naming_it(two_ranks: Path, tmp_path: Path, cluster) -> None:
    bad = _truncated_job(two_ranks, tmp_path)
    res = profui("summary", bad, "--scheduler", cluster[0], "--json")
    assert res.returncode == 2, res.stderr
    line = [ln for ln in res.stderr.splitlines() if ln.startswith("profui:")]
    assert len(line) == 1 and "rank=5" in line[0] and "events-00000.parquet" in line[0], res.stderr
    assert "Traceback" not in res.stderr and res.stdout == ""


def test_skip_bad_ranks_completes_without_it(two_ranks: Path, tmp_path: Path, cluster) -> None:
    bad = _truncated_job(two_ranks, tmp_path)
    res = profui("summary", bad, "--scheduler", cluster[0], "--skip-bad-ranks", "--json")
    assert res.returncode == 0, res.stderr
    got = json.loads(res.stdout)
    assert any("skipped rank node=host00/rank=5" in n for n in got["notes"])
    # the oracle: the whole-trace summary of the same job without rank 5
    without = job_of(two_ranks, tmp_path / "without5", 8, drop=(5,))
    want = json.loads(profui("summary", without, "--json").stdout)
    want["trace"]["path"] = got["trace"]["path"]
    assert_same_tables(got, want)
    assert 5 not in got["trace"]["ranks"] and len(got["trace"]["ranks"]) == 7


def test_killed_worker_is_survived(job: Path, oracle: dict, cluster, tmp_path: Path) -> None:
    """A worker process killed (SIGKILL) while the ranks run: Dask runs its tasks again on the
    other worker and the summary completes with the same numbers."""
    address, workers = cluster
    victim = workers[0]
    assert victim.poll() is None
    out_file = tmp_path / "summary.json"  # a file, not a pipe: nothing here reads stdout until the end
    proc = subprocess.Popen(
        [PROFUI, "summary", str(job), "--scheduler", address, "--json"],
        stdout=out_file.open("w"),
        stderr=subprocess.PIPE,
        text=True,
        stdin=subprocess.DEVNULL,
    )
    killed_at = None
    assert proc.stderr is not None
    lines = []
    for line in proc.stderr:
        lines.append(line)
        if killed_at is None and line.endswith(" ranks\n"):
            done = int(line.split("/")[0])
            if done >= 4:  # both workers busy: rank tasks are queued on each
                os.kill(victim.pid, signal.SIGKILL)
                killed_at = done
    assert proc.wait(timeout=240) == 0, "".join(lines)
    out = out_file.read_text()
    assert killed_at is not None and killed_at < RANKS
    assert victim.wait(timeout=30) == -signal.SIGKILL
    assert_same_tables(json.loads(out), oracle)


def test_small_trace_summary_never_imports_dask(two_ranks: Path) -> None:
    code = (
        "import sys; from pathlib import Path; from profui.tui.cli.summary_cmd import run_summary; "
        f"s = run_summary(Path({str(two_ranks)!r}), None, False, None); "
        "assert s.sections['kernels']; "
        "print(sorted(m for m in sys.modules if m.split('.')[0] in ('dask', 'distributed')))"
    )
    res = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert res.returncode == 0, res.stderr
    assert res.stdout.strip() == "[]"


def test_analyze_by_ranks_fails_naming_the_rank_and_resume_finishes_it(
    two_ranks: Path, tmp_path: Path, cluster
) -> None:
    """``profui analyze`` by ranks: a corrupt rank ends the run ``failed``, its record naming the
    rank, with only whole artifacts left; once the file is whole again ``--resume`` computes
    that rank alone and the job's summary equals the whole-trace ``profui summary --json``."""
    job8 = job_of(two_ranks, tmp_path / "job8", 8)
    f = next((job8 / "node=host00" / "rank=5").glob("events-*.parquet"))
    good = f.read_bytes()
    f.write_bytes(good[: len(good) // 2])
    res = profui("analyze", job8, "--scheduler", cluster[0])
    assert res.returncode == 2, res.stderr
    assert res.stderr.splitlines()[-1].startswith("profui: ") and "rank=5" in res.stderr.splitlines()[-1]
    runs = job8 / ".profui" / "ranks-runs"
    failed = json.loads((runs / "ranks-0001.json").read_text())
    assert failed["status"] == "failed" and "rank=5" in failed["message"]
    assert failed["ranks"]["node=host00/rank=5"]["status"] == "failed"
    assert sum(r["status"] == "computed" for r in failed["ranks"].values()) == 7
    by_rank = job8 / ".profui" / "artifacts" / "by-rank"
    folders = sorted(by_rank.iterdir())
    assert len(folders) == 7 and not [p for p in folders if p.name.startswith(".tmp")]
    assert all(json.loads((p / "meta.json").read_text())["sizes"] for p in folders)
    assert not list(runs.glob("*.summary.json"))  # no job summary from a failed run

    f.write_bytes(good)
    res = profui("analyze", job8, "--scheduler", cluster[0], "--resume", "ranks-0001", "--json")
    assert res.returncode == 0, res.stderr
    rec = json.loads(res.stdout)
    assert rec["status"] == "succeeded" and rec["resume_of"] == "ranks-0001"
    assert [label for label, r in rec["ranks"].items() if r["status"] == "computed"] == ["node=host00/rank=5"]
    got = json.loads((job8 / ".profui" / rec["summary"]).read_text())
    want = json.loads(profui("summary", job8, "--json").stdout)
    assert_same_tables(got, want)
