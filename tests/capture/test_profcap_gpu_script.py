"""benchmarks/gpu_check.sh is only run on GPU machines; here: it parses, and every profcap option
it uses exists (so it does not fail on a command line the first time a GPU is at hand)."""

from __future__ import annotations

import re
import shutil
import subprocess

import pytest

from profui.capture.profcap import _parser

from realdata import REPO

SCRIPT = REPO / "benchmarks" / "gpu_check.sh"


def test_gpu_check_script_parses():
    if shutil.which("bash") is None:
        pytest.skip("no bash")
    res = subprocess.run(["bash", "-n", str(SCRIPT)], capture_output=True, text=True)
    assert res.returncode == 0, res.stderr


def test_gpu_check_uses_real_profcap_options():
    text = SCRIPT.read_text()
    [line] = [ln for ln in text.splitlines() if "profui.capture.profcap" in ln]
    options = set(re.findall(r"\s(--[a-z-]+)", line.split(" -- ")[0]))
    known = {s for a in _parser()._actions for s in a.option_strings}
    assert options and options <= known, options - known
    args = _parser().parse_args(
        [
            "-o",
            "t",
            "--name",
            "gpu-check",
            "--node",
            "gpu-host",
            "--steps",
            "5-7",
            "--hz",
            "10",
            "--",
            "python",
            "x.py",
        ]
    )
    assert args.node == "gpu-host" and args.steps == "5-7"
