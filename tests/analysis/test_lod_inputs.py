"""The timeline index reads what the stage graph found: its steps are the steps stage's windows
and its links the correlate stage's (launched work and device syncs), held against the steps stage's output row for row
and against a correlation join of the raw events in plain Python, on real traces (HTA's test
traces, imported with the project's importer). A killed build leaves no half index."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
from pathlib import Path

import numpy as np
import pyarrow.parquet as pq
import pytest

from profui.analysis import open_trace
from profui.analysis.lod import LodIndex
from profui.analysis.lod_open import open_lod
from profui.analysis.pipeline.store import compute
from profui.capture.format import open_trace_dir
from profui.capture.ingest import import_trace

from realdata import shared_trace

NCCL = "hta-nccl_parser_config-nccl_data.json.gz"
#: CUDA event syncs on several streams: device-side sync events carrying their call's correlation.
EVENT_SYNC = "hta-critical_path-cuda_event_sync_multi_stream-event_sync_trace.json.gz"
#: Stream waits, stream and context syncs (41 of them) among its kernels and copies.
SIMPLE_ADD = "hta-critical_path-simple_add-benchmark_result_493459_1694039959_trace.json.gz"
PAIR = ("hta-trace_filter-sampled_rank-0.json.gz", "hta-trace_filter-sampled_rank-1.json.gz")


@pytest.fixture(scope="module")
def traces(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    root = tmp_path_factory.mktemp("lod_inputs")
    out = {}
    for name, sources in (
        ("nccl", [NCCL]),
        ("event_sync", [EVENT_SYNC]),
        ("simple_add", [SIMPLE_ADD]),
        ("pair", list(PAIR)),
    ):
        import_trace([shared_trace(s) for s in sources], root / name)
        out[name] = root / name
    return out


@pytest.mark.parametrize("name", ["nccl", "pair"])
def test_steps_are_the_steps_stage_windows_row_for_row(traces: dict[str, Path], name: str) -> None:
    ix = open_lod(traces[name])
    windows = compute(open_trace(traces[name]), ["steps"])["steps"]["windows.parquet"]
    ranks = windows.select("node", "rank").unique(maintain_order=True).rows()
    assert windows.height > 0 and len(ranks) == (2 if name == "pair" else 1)
    got = [
        (s.node, s.rank, s.number, s.name, s.t0 + ix.base_ns, s.t1 + ix.base_ns)
        for node, rank in ranks
        for s in ix.steps(rank=rank, node=node)
    ]
    want = windows.sort("node", "rank", "cpu_start_ns", maintain_order=True).select(
        "node", "rank", "step", "name", "cpu_start_ns", "cpu_end_ns"
    )
    assert got == want.rows()


def test_no_steps_without_step_markers(traces: dict[str, Path]) -> None:
    """Without step markers the steps stage's window is the whole rank: no step to draw."""
    steps = compute(open_trace(traces["event_sync"]), ["steps"])["steps"]
    assert steps["steps.json"]["has_markers"] is False
    assert steps["windows.parquet"]["name"].to_list() == ["(whole trace)"]
    assert open_lod(traces["event_sync"]).steps() == []


def _raw_rows(ix: LodIndex) -> list[dict]:
    """Every events row of the trace in the index's source numbering (its files in order)."""
    cols = ["ts", "kind", "device", "correlation"]
    rows: list[dict] = []
    for rel, _n in ix._files:
        rows.extend(pq.read_table(ix.trace.path / rel, columns=cols).to_pylist())
    return rows


def _plain_join(
    rows: list[dict], kinds: tuple[str, ...] = ("kernel", "memcpy", "memset", "sync")
) -> tuple[dict[int, int], set[tuple[int, int]]]:
    """Host call -> device event by correlation id, in plain Python (one rank): each
    correlation's earliest runtime/driver call; the device events of ``kinds`` carrying it (the
    kernels, copies and memsets it launched, the device side of a sync it issued).
    Returns {call row: its earliest device event's row} and {(call row, device event row)}."""
    call: dict[int, int] = {}
    for i, r in enumerate(rows):
        if r["kind"] in ("runtime", "driver") and r["correlation"] is not None:
            c = r["correlation"]
            if c not in call or r["ts"] < rows[call[c]]["ts"]:
                call[c] = i
    first: dict[int, int] = {}
    pairs: set[tuple[int, int]] = set()
    for i, r in enumerate(rows):
        if r["kind"] in kinds and r["device"] is not None and r["correlation"] in call:
            c = call[r["correlation"]]
            pairs.add((c, i))
            if c not in first or r["ts"] < rows[first[c]]["ts"]:
                first[c] = i
    return first, pairs


