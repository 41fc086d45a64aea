"""Shapes the shared corpus lacks, made by editing a real trace (and saying so in each test):
string pids/tids on rows, Chrome's bare-list format, baseTimeNanoseconds beside absolute times,
sub-nanosecond digits, unknown categories."""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import pyarrow.parquet as pq

from profui.capture.format import open_trace_dir
from profui.capture.ingest import import_trace

from realdata import shared_trace

BASE = "hta-trace_compare-base-base.json.gz"  # 33 X events, integer epoch µs, rank 1


def real_doc() -> dict:
    return json.loads(gzip.decompress(shared_trace(BASE).read_bytes()))


def rows_of(out: Path) -> list[dict]:
    return pq.read_table(open_trace_dir(out).events[0].path).to_pylist()


def write(tmp_path: Path, doc, name: str = "edited.json") -> Path:
    p = tmp_path / name
    p.write_text(json.dumps(doc))
    return p


def test_string_pids_and_tids(tmp_path: Path) -> None:
    # edited: the CPU events get pid "1234" (numeric text) and tid "main thread" (a name)
    doc = real_doc()
    cpu = [e for e in doc["traceEvents"] if e.get("cat") == "cpu_op"]
    for e in cpu:
        e["pid"], e["tid"] = "1234", "main thread"
    import_trace([write(tmp_path, doc)], tmp_path / "out")
    rows = [r for r in rows_of(tmp_path / "out") if r["kind"] == "cpu_op"]
    assert len(rows) == len(cpu)
    assert {r["pid"] for r in rows} == {1234}
    assert len({r["tid"] for r in rows}) == 1 and rows[0]["tid"] < 0
    assert all(json.loads(r["args"])["tid"] == "main thread" for r in rows)
    meta = json.loads(
        pq.read_metadata(open_trace_dir(tmp_path / "out").events[0].path).metadata[b"profui.source"]
    )
    assert meta["named_ids"] == {"main thread": rows[0]["tid"]}


def test_bare_event_list(tmp_path: Path) -> None:
    # edited: only the traceEvents list is written (Chrome's "JSON array format")
    doc = real_doc()
    m = import_trace([write(tmp_path, doc["traceEvents"], "array.json")], tmp_path / "out", rank=4)
    assert m.ranks == [4]  # no distributedInfo in a bare list: --rank applies
    assert sum(m.sources[0]["counts"].values()) == sum(1 for e in doc["traceEvents"] if e.get("ph") == "X")


def test_base_time_with_absolute_times_is_not_added_twice(tmp_path: Path) -> None:
    # edited: a baseTimeNanoseconds key next to times that are already absolute epoch µs
    doc = real_doc()
    doc["baseTimeNanoseconds"] = 1_700_000_000_000_000_000
    first = min(e["ts"] for e in doc["traceEvents"] if e.get("ph") == "X")
    m = import_trace([write(tmp_path, doc)], tmp_path / "out")
    assert m.start_ns == first * 1000


def test_relative_times_with_sub_ns_digits(tmp_path: Path) -> None:
    # edited: times made relative to baseTimeNanoseconds, each with a 4th fractional digit
    # (ts - base + 0.0015 µs = +1.5 ns, which rounds half-to-even to +2 ns)
    doc = real_doc()
    xs = [e for e in doc["traceEvents"] if e.get("ph") == "X"]
    first = min(e["ts"] for e in xs)
    base_us = first - 1000
    events = [json.dumps(dict(e, ts="@TS@")).replace('"@TS@"', f"{e['ts'] - base_us}.0015") for e in xs]
    head = json.dumps({"distributedInfo": doc["distributedInfo"], "baseTimeNanoseconds": base_us * 1000})
    p = tmp_path / "relative.json"
    p.write_text(head[:-1] + ', "traceEvents": [' + ",".join(events) + "]}")
    m = import_trace([p], tmp_path / "out")
    assert m.start_ns == first * 1000 + 2
    assert sorted(r["ts"] for r in rows_of(tmp_path / "out")) == sorted(e["ts"] * 1000 + 2 for e in xs)


def test_unknown_category_kept(tmp_path: Path) -> None:
    # edited: one cpu_op relabelled with a category this importer has never seen
    doc = real_doc()
    op = next(e for e in doc["traceEvents"] if e.get("cat") == "cpu_op")
    op["cat"] = "xla_op"
    import_trace([write(tmp_path, doc)], tmp_path / "out")
    rows = [
        r for r in rows_of(tmp_path / "out") if r["args"] and json.loads(r["args"]).get("cat") == "xla_op"
    ]
    assert len(rows) == 1 and rows[0]["kind"] == "annotation" and rows[0]["name"] == op["name"]
    entry = open_trace_dir(tmp_path / "out").manifest.sources[0]
    assert entry["unknown_categories"] == {"xla_op": 1}


def test_only_user_annotations_named_profiler_step_are_steps(tmp_path: Path) -> None:
    # edited: three copies of a real event, renamed ProfilerStep#7 under a user annotation, an
    # unknown category and the GPU annotation category
    doc = real_doc()
    ev = doc["traceEvents"][0]
    for cat in ("user_annotation", "my_own_annotation", "gpu_user_annotation"):
        doc["traceEvents"].append({**ev, "cat": cat, "name": "ProfilerStep#7", "args": {}})
    out = tmp_path / "out"
    import_trace([write(tmp_path, doc)], out)
    rows = [r for r in rows_of(out) if r["name"] == "ProfilerStep#7"]
    assert sorted(r["kind"] for r in rows) == ["annotation", "gpu_annotation", "step"]
