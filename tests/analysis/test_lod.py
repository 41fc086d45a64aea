"""The timeline's level-of-detail index, checked against the raw events of real traces.

HTA's NCCL trace (imported with the project's importer) is the main subject; a small synthetic
multi-rank trace (from samples/generate_synthetic.py) covers multi-node lanes and metrics.
"""

from __future__ import annotations

import importlib.util
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import polars as pl
import pytest

from profui.analysis import open_trace
from profui.analysis.intervals import union_length
from profui.analysis.lod import LodIndex, _rows_among
from profui.analysis.lod_open import build_lod, open_lod
from profui.analysis.lod_raster import FrameRaster
from profui.capture.format import open_trace_dir
from profui.capture.ingest import import_trace

from realdata import REPO, SAMPLES, shared_trace

NCCL = "hta-nccl_parser_config-nccl_data.json.gz"


@pytest.fixture(scope="module")
def nccl(tmp_path_factory):
    """(LodIndex, raw events with relative ``t``) of the NCCL trace, in a private copy."""
    out = tmp_path_factory.mktemp("lod") / "nccl"
    import_trace([shared_trace(NCCL)], out)
    seen = []
    ix = open_lod(out, progress=lambda f, m: seen.append(f))
    ev = open_trace(out).events().collect().with_columns((pl.col("ts") - ix.base_ns).alias("t"))
    ix.progress_seen = seen
    return ix, ev


def _lane(ix: LodIndex, kind: str, **attrs):
    return next(
        ln for ln in ix.lanes() if ln.kind == kind and all(getattr(ln, k) == v for k, v in attrs.items())
    )


def _launches(ev: pl.DataFrame) -> pl.DataFrame:
    dev = ev.filter(
        pl.col("device") >= 0,
        pl.col("kind").is_in(["kernel", "memcpy", "memset", "sync"]),
        pl.col("correlation").is_not_null(),
    )
    first = (
        dev.sort("ts")
        .group_by("correlation", maintain_order=True)
        .agg(pl.col("device").first().alias("target"))
    )
    return ev.filter(pl.col("kind").is_in(["runtime", "driver"]), pl.col("device") < 0).join(
        first, on="correlation"
    )


def test_every_event_indexed_once_plus_launch_copies(nccl):
    ix, ev = nccl
    launches = _launches(ev)
    assert launches.height > 2000
    assert ix.n_events == ev.height + launches.height
    lanes = ix.lanes()
    kinds = [ln.kind for ln in lanes]
    assert kinds.count("node") == 1 and kinds.count("rank") == 1 and kinds.count("gpu") == 1
    assert {ln.stream for ln in lanes if ln.kind == "stream"} == set(
        ev.filter(pl.col("device") >= 0)["stream"].unique()
    )
    threads = {(ln.pid, ln.tid) for ln in lanes if ln.kind == "thread"}
    assert threads == set(ev.filter(pl.col("device") < 0).select("pid", "tid").unique().iter_rows())
    assert sum(ln.n_events for ln in lanes if ln.kind == "launch") == launches.height
    assert ix.progress_seen[-1] == 1.0 and ix.progress_seen == sorted(ix.progress_seen)


def _raw_lane(ev: pl.DataFrame, ln) -> pl.DataFrame:
    if ln.kind == "thread":
        return ev.filter(pl.col("device") < 0, pl.col("pid") == ln.pid, pl.col("tid") == ln.tid)
    if ln.kind == "stream":
        return ev.filter(pl.col("device") == ln.device, pl.col("stream") == ln.stream)
    return _launches(ev).filter(pl.col("target") == ln.device)


@pytest.mark.parametrize("which", ["thread", "stream", "launch"])
def test_query_returns_exactly_the_events_in_the_window(nccl, which):
    ix, ev = nccl
    lanes = [ln for ln in ix.lanes() if ln.kind == which]
    steps = ix.steps()
    rng = np.random.default_rng(1)
    windows = [(s.t0, s.t1) for s in steps] + [(0, ix.span_ns + 1)]
    for _ in range(6):
        a = int(rng.integers(0, ix.span_ns))
        windows.append((a, a + int(rng.integers(1_000, 5_000_000))))
    for ln in lanes:
        raw = _raw_lane(ev, ln)
        for t0, t1 in windows:
            got = ix.query(ln, t0, t1, max_events=10**9)
            want = raw.filter(
                pl.col("t") < t1,
                (pl.col("t") + pl.col("dur") > t0) | ((pl.col("dur") == 0) & (pl.col("t") >= t0)),
            )
            assert got.height == want.height, (ln.label, t0, t1)
            assert sorted(zip(got["t"], got["dur"], got["name"], strict=True)) == sorted(
                zip(want["t"], want["dur"], want["name"], strict=True)
            )


