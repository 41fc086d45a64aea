"""The seeded synthetic trace generator (samples/generate_synthetic.py).

Synthetic data on purpose: these tests check the generator itself (shape, links, determinism).
"""

from __future__ import annotations

import importlib.util
import json
import subprocess
import sys

import polars as pl
import pyarrow.parquet as pq
import pytest

from profui.analysis import open_trace
from profui.capture.format import EVENT_KINDS, open_trace_dir

from realdata import SAMPLES


def _load():
    spec = importlib.util.spec_from_file_location("generate_synthetic", SAMPLES / "generate_synthetic.py")
    mod = importlib.util.module_from_spec(spec)
    sys.modules.setdefault("generate_synthetic", mod)
    spec.loader.exec_module(mod)
    return sys.modules["generate_synthetic"]


gen = _load()


@pytest.fixture(scope="module")
def small(tmp_path_factory):
    out = tmp_path_factory.mktemp("syn") / "trace"
    info = gen.generate(out, events=60_001, nodes=2, gpus_per_node=2, streams=3, steps=5, seed=3)
    return info, open_trace(out).events().collect()


def test_counts_and_manifest(small):
    info, ev = small
    assert info.events == 60_001 == ev.height
    td = open_trace_dir(info.path)
    assert td.num_events == 60_001
    assert td.manifest.synthetic is True and td.manifest.source == "synthetic"
    assert td.manifest.status == "completed"
    assert td.ranks == [("node-0", 0), ("node-0", 1), ("node-1", 2), ("node-1", 3)]
    assert set(ev["kind"].unique()) <= set(EVENT_KINDS)
    assert dict(
        zip(*ev["kind"].value_counts().sort("kind").to_dict(as_series=False).values(), strict=True)
    ) == {k: v for k, v in sorted(info.kinds.items())}
    steps = ev.filter(pl.col("kind") == "step")
    assert steps.height == 4 * 5
    assert sorted(steps.filter(pl.col("rank") == 0)["name"]) == sorted(
        f"ProfilerStep#{i}" for i in range(1, 6)
    )
    assert info.metrics == sum(f.num_rows for f in td.metrics) > 0
    assert td.manifest.start_ns == ev["ts"].min()
    assert td.manifest.end_ns == (ev["ts"] + ev["dur"]).max()


def test_correlation_links_resolve(small):
    _, ev = small
    launches = ev.filter(pl.col("kind") == "runtime", pl.col("correlation").is_not_null())
    device = ev.filter(pl.col("device") >= 0)
    assert device.height == launches.height
    j = launches.join(device, on=["rank", "correlation"], suffix="_dev", how="inner")
    assert j.height == launches.height  # every launch finds exactly one device event
    assert (j["ts_dev"] >= j["ts"]).all()  # a kernel never starts before its launch
    nccl = j.filter(pl.col("name_dev").str.contains("nccl"))
    assert nccl.height > 0 and (nccl["stream_dev"] == gen.COMM_STREAM).all()
    assert set(nccl["name"]) == {"cudaLaunchKernelExC"}
    # memcpy carry bytes and a direction; kernels do not
    mc = device.filter(pl.col("kind") == "memcpy")
    assert mc["bytes"].null_count() == 0 and set(mc["memcpy_kind"]) == {"HtoD", "DtoH"}
    assert (
        device.filter(pl.col("kind") == "kernel")["bytes"].null_count()
        == device.filter(pl.col("kind") == "kernel").height
    )


def test_streams_serialise_and_collectives_align(small):
    _, ev = small
    dev = ev.filter(pl.col("device") >= 0).sort("rank", "stream", "ts")
    prev_end = dev.select((pl.col("ts") + pl.col("dur")).shift(1).over("rank", "stream").alias("p"))["p"]
    assert ((dev["ts"] >= prev_end) | prev_end.is_null()).all()  # no overlap on one stream
    assert dev.group_by("rank").agg(pl.col("stream").n_unique())["stream"].to_list() == [4] * 4
    nccl = ev.filter(pl.col("name").str.starts_with("ncclDevKernel")).with_columns(
        end=pl.col("ts") + pl.col("dur")
    )
    nccl = nccl.with_columns(k=pl.col("ts").rank("ordinal").over("rank"))
    ends = nccl.group_by("k").agg(pl.col("end").n_unique().alias("distinct"), pl.len())
    assert (ends["distinct"] == 1).all() and (ends["len"] == 4).all()


