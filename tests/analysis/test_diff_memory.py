"""Peak memory in ``profui diff``: per device, the allocated and reserved peaks of each side and
their delta, worded by the diff's own materiality rules. The expected peaks are the highest
``Total Allocated`` / ``Total Reserved`` of each file's ``[memory]`` events, read with gzip +
json (no profui code).

Real data: the shared df_index trace against itself (no change) and against a hand-made variant
(this test adds exactly 1 GB to every CUDA event's totals), and two CPU runs recorded here with
``profile_memory`` at batch 64 and 2048 through ``profui diff --json``."""

from __future__ import annotations

import gzip
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from profui.analysis.diff import diff, profile_of, sentence
from profui.capture.ingest import import_trace

from realdata import SAMPLES, shared_trace

DF_INDEX = "hta-df_index_resolver-df_index_resolver.json.gz"
PROFUI = str(Path(sys.executable).with_name("profui"))
GB = 1_000_000_000

RECORD = """
import sys
sys.path.insert(0, sys.argv[3])
import torch
from torch.profiler import ProfilerActivity, profile, schedule
import train_mlp

torch.set_num_threads(1)
with profile(activities=[ProfilerActivity.CPU], profile_memory=True,
             schedule=schedule(wait=1, warmup=1, active=3),
             on_trace_ready=lambda p: p.export_chrome_trace(sys.argv[1])) as prof:
    train_mlp.train(steps=6, batch=int(sys.argv[2]), on_step=lambda i, loss: prof.step())
"""


def _load(path: Path) -> dict:
    opener = gzip.open if path.suffix == ".gz" else open
    with opener(path, "rt") as f:
        return json.load(f)


def peaks(doc: dict, device_type: int) -> tuple[int, int]:
    """(highest Total Allocated, highest Total Reserved) of one device type's [memory] events."""
    mem = [e["args"] for e in doc["traceEvents"] if e.get("name") == "[memory]"]
    mem = [a for a in mem if a["Device Type"] == device_type]
    return max(a["Total Allocated"] for a in mem), max(a["Total Reserved"] for a in mem)


@pytest.fixture(scope="module")
def df_pair(tmp_path_factory) -> dict:
    d = tmp_path_factory.mktemp("memdiff")
    src = shared_trace(DF_INDEX)
    doc = _load(src)
    for e in doc["traceEvents"]:  # the hand-made variant: 1 GB more on the GPU, at every event
        if e.get("name") == "[memory]" and e["args"]["Device Type"] == 1:
            e["args"]["Total Allocated"] += GB
            e["args"]["Total Reserved"] += GB
    variant = d / "variant.json"
    variant.write_text(json.dumps(doc))
    import_trace([src], d / "base")
    import_trace([src], d / "same")
    import_trace([variant], d / "more")
    return {"dirs": d, "base": _load(src), "more": doc}


def test_df_index_against_itself_has_no_memory_change(df_pair) -> None:
    d = df_pair["dirs"]
    res = diff(profile_of(d / "base"), profile_of(d / "same"))
    m = res["metrics"]["peak_mem_cuda1"]
    assert m["base"] == m["new"] == peaks(df_pair["base"], 1)[0] and m["verdict"] == "same"
    assert not any(n.startswith("peak_") for n in res["headline"])


def test_df_index_variant_one_gb_more(df_pair) -> None:
    d = df_pair["dirs"]
    res = diff(profile_of(d / "base"), profile_of(d / "more"))
    (ba, br), (na, nr) = peaks(df_pair["base"], 1), peaks(df_pair["more"], 1)
    m = res["metrics"]["peak_mem_cuda1"]
    assert (m["base"], m["new"], m["delta"]) == (ba, na, GB) and m["unit"] == "bytes"
    assert m["verdict"] == "regression" and "peak_mem_cuda1" in res["headline"]
    r = res["metrics"]["peak_reserved_cuda1"]
    assert (r["base"], r["new"]) == (br, nr) and r["verdict"] == "regression"
    assert sentence(m) == (
        f"Peak allocated memory (cuda1) rose from 6.63 GB to 7.63 GB (+{GB / ba * 100:.1f}%): a regression."
    )
    # the CPU's peak (8 B) is the same on both sides
    assert res["metrics"]["peak_mem_cpu"]["verdict"] == "same"


def _record(out: Path, batch: int) -> Path:
    proc = subprocess.run(
        [sys.executable, "-c", RECORD, str(out), str(batch), str(SAMPLES)],
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert proc.returncode == 0, proc.stderr
    return out


def test_two_recorded_cpu_runs_through_the_cli(tmp_path) -> None:
    pytest.importorskip("torch")
    small, big = _record(tmp_path / "b64.json", 64), _record(tmp_path / "b2048.json", 2048)
    env = {**os.environ, "PROFUI_CACHE": str(tmp_path / "cache")}
    proc = subprocess.run(
        [PROFUI, "diff", str(small), str(big), "--json"], capture_output=True, text=True, env=env, timeout=600
    )
    assert proc.returncode in (0, 1), proc.stderr
    m = json.loads(proc.stdout)["metrics"]["peak_mem_cpu"]
    want = peaks(_load(small), 0)[0], peaks(_load(big), 0)[0]
    assert (m["base"], m["new"]) == want and m["delta"] == want[1] - want[0]
    assert want[1] > 1.02 * want[0] and m["verdict"] == "regression"
    text = subprocess.run([PROFUI, "diff", str(small), str(big)], capture_output=True, text=True, env=env)
    assert "peak allocated memory (cpu)" in text.stdout
