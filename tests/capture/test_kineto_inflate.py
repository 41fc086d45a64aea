"""The gzip inflater of imports (ISA-L's, ``capture/kineto/inflater.py``) against the standard
library's ``gzip``: the same text from every shared gzip trace, members joined, padding between
members skipped, and damage named in one line."""

from __future__ import annotations

import gzip
import subprocess
import sys
from pathlib import Path

import pytest

from profui.capture.conversion.errors import KinetoFormatError
from profui.capture.kineto import reader
from profui.capture.kineto.inflater import zlib
from profui.capture.kineto.reader import gunzip, inflate, read_bytes

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


_HELD = """
import gzip, sys
from pathlib import Path
from profui.capture.kineto.reader import gunzip

def peak_mb():
    with open("/proc/self/status") as fh:
        return next(int(line.split()[1]) // 1024 for line in fh if line.startswith("VmHWM"))

text = b'{"ph":"X","name":"k","ts":1.5,"dur":2},' * (64 * 2**20 // 40)
quarter = len(text) // 4
data = b"".join(gzip.compress(text[i : i + quarter], 1) for i in range(0, len(text), quarter))
with open("/proc/self/clear_refs", "w") as fh:
    fh.write("5")  # the high-water mark starts again from here
base = peak_mb()
out = gunzip(Path("members.json.gz"), data)
grown = peak_mb() - base
assert bytes(out) == text
print(grown, len(text))
"""


def test_members_are_not_all_held_twice() -> None:
    # four members of 16 MiB of text: gathered as they come, not all kept until a join. Measured
    # in a fresh interpreter: in this one, what earlier tests left in the allocator moves the
    # high-water mark by a few MB either way.
    proc = subprocess.run(
        [sys.executable, "-c", _HELD], capture_output=True, text=True, timeout=120, check=True
    )
    grown, size = map(int, proc.stdout.split())
    assert grown < 1.5 * size / 2**20, grown  # holding every member and their join: 2x


@pytest.mark.timeout(60)
def test_the_standard_librarys_inflater_ends_each_member(monkeypatch) -> None:
    # the fallback where isal has no wheel: a member longer than a piece, then another member
    import zlib as stdlib_zlib

    monkeypatch.setattr(reader, "zlib", stdlib_zlib)
    one, two = b"a" * 300_000, b"b" * 200_000
    out = bytearray()
    inflate(Path("two.json.gz"), gzip.compress(one) + gzip.compress(two), out.extend, piece=1 << 16)
    assert bytes(out) == one + two
