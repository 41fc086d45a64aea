"""``profui export --format chrome``: the round trip (export each rank, import the exports, the
same summary numbers) on every shared trace profui imports and on the samples, and a structural
check of the file (valid JSON, every flow start has its end, times monotone per thread)."""

from __future__ import annotations

import gzip
import json
import subprocess
import sys
from collections import defaultdict
from decimal import Decimal
from pathlib import Path

import polars as pl
import pytest

from profui.analysis import open_trace
from profui.capture.ingest import import_trace

from realdata import SAMPLES, same_numbers, traces_dir

PROFUI = str(Path(sys.executable).with_name("profui"))
#: Shared files that are not traces to import (refused by design, tested in test_bad_input_import).
NOT_TRACES = {"hta-execution_trace-benchmark_simple_add_et.json.gz"}


def _shared() -> list[str]:
    d = traces_dir()
    files = sorted(p.name for p in d.glob("hta-*.json*") if p.name not in NOT_TRACES)
    return files + sorted(f"nsys/{p.name}" for p in (d / "nsys").glob("*.sqlite"))


def _export(trace: Path, out: Path, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [PROFUI, "export", str(trace), "-o", str(out), *args], capture_output=True, text=True, timeout=600
    )


def _round_trip(a: Path, work: Path) -> Path:
    files = []
    for r in open_trace(a).manifest.ranks:
        f = work / f"rank{r}.json.gz"
        proc = _export(a, f, "--ranks", str(r))
        assert proc.returncode == 0, proc.stderr
        files.append(f)
    b = work / "back"
    import_trace(files, b)
    return b


NO_MEMORY = "no memory events ([memory])"


def _same_summary(a: Path, b: Path) -> None:
    sa, sb = open_trace(a).summary().to_json_dict(), open_trace(b).summary().to_json_dict()
    # the round trip is a Kineto import (its source differs, as "keep" below leaves it out): the
    # no-memory note says why by source (an Nsight export brings none; a Kineto trace ran
    # without profile_memory=True), so only that it is there is compared
    for s in (sa, sb):
        s["notes"] = [NO_MEMORY if n.startswith(NO_MEMORY) else n for n in s["notes"]]
    for key in ("sections", "takeaways", "notes", "params"):
        assert same_numbers(sa[key], sb[key]), key
    keep = ("ranks", "nodes", "gpus", "num_events", "span_ns")
    assert {k: sa["trace"].get(k) for k in keep} == {k: sb["trace"].get(k) for k in keep}


@pytest.mark.parametrize("name", _shared() or ["(no shared traces)"])
def test_round_trip_of_every_shared_trace(name: str, tmp_path: Path) -> None:
    src = traces_dir() / name
    if not src.is_file():
        from realdata import require_shared_traces

        require_shared_traces()
        pytest.fail(f"{src} not found")
    a = tmp_path / "a"
    import_trace([src], a)
    _same_summary(a, _round_trip(a, tmp_path))


@pytest.mark.parametrize("sample", ["mlp_cpu", "jax_cpu"])
def test_round_trip_of_the_samples(sample: str, tmp_path: Path) -> None:
    a = SAMPLES / sample
    if not (a / "manifest.json").is_file():
        a = tmp_path / "a"
        import_trace([SAMPLES / sample], a)
    _same_summary(a, _round_trip(a, tmp_path))


def _doc(path: Path) -> dict:
    return json.loads(gzip.decompress(path.read_bytes()))


def test_structure_of_a_multi_rank_export(tmp_path: Path) -> None:
    out = tmp_path / "all.json.gz"
    proc = _export(SAMPLES / "synthetic_gpu", out)
    assert proc.returncode == 0, proc.stderr
    doc = _doc(out)
    events = doc["traceEvents"]
    starts = {e["id"] for e in events if e["ph"] == "s"}
    ends = {e["id"] for e in events if e["ph"] == "f"}
    assert starts and starts == ends
    last: dict[tuple, float] = defaultdict(lambda: float("-inf"))
    for e in events:
        if e["ph"] == "X":
            key = (e["pid"], e["tid"])
            assert e["ts"] >= last[key], key
            last[key] = e["ts"]
    names = {e["args"]["name"] for e in events if e["ph"] == "M" and e["name"] == "process_name"}
    ev = open_trace(SAMPLES / "synthetic_gpu").events().collect()
    gpus = ev.filter(pl.col("device") >= 0).select("node", "rank", "device").unique().rows()
    assert {f"{n} rank {r} · GPU {g}" for n, r, g in gpus} <= names
    counters = [e for e in events if e["ph"] == "C"]
    metrics = open_trace(SAMPLES / "synthetic_gpu").metrics().collect()
    assert len(counters) == metrics.height
    assert sum(e["ph"] in ("X", "i") for e in events) == ev.height


