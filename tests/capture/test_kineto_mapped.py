"""A plain Kineto file is mapped, not read, and its pages go from memory as the scan passes them.

The oracle for the rows is the same file converted from bytes read into memory (the gzip path
and the pure path both read so); the oracle for memory is the kernel's own count of the
mapping's resident pages (``/proc/self/smaps``).
"""

from __future__ import annotations

import gzip
import os
import sys
from pathlib import Path

import pytest

from profui.capture.conversion.errors import KinetoFormatError
from profui.capture.kineto import native
from profui.capture.kineto.convert import convert_events
from profui.capture.kineto.file_import import convert_kineto_file
from profui.capture.kineto.reader import decode, is_mapped, lies_in_mapping, read_bytes

from realdata import shared_trace

BIG = "hta-df_index_resolver-df_index_resolver.json.gz"  # 51 MB of JSON text


def _resident_mb(path: Path) -> float:
    """MB of this process's mappings of ``path`` that are resident."""
    total, inside = 0, False
    with open("/proc/self/smaps") as fh:
        for line in fh:
            head = line.split()
            if head and "-" in head[0] and len(head) >= 5:  # a mapping's header line
                inside = len(head) >= 6 and head[5] == str(path)
            elif inside and head[0] == "Rss:":
                total += int(head[1])
    return total / 1024


@pytest.fixture(scope="module")
def plain(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, bytes]:
    src = shared_trace(BIG)
    text = gzip.decompress(src.read_bytes())
    out = tmp_path_factory.mktemp("mapped") / "df_index.json"
    out.write_bytes(text)
    return out, text


def test_a_plain_file_is_mapped_and_a_gzip_file_is_read(plain: tuple[Path, bytes]) -> None:
    path, text = plain
    data = read_bytes(path)
    assert is_mapped(data) and bytes(data) == text
    gz = read_bytes(shared_trace(BIG))
    assert not is_mapped(gz) and bytes(gz) == text


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc/self/smaps (Linux)")
@pytest.mark.skipif(not native.available(), reason="the scan that lets pages go is the C extension's")
def test_the_scanned_text_is_not_resident_and_the_rows_are_the_same(plain: tuple[Path, bytes]) -> None:
    path, text = plain
    data = read_bytes(path)
    doc = decode(path, data)
    assert doc.mapped
    assert _resident_mb(path) < 1  # decoding walked every page, then let them go
    conv = convert_events(doc)
    # the scan let go of all but the last (under 32 MB) of the text and the specials' pages
    assert _resident_mb(path) < len(text) / 2**20 - 30
    del doc, data
    expected = convert_events(decode(path, bytearray(text)))
    assert conv.table.equals(expected.table)
    assert conv.source == expected.source and conv.counts == expected.counts


def test_a_mapped_file_with_a_byte_order_mark_reads_as_without(tmp_path: Path) -> None:
    body = (
        b'{"traceEvents": [{"ph": "X", "cat": "kernel", "name": "k", "pid": 0, "tid": 7, "ts": 1, "dur": 2}]}'
    )
    with_bom = tmp_path / "bom.json"
    with_bom.write_bytes(b"\xef\xbb\xbf" + body)
    got = convert_events(decode(with_bom, read_bytes(with_bom)))
    assert got.table.equals(convert_events(decode(with_bom, bytearray(body))).table)
    assert got.table.num_rows == 1


@pytest.mark.parametrize(
    ("content", "problem"),
    [
        (b"", "empty file"),
        (b'{"traceEvents": [{"ph": "X", "name": "k", "ts": 1', "truncated JSON"),
        (b"\x1f\x8b\x08", "gzip"),
    ],
)
def test_bad_plain_files_are_named(tmp_path: Path, content: bytes, problem: str) -> None:
    p = tmp_path / "t.json"
    p.write_bytes(content)
    with pytest.raises(KinetoFormatError) as err:
        decode(p, read_bytes(p))
    assert str(p) in str(err.value) and problem in str(err.value)


def test_only_text_inside_the_mapping_is_taken_for_mapped(plain: tuple[Path, bytes]) -> None:
    path, text = plain
    data = read_bytes(path)
    doc = decode(path, data)
    assert lies_in_mapping(doc.events_text, data)
    assert not lies_in_mapping(bytes(doc.events_text), data)  # a copy: memory of our own
    assert not decode(path, bytearray(text)).mapped


def test_a_file_rewritten_during_its_import_is_refused(plain: tuple[Path, bytes], tmp_path: Path) -> None:
    path, text = plain
    src = tmp_path / "live.json"
    src.write_bytes(text)
    out = tmp_path / "out"
    out.mkdir()
    touched = []

    def rewrite(done: int, total: int) -> None:  # a profiler writing the file again, same size
        if not touched:
            touched.append(done)
            st = src.stat()
            os.utime(src, ns=(st.st_atime_ns, st.st_mtime_ns + 10**9))

    with pytest.raises(KinetoFormatError) as err:
        convert_kineto_file(src, out, node="n", rank=0, progress=rewrite)
    assert str(src) in str(err.value) and "changed while it was being imported" in str(err.value)
    assert not list(out.rglob("*.parquet"))
