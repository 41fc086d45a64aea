"""Readers never loop or block on hostile files: a Parquet footer whose list lengths lie, and
FIFOs given as input. Each gets one clear line and exit 2 from every command, in bounded time.

The crafted footers are made here by hand (Thrift compact protocol, as the footer module reads
it); the traces they are planted in are real (the bundled sample, copied)."""

from __future__ import annotations

import os
import shutil
import struct
import time
from pathlib import Path

import pytest
from test_bad_input_import import assert_refused, profui

from profui.capture.format import FooterError, read_footer

from realdata import SAMPLES

# field 1 (delta 1) of type LIST (9) whose header says "15+: size follows" with element type t
_HUGE = b"\x80\x80\x80\x80\x80\x80\x80\x80\x10"  # varint 2**60


def crafted_parquet(path: Path, element_type: int) -> Path:
    """A 40-byte-ish Parquet file whose footer is one list of 2**60 elements of ``element_type``."""
    footer = bytes([0x19, 0xF0 | element_type]) + _HUGE + b"\x00" * 4
    path.write_bytes(b"PAR1" + footer + struct.pack("<i", len(footer)) + b"PAR1")
    return path


@pytest.mark.parametrize(
    "element_type", [1, 3, 5, 6, 7, 8, 12]
)  # bool, byte, i32, i64, double, binary, struct
def test_a_footer_whose_list_length_lies_is_refused_at_once(tmp_path: Path, element_type: int) -> None:
    path = crafted_parquet(tmp_path / "x.parquet", element_type)
    assert path.stat().st_size < 48
    t = time.perf_counter()
    with pytest.raises(FooterError, match="more than its"):
        read_footer(path)
    assert time.perf_counter() - t < 1.0


def test_a_map_whose_length_lies_is_refused(tmp_path: Path) -> None:
    footer = bytes([0x1B]) + _HUGE + b"\x88" + b"\x00" * 4  # field 1 of type MAP
    path = tmp_path / "m.parquet"
    path.write_bytes(b"PAR1" + footer + struct.pack("<i", len(footer)) + b"PAR1")
    with pytest.raises(FooterError):
        read_footer(path)


def _sample_copy(tmp_path: Path) -> tuple[Path, Path]:
    trace = tmp_path / "trace"
    shutil.copytree(SAMPLES / "synthetic_gpu", trace, ignore=shutil.ignore_patterns(".profui"))
    victim = sorted(trace.rglob("events-*.parquet"))[0]
    return trace, victim


@pytest.mark.parametrize("command", ["info", "summary", "open"])
def test_commands_refuse_a_trace_holding_a_crafted_footer(tmp_path: Path, command: str) -> None:
    trace, victim = _sample_copy(tmp_path)
    crafted_parquet(victim, 3)
    before = victim.read_bytes()
    t = time.perf_counter()
    assert_refused(profui(command, trace), victim.name)
    assert time.perf_counter() - t < 60
    assert victim.read_bytes() == before  # nothing overwritten


def test_a_fifo_is_refused_by_import_and_by_the_trace_opener(tmp_path: Path) -> None:
    fifo = tmp_path / "rank0.json"
    os.mkfifo(fifo)
    out = tmp_path / "out"
    line = assert_refused(profui("import", fifo, "-o", out), fifo, "fifo")
    assert "not a regular file" in line and not out.exists()
    trace, victim = _sample_copy(tmp_path)
    victim.unlink()
    os.mkfifo(victim)
    for command in ("info", "summary"):
        assert_refused(profui(command, trace), victim.name, "fifo")


def test_a_fifo_manifest_is_refused_not_waited_on(tmp_path: Path) -> None:
    trace, _ = _sample_copy(tmp_path)
    manifest = trace / "manifest.json"
    manifest.unlink()
    os.mkfifo(manifest)
    for command in ("info", "summary", "open"):
        assert_refused(profui(command, trace), "manifest.json", "fifo")