@pytest.mark.parametrize("name", ["nccl", "event_sync", "simple_add"])
def test_every_link_is_the_correlation_join_of_the_raw_events(traces: dict[str, Path], name: str) -> None:
    ix = open_lod(traces[name])
    first, pairs = _plain_join(_raw_rows(ix))
    assert pairs
    kinds = {ln.id: ln.kind for ln in ix.lanes()}
    lane_of_row = np.array([kinds[int(ln)] for ln in ix.row_lane])
    lane = np.repeat(lane_of_row, np.diff(ix.row_start))
    src, link = np.asarray(ix.src), np.asarray(ix.link)
    # a call's host row -> its earliest device event
    host = np.flatnonzero((lane == "thread") & (link >= 0))
    assert {int(src[p]): int(src[link[p]]) for p in host} == first
    # every device event -> the call's copy on its GPU's launch lane
    dev = np.flatnonzero(lane == "stream")
    linked = dev[link[dev] >= 0]
    assert (lane[link[linked]] == "launch").all()
    assert {(int(src[link[p]]), int(src[p])) for p in linked} == pairs
    # each call drawn once on a launch lane, linked to the same device event as its host row
    copies = np.flatnonzero(lane == "launch")
    assert sorted(int(s) for s in src[copies]) == sorted(first)
    assert {int(src[p]): int(src[link[p]]) for p in copies} == first


@pytest.mark.parametrize(("name", "syncs"), [("event_sync", 5), ("simple_add", 41)])
def test_sync_events_are_linked_to_their_calls(traces: dict[str, Path], name: str, syncs: int) -> None:
    """The device side of a synchronisation (cudaStreamWaitEvent's, cudaEventSynchronize's) is
    linked to the call that issued it, as before the index read the correlate stage (58f0489):
    from the stage's sync links, which are the plain join of the raw events."""
    ix = open_lod(traces[name])
    _first, pairs = _plain_join(_raw_rows(ix), kinds=("sync",))
    assert len(pairs) == syncs  # the JSON's cuda_sync events, each with its runtime call
    src, link = np.asarray(ix.src), np.asarray(ix.link)
    kinds = {ln.id: ln.kind for ln in ix.lanes()}
    lane = np.repeat(np.array([kinds[int(ln)] for ln in ix.row_lane]), np.diff(ix.row_start))
    dev = {int(src[p]): p for p in np.flatnonzero(lane == "stream")}
    got = {(int(src[link[dev[e]]]), e) for _c, e in pairs if link[dev[e]] >= 0}
    assert got == pairs
    links = compute(open_trace(traces[name]), ["correlate"])["correlate"]["sync_links.parquet"]
    assert links.height == syncs


def _index_files(folder: Path) -> dict[str, bytes]:
    from profui.analysis.lod import INDEX_FILES

    return {name: (folder / name).read_bytes() for name in INDEX_FILES}


@pytest.mark.parametrize("name", ["nccl", "event_sync", "simple_add", "pair"])
def test_the_index_in_memory_is_the_recorded_one(traces: dict[str, Path], name: str) -> None:
    """The timeline stage run in memory (a running capture's way: nothing recorded, its files in
    a scratch folder of the process) writes the same index, byte for byte, as a recorded run."""
    from profui.analysis.pipeline.run import in_memory

    got = in_memory(open_trace(traces[name]), ["timeline"])
    folder = got.timeline.index.parent
    assert "artifacts" not in folder.parts and folder.parent.parent.name == "scratch"
    recorded = open_lod(traces[name]).folder
    assert recorded.parent.name == "timeline" and recorded.parent.parent.name == "artifacts"
    assert _index_files(folder) == _index_files(recorded)
    assert LodIndex(open_trace_dir(traces[name]), folder).n_events > 0


