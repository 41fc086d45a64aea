"""Nsight Systems import on the three real 2-GPU H100 exports in ``nsys/``.

The oracles are independent of profui: ``nsys/reference/<name>.json`` (computed from the CUPTI
tables with the standard library's sqlite3, see its README) for busy/span/idle per device,
counts and top kernels, which must match exactly (integer ns); and raw SQL over the export in
the test for what the reference does not hold (runtime -> kernel links, NVTX op names, copy
kinds, which process owns which GPU).
"""

from __future__ import annotations

import json
import re
import sqlite3
import subprocess
import sys
from collections import Counter
from pathlib import Path

import polars as pl
import pytest

from profui.analysis import open_trace
from profui.capture.format import read_manifest
from profui.capture.ingest import import_trace

from realdata import nsys_export, traces_dir

EXPORTS = ("h100_2gpu_1s", "mfu_2gpu_before", "mfu_2gpu_after")
PROFUI = str(Path(sys.executable).with_name("profui"))


def _reference(name: str) -> dict:
    return json.loads((traces_dir() / "nsys" / "reference" / f"{name}.json").read_text())


@pytest.fixture(scope="module", params=EXPORTS)
def imported(request, tmp_path_factory) -> tuple[str, Path, Path]:
    src = nsys_export(request.param)
    out = tmp_path_factory.mktemp("nsys") / request.param
    import_trace([src], out)
    return request.param, src, out


def _sql(src: Path, query: str) -> list[tuple]:
    conn = sqlite3.connect(f"file:{src}?mode=ro", uri=True)
    try:
        return conn.execute(query).fetchall()
    finally:
        conn.close()


def test_busy_span_idle_per_device_match_the_reference(imported) -> None:
    name, _src, out = imported
    ref = _reference(name)["per_device"]
    busy = open_trace(out).gpu_busy().sort("device")
    assert busy["device"].to_list() == [int(d) for d in sorted(ref)]
    for row in busy.iter_rows(named=True):
        want = ref[str(row["device"])]
        assert row["busy_ns"] == want["busy_ns"]
        assert row["span_ns"] == want["span_ns"]
        assert row["idle_ns"] == want["idle_ns"]
        assert row["n_events"] == want["events"]


def test_counts_and_top_kernels_match_the_reference(imported) -> None:
    name, _src, out = imported
    ref = _reference(name)
    manifest = read_manifest(out)
    counts: Counter[str] = Counter()
    for s in manifest.sources:
        counts.update(s["counts"])
    assert {k: counts[k] for k in ("kernel", "memcpy", "memset")} == ref["counts"]
    assert counts["runtime"] + counts["driver"] == ref["runtime_calls"]
    assert counts["cpu_op"] + counts["annotation"] + counts["step"] + counts["instant"] == ref["nvtx_events"]
    stats = open_trace(out).kernels()
    assert stats["total_ns"].sum() == ref["kernel_total_ns"]
    by_name = {r["name"]: (r["count"], r["total_ns"]) for r in stats.iter_rows(named=True)}
    for k in ref["top_kernels_by_total"]:
        assert by_name[k["name"]] == (k["count"], k["total_ns"]), k["name"]


def test_each_process_is_a_rank_with_its_own_gpu(imported) -> None:
    _name, src, out = imported
    raw = sorted(
        _sql(src, "SELECT DISTINCT (globalPid >> 24) & 16777215, deviceId FROM CUPTI_ACTIVITY_KIND_KERNEL"),
        key=lambda r: r[1],
    )
    manifest = read_manifest(out)
    assert manifest.source == "nsys-import" and manifest.hosts == ["modal"]
    by_rank = {s["rank"]: s for s in manifest.sources}
    assert sorted(by_rank) == list(range(len(raw)))
    for rank, (pid, device) in enumerate(raw):
        assert by_rank[rank]["metadata"]["pid"] == pid
        assert by_rank[rank]["devices"] == [device]  # sync rows too: Nsight writes deviceId 0 for them


def test_runtime_calls_link_to_their_kernels(imported) -> None:
    _name, src, out = imported
    raw = _sql(
        src,
        "SELECT COUNT(*) FROM CUPTI_ACTIVITY_KIND_KERNEL k JOIN CUPTI_ACTIVITY_KIND_RUNTIME r "
        "ON r.correlationId = k.correlationId AND (r.globalTid >> 24) = (k.globalPid >> 24)",
    )[0][0]
    ev = open_trace(out).events()
    calls = ev.filter(pl.col("kind").is_in(["runtime", "driver"])).select("node", "rank", "correlation", "ts")
    kernels = ev.filter(pl.col("kind") == "kernel").select(
        "node", "rank", "correlation", pl.col("ts").alias("k_ts")
    )
    linked = kernels.join(calls, on=["node", "rank", "correlation"]).collect()
    assert linked.height == raw
    launch_names = (
        ev.filter(pl.col("kind").is_in(["runtime", "driver"]))
        .select("name")
        .unique()
        .collect()["name"]
        .to_list()
    )
    assert "cudaLaunchKernel" in launch_names and not any(re.search(r"_v\d{4,}$", n) for n in launch_names)


