"""Two windows handed over under one spool name (a later script of the job reused the pid of an
earlier one, and its window count restarted at 0001) are two windows: each is stored, each is
listed with its own events, and neither is taken for the other as "already published". Real
Kineto traces (the shared HTA samples, two different runs) converted by the real converter into
a real trace folder; the oracle is the traces' own JSON, read here with json."""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import pyarrow.parquet as pq
import pytest

from profui.capture.daemon import spool

TRACES = Path("/work/shared/traces")
FIRST = TRACES / "hta-critical_path-simple_add-benchmark_result_493459_1694039959_trace.json.gz"
SECOND = TRACES / "hta-cupti_profiler-benchmark_result_924719_1679055439_trace.json.gz"
NAME = "r0-p4242-0001.kineto.json"


def _names(raw: bytes) -> set[str]:
    return {e["name"] for e in json.loads(raw)["traceEvents"] if e.get("ph") == "X" and "name" in e}


def test_a_window_reusing_an_old_spool_name_is_stored_too(tmp_path: Path) -> None:
    if not (FIRST.exists() and SECOND.exists()):
        pytest.skip("the shared HTA traces are not here")
    first, second = gzip.decompress(FIRST.read_bytes()), gzip.decompress(SECOND.read_bytes())
    only_second = _names(second) - _names(first)
    assert only_second  # the two windows are told apart by what they hold
    trace = tmp_path / "trace"
    folder = trace / ".spool"
    folder.mkdir(parents=True)
    handed = folder / NAME
    stored = []
    for raw in (first, second):
        handed.write_bytes(raw)
        [pending] = spool.pending(folder)
        result = spool.convert_file(pending, trace, "node0")
        info, note = spool.finish_file(pending, result, None)
        assert note is None and info is not None
        stored.append(info)
        assert not handed.exists()
    files = sorted(trace.glob("node=node0/rank=0/events-*.parquet"))
    assert len(files) == 2, files  # was 1: the second window taken for the first, not converted
    rows = [pq.read_table(f, columns=["name"]).column("name").to_pylist() for f in files]
    assert only_second & set(rows[1]) and not only_second & set(rows[0])
    windows = spool.done_windows(folder)
    assert [w["events"] for w in windows] == [len(r) for r in rows]  # was the first's counts twice
    # a third window of the same name, handed over and not converted yet, is no published one
    handed.write_bytes(first.replace(b'"name"', b'"name" ', 1))
    spool.settle_published(folder, trace, "node0")
    assert handed.exists() and len(spool.done_windows(folder)) == 2
