"""Several ``profui summary a/ b/`` of one job's per-node folders at once, on an empty cache.

The combined trace is a folder of the cache, built by whichever process misses it first. Each
process finds no combined trace and starts building one; none may remove an entry another has
published and is reading (issue 38 item 13's race, which combine.py had too: the second to finish
removed the first's entry, then renamed its own onto it). All must succeed, each seeing both nodes
with the steps read from the folders' own events files, and the cache must end with one finished
entry and no leftover temporary folder.

Each process is the real ``profui`` command line, started ahead and let go at once (a file the
test creates), so the interpreters' start-up does not spread them apart: the race is then met in
most rounds, not by chance.

The per-node folders are two real profcap runs of a 2-rank gloo DDP job, as
``test_profcap_multinode`` makes them.
"""

from __future__ import annotations

import errno
import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest
from test_profcap_multinode import PROFUI, assert_one_job, two_nodes

PROCESSES = 4
ROUNDS = 6


@pytest.fixture(scope="module")
def folders(tmp_path_factory) -> tuple[Path, Path]:
    tmp = tmp_path_factory.mktemp("pernode")
    a, b = tmp / "run-a", tmp / "run-b"
    for proc in two_nodes(tmp, (a, b), "job-concurrent-combine"):
        assert proc.returncode == 0, proc.stderr[-3000:]
    return a, b


#: ``profui`` (its entry point, loaded first), waiting for the file argv[1] before it runs.
_AT_ONCE = """
import os, sys, time
from profui.tui.cli import main
go = sys.argv.pop(1)
while not os.path.exists(go):
    time.sleep(0.001)
sys.exit(main())
"""