def test_nvtx_op_ranges_are_cpu_ops_named_by_their_op(imported) -> None:
    _name, src, out = imported
    texts = _sql(
        src, "SELECT COALESCE(text, (SELECT value FROM StringIds WHERE id = textId)) FROM NVTX_EVENTS"
    )
    want = Counter(t.split(", ")[0] for (t,) in texts if "op_id = " in t)
    ops = open_trace(out).events().filter(pl.col("kind") == "cpu_op").group_by("name").len().collect()
    assert dict(zip(ops["name"], ops["len"], strict=True)) == dict(want)


def test_a_call_carries_the_op_id_of_the_innermost_op_around_it(imported) -> None:
    _name, _src, out = imported
    ev = open_trace(out).events().filter(pl.col("rank") == 0).collect()
    ops = ev.filter(pl.col("kind") == "cpu_op").select("tid", "ts", "dur", "external_id").rows()
    calls = ev.filter(pl.col("kind").is_in(["runtime", "driver"])).sort("ts").head(300)
    for tid, ts, ext in calls.select("tid", "ts", "external_id").rows():
        around = [o for o in ops if o[0] == tid and o[1] <= ts < o[1] + o[2]]
        innermost = min(around, key=lambda o: o[2])[3] if around else None
        assert ext == innermost


def test_copy_kinds_match_thensys_export(imported) -> None:
    _name, src, out = imported
    kinds = dict(_sql(src, "SELECT id, name FROM ENUM_CUDA_MEMCPY_OPER"))
    raw = Counter()
    for kind, n in _sql(src, "SELECT copyKind, COUNT(*) FROM CUPTI_ACTIVITY_KIND_MEMCPY GROUP BY 1"):
        raw[
            {
                "CUDA_MEMCPY_KIND_HTOD": "HtoD",
                "CUDA_MEMCPY_KIND_DTOD": "DtoD",
                "CUDA_MEMCPY_KIND_DTOH": "DtoH",
            }[kinds[kind]]
        ] += n
    got = open_trace(out).events().filter(pl.col("kind") == "memcpy").group_by("memcpy_kind").len().collect()
    assert dict(zip(got["memcpy_kind"], got["len"], strict=True)) == dict(raw)


def test_nccl_api_ranges_are_not_the_users_annotations(tmp_path) -> None:
    src = nsys_export("mfu_2gpu_before")
    out = tmp_path / "t"
    import_trace([src], out)
    names = open_trace(out).result("annotations")["names.parquet"]
    nccl = names.filter(pl.col("name").str.starts_with("nccl"))
    assert nccl.height and set(nccl["origin"]) == {"framework"}


def test_nvtx_step_pattern_makes_steps(tmp_path) -> None:
    src = nsys_export("mfu_2gpu_before")
    out = tmp_path / "t"
    proc = subprocess.run(
        [PROFUI, "import", str(src), "-o", str(out), "--nvtx-step", "^FlashAttnFunc, "],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 0, proc.stderr
    raw = _sql(
        src,
        "SELECT (globalTid >> 24) & 16777215, COUNT(*) FROM NVTX_EVENTS "
        "WHERE COALESCE(text, '') LIKE 'FlashAttnFunc, %' GROUP BY 1 ORDER BY 1",
    )
    steps = (
        open_trace(out)
        .events()
        .filter(pl.col("kind") == "step")
        .group_by("rank")
        .len()
        .sort("rank")
        .collect()
    )
    assert steps["len"].to_list() == [n for _pid, n in raw]


def test_summary_and_info_take_the_export_directly() -> None:
    src = nsys_export("h100_2gpu_1s")
    proc = subprocess.run(
        [PROFUI, "summary", str(src), "--json"], capture_output=True, text=True, timeout=300
    )
    assert proc.returncode == 0, proc.stderr
    busy = json.loads(proc.stdout)["sections"]["utilization"]["busy"]
    ref = _reference("h100_2gpu_1s")["per_device"]
    assert {str(r["device"]): r["idle_ns"] for r in busy} == {d: v["idle_ns"] for d, v in ref.items()}
    info = subprocess.run([PROFUI, "info", str(src)], capture_output=True, text=True, timeout=120)
    assert info.returncode == 0 and "source nsys-import" in info.stdout