def test_coarse_query_returns_density_cells(nccl):
    ix, ev = nccl
    ln = _lane(ix, "stream", stream=7)
    cells = ix.query(ln, 0, ix.span_ns, max_events=100, max_cells=256)
    assert set(cells.columns) == {"row", "level", "bucket", "t0", "t1", "busy_ns", "kind"}
    level = cells["level"][0]
    assert (ix.span_ns / (ix.bucket_ns << level)) <= 256 < ix.span_ns / (
        ix.bucket_ns << max(level - 1, 0)
    ) or level == 0
    raw = _raw_lane(ev, ln)
    assert cells["busy_ns"].sum() == raw["dur"].sum()  # gpu annotations and kernels, each row counted once
    assert set(cells["kind"]) <= {"kernel", "memcpy", "memset", "gpu_annotation"}


def test_density_tiles_sum_to_busy_time(nccl):
    ix, ev = nccl
    for ln in ix.lanes():
        for r, row in enumerate(ln.rows):
            a, b = int(ix.row_start[row]), int(ix.row_start[row + 1])
            total = int((ix.end[a:b] - ix.t[a:b]).sum())
            for level in (0, 3, 9, 16):
                assert ix.tiles(row, level)["busy_ns"].sum() == total, (ln.label, r, level)
    # Kernels of one stream never overlap: the density is that stream's busy time (union of intervals).
    ln = _lane(ix, "stream", stream=7)
    kernel_row = ln.rows[0]  # the stream's activity; GPU annotations nest on the rows below
    assert set(ix.kind[ix.row_start[kernel_row] : ix.row_start[kernel_row + 1]].tolist()) == {6, 7, 8}
    kernels = ev.filter(pl.col("device") == 0, pl.col("stream") == 7, pl.col("kind") != "gpu_annotation")
    busy = union_length(kernels.select(start=pl.col("ts"), end=pl.col("ts") + pl.col("dur"))).collect().item()
    assert ix.tiles(kernel_row, 0)["busy_ns"].sum() == busy == kernels["dur"].sum()
    # One bucket checked cell by cell against the raw events clipped to it.
    tiles = ix.tiles(kernel_row, 4)
    for rec in tiles.sample(20, seed=3, with_replacement=True).iter_rows(named=True):
        b0, b1 = rec["t0"], rec["t1"]
        clipped = kernels.select(
            (
                pl.min_horizontal(pl.col("t") + pl.col("dur"), pl.lit(b1))
                - pl.max_horizontal(pl.col("t"), pl.lit(b0))
            )
            .clip(0)
            .sum()
        ).item()
        assert rec["busy_ns"] == clipped


def test_raster_fine_and_coarse(nccl):
    ix, ev = nccl
    ln = _lane(ix, "stream", stream=7)
    row = ln.rows[0]
    kernels = ev.filter(pl.col("device") == 0, pl.col("stream") == 7, pl.col("kind") != "gpu_annotation")
    s = ix.steps()[1]
    # Fine: 100 µs over 50 cells, from the events themselves.
    t0 = int(kernels.filter(pl.col("t") > s.t0)["t"].min()) - 20_000
    width, t1 = 50, t0 + 100_000
    raster = FrameRaster(ix)
    cells = raster.rows(np.array([row]), t0, t1, width).take(0)
    assert cells.exact
    edges = t0 + (t1 - t0) / width * np.arange(width + 1)
    s_, e_ = kernels["t"].to_numpy().astype(float), (kernels["t"] + kernels["dur"]).to_numpy().astype(float)
    want = np.array(
        [
            np.clip(np.minimum(e_, edges[i + 1]) - np.maximum(s_, edges[i]), 0, None).sum()
            for i in range(width)
        ]
    ) / ((t1 - t0) / width)
    assert np.allclose(cells.busy, np.clip(want, 0, 1), atol=1e-4)
    hit = cells.event[cells.event >= 0]
    assert hit.size and all(ix.name_of(p) in set(kernels["name"]) for p in hit)
    # Coarse: whole trace over 120 cells, from tiles (bucket-rounded, still the same total).
    coarse = raster.rows(np.array([row]), 0, ix.span_ns, 120).take(0)
    assert not coarse.exact and (coarse.event == -1).all()
    assert coarse.busy.max() <= 1.0 and set(coarse.kind[coarse.busy > 0].tolist()) <= {6, 7, 8}
    cw = ix.span_ns / 120
    assert (
        abs(float(coarse.busy.sum()) * cw - kernels["dur"].sum())
        < 0.02 * kernels["dur"].sum() + 2 * ix.bucket_ns
    )


