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


def _rewrite(victim: Path, table) -> None:
    """Write ``table`` over ``victim`` with the victim's footer key-values (profui's own keys live
    there, whether or not the Arrow schema carries them too)."""
    import pyarrow.parquet as pq

    footer = pq.read_metadata(victim).metadata
    table = table.replace_schema_metadata(None)
    with pq.ParquetWriter(victim, table.schema) as writer:
        writer.write_table(table)
        writer.add_key_value_metadata({k: v for k, v in footer.items() if k != b"ARROW:schema"})


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


def test_corrupt_pages_under_an_intact_footer_are_named(tmp_path: Path) -> None:
    trace, victim = _sample_copy(tmp_path)
    data = bytearray(victim.read_bytes())
    footer_at = len(data) - 8 - int.from_bytes(data[-8:-4], "little")
    for i in range(8, min(footer_at, 4000)):  # the first pages, not the footer
        data[i] ^= 0x5A
    victim.write_bytes(bytes(data))
    read_footer(victim)  # the footer still reads: opening the trace succeeds
    for command in (["info"], ["summary"], ["analyze", "-q"]):  # analyze: its run failed on it
        line = assert_refused(profui(*command, trace), victim.name)
        # the reader's message quotes bytes of the damaged page (a \x0f here): escaped, not sent
        # to the terminal as they are
        assert "cannot read events" in line and line.isprintable(), repr(line)


def test_a_column_of_the_wrong_type_is_named(tmp_path: Path) -> None:
    import pyarrow as pa
    import pyarrow.parquet as pq

    trace, victim = _sample_copy(tmp_path)
    table = pq.read_table(victim)
    ts = pa.array([str(v) for v in table.column("ts").to_pylist()])
    _rewrite(victim, table.set_column(table.schema.get_field_index("ts"), "ts", ts))
    for command in ("info", "summary"):
        line = assert_refused(profui(command, trace), victim.name)
        assert "column ts holds string, the format says int64" in line


def test_a_column_of_the_wrong_type_is_named_in_a_trace_of_one_file(tmp_path: Path) -> None:
    # one events file: nothing to concatenate, so the type is met where the events are made ready
    import pyarrow as pa
    import pyarrow.parquet as pq

    trace = tmp_path / "trace"
    shutil.copytree(SAMPLES / "mlp_cpu", trace, ignore=shutil.ignore_patterns(".profui"))
    (victim,) = sorted(trace.rglob("events-*.parquet"))
    footer = pq.read_metadata(victim).metadata
    table = pq.read_table(victim)
    ts = pa.array([f"t{v}" for v in table.column("ts").to_pylist()])
    table = table.set_column(table.schema.get_field_index("ts"), "ts", ts).replace_schema_metadata(None)
    with pq.ParquetWriter(victim, table.schema) as writer:
        writer.write_table(table)
        writer.add_key_value_metadata({k: v for k, v in footer.items() if k != b"ARROW:schema"})
    for command in ("summary", "export"):
        args = [command, trace] + (["-o", tmp_path / "x.json.gz"] if command == "export" else [])
        line = assert_refused(profui(*args), victim.name)
        assert "column ts holds string, the format says int64" in line


def test_a_kind_the_format_does_not_have_is_named(tmp_path: Path) -> None:
    import pyarrow as pa
    import pyarrow.compute as pc
    import pyarrow.parquet as pq

    trace, victim = _sample_copy(tmp_path)
    footer = pq.read_metadata(victim).metadata
    table = pq.read_table(victim)
    kind = table.column("kind").cast(pa.string())
    odd = pc.if_else(pc.equal(kind, "memset"), pa.scalar("teleport"), kind)
    table = table.set_column(
        table.schema.get_field_index("kind"),
        "kind",
        odd.dictionary_encode().cast(table.schema.field("kind").type),
    ).replace_schema_metadata(None)
    with pq.ParquetWriter(victim, table.schema) as writer:  # profui's footer kept: the file opens
        writer.write_table(table)
        writer.add_key_value_metadata({k: v for k, v in footer.items() if k != b"ARROW:schema"})
    for command in (["summary"], ["analyze", "-q"]):
        line = assert_refused(profui(*command, trace), victim.name)
        assert "events of kind 'teleport', which is not one of the format's (cpu_op," in line
    # the timeline's index refuses it too (it drew the events as instants)
    from profui.analysis.lod_open import build_lod
    from profui.capture.format import TraceFormatError

    with pytest.raises(TraceFormatError) as refused:
        build_lod(trace)
    assert victim.name in str(refused.value) and "events of kind 'teleport'" in str(refused.value)


def test_paths_the_os_refuses_are_one_line(tmp_path: Path) -> None:
    from test_bad_input_import import SMALL

    from realdata import shared_trace

    a_file = tmp_path / "a_file"
    a_file.write_text("keep")
    src = shared_trace(SMALL)
    assert "cannot create the output folder" in assert_refused(
        profui("import", src, "-o", a_file / "out"), a_file
    )
    assert a_file.read_text() == "keep"
    too_long = tmp_path / ("x" * 300)
    for args in (("import", src, "-o", too_long / "out"), ("info", too_long), ("summary", too_long)):
        proc = profui(*args)
        assert proc.returncode == 2 and len(proc.stderr.splitlines()) == 1, proc.stderr
        assert "file name too long" in proc.stderr and "Traceback" not in proc.stderr


def test_a_trace_under_a_name_that_is_not_utf8_is_one_line_and_a_symlink_opens_it(tmp_path: Path) -> None:
    src, _ = _sample_copy(tmp_path)
    odd = Path(os.fsdecode(os.fsencode(str(tmp_path)) + b"/tr\xffce"))
    src.rename(odd)
    for command in ("info", "summary", "open"):
        proc = profui(command, odd)
        assert proc.returncode == 2 and len(proc.stderr.splitlines()) == 1, proc.stderr
        assert "path is not valid UTF-8" in proc.stderr and "Traceback" not in proc.stderr
    link = tmp_path / "trace-link"
    link.symlink_to(odd)
    proc = profui("info", link)
    assert proc.returncode == 0, proc.stderr


def test_an_import_into_a_name_that_is_not_utf8_writes_nothing(tmp_path: Path) -> None:
    from test_bad_input_import import SMALL

    from realdata import shared_trace

    out = Path(os.fsdecode(os.fsencode(str(tmp_path)) + b"/out\xff"))
    proc = profui("import", shared_trace(SMALL), "-o", out)
    assert proc.returncode == 2 and "path is not valid UTF-8" in proc.stderr, proc.stderr
    assert list(tmp_path.iterdir()) == []


def test_an_event_ending_beyond_int64_is_named_by_info_not_shown_negative(tmp_path: Path) -> None:
    import pyarrow as pa
    import pyarrow.parquet as pq

    trace, victim = _sample_copy(tmp_path)
    table = pq.read_table(victim)
    ts = table.column("ts").to_pylist()
    ts[0] = (1 << 63) - 10  # fits int64; with its dur the end does not
    table = table.set_column(table.schema.get_field_index("ts"), "ts", pa.array(ts, pa.int64()))
    _rewrite(victim, table)
    line = assert_refused(profui("info", trace), victim.name)
    assert "ends beyond the int64 nanosecond range" in line
