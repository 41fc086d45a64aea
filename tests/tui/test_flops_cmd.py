"""``--peak-tflops`` and ``--model-flops`` on ``profui summary`` and ``profui analyze``: the same
pipeline parameters as ``--set peak_tflops=...`` (one rule), the MFU and its basis in the JSON
and the text, bad values refused in one line. The trace is the shared AMD MI250 run (real
shapes and kernels); the oracle for the FLOPs is its raw JSON's ``Input Dims``."""

from __future__ import annotations

import gzip
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from profui.capture.ingest import import_trace

from realdata import shared_trace

PROFUI = str(Path(sys.executable).with_name("profui"))
AMD = "hta-amd_trace-mi250_minitoy_train_ROCm6_2_kineto.json.gz"


def profui(*args: str | Path, cache: Path) -> subprocess.CompletedProcess:
    return subprocess.run(
        [PROFUI, *map(str, args)],
        capture_output=True,
        text=True,
        timeout=300,
        stdin=subprocess.DEVNULL,
        env={**os.environ, "PROFUI_CACHE": str(cache)},
    )


@pytest.fixture(scope="module")
def amd(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("flops_cmd") / "amd"
    import_trace([shared_trace(AMD)], out)
    return out


def _raw_flops() -> float:
    raw = json.loads(gzip.open(shared_trace(AMD), "rt").read())
    total = 0
    for e in raw["traceEvents"]:
        dims = (e.get("args") or {}).get("Input Dims")
        if e.get("name") == "aten::linear":
            (m, k), (n, _) = dims[:2]
            total += 2 * m * k * n
        elif e.get("name") == "aten::mm":
            (m, k), (_, n) = dims
            total += 2 * m * k * n
    return float(total)


def _totals(proc: subprocess.CompletedProcess) -> dict:
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout)["sections"]["flops"]["totals"][0]


def test_summary_json_peak_from_the_table_then_given(amd: Path, tmp_path: Path) -> None:
    table = _totals(profui("summary", amd, "--json", cache=tmp_path))
    assert table["flops"] == _raw_flops()
    assert (table["peak_gpu"], table["precision"], table["peak_tflops"]) == (
        "MI250 / MI210 (one GCD)",
        "FP32",
        45.25,
    )
    assert table["definition"] == "counted" and table["peak_source"].startswith("https://www.amd.com/")
    given = _totals(profui("summary", amd, "--json", "--peak-tflops", "90.5", cache=tmp_path))
    same = _totals(profui("summary", amd, "--json", "--set", "peak_tflops=90.5", cache=tmp_path))
    assert given == same  # one rule: the option is the parameter
    assert (given["peak_tflops"], given["peak_source"]) == (90.5, "--peak-tflops")
    assert given["mfu"] == pytest.approx(table["mfu"] * 45.25 / 90.5)
    model = _totals(profui("summary", amd, "--json", "--model-flops", "1e9", cache=tmp_path))
    assert model["definition"] == "model" and model["model_flops"] == 1e9
    assert model["mfu"] == pytest.approx(1e9 * model["steps"] / model["step_ns"] / 1e3 / 45.25)


def test_summary_text_says_which_definition_and_peak(amd: Path, tmp_path: Path) -> None:
    proc = profui("summary", amd, "--model-flops", "1e9", cache=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert "MFU " in proc.stdout and "from the model FLOPs given (--model-flops)" in proc.stdout
    assert "MI250 / MI210 (one GCD), FP32" in proc.stdout


def test_analyze_takes_the_options(amd: Path, tmp_path: Path) -> None:
    proc = profui("analyze", amd, "--peak-tflops", "12.5", "--plan", cache=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert "peak_tflops" in proc.stdout and "12.5" in proc.stdout


@pytest.mark.parametrize(
    "args", [("--peak-tflops", "-1"), ("--model-flops", "-5"), ("--set", "peak_tflops=x")]
)
def test_bad_values_are_one_line(amd: Path, tmp_path: Path, args: tuple[str, str]) -> None:
    proc = profui("summary", amd, *args, cache=tmp_path)
    assert proc.returncode == 2 and "Traceback" not in proc.stderr
    assert len(proc.stderr.strip().splitlines()) == 1