def test_links_launch_to_kernel_and_back(nccl):
    ix, ev = nccl
    launches = _launches(ev)
    thread_rows = [r for ln in ix.lanes() if ln.kind == "thread" for r in ln.rows]
    pos = np.concatenate([np.arange(ix.row_start[r], ix.row_start[r + 1]) for r in thread_rows])
    linked = pos[ix.link[pos] >= 0]
    assert linked.size == launches.height
    for p in linked[:: max(1, linked.size // 40)]:
        launch = ix.event(p)
        k = int(ix.link[p])
        kernel = ix.event(k)
        assert launch["kind"] in ("runtime", "driver") and kernel["device"] == 0
        assert kernel["correlation"] == launch["correlation"]
        assert ix.lane_of(k).kind == "stream"
        back = int(ix.link[k])
        assert ix.lane_of(back).kind == "launch" and ix.event(back)["correlation"] == launch["correlation"]
        assert kernel["launch_latency_ns"] == kernel["ts"] - launch["ts"] == launch["launch_latency_ns"]
    # NCCL: every AllReduce kernel links back to the launch that started it.
    nccl_pos = ix.search("ncclKernel_AllReduce")
    assert nccl_pos.size == 15
    for p in nccl_pos:
        back = ix.event(int(ix.link[p]))
        assert (
            back["name"].startswith("cudaLaunchKernel") and back["correlation"] == ix.event(p)["correlation"]
        )


def test_host_rows_are_nesting_depths(nccl):
    """A thread's step markers take its first row (a step need not nest: profcap's end at the
    optimizer call); below them, each row holds the events nested one level deeper."""
    ix, ev = nccl
    steps_by_tid = ev.filter(pl.col("kind") == "step").group_by("tid").agg(pl.col("name")).rows()
    for tid, names in steps_by_tid:
        ln = _lane(ix, "thread", tid=tid)
        a, b = ix.row_start[ln.rows[0]], ix.row_start[ln.rows[0] + 1]
        assert sorted(ix.name_of(p) for p in range(a, b)) == sorted(names)  # every step, nothing else
    with_steps = {tid for tid, _ in steps_by_tid}
    for ln in (x for x in ix.lanes() if x.kind == "thread"):
        activity = ln.rows[1:] if ln.tid in with_steps else ln.rows
        for parent_row, child_row in zip(activity, activity[1:], strict=False):
            pa_, pb = ix.row_start[parent_row], ix.row_start[parent_row + 1]
            ca, cb = ix.row_start[child_row], ix.row_start[child_row + 1]
            ps, pe = ix.t[pa_:pb], ix.end_max[pa_:pb]
            cs, ce = ix.t[ca:cb], ix.end[ca:cb]
            i = np.searchsorted(ps, cs, side="right") - 1
            assert (i >= 0).all()
            assert (ce <= pe[i]).all(), ln.label  # each child lies within an event of the row above
    top = _lane(ix, "thread", tid=max(x.tid for x in ix.lanes() if x.kind == "thread" and len(x.rows) > 6))
    names0 = {ix.name_of(p) for p in range(ix.row_start[top.rows[0]], ix.row_start[top.rows[0] + 1])}
    assert {"ProfilerStep#4", "ProfilerStep#5", "ProfilerStep#6"} <= names0


def test_steps_search_and_find(nccl):
    ix, ev = nccl
    raw = ev.filter(pl.col("kind") == "step").sort("t")
    assert [(s.number, s.name, s.t0, s.t1) for s in ix.steps()] == [
        (int(n.split("#")[1]), n, t, t + d) for n, t, d in raw.select("name", "t", "dur").iter_rows()
    ]
    got = ix.search("NCCL:ALL_reduce")
    assert (
        got.size == ev.filter(pl.col("name").str.to_lowercase().str.contains("nccl:all_reduce")).height == 30
    )
    assert (np.diff(ix.t[got]) >= 0).all()
    rx = ix.search(r"^nccl(Kernel)?[_:](AllReduce|all_reduce)", regex=True)
    assert rx.size == 45
    with pytest.raises(ValueError, match="bad regular expression"):
        ix.search("(", regex=True)
    name = ev.filter(pl.col("name").str.starts_with("ncclKernel_Broadcast"))["name"][0]
    p = ix.find_kernel(name=name)
    first = ev.filter(pl.col("name") == name).sort("ts").row(0, named=True)
    assert ix.event(p)["ts"] == first["ts"] and ix.find_kernel(name="no such kernel") == -1


def test_cache_is_reused_then_rebuilt_when_the_trace_changes(tmp_path):
    """The index is the timeline stage's output: kept under its key, which follows the trace's
    files (through the ingest stage's fingerprint), so a touched events file builds a new one."""
    out = tmp_path / "t"
    import_trace([shared_trace("hta-trace_compare-base-base.json.gz")], out)
    folder = build_lod(out)
    stamp = (folder / "index.json").stat().st_mtime_ns
    assert build_lod(out) == folder and (folder / "index.json").stat().st_mtime_ns == stamp
    f = open_trace_dir(out).events[0].path
    os.utime(f, ns=(f.stat().st_atime_ns, f.stat().st_mtime_ns + 10**9))
    again = build_lod(out)
    assert again != folder and again.parent == folder.parent
    assert (again / "index.json").stat().st_mtime_ns != stamp
    assert not [p for p in folder.parent.iterdir() if p.name.startswith(".tmp")]


def test_index_is_rebuilt_when_its_code_changes_and_only_then(tmp_path):
    """Built by a copy of profui in a fresh interpreter, the copy then edited for real: an edit of
    a module the index's code loads (lod, launch) rebuilds it; one of a module it does not load
    (the timeline's state) reuses it: the stage's code version, the rule of every stage."""
    out = tmp_path / "t"
    import_trace([shared_trace("hta-trace_compare-base-base.json.gz")], out)
    site = tmp_path / "site"
    for folder in ("capture", "analysis", "tui"):
        shutil.copytree(REPO / folder, site / "profui" / folder, ignore=shutil.ignore_patterns("__pycache__"))
    code = (
        "import json, sys\n"
        "from profui.analysis import lod_open\n"
        "from profui.analysis.pipeline.registry import REGISTRY\n"
        "assert lod_open.__file__.startswith(sys.argv[1])\n"
        "folder = lod_open.build_lod(sys.argv[2])\n"
        "meta = json.loads((folder / 'meta.json').read_text())\n"
        "print(json.dumps([meta['code_version'], REGISTRY.stages['timeline'].code_version, str(folder)]))\n"
    )

    def build() -> tuple[str, str, int]:
        env = {**os.environ, "PYTHONPATH": str(site)}
        run = subprocess.run(
            [sys.executable, "-c", code, str(site), str(out)],
            env=env,
            capture_output=True,
            text=True,
            check=True,
        )
        built, running, folder = json.loads(run.stdout)
        assert built == running  # the index on disk is the running code's
        return built, folder, (Path(folder) / "index.json").stat().st_mtime_ns

    first = build()
    assert build() == first  # reused
    with open(site / "profui" / "tui" / "timeline" / "state.py", "a") as fh:
        fh.write("\nSTATE_EDITED = 1\n")
    assert build() == first  # not the index's code: reused
    with open(site / "profui" / "analysis" / "lod.py", "a") as fh:
        fh.write("\nLOD_EDITED = 1\n")
    again = build()
    assert again[0] != first[0] and again[1] != first[1] and again[2] != first[2]  # rebuilt
    with open(site / "profui" / "analysis" / "launch.py", "a") as fh:
        fh.write("\nLAUNCH_EDITED = 1\n")
    third = build()
    assert third[0] not in (first[0], again[0]) and third[2] != again[2]  # the launch links' code


def _generator():
    spec = importlib.util.spec_from_file_location("generate_synthetic", SAMPLES / "generate_synthetic.py")
    mod = importlib.util.module_from_spec(spec)
    sys.modules.setdefault("generate_synthetic", mod)
    spec.loader.exec_module(mod)
    return sys.modules["generate_synthetic"]


def test_synthetic_multi_node_lanes_metrics_and_nccl(tmp_path):
    """Synthetic (the corpus has no 2-node, 4-GPU run): lanes per node/rank/GPU, metric lanes, NCCL links."""
    gen = _generator()
    info = gen.generate(tmp_path / "syn", events=40_000, nodes=2, gpus_per_node=2, streams=2, steps=4, seed=2)
    ix = open_lod(info.path)
    lanes = ix.lanes()
    assert [ln.label for ln in lanes if ln.kind == "node"] == ["node-0", "node-1"]
    assert [ln.rank for ln in lanes if ln.kind == "rank"] == [0, 1, 2, 3]
    assert sum(ln.kind == "stream" for ln in lanes) == 4 * 3  # 2 compute streams + the NCCL stream per GPU
    metric_lanes = [ln for ln in lanes if ln.kind == "metric"]
    assert len(metric_lanes) == 2 * (2 * 3 + 1) and sum(ln.n_events for ln in metric_lanes) == info.metrics
    # tree order: a node's metrics come after its ranks
    order = [ln.kind for ln in lanes]
    assert order.index("metrics") > order.index("rank")
    assert [s.name for s in ix.steps()] == [f"ProfilerStep#{i}" for i in range(1, 5)]
    nccl = ix.search("ncclDevKernel")
    assert nccl.size == 4 * 4 * 2  # two AllReduce buckets per step on each of the 4 ranks
    assert {ix.lane_of(p).stream for p in nccl} == {gen.COMM_STREAM}
    for p in nccl[:8]:
        launch = int(ix.link[p])
        assert ix.name_of(launch) == "cudaLaunchKernelExC" and int(ix.link[launch]) == p
    util = next(ln for ln in metric_lanes if ln.label == "gpu0 util_pct")
    v = ix.metric_cells(util.series, 0, ix.span_ns, 40)
    assert np.nanmax(v) <= 100.0 and np.isfinite(v[1:]).all()
    shutil.rmtree(info.path)


def test_read_only_trace_indexes_into_the_user_cache(tmp_path, monkeypatch):
    """A trace folder we may not write (tests run as root, so the permission check is what is faked)."""
    import profui.capture.format.layout as layout

    out = tmp_path / "t"
    import_trace([shared_trace("hta-trace_compare-base-base.json.gz")], out)
    monkeypatch.setenv("PROFUI_CACHE", str(tmp_path / "cache"))
    monkeypatch.setattr(layout.os, "access", lambda path, mode: False)
    ix = open_lod(out)
    # the timeline stage's artifacts in the trace's private folder there: <cache>/traces/<id>/artifacts/timeline/<key>
    assert ix.folder.parents[3] == tmp_path / "cache" / "traces" and ix.folder.parent.name == "timeline"
    assert not (out / ".profui").exists()
    assert ix.n_events > 0 and ix.event(0)["name"]


def test_metrics_only_trace(tmp_path):
    """Synthetic (a capture that recorded only sampled metrics: the corpus has none)."""
    from profui.capture.format import Manifest, to_table, write_manifest, write_metrics

    out = tmp_path / "m"
    ts = [1_700_000_000_000_000_000 + i * 100_000_000 for i in range(10)]
    write_metrics(
        out,
        "h",
        to_table(
            "metrics",
            {
                "ts": ts,
                "source": ["gpu"] * 10,
                "device": [0] * 10,
                "metric": ["util_pct"] * 10,
                "value": [float(i * 10) for i in range(10)],
            },
        ),
    )
    write_manifest(out, Manifest(name="m", status="completed"))
    ix = open_lod(out)
    assert ix.n_events == 0 and ix.base_ns == ts[0] and ix.span_ns == ts[-1] - ts[0]
    (metric,) = [ln for ln in ix.lanes() if ln.kind == "metric"]
    v = ix.metric_cells(metric.series, 0, ix.span_ns + 1, 10)
    assert v.tolist() == [float(i * 10) for i in range(10)]
    assert ix.query(metric, 0, ix.span_ns + 1)["value"].to_list() == v.tolist()


@pytest.mark.parametrize("wide", [False, True])
def test_rows_among_is_a_semi_join(wide):
    """The index's match of links to events (``_rows_among``: sorted packed keys) finds exactly
    the rows a set of tuples finds, with values at int64's ends too (keys ranked, not packed)."""
    big = np.iinfo(np.int64)
    pool = np.array([big.min, -1, 0, 1, 5, 2**40, big.max]) if wide else np.arange(-2, 6)
    rng = np.random.default_rng(7)
    cols = [rng.choice(pool, 2000) for _ in range(4)]
    at = np.sort(rng.choice(2000, 1500, replace=False))
    of = [rng.choice(pool, 300) for _ in range(4)]
    rows_of = set(zip(*(c.tolist() for c in of), strict=True))
    expected = [i for i, j in enumerate(at.tolist()) if tuple(c[j] for c in cols) in rows_of]
    assert 0 < len(expected) < at.size
    assert _rows_among(cols, at, of).tolist() == expected
