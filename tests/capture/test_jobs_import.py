"""Which traces are one job (``capture/format/jobs.py``), on the shared real traces: unrelated
captures (other GPUs, hosts, years) are refused by ``profui import`` with one line naming them, or
imported one folder per job with ``--separate-jobs``; the ranks of one job (HTA's sampled rank 0
and 1, each Nsight export's 2 processes) stay one job; before/after Nsight exports are two runs.

Oracles: the dates in the refusal are computed here from the raw JSON (first complete event,
plus ``baseTimeNanoseconds`` where the file has it); what each separate job holds is compared
with a one-job import of the same file(s) on its own, the path every other test already checks.
"""

from __future__ import annotations

import gzip
import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from profui.capture.format import is_trace_dir, read_manifest
from profui.capture.format.jobs import NotOneJob
from profui.capture.ingest import import_trace

from realdata import shared_trace

PROFUI = str(Path(sys.executable).with_name("profui"))
DF_INDEX = "hta-df_index_resolver-df_index_resolver.json.gz"
MTIA = "hta-mtia_trace_single_rank-mtia_rank_0.json.gz"
AMD = "hta-amd_trace-mi250_minitoy_train_ROCm6_2_kineto.json.gz"
TRITON = "hta-triton_example-triton_example.json.gz"
UNRELATED = (DF_INDEX, MTIA, AMD, TRITON)
RANKS = ("hta-trace_filter-sampled_rank-0.json.gz", "hta-trace_filter-sampled_rank-1.json.gz")


def profui(*args: str | Path) -> subprocess.CompletedProcess:
    return subprocess.run(
        [PROFUI, *map(str, args)], capture_output=True, text=True, timeout=300, stdin=subprocess.DEVNULL
    )


def first_day(name: str) -> str:
    """The UTC day of a shared trace's first complete event, read from its raw JSON."""
    doc = json.loads(gzip.decompress(shared_trace(name).read_bytes()))
    first_us = min(float(e["ts"]) for e in doc["traceEvents"] if e.get("ph") == "X" and "ts" in e)
    ns = int(doc.get("baseTimeNanoseconds") or 0) + int(first_us * 1000)
    return time.strftime("%Y-%m-%d", time.gmtime(ns / 1e9))


def test_unrelated_traces_are_refused_in_one_line(tmp_path: Path) -> None:
    out = tmp_path / "t"
    proc = profui("import", *(shared_trace(n) for n in UNRELATED), "-o", out)
    assert proc.returncode == 2, proc.stderr
    assert "Traceback" not in proc.stderr
    [line] = proc.stderr.splitlines()
    # the job is the earliest (all four are alone); the three others are named, and why
    days = {n: first_day(n) for n in UNRELATED}
    assert sorted(days.values())[0] == days[DF_INDEX] == "2022-11-30"
    outside = sorted((n for n in UNRELATED if n != DF_INDEX), key=days.get)
    assert line == (
        f"profui: {', '.join(outside)}: not one job with {DF_INDEX} "
        f"(no overlap in time: {days[outside[0]]} vs {days[DF_INDEX]}); import them with --separate-jobs"
    )
    assert not out.exists() and not list(tmp_path.iterdir())  # nothing written, not even beside it


def test_separate_jobs_writes_one_trace_folder_per_job(tmp_path: Path) -> None:
    out = tmp_path / "jobs"
    files = [shared_trace(n) for n in (*UNRELATED, *RANKS)]
    proc = profui("import", *files, "-o", out, "--separate-jobs")
    assert proc.returncode == 0, proc.stderr
    folders = sorted(p for p in out.iterdir())
    assert all(is_trace_dir(f) for f in folders) and len(folders) == 5
    grouped = {f.name: sorted(Path(s["file"]).name for s in read_manifest(f).sources) for f in folders}
    # by hand: the two sampled ranks are one job (same world size, one second apart); the rest alone
    assert sorted(grouped.values()) == sorted([[DF_INDEX], [MTIA], [AMD], [TRITON], list(RANKS)])
    # named so they tell apart: the start (UTC) then the first file's name, in time order
    assert [f.name[:8] for f in folders] == sorted(f.name[:8] for f in folders)
    by_files = {tuple(v): k for k, v in grouped.items()}
    assert by_files[(DF_INDEX,)] == "20221130-044807-hta-df_index_resolver-df_index_resolver"
    assert by_files[RANKS] == "20230428-235138-hta-trace_filter-sampled_rank-0+1"
    for name in (MTIA, AMD):  # each job holds what importing its file alone gives
        alone = tmp_path / f"alone-{name}"
        m = import_trace([shared_trace(name)], alone)
        got = read_manifest(out / by_files[(name,)])
        assert (got.ranks, got.hosts, got.start_ns, got.end_ns) == (m.ranks, m.hosts, m.start_ns, m.end_ns)
        assert [s["num_events"] for s in got.sources] == [s["num_events"] for s in m.sources]
    assert proc.stdout.splitlines()[0] == f"5 jobs, one trace folder each under {out}:"


