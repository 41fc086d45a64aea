"""Cross-stream waits no CUPTI sync row records, on the shared A100 trace that has none
(``hta-negative_queue_length_values_check``): every hand-off of the critical path from one
stream to another is one the raw events (read with pyarrow) show as a wait, and there is one in
every analysed step."""

from __future__ import annotations

import sys
from pathlib import Path

import polars as pl
import pyarrow.parquet as pq

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "capture"))

from test_critical_path import check_tables, stage_of  # noqa: E402

from profui.analysis.critical_path_graph import IMPLICIT_WAIT_NS  # noqa: E402

TRACE = "negative_queue_length_values_check-rank0"


def raw_rows(trace_dir: Path) -> pl.DataFrame:
    """Every event's times, kind, stream and correlation, read with pyarrow."""
    frames = [
        pl.from_arrow(pq.read_table(f, columns=["ts", "dur", "kind", "device", "stream", "correlation"]))
        for f in sorted(trace_dir.resolve().glob("node=*/rank=*/events-*.parquet"))
    ]
    return pl.concat(frames, how="vertical_relaxed").with_columns(pl.col("kind").cast(pl.String))


def test_path_crosses_streams_only_where_an_op_started_right_after_another_streams_op(imported_trace):
    trace = imported_trace(TRACE)
    raw = raw_rows(Path(trace.path))
    assert raw.filter(kind="sync").height == 0  # no CUPTI sync rows: the rule has to find the waits
    device = raw.filter(pl.col("device") >= 0, pl.col("kind").is_in(["kernel", "memcpy", "memset"]))
    # each op's start, its end, its stream predecessor's end, and when its launch call started
    launch = raw.filter(pl.col("device") < 0).group_by("correlation").agg(pl.col("ts").min().alias("launch"))
    ops = (
        device.sort("device", "stream", "ts", "dur")
        .with_columns(
            (pl.col("ts") + pl.col("dur")).alias("end"),
            (pl.col("ts") + pl.col("dur")).shift(1).over("device", "stream").alias("prev_end"),
        )
        .join(launch, on="correlation", how="left")
    )
    by_start = {
        (d, s, t): row
        for d, s, t, *row in ops.select("device", "stream", "ts", "end", "prev_end", "launch").iter_rows()
    }
    ends = {(d, s, e) for d, s, e in ops.select("device", "stream", "end").iter_rows()}

    out = stage_of(trace)
    check_tables(out)
    handoffs = 0
    for step, rows in out["events.parquet"].sort("step", "seq").group_by("step", maintain_order=True):
        path = rows.to_dicts()
        in_step = 0
        for i, b in enumerate(path):
            # an op of the path whose path goes back to another stream's op: right before it, or
            # before a gap on its own stream (the wait)
            if b["lane"] != "device" or b["kind"] == "device_overhead" or i == 0:
                continue
            k = i - 1
            if path[k]["kind"] == "device_overhead" and path[k]["stream"] == b["stream"]:
                k -= 1
            a = path[k] if k >= 0 else None
            if a is None or a["lane"] != "device" or a["stream"] == b["stream"]:
                continue
            # the raw events hold an op of a's stream ending there, and b's op started within the
            # threshold after it, later than its stream predecessor's end and its launch
            assert (a["device"], a["stream"], a["end_ns"]) in ends, a
            _end, prev_end, launched = by_start[(b["device"], b["stream"], b["start_ns"])]
            assert 0 <= b["start_ns"] - a["end_ns"] <= IMPLICIT_WAIT_NS, (a, b)
            assert prev_end is None or b["start_ns"] > prev_end, b
            assert launched is None or b["start_ns"] > launched, b
            in_step += 1
        assert in_step > 0, step
        handoffs += in_step
    assert handoffs >= out["steps.parquet"].height
