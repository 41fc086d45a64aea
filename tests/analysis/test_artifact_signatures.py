"""A stage output hashed when written is trusted by another process while its files are the
same files, unchanged (inode, size, mtime, ctime as the writer recorded them); any write to
one of them, a copy of the folder or a damaged byte is caught by hashing again (a copy that
matches then records its own files' identities). Each case runs
the reader in a fresh interpreter (the in-process record of what was verified starts empty),
on a real recorded run of a bundled sample."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from profui.analysis.pipeline import analyze
from profui.analysis.pipeline.artifacts import file_sha256, read_meta

from realdata import SAMPLES

#: Verifies a folder in a fresh process, counting the files it hashes.
READER = """
import json, sys
from pathlib import Path
from profui.analysis.pipeline import artifacts
hashed = []
real = artifacts.file_sha256
artifacts.file_sha256 = lambda p: hashed.append(Path(p).name) or real(p)
meta = artifacts.verify(Path(sys.argv[1]))
print(json.dumps({"ok": meta is not None, "hashed": sorted(hashed)}))
"""


def _verify_elsewhere(folder: Path) -> dict:
    run = subprocess.run(
        [sys.executable, "-c", READER, str(folder)], capture_output=True, text=True, check=True
    )
    return json.loads(run.stdout)


@pytest.fixture
def kernels_folder(tmp_path: Path) -> Path:
    trace = tmp_path / "t"
    shutil.copytree(SAMPLES / "mlp_cpu", trace, ignore=shutil.ignore_patterns(".profui"))
    rec = analyze(trace, stages=["ingest", "kernels"])
    return trace / ".profui" / rec.stages["kernels"].artifact


def test_unchanged_files_are_not_hashed_again(kernels_folder: Path) -> None:
    meta = read_meta(kernels_folder)
    assert meta is not None and set(meta.signatures) == set(meta.outputs)
    for name, (ino, size, mtime, ctime) in meta.signatures.items():
        st = os.stat(kernels_folder / name)
        assert (ino, size, mtime, ctime) == (st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns)
        assert file_sha256(kernels_folder / name) == meta.outputs[name]
    assert _verify_elsewhere(kernels_folder) == {"ok": True, "hashed": []}


def test_a_rewritten_file_is_hashed_and_a_damaged_one_refused(kernels_folder: Path) -> None:
    stats = kernels_folder / "stats.parquet"
    data = stats.read_bytes()
    stats.write_bytes(data)  # the same bytes, written again: its ctime moves
    # the folder is no longer as hashed: every output is hashed again, and matches
    assert _verify_elsewhere(kernels_folder) == {
        "ok": True,
        "hashed": sorted(read_meta(kernels_folder).outputs),
    }
    damaged = bytearray(data)
    damaged[len(damaged) // 2] ^= 0xFF  # one byte, the size unchanged
    stats.write_bytes(bytes(damaged))
    assert _verify_elsewhere(kernels_folder)["ok"] is False


def test_a_copied_folder_is_hashed_once_more_then_trusted(kernels_folder: Path, tmp_path: Path) -> None:
    copy = tmp_path / "copy" / kernels_folder.name
    shutil.copytree(kernels_folder, copy)  # new inodes
    got = _verify_elsewhere(copy)
    assert got["ok"] and got["hashed"] == sorted(read_meta(copy).outputs)
    # its meta now records the copy's files, as hashed: the next process trusts them
    assert _verify_elsewhere(copy) == {"ok": True, "hashed": []}
    assert _verify_elsewhere(kernels_folder) == {"ok": True, "hashed": []}  # the original's kept
