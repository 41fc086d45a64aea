"""Several ``profui summary`` of the same Kineto file at once, on an empty import cache.

Each process finds no cached import and starts one; none may see another's entry half
published or removed under it (one round of issue 38 refused a valid trace naming the cache's
own ``events-00000.parquet`` as missing). All must succeed with the same numbers, and the cache
must end with one finished entry and no leftover temporary folders.
"""

from __future__ import annotations

import gzip
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from realdata import same_numbers, shared_trace

PROFUI = str(Path(sys.executable).with_name("profui"))
TRACE = "hta-critical_path-simple_add-benchmark_result_493459_1694039959_trace.json.gz"
BIG = "hta-df_index_resolver-df_index_resolver.json.gz"  # long enough an import to kill midway
PROCESSES = 4
ROUNDS = 4


def _start(src: Path, cache: Path) -> subprocess.Popen:
    env = {**os.environ, "PROFUI_CACHE": str(cache)}
    return subprocess.Popen(
        [PROFUI, "summary", str(src), "--json"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        stdin=subprocess.DEVNULL,
        text=True,
        env=env,
    )


def test_concurrent_summaries_of_one_file_share_one_import(tmp_path: Path) -> None:
    src = tmp_path / TRACE
    src.write_bytes(shared_trace(TRACE).read_bytes())
    docs = []
    for round_ in range(ROUNDS):
        cache = tmp_path / f"cache-{round_}"
        procs = [_start(src, cache) for _ in range(PROCESSES)]
        for p in procs:
            out, err = p.communicate(timeout=300)
            assert p.returncode == 0, f"round {round_}: exit {p.returncode}: {err}"
            assert "Traceback" not in err
            docs.append(json.loads(out))
        entries = list((cache / "imports").iterdir())  # no temporary folder left either
        assert len(entries) == 1 and not entries[0].name.startswith("."), entries
        assert (entries[0] / "manifest.json").is_file()
        assert (entries[0] / ".profui-import.json").is_file()
    # the oracle is the source itself: its kernel events and their µs durations
    kernels = [
        e for e in json.loads(gzip.decompress(src.read_bytes()))["traceEvents"] if e.get("cat") == "kernel"
    ]
    want = (len(kernels), 1000 * sum(e["dur"] for e in kernels))
    for doc in docs:
        stats = doc["sections"]["kernels"]["stats"]
        assert (sum(r["count"] for r in stats), sum(r["total_ns"] for r in stats)) == want
        assert same_numbers(doc["sections"], docs[0]["sections"])


def test_an_import_killed_midway_neither_blocks_nor_litters_the_next(tmp_path: Path) -> None:
    """The first import holds the entry's lock; killed outright (SIGKILL: nothing cleans up), the
    one waiting on it goes on, imports, and removes the folder the killed one left."""
    src = tmp_path / BIG
    src.write_bytes(shared_trace(BIG).read_bytes())
    cache = tmp_path / "cache"
    first = _start(src, cache)
    imports = cache / "imports"
    deadline = time.monotonic() + 120
    while not (imports.is_dir() and any(p.name.startswith(".") for p in imports.iterdir())):
        assert first.poll() is None, "the import ended before it could be killed"
        assert time.monotonic() < deadline
        time.sleep(0.005)
    second = _start(src, cache)
    time.sleep(0.2)  # the second now waits on the lock (or has not reached it yet: either holds)
    first.send_signal(signal.SIGKILL)
    first.communicate(timeout=60)
    out, err = second.communicate(timeout=300)
    assert second.returncode == 0, err
    assert "Traceback" not in err
    entries = list(imports.iterdir())
    assert len(entries) == 1 and not entries[0].name.startswith("."), entries
    kernels = [
        e for e in json.loads(gzip.decompress(src.read_bytes()))["traceEvents"] if e.get("cat") == "kernel"
    ]
    stats = json.loads(out)["sections"]["kernels"]["stats"]
    assert sum(r["count"] for r in stats) == len(kernels)


def _mark_a_fifo(mark: Path) -> None:
    mark.unlink()
    os.mkfifo(mark)


def _mark_of_other_code(mark: Path) -> None:
    doc = json.loads(mark.read_text())
    mark.write_text(json.dumps({**doc, "code": "another version"}))


def _mark_without_code(mark: Path) -> None:
    doc = json.loads(mark.read_text())
    doc.pop("code")
    mark.write_text(json.dumps(doc))  # an entry an older profui made


@pytest.mark.parametrize("damage", [_mark_a_fifo, _mark_of_other_code, _mark_without_code])
def test_an_entry_whose_mark_is_not_this_codes_is_imported_again_in_its_place(tmp_path: Path, damage) -> None:
    src = tmp_path / TRACE
    src.write_bytes(shared_trace(TRACE).read_bytes())
    cache = tmp_path / "cache"
    env = {**os.environ, "PROFUI_CACHE": str(cache)}
    summary = [PROFUI, "summary", str(src), "--json"]
    first = subprocess.run(summary, capture_output=True, text=True, timeout=300, env=env)
    assert first.returncode == 0, first.stderr
    [entry] = (cache / "imports").iterdir()
    made = (entry / "manifest.json").stat().st_mtime_ns
    damage(entry / ".profui-import.json")
    again = subprocess.run(summary, capture_output=True, text=True, timeout=300, env=env)
    assert again.returncode == 0, again.stderr
    assert (entry / "manifest.json").stat().st_mtime_ns != made  # imported again, not served
    assert same_numbers(json.loads(again.stdout), json.loads(first.stdout))
    # in the same entry's place: the cache holds one entry, with a whole mark of this code
    assert [e.name for e in (cache / "imports").iterdir()] == [entry.name]
    mark = json.loads((entry / ".profui-import.json").read_text())
    assert mark["code"] not in ("another version", None)
