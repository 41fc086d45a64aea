"""The rank of a Kineto trace read from ``distributedInfo.rank`` or the file name: texts that
``str.isdigit()`` takes but ``int()`` cannot read ("²"), and more digits than ``int()`` reads
(5,000; its limit is 4,300), are never a traceback. A rank text that is not ASCII digits is no rank
(the file name or the default then decide, as for any missing rank); digits past the most ranks a
job can have are one line naming the file, exit 2. Built from the shared hand-trimmed trace whose
distributedInfo says rank 0."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from realdata import shared_trace

PROFUI = str(Path(sys.executable).with_name("profui"))


def _trace(tmp_path: Path, rank: object, name: str = "t.json") -> Path:
    src = json.loads(shared_trace("hta-call_stack-backward_thread.json").read_text())
    src["distributedInfo"]["rank"] = rank
    out = tmp_path / name
    out.write_text(json.dumps(src))
    return out


def _info(path: Path, tmp_path: Path) -> subprocess.CompletedProcess:
    return subprocess.run(
        [PROFUI, "info", str(path), "--json"],
        capture_output=True,
        text=True,
        timeout=300,
        env={**os.environ, "PROFUI_CACHE": str(tmp_path / "cache")},
    )


@pytest.mark.parametrize(
    ("rank", "name", "expected"),
    [
        ("²", "t.json", 0),  # no rank: the default
        ("²", "trainer_rank-7.json", 7),  # no rank: the file name's
        ("12", "t.json", 12),
        ("0" * 5000 + "3", "t.json", 3),  # leading zeros past int()'s 4,300 digits: still 3
    ],
    ids=["superscript", "superscript-named", "digits", "zeros"],
)
def test_rank_texts_are_read_or_left_out(tmp_path: Path, rank: str, name: str, expected: int) -> None:
    proc = _info(_trace(tmp_path, rank, name), tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout)["manifest"]["ranks"] == [expected]


@pytest.mark.parametrize(
    ("rank", "name"),
    [
        ("9" * 5000, "t.json"),  # past int()'s digit limit
        ("2147483648", "t.json"),  # past int32
        ("²", "rank_" + "9" * 200 + ".json"),  # a file name holds at most 255 bytes
    ],
    ids=["5000-digits", "past-int32", "file-name"],
)
def test_ranks_past_any_job_are_one_line(tmp_path: Path, rank: str, name: str) -> None:
    proc = _info(_trace(tmp_path, rank, name), tmp_path)
    assert proc.returncode == 2, proc.stdout
    assert len(proc.stderr.splitlines()) == 1 and "Traceback" not in proc.stderr
    assert "beyond the 2,147,483,647 ranks" in proc.stderr
