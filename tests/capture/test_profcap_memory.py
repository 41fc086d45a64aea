"""``profcap --memory``: a real tiny CPU training job traced with torch.profiler's
``profile_memory``; its ``[memory]`` rows reach the trace, the manifest records the setting, and
the allocations stage reads them. Without ``--memory`` there are none (the default is unchanged)."""

from __future__ import annotations

import json

from test_profcap_support import TRAIN, manifest, read_events, run_profcap, steps_of

from profui.analysis import open_trace


def _memory_rows(rows: list[dict]) -> list[dict]:
    return [r for r in rows if r["kind"] == "instant" and r["name"] == "[memory]"]


def test_memory_flag_records_memory_events(tmp_path):
    proc, trace = run_profcap(tmp_path, ["--memory", "--steps", "3-5"], TRAIN, env={"STEPS": "7"})
    assert proc.returncode == 0, proc.stderr
    m = manifest(trace)
    assert m["capture"]["profile_memory"] is True
    rows = read_events(trace)
    assert sorted(steps_of(rows)) == [3, 4, 5]
    mem = _memory_rows(rows)
    assert len(mem) > 50
    args = [json.loads(r["args"]) for r in mem]
    assert all(a["Device Type"] == 0 for a in args)  # a CPU job: c10's DeviceType CPU
    # the stage's peak is the highest Total Allocated of the rows written
    out = open_trace(trace).result("allocations")
    assert out["devices.parquet"]["peak_allocated_bytes"].to_list() == [
        max(a["Total Allocated"] for a in args)
    ]
    assert out["per_step.parquet"]["step"].to_list() == [3, 4, 5]


def test_without_memory_flag_no_memory_events(tmp_path):
    proc, trace = run_profcap(tmp_path, ["--steps", "3-4"], TRAIN, env={"STEPS": "5"})
    assert proc.returncode == 0, proc.stderr
    assert manifest(trace)["capture"]["profile_memory"] is False
    assert _memory_rows(read_events(trace)) == []
