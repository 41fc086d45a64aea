"""Memory over time (the ``allocations`` stage) against an independent replay of the raw JSON.

The oracle never uses profui: it reads the Kineto file with gzip + json, keeps the ``[memory]``
instants, orders each device's events by (ts, Ev Idx) and replays them — the allocated series is
their ``Total Allocated``, checked against the running sum of ``Bytes``; the peak is the first
event at the maximum; the live allocations at the peak are a dict of addresses replayed up to it;
a step's floor and peak come from the ``ProfilerStep#N`` spans of the same file.

Real data: the shared df_index trace (28,010 ``[memory]`` events, CUDA and CPU) and CPU runs
recorded here with ``profile_memory=True`` (one of them leaking a tensor per step). No real trace
holds an ``[OutOfMemory]`` event: OOM marking is tested on a recorded run with ONE such event
added by this test (copied from a real ``[memory]`` event, renamed), as said where it is done.
"""

from __future__ import annotations

import gzip
import json
import subprocess
import sys
from pathlib import Path

import pytest

from profui.analysis import open_trace
from profui.capture.ingest import import_trace

from realdata import SAMPLES, shared_trace

DF_INDEX = "hta-df_index_resolver-df_index_resolver.json.gz"

RECORD = """
import sys
sys.path.insert(0, sys.argv[3])
import torch
from torch.profiler import ProfilerActivity, profile, schedule
import train_mlp

out, leak = sys.argv[1], sys.argv[2] == "1"
kept = []

def on_step(i, loss):
    if leak:  # a tensor that outlives its step: 1 MiB more every step
        kept.append(torch.ones(256 * 1024))
    prof.step()

torch.set_num_threads(1)
with profile(activities=[ProfilerActivity.CPU], profile_memory=True, record_shapes=True,
             schedule=schedule(wait=1, warmup=1, active=5),
             on_trace_ready=lambda p: p.export_chrome_trace(out)) as prof:
    train_mlp.train(steps=8, batch=64, on_step=on_step)
"""


# -- the oracle: raw JSON, no profui ------------------------------------------------------------
def _raw(path: Path) -> dict:
    from decimal import Decimal

    opener = gzip.open if path.suffix == ".gz" else open
    with opener(path, "rt") as f:  # exact decimals: float ts are µs with ns digits
        doc = json.load(f, parse_float=Decimal)
    global BASE
    BASE = int(doc.get("baseTimeNanoseconds", 0))
    return doc


BASE = 0


def _plain(path: Path) -> dict:
    """The file as plain JSON (floats), to write a changed copy of."""
    return json.loads(path.read_text())


def _ns(ts) -> int:
    """µs (int: since the epoch; float: since baseTimeNanoseconds) -> ns since the epoch."""
    return BASE + int(ts * 1000)


def replay(path: Path) -> dict[tuple[int, int], dict]:
    """Per (Device Type, Device Id): the ordered events, the series, the peak, live-at-peak sizes."""
    doc = _raw(path)
    base = BASE
    events = [e for e in doc["traceEvents"] if e.get("name") in ("[memory]", "[OutOfMemory]")]
    out: dict[tuple[int, int], dict] = {}
    for e in events:
        a = e["args"]
        out.setdefault((a["Device Type"], a["Device Id"]), {"events": []})["events"].append(e)
    for dev in out.values():
        evs = sorted(dev["events"], key=lambda e: (e["ts"], e["args"].get("Ev Idx", 0)))
        mem = [e for e in evs if e["name"] == "[memory]"]
        series = [(_ns(e["ts"]), e["args"]["Total Allocated"]) for e in evs]
        # the totals are the running sum of Bytes from the level before the first event
        level = mem[0]["args"]["Total Allocated"] - mem[0]["args"]["Bytes"]
        for e in mem:
            level += e["args"]["Bytes"]
            assert level == e["args"]["Total Allocated"]
        peak = max(v for _, v in series)
        i = next(k for k, (_, v) in enumerate(series) if v == peak)
        live: dict[int, int] = {}
        for e in evs[: i + 1]:
            if e["name"] != "[memory]":
                continue
            if e["args"]["Bytes"] > 0:
                live[e["args"]["Addr"]] = e["args"]["Bytes"]
            else:
                live.pop(e["args"]["Addr"], None)
        steps = sorted(
            (_ns(s["ts"]), _ns(s["ts"]) + int(s["dur"] * 1000), int(s["name"].split("#")[1]))
            for s in doc["traceEvents"]
            if s.get("ph") == "X" and str(s.get("name", "")).startswith("ProfilerStep#")
        )
        per_step = {}
        for s0, s1, n in steps:
            before = [v for t, v in series if t < s0]
            entering = before[-1] if before else series[0][1] - mem[0]["args"]["Bytes"]
            inside = [v for t, v in series if s0 <= t < s1]
            per_step[n] = (entering, min([entering, *inside]), max([entering, *inside]))
        assert BASE == base
        dev.update(
            series=series,
            peak=peak,
            peak_ns=series[i][0],
            peak_event=evs[i],
            live=sorted(live.values(), reverse=True)[:10],
            reserved_peak=max(e["args"]["Total Reserved"] for e in evs),
            per_step=per_step,
            oom=sum(e["name"] == "[OutOfMemory]" for e in evs),
        )
    return out


