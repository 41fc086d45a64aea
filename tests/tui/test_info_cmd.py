"""``profui info``: text and JSON describe an imported real trace; numbers checked against the
raw Kineto JSON (counted here with stdlib json) and the shared traces' README."""

from __future__ import annotations

import gzip
import json
import subprocess
import sys
from collections import Counter
from pathlib import Path

import pytest

from profui.analysis.inventory import trace_info
from profui.capture.ingest import import_trace
from profui.tui.cli.info_cmd import format_info

from realdata import shared_trace

SIMPLE_ADD = "hta-critical_path-simple_add-benchmark_result_493459_1694039959_trace.json.gz"
PROFUI = str(Path(sys.executable).with_name("profui"))


@pytest.fixture(scope="module")
def two_ranks(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("info") / "job"
    import_trace(
        [shared_trace(f"hta-trace_filter-sampled_rank-{r}.json.gz") for r in (0, 1)], out, node="host-a"
    )
    return out


def raw_events(name: str) -> list[dict]:
    return json.loads(gzip.decompress(shared_trace(name).read_bytes()))["traceEvents"]


def test_info_json_on_simple_add(tmp_path: Path) -> None:
    out = tmp_path / "t"
    import_trace([shared_trace(SIMPLE_ADD)], out)
    proc = subprocess.run([PROFUI, "info", str(out), "--json"], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    info = json.loads(proc.stdout)
    # README: 79 kernels, 16 memcpy, 3 memset, 41 cuda_sync, no ProfilerStep
    assert {k: info["counts"][k] for k in ("kernel", "memcpy", "memset", "sync")} == {
        "kernel": 79,
        "memcpy": 16,
        "memset": 3,
        "sync": 41,
    }
    assert "step" not in info["counts"]
    xs = [e for e in raw_events(SIMPLE_ADD) if e.get("ph") == "X" and e.get("cat") != "Trace"]
    assert info["num_events"] == len(xs)
    assert info["span"]["start_ns"] == min(e["ts"] for e in xs) * 1000
    assert info["span"]["end_ns"] == max(e["ts"] + e["dur"] for e in xs) * 1000
    assert info["manifest"]["status"] == "imported" and info["manifest"]["ranks"] == [0]
    assert info["manifest"]["gpus"][0]["name"] == "NVIDIA A100-PG509-200"
    assert [(d["device"], d["events"]) for d in info["devices"]] == [(0, 79 + 16 + 3 + 41)]


def test_info_ranks_and_devices(two_ranks: Path) -> None:
    info = trace_info(two_ranks)
    assert [(r["node"], r["rank"]) for r in info["ranks"]] == [("host-a", 0), ("host-a", 1)]
    for r in (0, 1):
        raw = Counter(
            e["cat"] for e in raw_events(f"hta-trace_filter-sampled_rank-{r}.json.gz") if e.get("ph") == "X"
        )
        dev = next(d for d in info["devices"] if d["device"] == r)  # each rank drives its own GPU
        assert dev["counts"] == {
            "kernel": raw["kernel"],
            "memcpy": raw["gpu_memcpy"],
            "memset": raw["gpu_memset"],
        }
        rank = next(x for x in info["ranks"] if x["rank"] == r)
        assert rank["counts"]["runtime"] == raw["cuda_runtime"]
    assert info["counts"]["step"] == 4  # ProfilerStep#551-#552 on both ranks


def test_info_text_is_readable(two_ranks: Path) -> None:
    info = trace_info(two_ranks)
    text = format_info(info)
    assert "status imported" in text
    assert f"{info['num_events']:,} in 2 events files" in text
    assert "0@host-a, 1@host-a" in text
    assert "2023-04-28" in text  # the trace's wall-clock date, UTC
    kernel_line = next(line for line in text.splitlines() if line.strip().startswith("kernel "))
    assert f"{info['counts']['kernel']:,}" in kernel_line


def test_info_bad_path_one_line(tmp_path: Path) -> None:
    for bad in (tmp_path / "missing", tmp_path):
        proc = subprocess.run([PROFUI, "info", str(bad)], capture_output=True, text=True, timeout=120)
        assert proc.returncode == 2
        assert len(proc.stderr.splitlines()) == 1 and str(bad) in proc.stderr
        assert "Traceback" not in proc.stderr