_KILLED_BUILD = """
import os, signal, sys
from profui.analysis.lod_open import build_lod

def progress(fraction, message):
    if message.startswith(sys.argv[2]):
        os.kill(os.getpid(), signal.SIGKILL)

build_lod(sys.argv[1], progress=progress, force=True)
"""


def _kept(trace: Path) -> list[Path]:
    """The timeline stage's artifact folders (not the temporaries a killed run leaves)."""
    root = open_trace_dir(trace).private_dir / "artifacts" / "timeline"
    return sorted(p for p in root.iterdir() if not p.name.startswith(".")) if root.is_dir() else []


@pytest.mark.parametrize("at", ["indexing", "writing the index"])
def test_a_killed_build_leaves_no_half_index(tmp_path: Path, at: str) -> None:
    trace = tmp_path / "t"
    import_trace([shared_trace(EVENT_SYNC)], trace)

    def killed() -> None:
        run = subprocess.run(
            [sys.executable, "-c", _KILLED_BUILD, str(trace), at],
            capture_output=True,
            text=True,
        )
        assert run.returncode == -signal.SIGKILL, run.stderr

    killed()  # cold: nothing kept
    assert _kept(trace) == []
    whole = open_lod(trace)
    assert _kept(trace) == [whole.folder]
    meta = json.loads((whole.folder / "index.json").read_text())
    before = {p.name: p.read_bytes() for p in whole.folder.iterdir()}
    killed()  # warm: the index there is left as it was, whole
    assert _kept(trace) == [whole.folder]
    assert {p.name: p.read_bytes() for p in whole.folder.iterdir()} == before
    again = open_lod(trace)
    assert again.folder == whole.folder and json.loads((again.folder / "index.json").read_text()) == meta
    assert np.array_equal(again.link, whole.link) and again.n_events == whole.n_events == meta["n_events"]


def test_the_timeline_draws_the_newest_runs_steps_and_records_no_other_parameters(tmp_path: Path) -> None:
    """The timeline is drawn from the run the dashboard shows (the newest, whatever its
    parameters): after ``profui analyze --set hta_compat=true`` its steps are HTA's (the last
    one dropped, as the Steps view lists them), drawing it records a run with the user's
    parameters, never the defaults (the dashboard's next answers stay HTA's); after a plain
    run it is the default timeline again, the same files as first built."""
    from profui.analysis.pipeline.answers import answers
    from profui.analysis.pipeline.engine import analyze
    from profui.analysis.pipeline.outputs import list_runs
    from profui.analysis.trace import Trace

    trace = tmp_path / "t"
    import_trace([shared_trace(NCCL)], trace)
    default = open_lod(trace)
    files = _index_files(default.folder)
    analyze(trace, overrides={"hta_compat": "true"})
    hta = open_lod(trace)
    assert hta.folder != default.folder
    windows = compute(open_trace(trace), ["steps"], {"hta_compat": True})["steps"]["windows.parquet"]
    assert len(hta.steps()) == windows.height == len(default.steps()) - 1  # HTA drops the last step
    assert all(r.params["hta_compat"] for r in list_runs(trace)[1:])  # the timeline's run: the user's
    got = answers(trace, ["kernels", "summary"], lambda: Trace(open_trace_dir(trace)))
    assert got.source == "cache" and got.summary.summary.params["hta_compat"] is True
    analyze(trace)
    again = open_lod(trace)
    assert again.folder == default.folder and _index_files(again.folder) == files


def test_a_running_capture_computes_its_index(tmp_path: Path) -> None:
    """A capture still running has more events than any recorded run saw: its timeline is
    computed in memory from the events there now, never read from (or recorded as) a run."""
    from dataclasses import replace

    from profui.analysis.pipeline.engine import analyze
    from profui.analysis.pipeline.outputs import list_runs
    from profui.capture.format import read_manifest, write_manifest

    trace = tmp_path / "t"
    import_trace([shared_trace(EVENT_SYNC)], trace)
    analyze(trace, stages=["ingest", "steps", "correlate", "timeline"])
    recorded = _kept(trace)
    write_manifest(trace, replace(read_manifest(trace), status="running", end_ns=None))
    ix = open_lod(trace)
    assert ix.folder not in recorded and ix.folder.parent.parent.name == "scratch"
    assert len(list_runs(trace)) == 1 and ix.n_events > 0 and (np.asarray(ix.link) >= 0).any()
