"""JAX import on real traces: a jitted training loop run here on CPU under ``jax.profiler``
(``samples/train_jax.py``), imported, and held against an independent read of the JSON it wrote
(gzip + json in the test: steps, XLA ops and the user's annotations, their times to the ns)."""

from __future__ import annotations

import gzip
import json
import os
import subprocess
import sys
from collections import Counter
from pathlib import Path

import polars as pl
import pytest

from profui.analysis import open_trace
from profui.capture.format import read_manifest
from profui.capture.ingest import import_trace

from realdata import SAMPLES


def _jax_or_skip() -> None:
    try:
        import jax  # noqa: F401
    except ImportError:
        if os.environ.get("PROFUI_REQUIRE_TRACES") == "1":
            pytest.fail(
                "jax is not installed (.ci/run installs it; PROFUI_REQUIRE_TRACES=1 makes this a failure)"
            )
        pytest.skip("jax is not installed: pip install jax")


@pytest.fixture(scope="module")
def run(tmp_path_factory) -> tuple[Path, Path, dict]:
    _jax_or_skip()
    logdir = tmp_path_factory.mktemp("jaxlogs")
    proc = subprocess.run(
        [sys.executable, str(SAMPLES / "train_jax.py"), str(logdir), "--steps", "6"],
        capture_output=True,
        text=True,
        timeout=300,
        env={**os.environ, "JAX_PLATFORMS": "cpu"},
    )
    assert proc.returncode == 0, proc.stderr
    (raw_file,) = logdir.glob("plugins/profile/*/*.trace.json.gz")
    out = tmp_path_factory.mktemp("jaxtrace") / "t"
    import_trace([logdir], out)  # the log folder: its run, once (not perfetto_trace.json.gz again)
    return raw_file, out, json.loads(gzip.decompress(raw_file.read_bytes()))


def _raw_x(doc: dict) -> list[dict]:
    return [e for e in doc["traceEvents"] if e.get("ph") == "X"]


def _rel(rows: list[tuple[str, int, int]], base: int) -> Counter:
    return Counter((n, ts - base, dur) for n, ts, dur in rows)


def _ours(out: Path, kind: str) -> tuple[list[tuple[str, int, int]], int]:
    ev = open_trace(out).events().collect()
    first = ev["ts"].min()
    rows = ev.filter(pl.col("kind") == kind).select("name", "ts", "dur").rows()
    return rows, first


def _raw_base(doc: dict) -> int:
    return min(round(e["ts"] * 1000) for e in _raw_x(doc))


def test_one_source_file_from_the_log_folder(run) -> None:
    raw_file, out, _doc = run
    manifest = read_manifest(out)
    assert [s["file"] for s in manifest.sources] == [str(raw_file)]
    assert manifest.source == "jax-import"


def test_steps_match_the_raw_step_events(run) -> None:
    _raw, out, doc = run
    want = _rel(
        [(f"{e['name']}#{e['args']['step_num']}", round(e["ts"] * 1000), round(e["dur"] * 1000))
         for e in _raw_x(doc) if "step_num" in e.get("args", {})],
        _raw_base(doc),
    )  # fmt: skip
    rows, first = _ours(out, "step")
    assert _rel(rows, first) == want and sum(want.values()) == 6
    steps = open_trace(out).steps().windows
    assert steps["step"].to_list() == list(range(6))


def test_xla_ops_are_kernels_on_the_device_lanes(run) -> None:
    _raw, out, doc = run
    ops = [e for e in _raw_x(doc) if "hlo_op" in e.get("args", {})]
    want = _rel([(e["name"], round(e["ts"] * 1000), round(e["dur"] * 1000)) for e in ops], _raw_base(doc))
    rows, first = _ours(out, "kernel")
    assert _rel(rows, first) == want and ops
    ev = open_trace(out).events().filter(pl.col("kind") == "kernel").collect()
    assert set(ev["device"]) == {0}
    assert ev["stream"].n_unique() == len({e["tid"] for e in ops})  # one lane per executing thread
    assert any("device's lanes" in n for n in open_trace(out).summary().notes)


def test_the_users_annotations_and_nothing_of_xla(run) -> None:
    _raw, out, doc = run
    mine = {"forward_backward", "sync"}
    want = _rel(
        [
            (e["name"], round(e["ts"] * 1000), round(e["dur"] * 1000))
            for e in _raw_x(doc)
            if e["name"] in mine
        ],
        _raw_base(doc),
    )
    rows, first = _ours(out, "annotation")
    assert _rel(rows, first) == want and sum(want.values()) == 12
    names = open_trace(out).result("annotations")["names.parquet"]
    assert set(names.filter(pl.col("origin") == "user")["name"]) == mine


def test_python_frames_keep_their_place(run) -> None:
    _raw, out, doc = run
    want = Counter(e["name"][1:] for e in _raw_x(doc) if e["name"].startswith("$"))
    rows, _first = _ours(out, "python")
    assert Counter(n for n, _ts, _dur in rows) == want


def test_the_committed_sample_is_a_jax_trace(tmp_path) -> None:
    (sample,) = (SAMPLES / "jax_cpu").glob("plugins/profile/*/*.trace.json.gz")
    out = tmp_path / "t"
    import_trace([SAMPLES / "jax_cpu"], out)
    doc = json.loads(gzip.decompress(sample.read_bytes()))
    counts = read_manifest(out).sources[0]["counts"]
    assert counts["kernel"] == sum("hlo_op" in e.get("args", {}) for e in _raw_x(doc))
    assert counts["step"] == sum("step_num" in e.get("args", {}) for e in _raw_x(doc))