def innermost(doc: dict, ev: dict, cat: str) -> str | None:
    """The innermost X event of ``cat`` on ev's thread whose span holds ev's ts (raw JSON); the
    ``ProfilerStep#N`` spans are the step, reported on their own, not an annotation."""
    t = ev["ts"]
    spans = [
        s for s in doc["traceEvents"]
        if s.get("ph") == "X" and s.get("cat") == cat and s.get("tid") == ev["tid"] and s.get("pid") == ev["pid"]
        and s["ts"] <= t <= s["ts"] + s.get("dur", 0) and not s["name"].startswith("ProfilerStep#")
    ]  # fmt: skip
    if not spans:
        return None
    return sorted(spans, key=lambda s: (-s["ts"], s.get("dur", 0)))[0]["name"]


def _kind(device_type: int) -> str:
    return {0: "CPU", 1: "CUDA"}[device_type]


def _check(trace_dir: Path, source: Path) -> dict:
    """The stage's outputs equal the replay of ``source``; returns the stage outputs."""
    oracle = replay(source)
    doc = _raw(source)
    out = open_trace(trace_dir).result("allocations")
    series, devices = out["series.parquet"], out["devices.parquet"]
    assert devices.height == len(oracle)
    for (dtype, did), o in oracle.items():
        dev = -1 if did is None else did
        mine = series.filter((series["device_type"] == _kind(dtype)) & (series["device"] == dev)).sort("seq")
        assert list(zip(mine["ts"], mine["allocated_bytes"], strict=True)) == o["series"]
        row = devices.filter((devices["device_type"] == _kind(dtype)) & (devices["device"] == dev)).row(
            0, named=True
        )
        assert row["peak_allocated_bytes"] == o["peak"] and row["peak_ns"] == o["peak_ns"]
        assert row["peak_reserved_bytes"] == o["reserved_peak"]
        assert row["oom_events"] == o["oom"]
        assert row["peak_op"] == innermost(doc, o["peak_event"], "cpu_op")
        assert row["peak_annotation"] == innermost(doc, o["peak_event"], "user_annotation")
        live = out["live_at_peak.parquet"]
        live = live.filter((live["device_type"] == _kind(dtype)) & (live["device"] == dev)).sort("order")
        assert live["bytes"].to_list() == o["live"]
        per = out["per_step.parquet"]
        per = per.filter((per["device_type"] == _kind(dtype)) & (per["device"] == dev)).sort("step")
        got = {r["step"]: (r["start_allocated_bytes"], r["min_allocated_bytes"], r["peak_allocated_bytes"])
               for r in per.iter_rows(named=True)}  # fmt: skip
        assert got == o["per_step"]
    return out


# -- df_index -----------------------------------------------------------------------------------
def test_df_index_equals_replay(imported_trace) -> None:
    src = shared_trace(DF_INDEX)
    t = imported_trace(DF_INDEX)
    out = _check(t.path, src)
    assert out["series.parquet"].height == 28_010
    assert out["allocations.json"] == {"events": 28_010, "unreadable": 0, "devices": 2, "note": ""}
    cuda = out["devices.parquet"].filter(out["devices.parquet"]["device_type"] == "CUDA").row(0, named=True)
    words = t.summary().takeaways["allocations"]
    assert words.startswith("Peak allocated 6.63 GB on cuda1") and f"step {cuda['peak_step']}" in words
    # steady: five floors equal to the byte in the replay, so "steady" is true of them
    floors = {v[1] for v in replay(src)[(1, 1)]["per_step"].values()}
    assert len(floors) == 1 and "steady over 5 steps" in words


