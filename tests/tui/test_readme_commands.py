"""Every command the README shows runs as written (#37 item 4).

The command blocks are read from README.md itself (fenced ``bash`` blocks and indented blocks;
a line is a command when it starts with ``profui``, ``profcap``, ``pip``, ``python`` or an
environment assignment before one of them). Each runs in a temporary folder laid out with the
names the README uses, made of the bundled samples (``trace/`` is the synthetic GPU sample,
``before/`` and ``after/`` the CPU MLP run, ``logs/`` the JAX log folder, ``train.py`` the MLP
training script) and shared real traces (Kineto rank files, Nsight exports), with
``PROFUI_CACHE`` in that folder. Optional parts (``[--json]``) are run included. ``profui open``
runs in a pseudo-terminal and is quit with ``q``. Exit 0 is the oracle, plus: nothing on
stderr says Traceback.

A short list of commands is not run, each with why (:data:`NOT_RUN`).
"""

from __future__ import annotations

import fcntl
import os
import pty
import re
import select
import shlex
import shutil
import struct
import subprocess
import sys
import termios
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from realdata import REPO, SAMPLES, shared_trace

#: Commands not run here, by a word of theirs, and why.
NOT_RUN = {
    "pip install": "installs packages (needs a network); this test runs in that install",
    "python -m pytest": "runs the whole test suite, this test among it",
    "torchrun": "starts a multi-process torchrun job (GPUs or several nodes)",
    "--scheduler tcp://": "needs a running Dask cluster on the network",
    "--workers 8": "starts 8 Dask worker processes: minutes on a 2-core machine",
    "benchmarks/": "benchmarks: long runs (and a separate HTA environment, or a GPU)",
}

_COMMAND = re.compile(r"^(?:[A-Z_]+=\S+\s+)*(?:profui|profcap|python)\b")


def readme_commands() -> list[str]:
    """The command lines of README.md's command blocks, comments dropped, in order."""
    lines = (REPO / "README.md").read_text().splitlines()
    found: list[str] = []
    fence = None
    for line in lines:
        if line.startswith("```"):
            fence = None if fence is not None else line[3:].strip()
            continue
        if fence is not None and fence != "bash":
            continue
        text = line.strip() if fence == "bash" else (line[4:] if line.startswith("    ") else None)
        if text is None:
            continue
        for part in re.split(r"\s+&&\s+", _uncommented(text).strip()):
            if _COMMAND.match(part) or part.startswith("pip "):
                found.append(part)
    return found


def _uncommented(text: str) -> str:
    """``text`` without its trailing ``# comment`` (a ``#`` inside quotes is kept)."""
    quote = None
    for i, ch in enumerate(text):
        if ch in "'\"" and quote in (None, ch):
            quote = None if quote == ch else ch
        elif ch == "#" and quote is None and (i == 0 or text[i - 1].isspace()):
            return text[:i]
    return text


#: The README's placeholders that are not file names, and what stands for them here.
PLACEHOLDERS = {" RUN": " run-0001"}


def _as_run(command: str) -> str:
    """``command`` with its optional parts (``[--json]``) included, placeholders filled."""
    command = re.sub(r"(?<=\s)\[([^\[\]]*)\]", r"\1", command)
    for word, value in PLACEHOLDERS.items():
        command = command.replace(word, value)
    return command


TRAIN = """import runpy
import sys

sys.argv = [sys.argv[0], "--steps", "50"]  # the README's steps 40-45 need 46
runpy.run_path({script!r}, run_name="__main__")
"""


@pytest.fixture(scope="module")
def workspace(tmp_path_factory) -> Path:
    """The names the README uses, made of the samples and shared traces."""
    root = tmp_path_factory.mktemp("readme")
    skip = shutil.ignore_patterns(".profui")
    shutil.copytree(SAMPLES / "synthetic_gpu", root / "trace", ignore=skip)
    for name in ("before", "after"):
        shutil.copytree(SAMPLES / "mlp_cpu", root / name, ignore=skip)
    shutil.copytree(SAMPLES / "jax_cpu", root / "logs", ignore=skip)
    (root / "runs").mkdir()
    shutil.copytree(SAMPLES / "mlp_cpu", root / "runs" / "mlp", ignore=skip)
    shutil.copytree(SAMPLES / "synthetic_gpu", root / "runs" / "synthetic", ignore=skip)
    for node in ("a", "b"):  # one job's per-node folders: the sample's nodes, one folder each
        folder = root / f"node-{node}"
        folder.mkdir()
        shutil.copy(SAMPLES / "synthetic_gpu" / "manifest.json", folder)
        part = "node=node-0" if node == "a" else "node=node-1"
        shutil.copytree(SAMPLES / "synthetic_gpu" / part, folder / part, ignore=skip)
    for rank in (0, 1):
        shutil.copy(
            shared_trace(f"hta-trace_filter-sampled_rank-{rank}.json.gz"), root / f"rank{rank}.json.gz"
        )
    nsys = shared_trace("nsys/h100_2gpu_1s.sqlite")
    shutil.copy(nsys, root / "run.sqlite")
    shutil.copy(nsys.parent / "mfu_2gpu_before.sqlite", root / "before.sqlite")
    shutil.copy(nsys.parent / "mfu_2gpu_after.sqlite", root / "after.sqlite")
    for folder in ("old", "old_runs"):  # Kineto files of several jobs
        (root / folder).mkdir()
        for name in (
            "hta-trace_compare-base-base.json.gz",
            "hta-execution_trace-benchmark_simple_add_trace.json.gz",
        ):
            shutil.copy(shared_trace(name), root / folder / name)
    (root / "train.py").write_text(TRAIN.format(script=str(SAMPLES / "train_mlp.py")))
    run_sh = root / "run.sh"
    run_sh.write_text(f"#!/bin/sh\nexec {shlex.quote(sys.executable)} -c 'import time; time.sleep(2)'\n")
    run_sh.chmod(0o755)
    return root


