"""A 2-node profcap job on this one machine: two real ``profcap`` runs at once, each a rank of one
gloo DDP training on CPU (``RANK``/``WORLD_SIZE``, rendezvous on localhost), told apart as nodes
by ``--node node-a`` / ``--node node-b`` (profcap's existing host-name override: nothing lower is
needed) and made one job by ``PROFUI_JOB_ID``.

(a) Both write into one shared ``-o``: each node keeps its own manifest in ``node=<host>/``, the
folder opens as one job (summary, dashboard, timeline). (b) Each writes its own folder: ``profui
summary a/ b/`` is one job; a folder of another job beside them is refused with one line.

Oracles: the events and the step windows are read here from the Parquet files with pyarrow
(``test_profcap_support``), per node and rank; the manifests' statuses and ranks from their files.
"""

from __future__ import annotations

import asyncio
import json
import os
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest
from test_profcap_support import PROFCAP, events_files, read_events, steps_of

from profui.capture.format import read_manifest
from profui.capture.ingest import import_trace

from ddp_job import DDP_JOB
from realdata import shared_trace

PROFUI = str(Path(sys.executable).with_name("profui"))
NODES = ("node-a", "node-b")


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def two_nodes(tmp: Path, outs: tuple[Path, Path], job_id: str) -> list[subprocess.CompletedProcess]:
    """Run the two nodes' profcap at once (rank r on NODES[r], writing outs[r]); their results."""
    job = tmp / "job.py"
    job.write_text(DDP_JOB)
    port = str(free_port())
    procs = []
    for rank, (node, out) in enumerate(zip(NODES, outs, strict=True)):
        env = {
            **os.environ,
            "PROFUI_JOB_ID": job_id,
            "RANK": str(rank),
            "WORLD_SIZE": "2",
            "MASTER_ADDR": "127.0.0.1",
            "MASTER_PORT": port,
            "OMP_NUM_THREADS": "1",
        }
        cmd = [*PROFCAP, "-o", str(out), "--node", node, "--steps", "3-4", "--", sys.executable, str(job)]
        procs.append(
            subprocess.Popen(cmd, cwd=tmp, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        )
    done = []
    try:
        for p in procs:
            out, err = p.communicate(timeout=300)
            done.append(subprocess.CompletedProcess(p.args, p.returncode, out, err))
            if p.returncode != 0:  # the other rank would wait for this one forever
                break
    finally:
        for p in procs:
            if p.poll() is None:
                p.terminate()
                p.communicate(timeout=60)
    return done


@pytest.fixture(scope="module")
def shared(tmp_path_factory) -> Path:
    tmp = tmp_path_factory.mktemp("multinode")
    trace = tmp / "trace"
    for proc in two_nodes(tmp, (trace, trace), "job-shared-1"):
        assert proc.returncode == 0, proc.stderr[-3000:]
    return trace


@pytest.fixture(scope="module")
def apart(tmp_path_factory) -> tuple[Path, Path]:
    tmp = tmp_path_factory.mktemp("pernode")
    a, b = tmp / "run-a", tmp / "run-b"
    for proc in two_nodes(tmp, (a, b), "job-folders-1"):
        assert proc.returncode == 0, proc.stderr[-3000:]
    return a, b


def profui(*args: object, cache: Path) -> subprocess.CompletedProcess:
    env = {**os.environ, "PROFUI_CACHE": str(cache)}
    return subprocess.run([PROFUI, *map(str, args)], capture_output=True, text=True, timeout=300, env=env)


def raw_steps(traces: list[Path]) -> dict[tuple[str, int, int], int]:
    """(node, rank, step) -> the ProfilerStep#step duration, from the events files themselves."""
    out = {}
    for trace in traces:
        for f in events_files(trace):
            node, rank = f.parent.parent.name.removeprefix("node="), int(f.parent.name.removeprefix("rank="))
            for n, row in steps_of(read_events(f.parent.parent.parent, rank)).items():
                out[(node, rank, n)] = row["dur"]
    return out


def assert_one_job(summary: dict, traces: list[Path]) -> None:
    assert summary["trace"]["nodes"] == list(NODES)
    assert summary["trace"]["ranks"] == [0, 1]
    assert summary["trace"]["events"] == sum(len(read_events(t)) for t in traces)
    windows = {
        (w["node"], w["rank"], w["step"]): w["dur_ns"] for w in summary["sections"]["steps"]["windows"]
    }
    assert windows == raw_steps(traces) and len(windows) == 4  # steps 3 and 4 of each rank


def test_shared_folder_keeps_a_manifest_per_node_and_reads_as_one_job(shared: Path, tmp_path: Path) -> None:
    per_node = {n: json.loads((shared / f"node={n}" / "manifest.json").read_text()) for n in NODES}
    assert [per_node[n]["ranks"] for n in NODES] == [[0], [1]]
    assert all(
        m["status"] == "completed" and m["capture"]["job_id"] == "job-shared-1" for m in per_node.values()
    )
    assert json.loads((shared / "manifest.json").read_text())["capture"]["per_node"] is True
    m = read_manifest(shared)
    assert (m.status, m.hosts, m.ranks, m.exit_code) == ("completed", list(NODES), [0, 1], 0)
    assert m.start_ns == min(p["start_ns"] for p in per_node.values())
    assert m.end_ns == max(p["end_ns"] for p in per_node.values())
    assert not any(p.name.startswith(".spool") for p in shared.iterdir())  # each node cleaned its own
    proc = profui("summary", "--json", shared, cache=tmp_path / "cache")
    assert proc.returncode == 0, proc.stderr
    assert_one_job(json.loads(proc.stdout), [shared])


def test_a_node_cannot_join_twice_nor_another_job(shared: Path, tmp_path: Path) -> None:
    before = sorted(p.relative_to(shared) for p in shared.rglob("*") if ".profui" not in p.parts)
    for job_id, node, words in (
        ("job-shared-1", "node-a", "already holds node node-a"),
        ("another-job", "node-c", "holds another capture (job id job-shared-1"),
    ):
        env = {**os.environ, "PROFUI_JOB_ID": job_id}
        proc = subprocess.run(
            [*PROFCAP, "-o", str(shared), "--node", node, "--", sys.executable, "-c", "pass"],
            capture_output=True,
            text=True,
            timeout=120,
            env=env,
        )
        assert proc.returncode == 2, proc.stderr
        assert proc.stderr.splitlines() == [f"profcap: {shared}: {proc.stderr.split(': ', 2)[2].strip()}"]
        assert words in proc.stderr
    after = sorted(p.relative_to(shared) for p in shared.rglob("*") if ".profui" not in p.parts)
    assert after == before  # nothing written or removed


def test_two_node_folders_are_one_job_on_the_command_line(apart: tuple[Path, Path], tmp_path: Path) -> None:
    a, b = apart
    assert read_manifest(a).hosts == ["node-a"] and read_manifest(b).hosts == ["node-b"]
    proc = profui("summary", "--json", a, b, cache=tmp_path / "cache")
    assert proc.returncode == 0, proc.stderr
    assert_one_job(json.loads(proc.stdout), [a, b])
    # the same again is the combined trace built before, not a new one
    again = profui("summary", "--json", b, a, cache=tmp_path / "cache")
    assert again.returncode == 0, again.stderr
    assert len(list((tmp_path / "cache" / "combined").iterdir())) == 2  # the key holds the order


def test_folders_of_other_jobs_are_refused_in_one_line(apart: tuple[Path, Path], tmp_path: Path) -> None:
    a, _ = apart
    other = tmp_path / "df_index"
    import_trace([shared_trace("hta-df_index_resolver-df_index_resolver.json.gz")], other)
    for cmd in ("summary", "open"):
        proc = profui(cmd, a, other, cache=tmp_path / "cache")
        assert proc.returncode == 2 and "Traceback" not in proc.stderr
        [line] = proc.stderr.splitlines()
        # both jobs are alone: the one that started first is the job, the other is named
        day = time.strftime("%Y-%m-%d", time.gmtime(read_manifest(a).start_ns / 1e9))
        assert line == (
            f"profui: run-a: not one job with df_index (no overlap in time: {day} vs 2022-11-30); "
            "open each folder on its own"
        )
    assert not (tmp_path / "cache" / "combined").exists()


def test_dashboard_and_timeline_show_both_nodes_as_one_job(shared: Path) -> None:
    from profui.tui.app import OpenTarget, ProfuiApp
    from profui.tui.screens.trace import TraceScreen
    from profui.tui.timeline import TimelineView
    from profui.tui.views.dashboard import DashboardView

    async def until(pilot, cond) -> None:
        for _ in range(1500):
            await pilot.pause()
            if cond():
                return
            await asyncio.sleep(0.02)
        raise AssertionError("never happened")

    async def go() -> None:
        app = ProfuiApp(OpenTarget("trace", shared), poll_s=600)
        async with app.run_test(size=(120, 40)) as pilot:
            view = app.screen.query_one(DashboardView)
            await until(pilot, lambda: view.complete)
            screen = app.screen
            assert isinstance(screen, TraceScreen)
            title = str(screen.query_one("#trace-title").render())
            assert title.startswith("job · completed · 2 nodes · 2 ranks"), title
            await pilot.press("5")
            tl = app.screen.query_one(TimelineView)
            await until(pilot, lambda: tl.ready)
            lanes = tl.state.lanes
            assert sorted(ln.label for ln in lanes if ln.kind == "node") == list(NODES)
            ranks = sorted((ln.node, ln.rank) for ln in lanes if ln.kind == "rank")
            assert ranks == [("node-a", 0), ("node-b", 1)]

    asyncio.run(go())