def test_summary_json_has_sections_not_the_series(imported_trace) -> None:
    s = imported_trace(DF_INDEX).summary().to_json_dict()
    assert set(s["sections"]["allocations"]) == {"devices", "per_step", "live_at_peak", "over_time", "oom"}
    over = s["sections"]["allocations"]["over_time"]
    cuda = [r for r in over if r["device_type"] == "CUDA"]
    assert 0 < len(cuda) <= 120 and max(r["max_allocated_bytes"] for r in cuda) == 6_629_508_096


def test_no_memory_events_said_plainly(imported_trace) -> None:
    t = imported_trace("trace_compare-base-base")
    s = t.summary()
    # the takeaway says there are none; why depends on the source (a Kineto import: the profiler
    # ran without profile_memory=True), worded once by the stage, in the notes
    assert s.takeaways["allocations"] == "No memory events in this trace."
    (note,) = [n for n in s.notes if n.startswith("no memory events ([memory])")]
    assert "profile_memory=True" in note
    assert s.table("allocations", "devices").is_empty() and s.table("allocations", "per_step").is_empty()


def test_no_memory_events_gives_the_tables_the_analysis_gives(imported_trace) -> None:
    # the stage skips the replay when there is nothing to replay: its empty tables are the ones
    # the analysis functions make of no events
    from polars.testing import assert_frame_equal

    from profui.analysis import allocations as al
    from profui.analysis.schemas import conform

    t = imported_trace("trace_compare-base-base")
    out = t.result("allocations")
    ev = t.cached_events()
    windows = t.result("steps")["windows.parquet"]
    mem = al.memory_events(ev).collect()
    peaks = al.device_peaks(mem, ev, windows)
    full = {
        "series": mem,
        "devices": peaks,
        "per_step": al.memory_per_step(mem, windows),
        "live_at_peak": al.live_at_peak(mem, peaks, ev),
        "over_time": al.memory_over_time(mem),
        "oom": al.oom_events(mem, ev),
    }
    for name, frame in full.items():
        assert_frame_equal(out[f"{name}.parquet"], conform("allocations", name, frame))
    assert out["allocations.json"] == al.memory_counts(ev, source=t.manifest.source)