def _env(root: Path) -> dict[str, str]:
    bin_dir = str(Path(sys.executable).parent)
    return {
        **os.environ,
        "PROFUI_CACHE": str(root / "cache"),
        "PATH": f"{bin_dir}:{os.environ.get('PATH', '')}",
        "COLUMNS": "120",
    }


def _writes(command: str) -> bool:
    """A command that makes a new trace or file (an import or export's ``-o``, a capture)."""
    return " -o " in command or command.startswith("profcap") or "--save-baseline" in command


def _place(command: str, root: Path, n: int) -> Path:
    """Where ``command`` runs: the workspace, or for a command that writes, a fresh folder of
    links to the workspace's inputs (each example writes its ``-o trace/`` as on a new machine)."""
    if not _writes(command) or "--save-baseline" in command:
        return root
    scratch = root / f"scratch-{n}"
    scratch.mkdir()
    for item in root.iterdir():
        if item.name != "cache" and not item.name.startswith("scratch-") and item.name != "trace":
            (scratch / item.name).symlink_to(item)
    if not command.startswith(("profui import", "profcap")):  # an export reads trace/
        (scratch / "trace").symlink_to(root / "trace")
    return scratch


def _run(command: str, root: Path, n: int) -> tuple[int, str]:
    cwd = _place(command, root, n)
    if command.startswith("profui open"):
        return _run_in_terminal(command, cwd)
    res = subprocess.run(
        command, shell=True, cwd=cwd, env=_env(root), capture_output=True, text=True, timeout=300
    )
    return res.returncode, res.stdout[-2000:] + res.stderr[-4000:]


def _run_in_terminal(command: str, root: Path, settle_s: float = 3.0) -> tuple[int, str]:
    """Run the app in a pseudo-terminal of 80x24, let it draw, press q; its exit code and output."""
    env = {**_env(root), "TERM": "xterm-256color", "LINES": "24", "COLUMNS": "80"}
    leader, follower = pty.openpty()
    fcntl.ioctl(follower, termios.TIOCSWINSZ, struct.pack("HHHH", 24, 80, 0, 0))
    proc = subprocess.Popen(
        command,
        shell=True,
        cwd=root,
        env=env,
        stdin=follower,
        stdout=follower,
        stderr=follower,
        start_new_session=True,
    )
    os.close(follower)
    out = bytearray()
    deadline = time.monotonic() + settle_s
    quit_sent = 0.0
    while True:
        ready, _, _ = select.select([leader], [], [], 0.2)
        if ready:
            try:
                out += os.read(leader, 65536)
            except OSError:
                break
        if proc.poll() is not None:
            break
        now = time.monotonic()
        if now > deadline and now - quit_sent > 2:
            os.write(leader, b"q")
            quit_sent = now
        if now > deadline + 60:
            proc.kill()
            break
    os.close(leader)
    return proc.wait(), out.decode(errors="replace")[-3000:]


def test_the_readme_has_commands() -> None:
    commands = readme_commands()
    assert len(commands) > 30, commands
    assert any("--fail-if 'idle_pct>+3pt'" in c for c in commands)


def test_every_readme_command_runs_as_written(workspace: Path) -> None:
    to_run = []
    for n, command in enumerate(readme_commands()):
        why_not = next((why for word, why in NOT_RUN.items() if word in command), None)
        if why_not is not None:
            print(f"not run: {command}  ({why_not})")
        else:
            to_run.append((n, command))
    # the captures (each a training run in a folder of its own, mostly waiting on torch's start)
    # run beside the rest, which runs in the README's order (a diff's baseline before its use)
    with ThreadPoolExecutor(max_workers=2) as pool:
        results = {
            command: pool.submit(_run, _as_run(command), workspace, n)
            for n, command in to_run
            if command.startswith("profcap")
        }
        for n, command in to_run:
            if command not in results:
                results[command] = _Done(_run(_as_run(command), workspace, n))
        failures = []
        for command, got in results.items():
            code, output = got.result()
            if code != 0 or "Traceback" in output:
                failures.append(f"{command}\n  exit {code}: {output.strip()[-800:]}")
    assert not failures, "\n\n".join(failures)


