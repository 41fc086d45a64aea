"""The gzip inflater of imports (ISA-L's, ``capture/kineto/inflater.py``) against the standard
library's ``gzip``: the same text from every shared gzip trace, members joined, padding between
members skipped, and damage named in one line."""

from __future__ import annotations

import gzip
from pathlib import Path

import pytest

from profui.capture.kineto.errors import KinetoFormatError
from profui.capture.kineto.inflater import zlib
from profui.capture.kineto.reader import gunzip, read_bytes

from realdata import require_shared_traces, shared_trace

SMALL = "hta-rank_non_gpu-rank_non_gpu.json.gz"


def test_the_inflater_is_isal() -> None:
    # a dependency of the project: the stdlib fallback is for platforms without its wheel
    assert zlib.__name__ == "isal.isal_zlib"


def test_every_shared_gzip_trace_inflates_to_what_gzip_reads() -> None:
    files = sorted(require_shared_traces().glob("*.gz"))
    assert len(files) >= 15
    for f in files:
        data = f.read_bytes()
        assert gunzip(f, data) == gzip.decompress(data), f.name


def test_members_are_joined_and_padding_between_them_skipped(tmp_path: Path) -> None:
    text = gzip.decompress(shared_trace(SMALL).read_bytes())
    third = len(text) // 3
    src = tmp_path / "members.json.gz"
    src.write_bytes(
        gzip.compress(text[:third])
        + b"\0" * 7
        + gzip.compress(text[third : 2 * third])
        + gzip.compress(text[2 * third :])
    )
    assert bytes(read_bytes(src)) == text


@pytest.mark.parametrize(
    ("damage", "words"),
    [
        (lambda b: b[:10] + b"\xff" * 64 + b[74:], "corrupt gzip file"),
        (lambda b: b[: len(b) // 2], "truncated gzip file"),
        (lambda b: b + b"not gzip", "corrupt gzip file (trailing garbage)"),
    ],
)
def test_damage_is_one_line_naming_the_file(tmp_path: Path, damage, words: str) -> None:
    src = tmp_path / "damaged.json.gz"
    src.write_bytes(damage(shared_trace(SMALL).read_bytes()))
    with pytest.raises(KinetoFormatError) as exc:
        read_bytes(src)
    line = str(exc.value)
    assert words in line and str(src) in line and "\n" not in line
