"""The annotation API: torch record_function ranges when torch is there, profui's own recorder
(handed over through the spool and written as events) when it is not, nothing outside profcap."""

from __future__ import annotations

import hashlib
import json
import sys

import pyarrow.parquet as pq
import pytest

from profui.capture import annotate, annotation_begin, annotation_end, start_profiling, step, stop_profiling
from profui.capture import recorder as recorder_mod
from profui.capture import session as session_mod
from profui.capture.daemon import spool


@annotate("decorated")
def _double(x):
    """Doubles."""
    return 2 * x


def test_decorator_keeps_the_function():
    assert _double(21) == 42
    assert _double.__name__ == "_double" and _double.__doc__ == "Doubles."


def test_ranges_reach_a_users_own_torch_profiler(tmp_path):
    torch = pytest.importorskip("torch")
    with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CPU]) as prof:
        for _ in range(3):
            with annotate("ctx"):
                torch.ones(4).sum()
            _double(1)
        annotation_begin("manual")
        torch.ones(4).sum()
        annotation_end("manual")
        with pytest.raises(ValueError):
            with annotate("raises"):
                raise ValueError("boom")
    path = tmp_path / "t.json"
    prof.export_chrome_trace(str(path))
    names = [
        e["name"] for e in json.loads(path.read_text())["traceEvents"] if e.get("cat") == "user_annotation"
    ]
    assert names.count("ctx") == 3 and names.count("decorated") == 3
    assert names.count("manual") == 1 and names.count("raises") == 1


def test_outside_profcap_without_torch_nothing_happens(monkeypatch):
    monkeypatch.delenv(session_mod.ENV_VAR, raising=False)
    monkeypatch.delitem(sys.modules, "torch", raising=False)
    monkeypatch.setattr(recorder_mod, "_recorder", None)
    monkeypatch.setattr(recorder_mod, "_checked", False)
    with annotate("x"):
        step()
    start_profiling()
    stop_profiling()
    assert recorder_mod.get() is None


def _session(tmp_path, monkeypatch) -> session_mod.Session:
    spool_dir = tmp_path / "trace" / ".spool"
    spool_dir.mkdir(parents=True)
    monkeypatch.setenv(session_mod.ENV_VAR, session_mod.encode(spool_dir, "nodeX", {"steps": [[3, 4, 0]]}))
    monkeypatch.setenv("RANK", "3")
    monkeypatch.delitem(sys.modules, "torch", raising=False)
    monkeypatch.setattr(recorder_mod, "_recorder", None)
    monkeypatch.setattr(recorder_mod, "_checked", False)
    sess = session_mod.current()
    assert sess is not None and sess.node == "nodeX"
    return sess


def test_without_torch_the_recorder_hands_events_to_the_trace(tmp_path, monkeypatch):
    sess = _session(tmp_path, monkeypatch)
    for _ in range(4):
        with annotate("outer"):
            _double(3)
        annotation_begin("tail")
        annotation_end("tail")
        step()
    annotation_end("never-begun")  # ignored, not an error
    rec = recorder_mod.get()
    assert rec is not None and rec.rank == 3
    rec.flush()
    [handed] = spool.pending(sess.spool)
    assert handed.name.startswith(f"r3-p{rec.pid}-")
    sha = hashlib.sha256(handed.read_bytes()).hexdigest()  # the window's identity beside its name
    out = spool.convert_file(handed, tmp_path / "trace", sess.node)
    assert out == {"rank": 3, "events": 4 * 3 + 3, "kind": "recorder", "sha256": sha}
    [f] = (tmp_path / "trace" / "node=nodeX" / "rank=3").glob("events-*.parquet")
    rows = pq.read_table(f).to_pylist()
    names = [r["name"] for r in rows]
    assert names.count("outer") == 4 and names.count("decorated") == 4 and names.count("tail") == 4
    assert sorted(r["name"] for r in rows if r["kind"] == "step") == [
        "ProfilerStep#1",
        "ProfilerStep#2",
        "ProfilerStep#3",
    ]
    outer = [r for r in rows if r["name"] == "outer"]
    inner = [r for r in rows if r["name"] == "decorated"]
    for o, i in zip(outer, inner, strict=True):
        assert o["ts"] <= i["ts"] and i["ts"] + i["dur"] <= o["ts"] + o["dur"]
    assert {r["pid"] for r in rows} == {rec.pid} and {r["device"] for r in rows} == {-1}


def test_recorder_start_stop_profiling_gates_recording(tmp_path, monkeypatch):
    _session(tmp_path, monkeypatch)
    with annotate("before"):
        pass
    stop_profiling()
    with annotate("paused"):
        pass
    start_profiling()
    with annotate("after"):
        pass
    rec = recorder_mod.get()
    rec.flush()
    handed = spool.pending(rec.session.spool)
    names = []
    for h in handed:
        names += [e[3] for e in json.loads(h.read_text())["events"]]
    assert sorted(names) == ["after", "before"]
