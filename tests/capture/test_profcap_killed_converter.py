"""What a converter killed by profcap's Ctrl-C leaves is settled: a window it published under
the rank the trace itself names (not the hand-over's) is recorded and its hand-over removed, and
the files it was still writing (temporary names) are removed while finished ones stay. Real
Kineto trace (HTA's sampled rank-1 trace, whose ``distributedInfo`` says rank 1) converted by the
real converter; the oracle for the rank is the trace's own JSON, read here with json."""

from __future__ import annotations

import gzip
import json
import os
from pathlib import Path

import pyarrow.parquet as pq

from profui.capture.daemon import spool
from profui.capture.profcap import _remove_unfinished_writes

from realdata import shared_trace

RANK1 = "hta-trace_filter-sampled_rank-1.json.gz"
NAME = "r0-p4242-0001.kineto.json"  # handed over as rank 0's window


def test_a_window_published_under_the_traces_own_rank_is_settled(tmp_path: Path) -> None:
    raw = gzip.decompress(shared_trace(RANK1).read_bytes())
    rank = json.loads(raw)["distributedInfo"]["rank"]
    assert rank != 0
    trace = tmp_path / "trace"
    folder = trace / ".spool"
    folder.mkdir(parents=True)
    handed = folder / NAME
    handed.write_bytes(raw)
    [pending] = spool.pending(folder)
    spool.convert_file(pending, trace, "node0")  # published; its converter killed before recording it
    [events] = trace.glob("node=node0/rank=*/events-*.parquet")
    assert events.parent.name == f"rank={rank}"
    assert handed.exists() and spool.done_windows(folder) == []
    spool.settle_published(folder, trace, "node0")
    assert not handed.exists()  # was left in the spool: looked for under rank 0 only
    [window] = spool.done_windows(folder)
    assert window["events"] == pq.read_metadata(events).num_rows


def test_what_a_killed_converter_was_writing_is_removed(tmp_path: Path) -> None:
    rank = tmp_path / "node=vm" / "rank=1"
    rank.mkdir(parents=True)
    finished = rank / "events-00000.parquet"
    killed = rank / ".events-00001.parquet.23122.83ff15bd.tmp"
    metrics = tmp_path / "node=vm" / ".metrics-00000.parquet.23122.0badf00d.tmp"
    ours = rank / f".events-00002.parquet.{os.getpid()}.12345678.tmp"  # this process's own write
    other = tmp_path / ".manifest.json.23122.aaaaaaaa.tmp"  # not the converter's
    for f in (finished, killed, metrics, ours, other):
        f.write_bytes(b"x")
    _remove_unfinished_writes(tmp_path)
    assert sorted(p.name for p in tmp_path.rglob("*") if p.is_file()) == sorted(
        p.name for p in (finished, ours, other)
    )
