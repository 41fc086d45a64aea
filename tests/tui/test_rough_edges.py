"""Rough edges of keys and wording (#37 item 12), checked as a user meets them: the CLI's text,
``--help`` at 80 columns, and the app driven by keys."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from profui.capture.kineto import import_kineto

from realdata import shared_trace

PROFUI = str(Path(sys.executable).with_name("profui"))


def profui(*args: str | Path, columns: int = 80, cache: Path | None = None) -> subprocess.CompletedProcess:
    env = {**os.environ, "COLUMNS": str(columns), "NO_COLOR": "1", "TERM": "dumb"}
    if cache is not None:
        env["PROFUI_CACHE"] = str(cache)
    return subprocess.run(
        [PROFUI, *map(str, args)], capture_output=True, text=True, timeout=300, stdin=subprocess.DEVNULL, env=env
    )


@pytest.fixture(scope="module")
def one_rank(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("rough") / "one"
    import_kineto([shared_trace("hta-trace_filter-sampled_rank-1.json.gz")], out)
    return out


def test_summary_says_rank_1_not_ranks_1(one_rank: Path, tmp_path: Path) -> None:
    proc = profui("summary", one_rank, columns=120, cache=tmp_path)
    assert proc.returncode == 0, proc.stderr
    head = proc.stdout.splitlines()[1]
    # the trace's one rank is rank 1 (distributedInfo), on one node
    assert re.search(r"(^|· )1 node · rank 1 ·", head), head
    assert "ranks" not in head and "nodes" not in head, head
