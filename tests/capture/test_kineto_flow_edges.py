"""Flow events without a time: a real trace's flows given a ``ts`` that is not a number (or none)
are dropped and counted in the import's ``skipped``, the same by the C scan and the pure path;
the file is imported (exit 0), every other flow kept. Counts are read from the damaged JSON here."""

from __future__ import annotations

import gzip
import json
import os
import subprocess
from collections import Counter
from pathlib import Path

import pytest
from test_bad_input_import import PROFUI

from profui.capture.format import read_manifest

from realdata import shared_trace

#: A real trace with both correlation flows (ac2g) and kept flows (fwdbwd).
FLOWS = "hta-amd_trace-mi250_minitoy_train_ROCm6_2_kineto.json.gz"


def _damaged(tmp_path: Path) -> tuple[Path, Counter, Counter]:
    """The trace with one fwdbwd end given ``"zz"``, one ac2g start ``null`` and one ac2g end no
    ``ts``; returns it, the flows left by ``cat:ph`` and the dropped ones by ``ph:why``."""
    doc = json.loads(gzip.decompress(shared_trace(FLOWS).read_bytes()))
    flows = [e for e in doc["traceEvents"] if e.get("ph") in ("s", "f", "t")]
    fwd_f = next(e for e in flows if e["cat"] == "fwdbwd" and e["ph"] == "f")
    ac_s = next(e for e in flows if e["cat"] == "ac2g" and e["ph"] == "s")
    ac_f = next(e for e in flows if e["cat"] == "ac2g" and e["ph"] == "f")
    fwd_f["ts"], ac_s["ts"] = "zz", None
    del ac_f["ts"]
    damaged = [fwd_f, ac_s, ac_f]
    left = Counter(f"{e['cat']}:{e['ph']}" for e in flows if not any(e is d for d in damaged))
    dropped = Counter({"f:bad-ts": 1, "s:bad-ts": 1, "f:no-ts": 1})
    bad = tmp_path / "flows.json"
    bad.write_text(json.dumps(doc))
    return bad, left, dropped


@pytest.mark.parametrize("pure", ["0", "1"], ids=["c-scan", "pure-python"])
def test_flows_without_a_time_are_dropped_and_counted(tmp_path: Path, pure: str) -> None:
    bad, left, dropped = _damaged(tmp_path)
    out = tmp_path / "out"
    proc = subprocess.run(
        [PROFUI, "import", str(bad), "-o", str(out)],
        capture_output=True,
        text=True,
        timeout=120,
        stdin=subprocess.DEVNULL,
        env=dict(os.environ, PROFUI_PURE_PYTHON=pure),
    )
    assert proc.returncode == 0, proc.stderr
    assert "Traceback" not in proc.stderr
    (source,) = read_manifest(out).sources
    assert Counter(source["flows"]) == left
    assert Counter(source["skipped"]) == dropped


def test_both_paths_agree_on_the_dropped_flows(tmp_path: Path) -> None:
    from test_kineto_native import assert_same

    bad, _left, _dropped = _damaged(tmp_path)
    assert assert_same(bad, bad.read_bytes()) > 0


def test_a_launch_flow_with_an_odd_pid_and_no_time_is_counted_dropped(tmp_path: Path) -> None:
    # an ac2g flow the batch decode refuses (pid 1.5) is probed alone: its ts decides too
    from test_kineto_native import assert_same

    from profui.capture.kineto.convert import convert_events
    from profui.capture.kineto.reader import decode

    doc = json.loads(gzip.decompress(shared_trace(FLOWS).read_bytes()))
    flow = next(e for e in doc["traceEvents"] if e.get("cat") == "ac2g" and e.get("ph") == "f")
    flow["pid"], flow["ts"] = 1.5, "zz"
    bad = tmp_path / "odd.json"
    bad.write_text(json.dumps(doc))
    assert assert_same(bad, bad.read_bytes()) > 0
    conv = convert_events(decode(bad, bytearray(bad.read_bytes())), native=False)
    assert conv.source["skipped"] == {"f:bad-ts": 1}
