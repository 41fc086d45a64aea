"""Ctrl-C during a command says so in one line, exit 130: ``profui summary`` interrupted mid-run
printed nothing at all (Typer turns a KeyboardInterrupt into exit 130 silently), where
``profui analyze`` says which run stopped. The run is held in one stage by the pipeline's test
knob (the stage sleeps), so the interrupt lands mid-run whatever the machine's speed."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import time
from pathlib import Path

from pipeline_knobs import PROFUI_WITH_KNOBS, SLEEP_MARK
from realdata import SAMPLES


def test_summary_interrupted_mid_run_says_so(tmp_path: Path) -> None:
    trace = tmp_path / "cpu"
    mark = tmp_path / "sleeping"
    shutil.copytree(SAMPLES / "mlp_cpu", trace, ignore=shutil.ignore_patterns(".profui"))
    proc = subprocess.Popen(
        [
            *PROFUI_WITH_KNOBS,
            "summary",
            str(trace),
            "--set",
            "debug_sleep_s=4",
            "--set",
            "debug_sleep_stage=correlate",
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=dict(os.environ, PROFUI_CACHE=str(tmp_path / "cache"), **{SLEEP_MARK: str(mark)}),
    )
    end = time.monotonic() + 60
    # the mark says the correlate stage (which sleeps 4 s) has begun: the interrupt must land
    # there, not in the imports, however loaded the machine
    while not mark.exists() and proc.poll() is None and time.monotonic() < end:
        time.sleep(0.02)
    assert proc.poll() is None and mark.exists()
    proc.send_signal(signal.SIGINT)
    out, err = proc.communicate(timeout=60)
    assert proc.returncode == 130
    assert err == "profui: interrupted\n"
    assert out == ""