# -- real CPU runs recorded here ----------------------------------------------------------------
def _record(out: Path, leak: bool) -> Path:
    proc = subprocess.run(
        [sys.executable, "-c", RECORD, str(out), "1" if leak else "0", str(SAMPLES)],
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert proc.returncode == 0, proc.stderr
    return out


@pytest.fixture(scope="module")
def cpu_runs(tmp_path_factory) -> dict[str, Path]:
    pytest.importorskip("torch")
    d = tmp_path_factory.mktemp("memruns")
    return {"plain": _record(d / "plain.json", False), "leak": _record(d / "leak.json", True)}


def _imported(src: Path, out: Path) -> Path:
    import_trace([src], out)
    return out


def test_cpu_run_equals_replay(cpu_runs, tmp_path) -> None:
    src = cpu_runs["plain"]
    out = _check(_imported(src, tmp_path / "t"), src)
    dev = out["devices.parquet"].row(0, named=True)
    assert dev["device_type"] == "CPU" and dev["device"] == -1 and out["devices.parquet"].height == 1
    assert out["per_step.parquet"].height == 5  # ProfilerStep#2..#6


def test_leak_shows_as_rising_floor(cpu_runs, tmp_path) -> None:
    src = cpu_runs["leak"]
    t = _imported(src, tmp_path / "t")
    _check(t, src)
    floors = [v[1] for _, v in sorted(replay(src)[(0, -1)]["per_step"].items())]
    assert all(b > a for a, b in zip(floors[:-1], floors[1:], strict=True))  # the oracle's floors rise
    words = open_trace(t).summary().takeaways["allocations"]
    assert "the per-step floor rises every step" in words


def test_oom_marked(cpu_runs, tmp_path) -> None:
    """No real trace has an [OutOfMemory]: ONE is added here, a copy of the recorded run's peak
    [memory] event renamed (same cat, fields, thread), 1 µs after it, asking for 1 TiB."""
    doc = _plain(cpu_runs["plain"])
    peak = replay(cpu_runs["plain"])[(0, -1)]["peak_event"]["args"]["Ev Idx"]
    oom = json.loads(
        json.dumps(next(e for e in doc["traceEvents"] if e.get("args", {}).get("Ev Idx") == peak))
    )
    oom["name"], oom["ts"] = "[OutOfMemory]", oom["ts"] + 1
    oom["args"]["Bytes"] = 1 << 40
    doc["traceEvents"].append(oom)
    src = tmp_path / "oom.json"
    src.write_text(json.dumps(doc))
    t = _imported(src, tmp_path / "t")
    out = _check(t, src)
    doc = _raw(src)
    oom = next(e for e in doc["traceEvents"] if e.get("name") == "[OutOfMemory]")
    rows = out["oom.parquet"]
    assert rows.height == 1
    r = rows.row(0, named=True)
    assert r["bytes"] == 1 << 40 and r["ts_ns"] == _ns(oom["ts"])
    assert r["op"] == innermost(doc, oom, "cpu_op")
    assert r["allocated_bytes"] == oom["args"]["Total Allocated"]
    assert "1 out-of-memory event" in open_trace(t).summary().takeaways["allocations"]


def test_unreadable_values_are_counted_not_read(cpu_runs, tmp_path) -> None:
    doc = _plain(cpu_runs["plain"])
    mem = [e for e in doc["traceEvents"] if e.get("name") == "[memory]"]
    mem[0]["args"]["Bytes"] = "lots"
    mem[1]["args"]["Total Allocated"] = 1.5
    src = tmp_path / "bad.json"
    src.write_text(json.dumps(doc))
    t = _imported(src, tmp_path / "t")
    out = open_trace(t).result("allocations")
    info = out["allocations.json"]
    assert info["events"] == len(mem) and info["unreadable"] == 2 and "could not be read" in info["note"]
    assert out["series.parquet"].height == len(mem) - 2
    assert open_trace(t).summary().takeaways["allocations"].startswith("Peak allocated")


def test_a_leading_oom_adds_nothing_to_the_total(cpu_runs, tmp_path) -> None:
    """An [OutOfMemory] (added by this test: a copy of the first [memory] event, renamed, 1 µs
    earlier, asking for 1 TiB, its totals the level then: the first event's less its Bytes) is
    the device's first event: the level before it is that level — the failed request allocated
    nothing."""
    doc = _plain(cpu_runs["plain"])
    first = min((e for e in doc["traceEvents"] if e.get("name") == "[memory]"), key=lambda e: e["ts"])
    oom = json.loads(json.dumps(first))
    oom["name"], oom["ts"] = "[OutOfMemory]", first["ts"] - 1
    oom["args"]["Bytes"] = 1 << 40
    oom["args"]["Total Allocated"] = first["args"]["Total Allocated"] - first["args"]["Bytes"]
    doc["traceEvents"].append(oom)
    src = tmp_path / "lead.json"
    src.write_text(json.dumps(doc))
    out = open_trace(_imported(src, tmp_path / "t")).result("allocations")
    dev = out["devices.parquet"].row(0, named=True)
    assert dev["start_allocated_bytes"] == first["args"]["Total Allocated"] - first["args"]["Bytes"]
    assert dev["oom_events"] == 1 and out["series.parquet"]["event"][0] == "oom"


def test_memory_args_read_as_raw_json_reads_them(imported_trace) -> None:
    """Every member of the memory events' args, Kineto's own spelling or another (members
    reordered, spaces, a float, a quoted number, true, beyond int64), is the integer a raw
    ``json.loads`` finds there, else null. Real df_index events; the respelled copies are made
    here from them (no trace in the corpus writes them so)."""
    import polars as pl

    from profui.analysis.allocations import _ARGS, memory_rows

    ev = imported_trace(DF_INDEX).cached_events().filter(pl.col("name") == "[memory]").head(400).collect()
    texts = ev["args"].to_list()
    spelled = []
    for i, text in enumerate(texts):
        d = json.loads(text)
        if i % 5 == 1:
            d = dict(reversed(list(d.items())))
        elif i % 5 == 2:
            d["Bytes"] = d["Bytes"] + 0.5
        elif i % 5 == 3:
            d["Total Allocated"] = str(d["Total Allocated"])
            d["Device Id"] = True
        elif i % 5 == 4:
            d["Addr"] = 2**64
        spelled.append(json.dumps(d, separators=(", ", ": ") if i % 2 else (",", ":")))
    both = pl.concat([ev, ev.with_columns(pl.Series("args", spelled))])
    got = memory_rows(both.lazy()).collect()
    assert got.height == 2 * len(texts)

    def raw(text: str, key: str) -> int | None:
        v = json.loads(text).get(key)
        return v if isinstance(v, int) and not isinstance(v, bool) and -(2**63) <= v < 2**63 else None

    for col, key in _ARGS.items():
        want = [raw(t, key) for t in texts + spelled]
        assert got[col].to_list() == want, col
