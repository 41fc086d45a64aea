"""What the critical path's stretches say, against the raw events read with pyarrow (outside
profui's reader), on every shared trace and the shared Nsight exports: a stretch with a name
lies inside an event of that name on its own lane (the thread, or the device and stream), and
a gap of a stream on the path (device overhead) overlaps none of its work. (A launch delay may:
it is the launch's latency, which runs while the stream does earlier work.)"""

from __future__ import annotations

from pathlib import Path

import polars as pl
import pyarrow.parquet as pq
import pytest

from profui.analysis import critical_path as cp
from profui.analysis import open_trace

from realdata import nsys_export, traces_dir

SHARED = sorted(
    p.name
    for p in traces_dir().glob("hta-*.json*")
    if "execution_trace-benchmark_simple_add_et" not in p.name and "memory_timeline" not in p.name
)
NSIGHT = ["h100_2gpu_1s", "mfu_2gpu_before", "mfu_2gpu_after"]
WORK = ["kernel", "memcpy", "memset"]
KEY_HOST = ["node", "rank", "tid", "name"]
KEY_DEVICE = ["node", "rank", "device", "stream"]


def raw_events(trace_dir: Path) -> pl.DataFrame:
    """Every event of a trace with its node and rank from the folder names."""
    frames = []
    for f in sorted(trace_dir.resolve().glob("node=*/rank=*/events-*.parquet")):
        t = pq.read_table(f, columns=["ts", "dur", "kind", "name", "device", "stream", "tid"])
        frame = pl.from_arrow(t).with_columns(
            pl.col("kind").cast(pl.String),
            pl.col("name").cast(pl.String),
            pl.col("device").cast(pl.Int32),
            pl.col("stream").cast(pl.Int32),
            pl.lit(f.parent.parent.name.split("=", 1)[1]).alias("node"),
            pl.lit(int(f.parent.name.split("=", 1)[1])).alias("rank"),
        )
        frames.append(frame.with_columns((pl.col("ts") + pl.col("dur")).alias("end")))
    return pl.concat(frames, how="vertical_relaxed")


def check_names(trace) -> int:
    """Asserts both rules on the trace's path; returns the number of named stretches checked."""
    tables, clamped = cp.analyse(
        trace.events(),
        trace.result("steps")["windows.parquet"],
        trace.result("correlate")["launches.parquet"],
        False,
    )
    assert clamped == []
    path = tables["events.parquet"].with_row_index("i")
    raw = raw_events(Path(trace.path))
    named = path.filter(pl.col("name") != "")
    host = named.filter(lane="host").join(
        raw.filter(pl.col("device") < 0).select(*KEY_HOST, "ts", "end"), on=KEY_HOST, how="left"
    )
    device = named.filter(lane="device").join(
        raw.filter(pl.col("device") >= 0).select(*KEY_DEVICE, "name", "ts", "end"),
        on=[*KEY_DEVICE, "name"],
        how="left",
    )
    inside = (
        pl.concat([host, device], how="vertical_relaxed")
        .group_by("i")
        .agg(((pl.col("ts") <= pl.col("start_ns")) & (pl.col("end") >= pl.col("end_ns"))).any().alias("in"))
    )
    phantom = named.join(inside.filter(~pl.col("in").fill_null(False)), on="i")
    assert phantom.height == 0, phantom.select("rank", "step", "seq", "kind", "lane", "tid", "stream", "name")
    assert set(path.filter(lane="device", name="")["kind"]) <= {"device_overhead", "launch_delay"}
    gaps = path.filter(lane="device", kind="device_overhead")
    work = raw.filter(pl.col("device") >= 0, pl.col("kind").is_in(WORK)).select(*KEY_DEVICE, "ts", "end")
    busy = gaps.join(work, on=KEY_DEVICE).filter(
        pl.col("ts") < pl.col("end_ns"), pl.col("end") > pl.col("start_ns")
    )
    assert busy.height == 0, busy
    return named.height


@pytest.mark.parametrize("name", SHARED)
def test_shared_trace_path_names_are_their_lanes_events(imported_trace, name):
    check_names(imported_trace(name))


@pytest.mark.parametrize("name", NSIGHT)
def test_nsight_path_names_are_their_lanes_events(name, tmp_path, monkeypatch):
    from profui.tui.cli.sources import resolve_source

    monkeypatch.setenv("PROFUI_CACHE", str(tmp_path / "cache"))
    trace = open_trace(resolve_source(nsys_export(name)))
    assert check_names(trace) > 1000
