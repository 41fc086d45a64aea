"""A real CPU training run (samples/train_mlp.py) profiled with torch.profiler imports exactly;
the committed sample made the same way opens and holds the same kinds of events."""

from __future__ import annotations

import json
import sys
from collections import Counter
from decimal import Decimal
from pathlib import Path

import pyarrow.parquet as pq
import pytest

from profui.capture.format import open_trace_dir
from profui.capture.ingest import import_trace

from realdata import SAMPLES

sys.path.insert(0, str(SAMPLES))

import make_mlp_sample  # noqa: E402

pytest.importorskip("torch")

CAT_KIND = {"cpu_op": "cpu_op", "python_function": "python", "user_annotation": "annotation"}


@pytest.fixture(scope="module")
def fresh(tmp_path_factory) -> tuple[dict, Path]:
    work = tmp_path_factory.mktemp("mlp")
    json_path = work / "mlp.json"
    losses = make_mlp_sample.record(json_path)
    assert len(losses) == make_mlp_sample.WAIT + make_mlp_sample.WARMUP + make_mlp_sample.ACTIVE + 1
    doc = json.loads(json_path.read_text(), parse_float=Decimal)
    out = work / "trace"
    import_trace([json_path], out, node="n0")
    return doc, out


def test_fresh_profile_counts_match(fresh) -> None:
    doc, out = fresh
    want: Counter = Counter()
    for e in doc["traceEvents"]:
        if e.get("ph") == "X" and e.get("cat") in CAT_KIND:
            kind = CAT_KIND[e["cat"]]
            want["step" if e["name"].startswith("ProfilerStep#") else kind] += 1
        elif e.get("ph") == "i" and e.get("cat") == "cpu_instant_event":
            want["instant"] += 1
    trace = open_trace_dir(out)
    table = pq.read_table(trace.events[0].path)
    assert dict(Counter(table["kind"].to_pylist())) == dict(want)
    assert want["python"] > 0 and want["instant"] > 0  # with_stack and profile_memory are on


def test_fresh_profile_steps_and_annotations(fresh) -> None:
    _, out = fresh
    rows = pq.read_table(open_trace_dir(out).events[0].path).to_pylist()
    steps = sorted(r["name"] for r in rows if r["kind"] == "step")
    first = int(steps[0].split("#")[1])
    active = make_mlp_sample.ACTIVE
    assert steps == sorted(f"ProfilerStep#{first + i}" for i in range(active))
    names = Counter(r["name"] for r in rows if r["kind"] == "annotation")
    assert names["data_loading"] == active and names["forward_backward"] == active
    # every annotation of the script lies inside one profiler step
    spans = [(r["ts"], r["ts"] + r["dur"]) for r in rows if r["kind"] == "step"]
    for r in rows:
        if r["kind"] == "annotation" and r["name"] in ("data_loading", "forward_backward"):
            assert any(a <= r["ts"] and r["ts"] + r["dur"] <= b for a, b in spans)
    # record_shapes=True: the linear layers' ops carry their input shapes
    addmm = [json.loads(r["args"]) for r in rows if r["name"] == "aten::addmm"]
    assert addmm and all("Input Dims" in a for a in addmm)


def test_committed_sample() -> None:
    trace = open_trace_dir(SAMPLES / "mlp_cpu")
    assert trace.manifest.status == "imported" and trace.manifest.hosts == ["sample-host"]
    size = sum(p.stat().st_size for p in (SAMPLES / "mlp_cpu").rglob("*") if p.is_file())
    assert size < 1_000_000
    rows = pq.read_table(trace.events[0].path, columns=["kind", "name"]).to_pylist()
    kinds = Counter(r["kind"] for r in rows)
    assert kinds["step"] == make_mlp_sample.ACTIVE
    assert {"cpu_op", "python", "annotation", "instant"} <= set(kinds)
    assert trace.manifest.sources[0]["counts"] == dict(sorted(kinds.items()))
