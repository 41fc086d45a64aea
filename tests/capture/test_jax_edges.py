"""JAX traces with values the importer must not trip on, each made here from the real trace
recorded in ``samples/jax_cpu``: a run folder whose name is digits but no date, a device ordinal
that is a digit to Python but not to ``int``, a time beyond the int64 ns range, process names in
an array. Either read correctly (exit 0, the numbers checked against the JSON read here) or one
line naming the file (exit 2), never a traceback."""

from __future__ import annotations

import gzip
import json
import os
from pathlib import Path

import polars as pl
from test_bad_input_import import assert_refused, profui

from profui.analysis import open_trace

from realdata import SAMPLES

(RECORDED,) = (SAMPLES / "jax_cpu").glob("plugins/profile/*/*.trace.json.gz")


def _doc() -> dict:
    return json.loads(gzip.decompress(RECORDED.read_bytes()))


def _write(doc: dict, folder: Path) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / RECORDED.name
    path.write_bytes(gzip.compress(json.dumps(doc).encode()))
    return path


def _imported(src: Path, out: Path) -> pl.DataFrame:
    proc = profui("import", src, "-o", out)
    assert proc.returncode == 0, proc.stderr
    assert "Traceback" not in proc.stderr
    return open_trace(out).events().collect()


def test_a_run_folder_of_digits_that_are_no_date_falls_back_to_the_file_time(tmp_path: Path) -> None:
    doc = _doc()
    src = _write(doc, tmp_path / "logs" / "plugins" / "profile" / "2026_99_99_99_99_99")
    mtime_ns = 1_780_000_000_123_456_789
    os.utime(src, ns=(mtime_ns, mtime_ns))
    spans = [e for e in doc["traceEvents"] if e.get("ph") == "X"]
    first = min(round(e["ts"] * 1000) for e in spans)
    last = max(round(e["ts"] * 1000) + round(e["dur"] * 1000) for e in spans)
    ev = _imported(src, tmp_path / "t")
    # the profile started the trace's span before the file was last written
    assert ev["ts"].min() == mtime_ns - (last - first) + first


def test_a_device_ordinal_int_cannot_read_is_device_0(tmp_path: Path) -> None:
    doc = _doc()
    ops = [e for e in doc["traceEvents"] if "hlo_op" in e.get("args", {})]
    ops[0]["args"]["device_ordinal"] = "²"  # str.isdigit() says yes, int() says no
    ops[1]["args"]["device_ordinal"] = "1"
    ops[2]["args"]["device_ordinal"] = "9" * 5000  # beyond Python's int-digit limit
    ev = _imported(_write(doc, tmp_path / "run"), tmp_path / "t")
    kernels = ev.filter(pl.col("kind") == "kernel")
    by_device = dict(kernels.group_by("device").len().iter_rows())
    assert by_device == {0: len(ops) - 1, 1: 1}


def test_a_time_beyond_int64_ns_is_one_line(tmp_path: Path) -> None:
    doc = _doc()
    next(e for e in doc["traceEvents"] if e.get("ph") == "X")["ts"] = 1e308
    src = _write(doc, tmp_path / "run")
    out = tmp_path / "t"
    assert_refused(profui("import", src, "-o", out), src, "beyond the int64")
    assert not out.exists()


def test_a_device_process_number_of_5000_digits_is_no_crash(tmp_path: Path) -> None:
    doc = _doc()
    meta = next(e for e in doc["traceEvents"] if e.get("name") == "process_name")
    meta["args"]["name"] = "/device:GPU:" + "7" * 5000
    ev = _imported(_write(doc, tmp_path / "run"), tmp_path / "t")
    assert len(ev) == sum(1 for e in doc["traceEvents"] if e.get("ph") == "X")


def test_process_names_in_an_array_are_refused_not_read_as_kineto(tmp_path: Path) -> None:
    doc = _doc()
    for e in doc["traceEvents"]:
        if e.get("name") == "process_name":
            e["args"]["name"] = [e["args"]["name"]]
    src = _write(doc, tmp_path / "run")
    out = tmp_path / "t"
    assert_refused(profui("import", src, "-o", out), src, "process_name", "not a text")
    assert not out.exists()