def test_times_are_exact_to_the_ns(tmp_path: Path) -> None:
    a = SAMPLES / "synthetic_gpu"
    out = tmp_path / "r1.json"
    assert _export(a, out, "--ranks", "1").returncode == 0
    doc = json.loads(out.read_text(), parse_float=Decimal)  # exact decimal µs, no float rounding
    base = doc["baseTimeNanoseconds"]
    xs = [e for e in doc["traceEvents"] if e["ph"] == "X"]
    got = sorted((base + int(e["ts"] * 1000), int(e["dur"] * 1000)) for e in xs)
    ev = open_trace(a).events().filter(pl.col("rank") == 1, pl.col("kind") != "instant").collect()
    assert got == sorted(ev.select("ts", "dur").rows())


def test_steps_and_ranks_select(tmp_path: Path) -> None:
    t = open_trace(SAMPLES / "mlp_cpu")
    windows = t.steps().windows
    step = int(windows["step"][1])
    out = tmp_path / "one.json.gz"
    assert _export(SAMPLES / "mlp_cpu", out, "--steps", str(step)).returncode == 0
    steps = [e["name"] for e in _doc(out)["traceEvents"] if e.get("name", "").startswith("ProfilerStep#")]
    assert f"ProfilerStep#{step}" in steps and len(steps) <= 3  # the step, and neighbours that touch it
    out = tmp_path / "ranks.json.gz"
    assert _export(SAMPLES / "synthetic_gpu", out, "--ranks", "1,3").returncode == 0
    ranks = _doc(out)["profui"]["ranks"]
    assert [r["rank"] for r in ranks] == [1, 3]


@pytest.mark.parametrize(
    ("args", "words"),
    [
        (("--ranks", "9"), "no rank 9"),
        (("--steps", "999"), "no step 999"),
        (("--steps", "x"), "bad step selection"),
        (("--format", "pprof"), "unknown export format"),
    ],
)
def test_bad_selection_is_one_line(tmp_path: Path, args: tuple[str, ...], words: str) -> None:
    out = tmp_path / "x.json.gz"
    proc = _export(SAMPLES / "mlp_cpu", out, *args)
    assert proc.returncode == 2 and len(proc.stderr.splitlines()) == 1 and words in proc.stderr
    assert not out.exists()


def test_an_existing_file_is_not_overwritten(tmp_path: Path) -> None:
    out = tmp_path / "x.json"
    out.write_text("mine\n")
    proc = _export(SAMPLES / "mlp_cpu", out)
    assert proc.returncode == 2 and "--force" in proc.stderr and out.read_text() == "mine\n"
    assert _export(SAMPLES / "mlp_cpu", out, "--force").returncode == 0 and out.read_text() != "mine\n"


@pytest.mark.parametrize("node", ["fifo", "device", "socket", "folder"])
@pytest.mark.parametrize("force", [False, True])
def test_what_is_not_a_regular_file_is_never_replaced(tmp_path: Path, node: str, force: bool) -> None:
    import os
    import socket
    import stat

    out = tmp_path / "x.json.gz"
    if node == "fifo":
        os.mkfifo(out)
    elif node == "device":
        if os.geteuid() != 0:
            pytest.skip("mknod of a character device needs root")
        os.mknod(out, stat.S_IFCHR | 0o600, os.makedev(1, 3))  # the null device's numbers, in tmp_path
    elif node == "socket":
        sock = socket.socket(socket.AF_UNIX)
        sock.bind(str(out))
    else:
        out.mkdir()
    before = os.lstat(out)
    proc = _export(SAMPLES / "mlp_cpu", out, *(["--force"] if force else []))
    assert proc.returncode == 2, proc.stdout
    assert len(proc.stderr.splitlines()) == 1 and str(out) in proc.stderr and "Traceback" not in proc.stderr
    expected = {"fifo": "a FIFO", "device": "a device", "socket": "a socket", "folder": "a folder"}[node]
    assert expected in proc.stderr
    after = os.lstat(out)
    assert stat.S_IFMT(after.st_mode) == stat.S_IFMT(before.st_mode) and after.st_ino == before.st_ino
    assert not [p for p in tmp_path.iterdir() if p.name != out.name]  # no temporary left behind