class _Done:
    """A result already there, read like a future's."""

    def __init__(self, value: tuple[int, str]) -> None:
        self.value = value

    def result(self) -> tuple[int, str]:
        return self.value


def test_the_gate_on_cpu_runs_is_as_the_readme_says(workspace: Path) -> None:
    """README: a trace without GPUs has no idle_pct (a condition on it is bad input, exit 2 in
    one line); its step times gate as on any trace."""
    cpu = "profui diff before/ after/ --fail-if "
    code, output = _run(cpu + "'idle_pct>+3pt'", workspace, 1000)
    lines = output.strip().splitlines()
    assert code == 2 and len(lines) == 1 and "idle_pct" in lines[0] and "Traceback" not in output, output
    code, output = _run(cpu + "'step_p50>+5%'", workspace, 1001)
    assert code == 0, output


#: Lines of the README's CI job (its ``run:`` scripts) not run here, by a word of theirs, and why.
CI_NOT_RUN = {
    "pip install": "installs packages (needs a network); this test runs in that install",
    "gh pr comment": "posts to a pull request on GitHub (needs the network and a token)",
}


def ci_job() -> dict:
    """The GitHub Actions workflow of the README's "profui in CI" section (its yaml block)."""
    import yaml

    section = (REPO / "README.md").read_text().split("### profui in CI", 1)[1]
    block = re.search(r"```yaml\n(.*?)```", section, re.S)
    assert block, "no yaml block under 'profui in CI'"
    return yaml.safe_load(block[1])


def test_the_readme_ci_job_runs_as_written(workspace: Path, tmp_path: Path) -> None:
    """Every step's ``run:`` script of the README's CI job, in order, in a checkout-like folder
    holding ``train.py`` (the MLP training script), with the job's ``PROFUI_CACHE`` and a
    ``$GITHUB_STEP_SUMMARY`` file; the steps for main and for a pull request both run (the diff
    against the baseline just saved: the gate holds). The summary it wrote is the diff's
    Markdown with the gate's verdict."""
    (job,) = ci_job()["jobs"].values()
    checkout = tmp_path / "checkout"
    checkout.mkdir()
    (checkout / "train.py").symlink_to(workspace / "train.py")
    summary = checkout / "step-summary.md"
    env = {
        **_env(workspace),
        "PROFUI_CACHE": job["env"]["PROFUI_CACHE"].replace("${{ github.workspace }}", str(checkout)),
        "GITHUB_STEP_SUMMARY": str(summary),
    }
    scripts = [step["run"] for step in job["steps"] if "run" in step]
    assert any("profcap" in s for s in scripts) and any("--format markdown" in s for s in scripts)
    for script in scripts:
        lines = []
        for line in script.splitlines():
            why_not = next((why for word, why in CI_NOT_RUN.items() if word in line), None)
            if why_not is not None:
                print(f"not run: {line.strip()}  ({why_not})")
                continue
            assert "${{" not in line, line  # an Actions expression this test cannot fill in
            lines.append(line)
        res = subprocess.run(
            ["bash", "-e", "-c", "\n".join(lines)],
            cwd=checkout,
            env=env,
            capture_output=True,
            text=True,
            timeout=600,
        )
        assert res.returncode == 0 and "Traceback" not in res.stderr, (
            f"{script}\nexit {res.returncode}: {res.stderr[-2000:]}"
        )
    report = summary.read_text()
    assert "**Gate (--fail-if)**" in report and "| step\\_p50\\>+5% | passed |" in report, report[-3000:]
    # the report as GitHub renders it (markdown-it, GFM tables): the diff then explain, apart
    from markdown_it import MarkdownIt

    toks = MarkdownIt("commonmark").enable("table").parse(report)
    inline = [t.content for t in toks if t.type == "inline"]
    assert inline[0].startswith("**main (baseline) → trace/: "), inline[0]  # the baseline by name
    assert inline[1] == "gate passed: 1 condition holds"  # the verdict first
    gate = next(i for i, t in enumerate(toks) if t.type == "inline" and t.content == "**Gate (--fail-if)**")
    close = next(i for i in range(gate, len(toks)) if toks[i].type == "table_close")
    rows = [t for t in toks[gate:close] if t.type == "tr_open"]
    assert len(rows) == 2, [t.content for t in toks[gate:close] if t.type == "inline"]  # header, one row
    cells = [t.content for t in toks[gate:close] if t.type == "inline"][4:]
    # the same trace against its baseline: +0.0%, not met: it holds without a word on noise
    assert cells[1] == "passed" and "noise" not in cells[2], cells
    assert toks[close + 2].content.startswith("**Top finding") or toks[close + 2].content.startswith(
        "**No finding"
    ), toks[close + 2].content