def test_ranks_of_one_job_stay_one(tmp_path: Path) -> None:
    m = import_trace([shared_trace(n) for n in RANKS], tmp_path / "two")
    assert m.ranks == [0, 1] and len(m.sources) == 2
    # --separate-jobs on one job is that one trace, at -o itself
    proc = profui("import", *(shared_trace(n) for n in RANKS), "-o", tmp_path / "sep", "--separate-jobs")
    assert proc.returncode == 0, proc.stderr
    assert is_trace_dir(tmp_path / "sep") and read_manifest(tmp_path / "sep").ranks == [0, 1]


def test_nsys_exports_each_one_job_before_and_after_two_runs(tmp_path: Path) -> None:
    nsys = shared_trace("nsys/h100_2gpu_1s.sqlite").parent
    m = import_trace([nsys / "h100_2gpu_1s.sqlite"], tmp_path / "h100")
    assert m.ranks == [0, 1]
    for name in ("mfu_2gpu_before.sqlite", "mfu_2gpu_after.sqlite"):
        assert import_trace([nsys / name], tmp_path / name).ranks == [0, 1]
    with pytest.raises(NotOneJob) as err:
        import_trace([nsys / "mfu_2gpu_before.sqlite", nsys / "mfu_2gpu_after.sqlite"], tmp_path / "both")
    before, after = (
        read_manifest(tmp_path / "mfu_2gpu_before.sqlite"),
        read_manifest(tmp_path / "mfu_2gpu_after.sqlite"),
    )
    assert before.end_ns < after.start_ns  # the oracle: the two runs' own imports do not overlap
    assert str(err.value).startswith(
        "mfu_2gpu_after.sqlite: not one job with mfu_2gpu_before.sqlite (no overlap"
    )
    assert not (tmp_path / "both").exists()


def test_summary_of_a_folder_of_unrelated_traces_is_refused(tmp_path: Path) -> None:
    folder = tmp_path / "mixed"
    folder.mkdir()
    for n in (DF_INDEX, AMD):
        (folder / n).symlink_to(shared_trace(n))
    env_cache = {"PROFUI_CACHE": str(tmp_path / "cache")}
    proc = subprocess.run(
        [PROFUI, "summary", str(folder)],
        capture_output=True,
        text=True,
        timeout=300,
        env={**os.environ, **env_cache},
    )
    assert proc.returncode == 2 and "Traceback" not in proc.stderr
    [line] = proc.stderr.splitlines()
    assert line.startswith(f"profui: {AMD}: not one job with {DF_INDEX} (no overlap in time: ")
    assert line.endswith("open them with profui open to pick one, or profui import --separate-jobs")


def test_the_reason_names_different_hosts_and_a_rank_twice(tmp_path: Path) -> None:
    # both files record their host (raw JSON: host_name), and they differ
    ns = "hta-ns_resolution_trace-rank-0.Apr_03_18_51_38.1102.pt.trace.json.gz"
    hosts = {n: json.loads(gzip.decompress(shared_trace(n).read_bytes()))["host_name"] for n in (ns, MTIA)}
    assert len(set(hosts.values())) == 2
    with pytest.raises(NotOneJob) as err:
        import_trace([shared_trace(ns), shared_trace(MTIA)], tmp_path / "hosts")
    assert str(err.value).startswith(
        f"{MTIA}: not one job with {ns} (different hosts, no overlap in time: {first_day(MTIA)} vs {first_day(ns)})"
    )
    # the same capture of rank 0 under two names: at the same time, rank 0 twice is two jobs
    copy = tmp_path / "copy-of-rank0.json.gz"
    copy.write_bytes(shared_trace(RANKS[0]).read_bytes())
    with pytest.raises(NotOneJob) as err:
        import_trace([shared_trace(RANKS[0]), copy], tmp_path / "twice")
    assert f"not one job with {RANKS[0]} (both rank 0)" in str(err.value)