def test_each_launch_to_kernel_arrow_has_its_own_id(tmp_path: Path) -> None:
    """Viewers pair a flow's start and end by id: a CUDA-graph launch that ran 20 kernels gets 20
    arrows of 20 ids (it was one id with 20 starts and 20 ends). The arrows are counted from the
    source file itself: per correlation, its device events whose launch is in the file."""
    from collections import Counter

    from realdata import shared_trace

    src = shared_trace("hta-negative_queue_length_values_check-rank0.json.gz")
    raw = json.loads(gzip.decompress(src.read_bytes()))["traceEvents"]

    def corr(e: dict) -> object:
        return (e.get("args") or {}).get("correlation") if e.get("ph") == "X" else None

    launched = {corr(e) for e in raw if e.get("cat") in ("cuda_runtime", "cuda_driver")} - {None}
    device = ("kernel", "gpu_memcpy", "gpu_memset")
    want = Counter(corr(e) for e in raw if e.get("cat") in device and corr(e) in launched)
    assert max(want.values()) >= 20  # the trace's cudaGraphLaunch calls

    a = tmp_path / "a"
    import_trace([src], a)
    out = tmp_path / "e.json.gz"
    proc = _export(a, out)
    assert proc.returncode == 0, proc.stderr
    events = _doc(out)["traceEvents"]
    starts = Counter(e["id"] for e in events if e["ph"] == "s")
    ends = Counter(e["id"] for e in events if e["ph"] == "f")
    assert set(starts.values()) == {1} and starts == ends
    # each arrow's end is on its device event (bound to the slice starting there): read its correlation
    on_device = defaultdict(list)
    for e in events:
        if e["ph"] == "X" and "device" in (e.get("args") or {}):
            on_device[(e["pid"], e["tid"], e["ts"])].append(e["args"]["correlation"])
    got: Counter = Counter()
    for e in events:
        if e["ph"] == "f":
            here = on_device[(e["pid"], e["tid"], e["ts"])]
            assert len(set(here)) == 1, here
            got[here[0]] += 1
    assert got == want
    # the import of the export reads every launch's link back through the correlations
    _same_summary(a, _round_trip(a, tmp_path))


def test_device_events_without_a_stream_are_named_so(tmp_path: Path) -> None:
    """Nsight's event syncs name no stream (CUPTI writes 0xFFFFFFFF): their thread was named
    "stream -1"; it is "no stream", and holds as many events as the export's sync rows say."""
    import sqlite3

    from realdata import nsys_export

    src = nsys_export("mfu_2gpu_before")
    with sqlite3.connect(f"file:{src}?mode=ro", uri=True) as db:
        (want,) = db.execute(
            "SELECT count(*) FROM CUPTI_ACTIVITY_KIND_SYNCHRONIZATION WHERE streamId = 4294967295"
        ).fetchone()
    assert want > 0
    a = tmp_path / "a"
    import_trace([src], a)
    out = tmp_path / "e.json.gz"
    assert _export(a, out).returncode == 0
    events = _doc(out)["traceEvents"]
    names = {(e["pid"], e["tid"]): e["args"]["name"] for e in events if e.get("name") == "thread_name"}
    assert "stream -1" not in names.values()
    lanes = {key for key, name in names.items() if name == "no stream"}
    assert lanes and all(tid == -1 for _, tid in lanes)
    assert sum(e["ph"] == "X" and (e["pid"], e["tid"]) in lanes for e in events) == want
