"""Values the command line cannot use are refused in one line, exit 2, no traceback: a flag's value
of the wrong type (Typer's own check, once a five-line usage box), a number outside what is
physically possible (a peak of 1e-300 TFLOP/s once gave an MFU of 4e305 %), and integers or times
past what the analysis can hold (a 23-digit ``top_n`` once failed with OverflowError, exit 1)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from realdata import SAMPLES

PROFUI = str(Path(sys.executable).with_name("profui"))
SAMPLE = str(SAMPLES / "synthetic_gpu")


def _profui(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([PROFUI, *args], capture_output=True, text=True, timeout=300)


def _refused(proc: subprocess.CompletedProcess, *words: str) -> None:
    assert proc.returncode == 2, (proc.stdout[-500:], proc.stderr)
    assert len(proc.stderr.splitlines()) == 1, proc.stderr
    assert "Traceback" not in proc.stderr and proc.stdout == ""
    for word in words:
        assert word in proc.stderr, (word, proc.stderr)


@pytest.mark.parametrize(
    ("args", "words"),
    [
        (("--peak-tflops", "abc"), ("profui summary", "--peak-tflops", "number")),
        (("--model-flops", "x1"), ("--model-flops",)),
        (("--top", "ten"), ("--top",)),
        (("--no-such-flag",), ("--no-such-flag",)),
    ],
)
def test_a_value_typer_cannot_read_is_one_line(args: tuple[str, ...], words: tuple[str, ...]) -> None:
    _refused(_profui("summary", SAMPLE, *args), *words)


def test_a_missing_argument_is_one_line() -> None:
    _refused(_profui("summary"), "missing argument", "-h")


@pytest.mark.parametrize(
    ("args", "words"),
    [
        # no device computes at 1 GFLOP/s / 1e300, nor at 10^6 TFLOP/s (10^18 FLOP/s)
        (("--peak-tflops", "1e-300"), ("peak_tflops", "0.001")),
        (("--peak-tflops", "1e6"), ("peak_tflops",)),
        (("--peak-tflops", "nan"), ("peak_tflops", "finite")),
        (("--model-flops", "1e-9"), ("model_flops",)),
        (("--set", "top_n=12345678901234567890123"), ("top_n",)),
        (("--top", "12345678901234567890123"), ("--top", "top_n")),
        (("--set", "max_queue_length=9223372036854775808"), ("max_queue_length",)),
        (("--set", "bucket_ms=1e300"), ("bucket_ms",)),
        (("--bucket", "1e300"), ("--bucket",)),
        (("--set", "slow_launch_us=1e300"), ("slow_launch_us",)),
        (("--set", "late_start_us=1e300"), ("late_start_us",)),
    ],
)
def test_a_number_outside_its_range_is_one_line(args: tuple[str, ...], words: tuple[str, ...]) -> None:
    _refused(_profui("summary", SAMPLE, *args), *words)


def test_physical_values_are_taken() -> None:
    """The edges of the ranges are values some device has: an H100's dense BF16 peak and a slow
    CPU core's; the summary then divides by the peak given."""
    proc = _profui("summary", SAMPLE, "--peak-tflops", "989.5", "--json")
    assert proc.returncode == 0, proc.stderr
    assert '"--peak-tflops"' in proc.stdout and "989.5" in proc.stdout
    assert _profui("summary", SAMPLE, "--peak-tflops", "0.001", "--top", "1000000").returncode == 0


@pytest.mark.parametrize(
    "args", [["import", "x.json", "-o"], ["summary", SAMPLE, "--top"], ["explain", SAMPLE, "--step"]]
)
def test_an_option_without_its_value_names_its_command(args: list[str]) -> None:
    """An option given last, without its value, is refused naming the command it belongs to and
    that command's help (it said 'profui: ... (see profui -h)')."""
    proc = _profui(*args)
    _refused(
        proc, f"profui {args[0]}: option '{args[-1]}' requires an argument", f"(see profui {args[0]} -h)"
    )
