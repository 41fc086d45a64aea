"""A large gzip trace's text goes to an unnamed file beside the import and is mapped, not held.

Oracles: the text ``gzip`` itself decompresses, the rows converted from that text in memory,
``findmnt`` for a folder's file system, and a real tmpfs that fills (root only) for a write
that fails.
"""

from __future__ import annotations

import gzip
import shutil
import subprocess
from pathlib import Path

import pyarrow.parquet as pq
import pytest
from test_profcap_support import mount_tmpfs

from profui.capture.conversion.errors import KinetoFormatError
from profui.capture.kineto import reader
from profui.capture.kineto import spill as spill_mod
from profui.capture.kineto.file_import import convert_kineto_file
from profui.capture.kineto.reader import inflate, is_mapped, read_bytes, text_size

from realdata import shared_trace

TRACE = "hta-df_index_resolver-df_index_resolver.json.gz"  # 3 MB of gzip, 51 MB of text


@pytest.fixture
def small_tmpfs(tmp_path: Path):
    yield from mount_tmpfs(tmp_path / "small", "4m")


def test_a_gzip_text_is_spilled_and_mapped_leaving_nothing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(spill_mod, "SPILL_BYTES", 1 << 20)
    src = shared_trace(TRACE)
    folder = tmp_path / "import"
    folder.mkdir()
    data = read_bytes(src, spill_dir=folder)
    assert is_mapped(data)
    assert bytes(data) == gzip.decompress(src.read_bytes())
    assert list(folder.iterdir()) == []  # the file has no name: nothing to leave behind


def test_small_gzip_text_stays_in_memory(tmp_path: Path) -> None:
    src = shared_trace(TRACE)
    assert text_size(src) < spill_mod.SPILL_BYTES
    assert not is_mapped(read_bytes(src, spill_dir=tmp_path))


def test_a_spilled_import_writes_the_same_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    src = shared_trace(TRACE)
    held = tmp_path / "held"
    held.mkdir()
    expected = pq.read_table(convert_kineto_file(src, held, node="n", rank=0).path)
    monkeypatch.setattr(spill_mod, "SPILL_BYTES", 1 << 20)
    mapped = []
    real = reader.spill
    monkeypatch.setattr(reader, "spill", lambda *args: mapped.append(real(*args)) or mapped[-1])
    out = tmp_path / "spilled"
    out.mkdir()
    res = convert_kineto_file(src, out, node="n", rank=0)
    assert len(mapped) == 1 and is_mapped(mapped[0])  # it did go through a file
    assert pq.read_table(res.path).equals(expected)
    assert [p for p in out.rglob("*") if p.is_file()] == [res.path]


def test_text_size_is_what_gzip_says(tmp_path: Path) -> None:
    src = shared_trace(TRACE)
    assert text_size(src) == len(gzip.decompress(src.read_bytes()))
    plain = tmp_path / "t.json"
    plain.write_bytes(b'{"traceEvents": []}')
    assert text_size(plain) == 19


def test_file_system_is_findmnts(tmp_path: Path) -> None:
    if shutil.which("findmnt") is None:
        pytest.skip("findmnt (util-linux) is not installed: no oracle")
    want = subprocess.run(
        ["findmnt", "-n", "-o", "FSTYPE", "-T", str(tmp_path)], capture_output=True, text=True, check=True
    ).stdout.strip()
    assert spill_mod.file_system(tmp_path) == want


def test_a_memory_file_system_is_never_spilled_to(small_tmpfs: Path) -> None:
    assert spill_mod.file_system(small_tmpfs) == "tmpfs"
    assert spill_mod.file_system(small_tmpfs / "below") == "tmpfs"
    assert not spill_mod.worth_spilling(small_tmpfs, spill_mod.SPILL_BYTES)


def test_a_disk_that_would_be_left_short_is_not_spilled_to(tmp_path: Path) -> None:
    free = shutil.disk_usage(tmp_path).free
    assert not spill_mod.worth_spilling(tmp_path, free // 2 + (1 << 20))
    assert spill_mod.worth_spilling(tmp_path, spill_mod.SPILL_BYTES) == (
        free >= 2 * spill_mod.SPILL_BYTES and spill_mod.file_system(tmp_path) not in ("tmpfs", "ramfs")
    )


def test_a_write_that_fills_the_disk_falls_back_and_leaves_it_as_it_was(small_tmpfs: Path) -> None:
    src = shared_trace(TRACE)
    free = shutil.disk_usage(small_tmpfs).free
    got = spill_mod.spill(lambda write: inflate(src, src.read_bytes(), write), small_tmpfs, 1 << 20)
    assert got is None
    assert list(small_tmpfs.iterdir()) == [] and shutil.disk_usage(small_tmpfs).free == free


def test_a_corrupt_gzip_is_named_when_spilling(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(spill_mod, "SPILL_BYTES", 1)
    good = shared_trace(TRACE).read_bytes()
    bad = tmp_path / "bad.json.gz"
    bad.write_bytes(good[: len(good) // 2] + bytes(64) + good[len(good) // 2 + 64 :])
    folder = tmp_path / "import"
    folder.mkdir()
    with pytest.raises(KinetoFormatError) as err:
        read_bytes(bad, spill_dir=folder)
    assert str(bad) in str(err.value) and "gzip" in str(err.value)
    assert list(folder.iterdir()) == []


def test_a_memory_file_system_is_told_under_an_escaped_mount_point(tmp_path: Path) -> None:
    for folder in mount_tmpfs(tmp_path / "a b", "4m"):  # mountinfo writes the space as \\040
        assert spill_mod.file_system(folder) == "tmpfs"
