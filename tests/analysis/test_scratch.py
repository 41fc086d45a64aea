"""A files stage run in memory (the timeline of a running capture) writes into a folder of its
process under the trace's private folder: gone when the process exits, and a killed process's
removed by the next process that makes one. Real processes on a real trace (HTA's event-sync
trace, imported): one exits, one is killed with SIGKILL in the middle of writing its index."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from profui.analysis import open_trace
from profui.analysis.pipeline.run import in_memory
from profui.capture.format import open_trace_dir
from profui.capture.format.liveness import this_host
from profui.capture.ingest import import_trace

from realdata import shared_trace

EVENT_SYNC = "hta-critical_path-cuda_event_sync_multi_stream-event_sync_trace.json.gz"

#: Builds the timeline in memory; ``kill`` kills itself once the index is being written.
CHILD = """
import os, signal, sys
from profui.analysis import open_trace
from profui.analysis.pipeline.run import in_memory

def progress(stage, fraction, message):
    if sys.argv[2] == "kill" and message.startswith("writing the index"):
        os.kill(os.getpid(), signal.SIGKILL)

got = in_memory(open_trace(sys.argv[1]), ["timeline"], on_progress=progress)
print(got.timeline.index.parent)
"""


@pytest.fixture
def trace(tmp_path: Path) -> Path:
    out = tmp_path / "t"
    import_trace([shared_trace(EVENT_SYNC)], out)
    return out


def _child(trace: Path, how: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-c", CHILD, str(trace), how], capture_output=True, text=True)


def test_a_process_folder_is_gone_at_exit(trace: Path) -> None:
    run = _child(trace, "exit")
    assert run.returncode == 0, run.stderr
    written = Path(run.stdout.strip())
    root = open_trace_dir(trace).private_dir / "scratch"
    assert written.parent.parent == root and written.parent.name.endswith(f"@{this_host()}")
    assert not written.parent.exists() and list(root.iterdir()) == []


def test_a_killed_process_folder_is_removed_by_the_next(trace: Path) -> None:
    run = _child(trace, "kill")
    assert run.returncode == -signal.SIGKILL, run.stderr
    root = open_trace_dir(trace).private_dir / "scratch"
    (orphan,) = root.iterdir()  # the killed process's, left with its half index
    pid = int(orphan.name.split("@")[0])
    assert pid != os.getpid() and any(orphan.rglob("*.bin"))
    got = in_memory(open_trace(trace), ["timeline"])
    mine = got.timeline.index.parent.parent
    assert not orphan.exists() and sorted(root.iterdir()) == [mine]
    assert mine.name == f"{os.getpid()}@{this_host()}"
