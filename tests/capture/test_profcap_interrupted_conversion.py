"""Ctrl-C while profcap converts the trace windows at the end: it stops at once, and its note
tells the truth — the windows it did not convert stay in the spool, the ones converted before
are in the trace and in the manifest. The window being converted is a real Kineto trace (HTA's
54 MB df_index trace, handed over by the job as a window of its own); the interrupt is sent
while a converter holds it."""

from __future__ import annotations

import fcntl
import gzip
import json
import signal
import subprocess
import sys
import time
from pathlib import Path

from test_profcap_support import PROFCAP

from realdata import shared_trace

BIG = "hta-df_index_resolver-df_index_resolver.json.gz"

#: A plain job that hands a big Kineto window over to the spool as it ends (atomically).
JOB = r"""
import os, sys
from profui.capture import session, step
for i in range(5):
    step()
s = session.current()
final = s.spool_name(0, os.getpid(), 99, session.KINETO_SUFFIX)
tmp = final.with_name(final.name + ".tmp")
tmp.write_bytes(open(sys.argv[1], "rb").read())
os.replace(tmp, final)
"""


def test_ctrl_c_during_the_final_conversion_leaves_the_rest_and_says_so(tmp_path: Path) -> None:
    big = tmp_path / "big.json"
    big.write_bytes(gzip.decompress(shared_trace(BIG).read_bytes()))
    job = tmp_path / "job.py"
    job.write_text(JOB)
    trace = tmp_path / "trace"
    p = subprocess.Popen(
        [*PROFCAP, "-o", str(trace), "--", sys.executable, str(job), str(big)],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
    said = []
    for line in p.stderr:  # profcap says when it starts converting
        said.append(line)
        if "converting" in line:
            break
    # interrupt it while a converter holds the hand-over (its flock): inside the conversion,
    # however fast the conversion has become
    handover = next((trace / ".spool").glob("*.kineto.json"))
    deadline = time.monotonic() + 60
    while not _held(handover):
        assert time.monotonic() < deadline, "no converter took the window"
    p.send_signal(signal.SIGINT)
    rest = p.stderr.read()
    assert p.wait(timeout=120) == 0, "".join(said) + rest
    m = json.loads((trace / "manifest.json").read_text())
    notes = [n for n in m["notes"] if "interrupted while converting" in n]
    assert len(notes) == 1, m["notes"]
    left = sorted((trace / ".spool").glob("*.kineto.json"))
    assert notes[0].startswith(f"profcap was interrupted while converting: {len(left)} unconverted window")
    events = sorted(trace.glob("node=*/rank=*/events-*.parquet"))
    assert len(m["capture"]["windows"]) == len(events)  # what is in the trace is in the manifest
    # the window is in one place: in the spool, unconverted (interrupted before its events were
    # published), or in the trace and the manifest (published just before the interrupt)
    assert len(left) + len(events) == 1, (left, events)
    assert not list(trace.rglob("*.tmp*"))  # nothing half-written is left in the trace


def _held(path: Path) -> bool:
    """True while another process holds ``path``'s flock (the converter's claim on it)."""
    try:
        with open(path, "rb") as fh:
            try:
                fcntl.flock(fh, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                return True
            fcntl.flock(fh, fcntl.LOCK_UN)
            return False
    except FileNotFoundError:
        raise AssertionError("the window was converted before a converter was seen holding it") from None