def _start(a: Path, b: Path, cache: Path, go: Path) -> subprocess.Popen:
    env = {**os.environ, "PROFUI_CACHE": str(cache)}
    return subprocess.Popen(
        [sys.executable, "-c", _AT_ONCE, str(go), "summary", "--json", str(a), str(b)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        stdin=subprocess.DEVNULL,
        text=True,
        env=env,
    )


def test_concurrent_summaries_of_two_node_folders_share_one_combined_trace(
    folders: tuple[Path, Path], tmp_path: Path
) -> None:
    a, b = folders
    for round_ in range(ROUNDS):
        cache = tmp_path / f"cache-{round_}"
        go = tmp_path / f"go-{round_}"
        procs = [_start(a, b, cache, go) for _ in range(PROCESSES)]
        time.sleep(3)  # all four loaded and waiting
        go.touch()
        ended = [(p, *p.communicate(timeout=300)) for p in procs]  # all ended before any verdict
        for p, out, err in ended:
            assert p.returncode == 0, f"round {round_}: exit {p.returncode}: {err}"
            assert "Traceback" not in err
            assert_one_job(json.loads(out), [a, b])
        entries = list((cache / "combined").iterdir())  # no temporary folder left either
        assert len(entries) == 1 and not entries[0].name.startswith("."), entries
        assert sorted(p.name for p in entries[0].iterdir() if p.name.startswith("node=")) == [
            "node=node-a",
            "node=node-b",
        ]


#: Holds the cache's lock of the combined trace argv[2] in the cache argv[1], as a build does,
#: with the temporary folder a build makes, and then hangs: killed, it has cleaned nothing up.
_HOLDER = """
import sys, time
from pathlib import Path
from profui.capture.format.lock import cache_lock
cache, key = Path(sys.argv[1]), sys.argv[2]
lock = cache_lock(cache, "combined", key)
assert lock.try_acquire() and lock.enforced
(cache / "combined" / f".{key}.killed").mkdir(parents=True)
print("held", flush=True)
time.sleep(600)
"""


def test_a_build_killed_holding_the_lock_neither_blocks_nor_litters_the_next(
    folders: tuple[Path, Path], tmp_path: Path
) -> None:
    a, b = folders
    go = tmp_path / "go"
    go.touch()
    first = _start(a, b, tmp_path / "learn", go)  # the key: the entry's name
    first.communicate(timeout=300)
    assert first.returncode == 0
    [key] = [p.name for p in (tmp_path / "learn" / "combined").iterdir()]
    cache = tmp_path / "cache"
    holder = subprocess.Popen(
        [sys.executable, "-c", _HOLDER, str(cache), key], stdout=subprocess.PIPE, text=True
    )
    try:
        assert holder.stdout.readline() == "held\n"
        waiter = _start(a, b, cache, go)
        time.sleep(5)
        assert waiter.poll() is None, "built the combined trace while another process held its lock"
    finally:
        holder.kill()
        holder.communicate(timeout=60)
    out, err = waiter.communicate(timeout=300)
    assert waiter.returncode == 0, err
    assert "Traceback" not in err
    assert_one_job(json.loads(out), [a, b])
    assert [p.name for p in (cache / "combined").iterdir()] == [key]  # the killed one's folder gone
    # a whole entry is served as it is, not built again (that would move it aside under readers)
    built = (cache / "combined" / key).stat().st_ino
    again = _start(a, b, cache, go)
    again.communicate(timeout=300)
    assert again.returncode == 0
    assert (cache / "combined" / key).stat().st_ino == built


def _unlink_node_b(entry: Path) -> None:
    (entry / "node=node-b").unlink()


def _repoint_node_b(entry: Path) -> None:
    target = os.readlink(entry / "node=node-a")
    (entry / "node=node-b").unlink()
    (entry / "node=node-b").symlink_to(target, target_is_directory=True)


def _truncate_manifest(entry: Path) -> None:
    text = (entry / "manifest.json").read_bytes()
    (entry / "manifest.json").write_bytes(text[: len(text) // 2])


def _mark_a_fifo(entry: Path) -> None:
    (entry / ".profui-combined.json").unlink()
    os.mkfifo(entry / ".profui-combined.json")


@pytest.mark.parametrize("damage", [_unlink_node_b, _repoint_node_b, _truncate_manifest, _mark_a_fifo])
def test_a_damaged_combined_trace_is_built_again_not_served(
    folders: tuple[Path, Path], tmp_path: Path, damage
) -> None:
    a, b = folders
    env = {**os.environ, "PROFUI_CACHE": str(tmp_path / "cache")}
    summary = [PROFUI, "summary", "--json", str(a), str(b)]
    first = subprocess.run(summary, capture_output=True, text=True, timeout=300, env=env)
    assert first.returncode == 0, first.stderr
    [entry] = (tmp_path / "cache" / "combined").iterdir()
    damage(entry)
    again = subprocess.run(summary, capture_output=True, text=True, timeout=120, env=env)
    assert again.returncode == 0, again.stderr
    assert "Traceback" not in again.stderr
    assert_one_job(json.loads(again.stdout), [a, b])
    assert list((tmp_path / "cache" / "combined").iterdir()) == [entry]  # rebuilt in place, nothing left
    assert {p.name: p.resolve() for p in entry.iterdir() if p.name.startswith("node=")} == {
        "node=node-a": (a / "node=node-a").resolve(),
        "node=node-b": (b / "node=node-b").resolve(),
    }


def _without_locks(log: Path) -> list[str]:
    """A command prefix under which every ``flock`` fails with ENOLCK, as on an NFS mount without
    a lock manager: strace's fault injection, stopping at flock alone (seccomp-bpf), its calls
    written to ``log``."""
    strace = shutil.which("strace")
    if strace is None:
        pytest.skip("strace is not installed")
    prefix = [strace, "-f", "-qq", "--seccomp-bpf", "-o", str(log)]
    prefix += ["-e", "trace=flock", "-e", "inject=flock:error=ENOLCK"]
    probe = "import fcntl, sys\ntry:\n    fcntl.flock(0, fcntl.LOCK_EX)\nexcept OSError as e:\n    sys.exit(e.errno)"
    if subprocess.run([*prefix, sys.executable, "-c", probe], timeout=60).returncode != errno.ENOLCK:
        pytest.skip("strace cannot inject faults here (ptrace refused)")
    return prefix


def _run_without_locks(args: list[object], log: Path, cache: Path) -> subprocess.CompletedProcess:
    proc = subprocess.run(
        [*_without_locks(log), PROFUI, *map(str, args)],
        capture_output=True,
        text=True,
        timeout=300,
        env={**os.environ, "PROFUI_CACHE": str(cache)},
    )
    assert "INJECTED" in log.read_text()  # its locks were refused indeed
    assert "Traceback" not in proc.stderr
    return proc


def test_a_file_system_without_locks_combines_and_analyses_unlocked(
    folders: tuple[Path, Path], tmp_path: Path
) -> None:
    a, b = folders
    cache = tmp_path / "cache"
    summary = _run_without_locks(["summary", "--json", a, b], tmp_path / "summary.log", cache)
    assert summary.returncode == 0, summary.stderr
    assert_one_job(json.loads(summary.stdout), [a, b])
    trace = tmp_path / "trace"
    shutil.copytree(a, trace, ignore=shutil.ignore_patterns(".profui"))
    analyze = _run_without_locks(["analyze", "--json", "-q", trace], tmp_path / "analyze.log", cache)
    assert analyze.returncode == 0, analyze.stderr  # was ENOLCK's traceback, exit 1
    assert json.loads(analyze.stdout)["status"] == "succeeded"
    # every stage ran but the on-demand timeline index, which a run without --stages leaves out
    status = {s["name"]: s["status"] for s in json.loads(analyze.stdout)["stages"]}
    assert status.pop("timeline") == "skipped" and set(status.values()) == {"succeeded"}
