"""Bad input to ``profui import``: one stderr line naming the file, exit status 2, no traceback,
nothing written or overwritten. Each broken file is made here from a real trace."""

from __future__ import annotations

import gzip
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from realdata import SAMPLES, shared_trace

SMALL = "hta-critical_path-simple_add-benchmark_result_493459_1694039959_trace.json.gz"
OTHER = "hta-trace_compare-base-base.json.gz"
PROFUI = str(Path(sys.executable).with_name("profui"))


def profui(*args: str | Path) -> subprocess.CompletedProcess:
    return subprocess.run(
        [PROFUI, *map(str, args)], capture_output=True, text=True, timeout=120, stdin=subprocess.DEVNULL
    )


def assert_refused(proc: subprocess.CompletedProcess, names: str | Path, *words: str) -> str:
    """Exit 2, exactly one stderr line naming the file, no traceback; returns the line."""
    assert proc.returncode == 2, proc.stderr
    lines = proc.stderr.splitlines()
    assert len(lines) == 1, proc.stderr
    line = lines[0]
    assert line.startswith("profui: ") and str(names) in line
    assert "Traceback" not in proc.stderr
    for w in words:
        assert w in line.lower(), line
    return line


def refused_both_ways(tmp_path: Path, data: bytes, pure: str, *words: str) -> None:
    """``data`` written to a file and imported (``PROFUI_PURE_PYTHON=pure``: the C scan or the
    pure path) is refused in one line containing ``words``, and nothing is written."""
    bad = tmp_path / "bad.json"
    bad.write_bytes(data)
    out = tmp_path / "out"
    proc = subprocess.run(
        [PROFUI, "import", str(bad), "-o", str(out)],
        capture_output=True,
        text=True,
        timeout=120,
        stdin=subprocess.DEVNULL,
        env=dict(os.environ, PROFUI_PURE_PYTHON=pure),
    )
    assert_refused(proc, bad, *words)
    assert not out.exists()


def snapshot(folder: Path) -> dict[str, bytes]:
    return {str(p.relative_to(folder)): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()}


@pytest.fixture
def work(tmp_path: Path) -> Path:
    return tmp_path


def refused_and_nothing_written(work: Path, bad: Path, *words: str) -> None:
    out = work / "out"
    proc = profui("import", bad, "-o", out)
    assert_refused(proc, bad, *words)
    assert not out.exists()
    assert not [p for p in work.iterdir() if p.name.startswith(".out.")]  # no temp folder left


def test_missing_path(work: Path) -> None:
    refused_and_nothing_written(work, work / "nope.json.gz", "no such file")


def test_empty_file(work: Path) -> None:
    bad = work / "empty.json.gz"
    bad.write_bytes(b"")
    refused_and_nothing_written(work, bad, "empty")


