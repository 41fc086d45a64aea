"""``profui info`` reads each events file's counts from the trace's record while the file is as
it was counted, and counts it again otherwise (``analysis/inventory_record.py``).

The oracle is the events themselves: read here with pyarrow, counted in plain Python. Every
case runs the real ``profui`` console script in a fresh process, on copies of the samples and
of shared traces imported by ``profui import``: with no record (counted), with the record (a
run that counts nothing, checked in-process by making counting fail), with a record made stale
(a file touched, a file rewritten), in a read-only folder, with a record that is damaged, while
the trace is being recorded, and by several processes at once.
"""

from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
import sys
from collections import Counter
from pathlib import Path

import pytest

from profui.analysis import inventory
from profui.analysis.inventory import trace_info
from profui.analysis.inventory_record import RECORD
from profui.capture.format import private_dir_for

from realdata import SAMPLES, shared_trace

PROFUI = str(Path(sys.executable).with_name("profui"))
SHARED = (
    "hta-critical_path-simple_add-benchmark_result_493459_1694039959_trace.json.gz",
    "hta-amd_trace-mi250_minitoy_train_ROCm6_2_kineto.json.gz",
    "hta-distributed_info_unavailable-distributed_info_not_found.json.gz",
)


def counted_here(trace: Path) -> dict:
    """``info``'s numbers, from the trace's events read with pyarrow and counted in plain Python."""
    import pyarrow.parquet as pq

    kinds: Counter[str] = Counter()
    ranks: dict[tuple[str, int], list] = {}
    devices: dict[tuple[str, int], Counter[str]] = {}
    starts, ends = [], []
    for f in sorted(trace.glob("node=*/rank=*/events-*.parquet")):
        node, rank = f.parent.parent.name.removeprefix("node="), int(f.parent.name.removeprefix("rank="))
        rows = pq.read_table(f, columns=["ts", "dur", "kind", "device"]).to_pylist()
        r = ranks.setdefault((node, rank), [0, 0, Counter()])
        r[0] += 1
        r[1] += len(rows)
        for e in rows:
            kinds[e["kind"]] += 1
            r[2][e["kind"]] += 1
            if e["device"] >= 0:
                devices.setdefault((node, e["device"]), Counter())[e["kind"]] += 1
            starts.append(e["ts"])
            ends.append(e["ts"] + e["dur"])
    return {
        "num_events": sum(kinds.values()),
        "counts": dict(kinds),
        "ranks": {k: (files, n, dict(c)) for k, (files, n, c) in ranks.items()},
        "devices": {k: dict(c) for k, c in devices.items()},
        "span": (min(starts, default=None), max(ends, default=None)),
    }


def numbers(info: dict) -> dict:
    """``info --json``'s numbers in :func:`counted_here`'s shape."""
    return {
        "num_events": info["num_events"],
        "counts": info["counts"],
        "ranks": {(r["node"], r["rank"]): (r["files"], r["events"], r["counts"]) for r in info["ranks"]},
        "devices": {(d["node"], d["device"]): d["counts"] for d in info["devices"]},
        "span": (info["span"]["start_ns"], info["span"]["end_ns"]),
    }


def run_info(trace: Path, env: dict | None = None, *extra: str) -> dict:
    proc = subprocess.run(
        [PROFUI, "info", str(trace), "--json", *extra], capture_output=True, text=True, timeout=120, env=env
    )
    assert proc.returncode == 0 and not proc.stderr, proc.stderr
    return json.loads(proc.stdout)


def record_of(trace: Path) -> Path:
    return private_dir_for(trace) / RECORD


def _refuse(f):
    """Counting a file fails: whatever ``trace_info`` returns then came from the record."""
    raise AssertionError(f"{f.path} counted although the record holds it")


def copy_of(src: Path, dst: Path) -> Path:
    shutil.copytree(src, dst, ignore=shutil.ignore_patterns(".profui"))
    return dst


