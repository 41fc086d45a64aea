"""``profui info``'s gpus line: each GPU's device number as its manifest records it (NVML's
``index`` or Kineto's ``id``), and its name, or ``name not recorded`` where the trace has none."""

from __future__ import annotations

import json
import os
import sqlite3
import subprocess
import sys

from tests.realdata import SAMPLES, shared_trace


def _info(trace: str, tmp_path) -> str:
    env = dict(os.environ, COLUMNS="200")
    res = subprocess.run(
        [sys.executable, "-c", "from profui.tui.cli import main; main()", "info", trace],
        capture_output=True,
        text=True,
        env=env,
        timeout=600,
    )
    assert res.returncode == 0, res.stderr
    return next(line for line in res.stdout.splitlines() if line.startswith("gpus"))


def test_sample_gpus_numbered_by_their_manifest_index(tmp_path):
    trace = SAMPLES / "synthetic_gpu"
    gpus = json.loads((trace / "manifest.json").read_text())["gpus"]
    assert all("index" in g and "id" not in g for g in gpus)  # NVML's key
    want = "; ".join(f"{g['index']}: {g['name']} ({g['node']})" for g in gpus)
    assert _info(str(trace), tmp_path) == "gpus      " + want


def test_nsight_export_without_gpu_names_says_so(tmp_path):
    src = shared_trace("nsys/h100_2gpu_1s.sqlite")
    with sqlite3.connect(f"file:{src}?mode=ro", uri=True) as db:
        tables = {r[0] for r in db.execute("select name from sqlite_master where type='table'")}
        devices = sorted(
            {r[0] for r in db.execute("select distinct deviceId from CUPTI_ACTIVITY_KIND_KERNEL")}
        )
        host = db.execute("select value from TARGET_INFO_SYSTEM_ENV where name='Hostname'").fetchone()[0]
    assert "TARGET_INFO_GPU" not in tables  # the export names no GPU
    line = _info(str(src), tmp_path)
    assert line == "gpus      " + "; ".join(f"{d}: name not recorded ({host})" for d in devices)
