"""``profui summary`` and ``profui explain`` on a terminal say how far the analysis is on stderr
(a transient bar: "analysing", the share of the run's stages done and the last one), where they
printed nothing for the 9 s of a 3M-event summary; piped, they print no progress at all. A stage
is held 1.5 s by the pipeline's test knob so the bar is drawn whatever the machine's speed."""

from __future__ import annotations

import fcntl
import os
import pty
import re
import shutil
import struct
import subprocess
import termios
from pathlib import Path

import pytest

from pipeline_knobs import PROFUI_WITH_KNOBS
from realdata import SAMPLES

SLOW = ["--set", "debug_sleep_s=1.5", "--set", "debug_sleep_stage=steps"]


def _on_terminal(args: list[str], env: dict[str, str]) -> tuple[str, str]:
    """stdout (piped) and stderr (a pseudo-terminal, 80×24) of ``profui ARGS``."""
    main_fd, sub_fd = pty.openpty()
    fcntl.ioctl(sub_fd, termios.TIOCSWINSZ, struct.pack("HHHH", 24, 80, 0, 0))
    out_file = open(env["PROFUI_CACHE"] + ".out", "w+b")  # a file: a pipe unread fills and stalls it
    proc = subprocess.Popen([*PROFUI_WITH_KNOBS, *args], stdout=out_file, stderr=sub_fd, env=env)
    os.close(sub_fd)
    err = b""
    while True:
        try:
            chunk = os.read(main_fd, 65536)
        except OSError:
            break
        if not chunk:
            break
        err += chunk
    assert proc.wait(timeout=120) == 0, err[-2000:]
    os.close(main_fd)
    out_file.seek(0)
    out = out_file.read().decode()
    out_file.close()
    return out, re.sub(r"\x1b\[[0-9;?]*[A-Za-z]", "", err.decode(errors="replace"))


@pytest.mark.parametrize("command", ["summary", "explain"])
def test_progress_on_a_terminal_and_none_when_piped(tmp_path: Path, command: str) -> None:
    trace = tmp_path / "cpu"
    shutil.copytree(SAMPLES / "mlp_cpu", trace, ignore=shutil.ignore_patterns(".profui"))
    env = {k: v for k, v in os.environ.items() if k not in ("COLUMNS", "LINES")}
    env = {**env, "NO_COLOR": "1", "PROFUI_CACHE": str(tmp_path / "cache")}
    args = [command, str(trace), *(SLOW if command == "summary" else [])]
    out, err = _on_terminal(args, env)
    # the bar's last state before it goes: every stage done, the last one named
    last = "summary" if command == "summary" else "findings"
    said = re.findall(r"analysing \(([a-z_]+)\)", err)
    assert said and said[-1] == last, err[-500:]  # drawn once more as the bar stops
    if command == "summary":  # held 1.5 s in steps: the bar was drawn while it ran
        assert "steps" in said or len(set(said)) >= 2, err[-500:]
    assert out.strip()  # the result itself, on stdout
    piped = subprocess.run([*PROFUI_WITH_KNOBS, *args], capture_output=True, text=True, env=env, timeout=120)
    assert piped.returncode == 0 and piped.stderr == ""