@pytest.fixture(scope="module")
def traces(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """The samples' trace folders (copies, no record) and three shared traces as imported by
    ``profui import`` (which counts a small trace into its record at once)."""
    root = tmp_path_factory.mktemp("info-record")
    out = {name: copy_of(SAMPLES / name, root / name) for name in ("mlp_cpu", "synthetic_gpu")}
    jax = subprocess.run(
        [PROFUI, "import", str(SAMPLES / "jax_cpu"), "-o", str(root / "jax_cpu")],
        capture_output=True,
        text=True,
    )
    assert jax.returncode == 0, jax.stderr
    out["jax_cpu"] = root / "jax_cpu"
    for name in SHARED:
        dst = root / name.split("-")[1]
        proc = subprocess.run(
            [PROFUI, "import", str(shared_trace(name)), "-o", str(dst)], capture_output=True, text=True
        )
        assert proc.returncode == 0, proc.stderr
        out[name] = dst
    return out


@pytest.mark.parametrize("name", ["mlp_cpu", "synthetic_gpu", "jax_cpu", *SHARED])
def test_counted_then_read_from_the_record(
    traces: dict[str, Path], name: str, tmp_path: Path, monkeypatch
) -> None:
    trace = copy_of(traces[name], tmp_path / "t")  # the copy keeps the files' mtimes, not the record
    oracle = counted_here(trace)
    assert not record_of(trace).exists()
    first = run_info(trace)  # counted, the record kept
    assert numbers(first) == oracle and record_of(trace).is_file()
    second = run_info(trace)
    assert second == first
    monkeypatch.setattr(inventory, "count_file", _refuse)
    assert trace_info(trace) == first  # from the record alone


@pytest.mark.parametrize("name", ["jax_cpu", *SHARED])
def test_profui_import_keeps_the_record(traces: dict[str, Path], name: str, monkeypatch) -> None:
    trace = traces[name]
    monkeypatch.setattr(inventory, "count_file", _refuse)
    assert record_of(trace).is_file()
    assert numbers(trace_info(trace)) == counted_here(trace)


@pytest.mark.parametrize("name", ["synthetic_gpu", SHARED[0]])
def test_a_touched_file_is_counted_again(
    traces: dict[str, Path], name: str, tmp_path: Path, monkeypatch
) -> None:
    trace = copy_of(traces[name], tmp_path / "t")
    run_info(trace)
    kept = json.loads(record_of(trace).read_text())
    f = sorted(trace.glob("node=*/rank=*/events-*.parquet"))[0]
    st = f.stat()
    os.utime(f, ns=(st.st_atime_ns, st.st_mtime_ns + 1_000_000_000))
    counted = []
    real = inventory.count_file
    monkeypatch.setattr(inventory, "count_file", lambda tf: counted.append(tf.path) or real(tf))
    assert numbers(trace_info(trace)) == counted_here(trace)
    assert counted == [f]  # that file only, the others from the record
    assert json.loads(record_of(trace).read_text()) != kept  # kept anew with the new mtime


@pytest.mark.parametrize("name", ["mlp_cpu", "synthetic_gpu", SHARED[0]])
def test_a_rewritten_file_is_not_believed(traces: dict[str, Path], name: str, tmp_path: Path) -> None:
    import pyarrow.parquet as pq

    trace = copy_of(traces[name], tmp_path / "t")
    before = run_info(trace)
    f = sorted(trace.glob("node=*/rank=*/events-*.parquet"))[-1]
    table = pq.read_table(f)
    kind = table["kind"].to_pylist()[0]
    keep = [i for i, k in enumerate(table["kind"].to_pylist()) if k != kind]  # one kind gone
    footer = pq.read_metadata(f).metadata  # the profui schema version, the importer's side data
    pq.write_table(table.take(keep).replace_schema_metadata(footer), f)
    after = run_info(trace)
    assert numbers(after) == counted_here(trace) != numbers(before)
    assert kind not in after["counts"] or after["counts"][kind] < before["counts"][kind]


def test_a_file_rewritten_to_its_old_size_and_time_is_not_believed(
    traces: dict[str, Path], tmp_path: Path
) -> None:
    """An events file rewritten in place with the same size, its modification time set back (as
    ``cp -p``, ``rsync -a`` or ``tar x`` of another run leave it, or a file system of whole
    seconds): the change time still differs, so the file is counted again (the review's case)."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    trace = copy_of(traces["synthetic_gpu"], tmp_path / "t")

    def last_end(path: Path) -> int:
        t = pq.read_table(path, columns=["ts", "dur"])
        return max(a + b for a, b in zip(t["ts"].to_pylist(), t["dur"].to_pylist(), strict=True))

    f = max(trace.glob("node=*/rank=*/events-*.parquet"), key=last_end)  # holds the trace's end
    table, footer = pq.read_table(f), pq.read_metadata(f).metadata
    plain = {c: "PLAIN" for c in table.column_names if not pa.types.is_dictionary(table.schema.field(c).type)}

    def rewrite(t: pa.Table) -> None:  # fixed-width values, no compression: the size is the rows'
        pq.write_table(
            t.replace_schema_metadata(footer),
            f,
            compression="NONE",
            use_dictionary=False,
            column_encoding=plain,
        )

    rewrite(table)
    before = run_info(trace)
    st = f.stat()
    dur = table["dur"].to_pylist()
    last = max(range(len(dur)), key=lambda i: table["ts"][i].as_py() + dur[i])
    dur[last] += 5_000_000  # the trace's last event ends 5 ms later
    at = table.column_names.index("dur")
    rewrite(table.set_column(at, table.schema.field(at), pa.array(dur, pa.int64())))
    os.utime(f, ns=(st.st_atime_ns, st.st_mtime_ns))
    assert (f.stat().st_size, f.stat().st_mtime_ns) == (st.st_size, st.st_mtime_ns)
    after = run_info(trace)
    assert numbers(after) == counted_here(trace)
    assert after["span"]["end_ns"] == before["span"]["end_ns"] + 5_000_000


DAMAGED = {
    "empty": b"",
    "truncated": b'{"version":1,"code":[1,2],"fi',
    "a list": b"[]",
    "deep": b"[" * 100_000 + b"]" * 100_000,
    "not utf-8": b"\xff\xfe{}",
    "strings for numbers": b'{"version":1,"code":null,"files":{"x":{"size":"1"}}}',
}


@pytest.mark.parametrize(
    "damage", [*DAMAGED, "wrong types kept", "rows and kinds disagree", "another code", "fifo"]
)
def test_a_damaged_record_is_counted_again(
    traces: dict[str, Path], damage: str, tmp_path: Path, monkeypatch
) -> None:
    trace = copy_of(traces[SHARED[0]], tmp_path / "t")
    good = run_info(trace)
    path = record_of(trace)
    kept = json.loads(path.read_text())
    (entry,) = kept["files"].values()
    if damage in DAMAGED:
        path.write_bytes(DAMAGED[damage])
    elif damage == "fifo":
        path.unlink()
        os.mkfifo(path)
    else:
        if damage == "wrong types kept":
            entry["rows"] = str(entry["rows"])
        elif damage == "rows and kinds disagree":
            entry["rows"] += 1
        else:  # numbers another counting code gave
            kept["code"] = "0" * 24  # a code version, not the one running
            entry["rows"] *= 2
            entry["kinds"] = {k: 2 * n for k, n in entry["kinds"].items()}
        path.write_text(json.dumps(kept))
    # silently a miss: the record is a cache, recomputed and replaced as the stage outputs are
    assert run_info(trace) == good
    assert numbers(good) == counted_here(trace)
    if damage != "fifo":  # a FIFO in its place is refused, never opened for writing
        monkeypatch.setattr(inventory, "count_file", _refuse)
        assert trace_info(trace) == good


def test_a_read_only_trace(traces: dict[str, Path], tmp_path: Path) -> None:
    trace = copy_of(traces[SHARED[0]], tmp_path / "t")
    before = sorted(str(p.relative_to(trace)) for p in trace.rglob("*"))
    env = {**os.environ, "PROFUI_CACHE": str(tmp_path / "cache")}
    if os.geteuid() == 0:  # root writes anywhere: a read-only bind mount, as a shared trace is
        subprocess.run(["mount", "--bind", str(trace), str(trace)], check=True)
        subprocess.run(["mount", "-o", "remount,bind,ro", str(trace), str(trace)], check=True)
    else:
        for p in [trace, *trace.rglob("*")]:
            p.chmod(p.stat().st_mode & ~0o222)
    try:
        first = run_info(trace, env)
        second = run_info(trace, env)
        assert first == second and numbers(first) == counted_here(trace)
        assert sorted(str(p.relative_to(trace)) for p in trace.rglob("*")) == before  # nothing written
        kept = list((tmp_path / "cache" / "traces").glob(f"*/{RECORD}"))
        assert len(kept) == 1  # the record in the cache store of read-only traces
    finally:
        if os.geteuid() == 0:
            subprocess.run(["umount", str(trace)], check=True)
        else:
            for p in [trace, *trace.rglob("*")]:
                p.chmod(p.stat().st_mode | 0o200)


def test_a_capture_still_recording_keeps_no_record(traces: dict[str, Path], tmp_path: Path) -> None:
    trace = copy_of(traces["mlp_cpu"], tmp_path / "t")
    manifest = json.loads((trace / "manifest.json").read_text())
    manifest["status"] = "running"  # profcap is this test, alive on this host
    manifest["capture"] = {**manifest.get("capture", {}), "pid": os.getpid(), "host": socket.gethostname()}
    (trace / "manifest.json").write_text(json.dumps(manifest))
    info = run_info(trace)
    assert info["manifest"]["status"] == "running"
    assert numbers(info) == counted_here(trace)
    assert not record_of(trace).exists()


def test_several_at_once(traces: dict[str, Path], tmp_path: Path, monkeypatch) -> None:
    trace = copy_of(traces["synthetic_gpu"], tmp_path / "t")
    procs = [
        subprocess.Popen(
            [PROFUI, "info", str(trace), "--json"], stdout=subprocess.PIPE, stderr=subprocess.PIPE
        )
        for _ in range(4)
    ]
    outs = [p.communicate(timeout=120) for p in procs]
    assert all(p.returncode == 0 and not err for p, (_, err) in zip(procs, outs, strict=True))
    infos = [json.loads(out) for out, _ in outs]
    assert all(i == infos[0] for i in infos) and numbers(infos[0]) == counted_here(trace)
    assert not [p for p in private_dir_for(trace).iterdir() if p.name.endswith(".tmp")]
    monkeypatch.setattr(inventory, "count_file", _refuse)
    assert trace_info(trace) == infos[0]  # whichever wrote last, a whole record