def test_truncated_gzip(work: Path) -> None:
    data = shared_trace(SMALL).read_bytes()
    bad = work / "cut.json.gz"
    bad.write_bytes(data[: len(data) // 2])
    refused_and_nothing_written(work, bad, "truncated gzip")


def test_truncated_json(work: Path) -> None:
    data = gzip.decompress(shared_trace(SMALL).read_bytes())
    bad = work / "cut.json"
    bad.write_bytes(data[: len(data) * 2 // 3])
    refused_and_nothing_written(work, bad, "truncated json")


def test_garbage_not_json(work: Path) -> None:
    bad = work / "binary.json.gz"
    bad.write_bytes(gzip.compress(bytes(range(256)) * 8))
    refused_and_nothing_written(work, bad, "not json")


def test_json_that_is_not_a_trace(work: Path) -> None:
    doc = json.loads(gzip.decompress(shared_trace(SMALL).read_bytes()))
    bad = work / "props.json"
    bad.write_text(json.dumps({"deviceProperties": doc["deviceProperties"]}))
    refused_and_nothing_written(work, bad, "traceevents", "not a kineto trace")


def test_trace_without_events(work: Path) -> None:
    doc = json.loads(gzip.decompress(shared_trace(SMALL).read_bytes()))
    doc["traceEvents"] = [e for e in doc["traceEvents"] if e.get("ph") == "M"]
    bad = work / "only_metadata.json"
    bad.write_text(json.dumps(doc))
    refused_and_nothing_written(work, bad, "no trace events")


def test_execution_trace_refused(work: Path) -> None:
    refused_and_nothing_written(
        work, shared_trace("hta-execution_trace-benchmark_simple_add_et.json.gz"), "execution trace"
    )


def test_unreadable_file_symlink_loop(work: Path) -> None:
    # Tests run as root, where chmod 000 does not stop reads; a symlink loop is unreadable for all.
    bad = work / "loop.json.gz"
    bad.symlink_to(bad)
    refused_and_nothing_written(work, bad, "cannot read")


def _as_unprivileged(*args: str | Path) -> subprocess.CompletedProcess:
    """``profui ARGS`` where file permissions hold: as root, with the capabilities that bypass
    them (DAC override and read search) dropped, as a normal user's process runs."""
    cmd = [PROFUI, *map(str, args)]
    if os.geteuid() == 0:
        setpriv = shutil.which("setpriv")
        assert setpriv, "setpriv (util-linux) is needed to drop root's file capabilities"
        drop = "-dac_override,-dac_read_search"
        cmd = [setpriv, f"--bounding-set={drop}", f"--inh-caps={drop}", "--", *cmd]
    return subprocess.run(cmd, capture_output=True, text=True, timeout=120, stdin=subprocess.DEVNULL)


@pytest.mark.parametrize(
    "command",
    [
        ["import", "{bad}", "-o", "{out}"],
        ["info", "{bad}"],
        ["summary", "{bad}"],
        ["export", "{bad}", "-o", "{out}.json"],
        ["open", "{bad}"],  # refused before the app starts, not on its import screen
    ],
    ids=lambda c: c[0],
)
def test_unreadable_file_permissions(work: Path, command: list[str]) -> None:
    # before: typer's own readable check printed a five-line usage box for every command
    bad = work / "secret.json.gz"
    bad.write_bytes(shared_trace(SMALL).read_bytes())
    bad.chmod(0)
    out = work / "out"
    try:
        proc = _as_unprivileged(*(a.format(bad=bad, out=out) for a in command))
        assert_refused(proc, bad, "permission denied")
        assert not [p for p in work.iterdir() if p.name != bad.name]  # nothing written
    finally:
        bad.chmod(0o644)


def test_unreadable_manifest_permissions(work: Path) -> None:
    trace = work / "trace"
    shutil.copytree(SAMPLES / "synthetic_gpu", trace, ignore=shutil.ignore_patterns(".profui"))
    (trace / "manifest.json").chmod(0)
    try:
        for command in ("info", "summary", "open"):
            assert_refused(_as_unprivileged(command, trace), trace / "manifest.json", "permission denied")
    finally:
        (trace / "manifest.json").chmod(0o644)


def test_one_bad_file_in_folder_imports_nothing(work: Path) -> None:
    folder = work / "job"
    folder.mkdir()
    (folder / "rank-0.json.gz").write_bytes(shared_trace(SMALL).read_bytes())
    data = shared_trace(OTHER).read_bytes()
    (folder / "rank-1.json.gz").write_bytes(data[:-40])
    out = work / "out"
    assert_refused(profui("import", folder, "-o", out), folder / "rank-1.json.gz", "gzip")
    assert not out.exists()
    assert sorted(p.name for p in work.iterdir()) == ["job"]


def test_existing_trace_not_overwritten_without_force(work: Path) -> None:
    out = work / "out"
    first = profui("import", shared_trace(SMALL), "-o", out, "--node", "box1", "--rank", "3")
    assert first.returncode == 0, first.stderr
    # distributedInfo says rank 0, which wins over --rank; --node names the node folder
    assert first.stdout.startswith("imported ") and "node(s) box1; rank(s) 0" in first.stdout
    assert (out / "node=box1" / "rank=0" / "events-00000.parquet").is_file()
    before = snapshot(out)
    assert any(k.endswith(".parquet") for k in before)
    again = profui("import", shared_trace(OTHER), "-o", out)
    assert_refused(again, out, "already holds a profui trace", "--force")
    assert snapshot(out) == before
    # a failing --force import leaves the old trace untouched too
    bad = work / "cut.json.gz"
    bad.write_bytes(shared_trace(OTHER).read_bytes()[:100])
    assert_refused(profui("import", bad, "-o", out, "--force"), bad, "gzip")
    assert snapshot(out) == before
    # --force with good input replaces it
    forced = profui("import", shared_trace(OTHER), "-o", out, "--force")
    assert forced.returncode == 0, forced.stderr
    after = snapshot(out)
    assert after != before
    manifest = json.loads(after["manifest.json"])
    assert manifest["ranks"] == [1] and manifest["sources"][0]["file"].endswith(OTHER)
    assert sorted(p.name for p in work.iterdir()) == ["cut.json.gz", "out"]


def test_output_folder_with_other_files_refused(work: Path) -> None:
    out = work / "out"
    out.mkdir()
    (out / "notes.txt").write_text("mine")
    assert_refused(profui("import", shared_trace(SMALL), "-o", out, "--force"), out, "not empty")
    assert snapshot(out) == {"notes.txt": b"mine"}