def test_host_nesting(small):
    _, ev = small
    r0 = ev.filter(pl.col("rank") == 0, pl.col("device") < 0)
    ops = r0.filter(pl.col("kind") == "cpu_op").select(
        "external_id", ts_op="ts", end_op=pl.col("ts") + pl.col("dur")
    )
    rt = r0.filter(pl.col("kind") == "runtime", pl.col("external_id").is_not_null()).join(
        ops, on="external_id"
    )
    assert rt.height == r0.filter(pl.col("kind") == "runtime", pl.col("correlation").is_not_null()).height
    assert ((rt["ts"] >= rt["ts_op"]) & (rt["ts"] + rt["dur"] <= rt["end_op"])).all()
    steps = r0.filter(pl.col("kind") == "step").sort("ts")
    ann = r0.filter(pl.col("kind") == "annotation").sort("ts")
    assert ann["name"].to_list()[:3] == ["forward", "backward", "optimizer"]
    s_idx = steps["ts"].search_sorted(ann["ts"], side="right") - 1
    s_end = (steps["ts"] + steps["dur"]).gather(s_idx)
    assert (ann["ts"] + ann["dur"] <= s_end).all()


def test_deterministic_and_seeded(tmp_path):
    kw = dict(events=20_000, nodes=1, gpus_per_node=2, streams=2, steps=3)
    a = gen.generate(tmp_path / "a", seed=5, **kw)
    b = gen.generate(tmp_path / "b", seed=5, **kw)
    c = gen.generate(tmp_path / "c", seed=6, **kw)
    files = sorted(p.relative_to(a.path) for p in a.path.rglob("*.parquet"))
    assert files == sorted(p.relative_to(b.path) for p in b.path.rglob("*.parquet"))
    for f in files:
        assert pq.read_table(a.path / f).equals(pq.read_table(b.path / f))
    ta = pq.read_table(a.path / files[0])
    tc = pq.read_table(c.path / files[0])
    assert not ta.equals(tc)


def test_too_small_and_cli(tmp_path):
    with pytest.raises(ValueError, match="too small"):
        gen.generate(tmp_path / "x", events=100, nodes=2, gpus_per_node=4, steps=10)
    out = tmp_path / "cli"
    proc = subprocess.run(
        [
            sys.executable,
            str(SAMPLES / "generate_synthetic.py"),
            "-o",
            str(out),
            "--events",
            "5000",
            "--nodes",
            "1",
            "--gpus-per-node",
            "2",
            "--streams",
            "1",
            "--steps",
            "2",
            "--seed",
            "1",
        ],
        capture_output=True,
        text=True,
        check=True,
    )
    info = json.loads(proc.stdout)
    assert info["events"] == 5000 == open_trace_dir(out).num_events
    bad = subprocess.run(
        [sys.executable, str(SAMPLES / "generate_synthetic.py"), "-o", str(out), "--events", "5000"],
        capture_output=True,
        text=True,
    )
    assert bad.returncode == 2 and "not empty" in bad.stderr


def test_large_ranks_are_written_in_several_files(tmp_path, monkeypatch):
    monkeypatch.setattr(gen, "FILE_ROWS", 4_000)
    info = gen.generate(
        tmp_path / "chunks", events=30_000, nodes=1, gpus_per_node=2, streams=2, steps=6, seed=1
    )
    td = open_trace_dir(info.path)
    per_rank = {}
    for f in td.events:
        per_rank.setdefault(f.rank, []).append(f.num_rows)
    assert sorted(per_rank) == [0, 1] and all(len(v) >= 3 for v in per_rank.values())
    assert sum(map(sum, per_rank.values())) == 30_000 == info.events
    ev = open_trace(info.path).events().collect()
    launches = ev.filter(pl.col("kind") == "runtime", pl.col("correlation").is_not_null())
    assert (
        launches.join(ev.filter(pl.col("device") >= 0), on=["rank", "correlation"]).height == launches.height
    )
