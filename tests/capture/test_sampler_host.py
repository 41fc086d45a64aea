"""Host sampling (psutil) against real processes, metrics files, losses when writes fail, and
perf stat counters where this kernel allows them."""

from __future__ import annotations

import subprocess
import sys
import time

import psutil
import pyarrow.parquet as pq
import pytest

from profui.capture.daemon import perf
from profui.capture.daemon.host import HostSampler
from profui.capture.daemon.metrics import MetricsBuffer
from profui.capture.format import open_trace_dir


def _collect(sampler: HostSampler, n: int, period: float = 0.1) -> list[tuple]:
    rows: list[tuple] = []
    for _ in range(n):
        time.sleep(period)
        sampler.sample(time.time_ns(), lambda *r: rows.append(r))
    return rows


def test_host_sampler_follows_the_job_tree():
    # a job whose child burns one CPU and holds ~64 MiB
    code = (
        "import subprocess, sys; subprocess.run([sys.executable, '-c', "
        "'b = bytearray(64 << 20)\\nwhile True: pass'])"
    )
    job = subprocess.Popen([sys.executable, "-c", code])
    try:
        sampler = HostSampler()
        sampler.set_job(job.pid)
        time.sleep(0.5)  # let the child start
        sampler.last_tree = 0.0
        rows = _collect(sampler, 12)
    finally:
        for p in psutil.Process(job.pid).children(recursive=True):
            p.kill()
        job.kill()
        job.wait()
    n_cpu = psutil.cpu_count()
    per_cpu = [r for r in rows if r[1] == "cpu" and r[2] >= 0]
    assert len(per_cpu) == 12 * n_cpu
    assert all(0.0 <= r[4] <= 100.0 for r in per_cpu)
    procs = [r[4] for r in rows if r[1:4] == ("proc", -1, "num_procs")]
    assert procs[-1] == 2.0
    rss = [r[4] for r in rows if r[1:4] == ("proc", -1, "rss_bytes")]
    assert rss[-1] > 64 << 20
    cpu = [r[4] for r in rows if r[1:4] == ("proc", -1, "cpu_pct")]
    assert max(cpu[2:]) > 30.0  # one busy child: tens of percent of a core even on a loaded box
    mem = [r[4] for r in rows if r[1:4] == ("mem", -1, "used_bytes")]
    assert len(mem) == 12 and 0 < mem[0] < psutil.virtual_memory().total
    assert {r[3] for r in rows if r[1] in ("disk", "net")} == {
        "read_bytes_per_s",
        "write_bytes_per_s",
        "rx_bytes_per_s",
        "tx_bytes_per_s",
    }


def test_metrics_buffer_writes_whole_files(tmp_path):
    buf = MetricsBuffer(tmp_path, "nodeA")
    for i in range(100):
        buf.emit(1_000_000 + i, "cpu", i % 4, "util_pct", float(i))
    buf.flush()
    buf.emit(2_000_000, "mem", -1, "used_bytes", 5.0)
    buf.emit_many(2_000_001, "cpu", "util_pct", [1.0, 2.0, 3.0])
    buf.flush()
    buf.flush()  # nothing pending: no empty file
    files = sorted((tmp_path / "node=nodeA").glob("metrics-*.parquet"))
    assert [f.name for f in files] == ["metrics-00000.parquet", "metrics-00001.parquet"]
    assert pq.read_table(files[0]).num_rows == 100 and buf.files == 2 and buf.samples == 104
    second = pq.read_table(files[1]).to_pylist()
    assert [(r["device"], r["value"]) for r in second if r["source"] == "cpu"] == [
        (0, 1.0),
        (1, 2.0),
        (2, 3.0),
    ]
    (tmp_path / "manifest.json").write_text('{"name": "x", "status": "running"}')
    assert sum(f.num_rows for f in open_trace_dir(tmp_path).metrics) == 104


def test_metrics_buffer_counts_rows_it_could_not_write(tmp_path):
    # the node folder's place is taken by a file: every write fails like a full disk would
    (tmp_path / "node=nodeA").write_text("")
    buf = MetricsBuffer(tmp_path, "nodeA")
    for i in range(7):
        buf.emit(i, "cpu", 0, "util_pct", 1.0)
    buf.flush()
    buf.emit(8, "cpu", 0, "util_pct", 1.0)
    buf.flush()
    assert buf.lost_rows == 8 and buf.files == 0
    [note] = buf.notes()
    assert note.startswith("metrics: 8 rows lost, could not be written from")


def test_perf_stat_counts_per_cpu_where_permitted():
    working, note = perf.probe(["context-switches", "task-clock"])
    if not working:
        pytest.skip(f"perf not usable here: {note}")
    rows: list[tuple] = []
    sampler = perf.PerfSampler(working, 100, lambda *r: rows.append(r))
    time.sleep(1.0)
    sampler.stop()
    n_cpu = psutil.cpu_count()
    clocks = [r for r in rows if r[3] == "task_clock"]
    assert {r[2] for r in clocks} == set(range(n_cpu))
    intervals = len({r[0] for r in clocks})
    assert 5 <= intervals <= 11  # ~10 intervals of 100 ms in 1 s
    assert all(r[1] == "perf" for r in rows)
    # task-clock per CPU per 100 ms interval is at most ~100 ms (msec units)
    assert all(0 <= r[4] <= 150 for r in clocks)


def test_perf_probe_names_what_does_not_count():
    working, note = perf.probe(["context-switches", "no-such-event-xyz"])
    if perf.shutil.which("perf") is None:
        assert working == [] and note == "no CPU counters: perf is not installed"
        return
    assert "no-such-event-xyz" not in working
    assert note is not None and ("no-such-event-xyz" in note or note.startswith("no CPU counters"))


def test_perf_line_parser_reads_real_perf_output():
    if perf.shutil.which("perf") is None:
        pytest.skip("perf is not installed")
    res = subprocess.run(
        ["perf", "stat", "-a", "-A", "-x,", "-I", "100", "-e", "task-clock", "--", "sleep", "0.25"],
        capture_output=True,
        text=True,
        timeout=30,
    )
    parsed = [perf.parse_line(line) for line in res.stderr.splitlines()]
    counted = [p for p in parsed if p is not None]
    if not counted:
        pytest.skip(f"perf stat does not count here: {res.stderr.strip()[-200:]}")
    assert all(p[0] is not None and p[0] > 0 for p in counted)
    assert {p[2] for p in counted} == {"task-clock"}
    assert {p[1] for p in counted} == set(range(psutil.cpu_count()))
