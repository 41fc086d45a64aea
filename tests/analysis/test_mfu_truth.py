"""Physically possible FLOPs and an honest MFU (#37 item 7).

Oracles: the bundled synthetic sample's events read with pyarrow (each GEMM op's ``Input Dims``
turned into FLOPs here, joined to its kernel through the launch's ids), the H100 SXM datasheet's
dense peaks (BF16/FP16 989.5, TF32 494.5, FP32 67 TFLOP/s), and a shared real AMD trace whose
recorded shapes are inflated in the test.
"""

from __future__ import annotations

import asyncio
import gzip
import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import polars as pl
import pyarrow.dataset as ds
import pytest

from realdata import SAMPLES, shared_trace

SAMPLE = SAMPLES / "synthetic_gpu"
AMD = "hta-amd_trace-mi250_minitoy_train_ROCm6_2_kineto.json.gz"
#: H100 SXM dense peaks by the precision a kernel's name spells (datasheet, TFLOP/s).
H100 = (("bf16", 989.5), ("fp16", 989.5), ("tf32", 494.5))
H100_FP32 = 67.0


PROFUI = str(Path(sys.executable).with_name("profui"))


def _profui(*args: str | Path, cache: Path) -> subprocess.CompletedProcess:
    return subprocess.run(
        [PROFUI, *map(str, args)],
        capture_output=True,
        text=True,
        timeout=600,
        stdin=subprocess.DEVNULL,
        env={**os.environ, "PROFUI_CACHE": str(cache), "COLUMNS": "200"},
    )


def _gemm_flops(name: str, dims: list) -> int | None:
    """2·M·K·N of the layouts PyTorch records, worked out here."""
    if name in ("aten::mm", "aten::matmul"):
        (m, k), (_, n) = dims[:2]
    elif name == "aten::addmm":
        (m, k), (_, n) = dims[1:3]
    elif name == "aten::linear":
        (m, k), (n, _) = dims[:2]
    else:
        return None
    return 2 * m * k * n


@pytest.fixture(scope="module")
def sample_gemms() -> pl.DataFrame:
    """Each shaped GEMM op of the sample with its FLOPs and the kernel it launched."""
    ev = pl.from_arrow(
        ds.dataset(sorted(SAMPLE.glob("node=*/rank=*/events-*.parquet")), format="parquet").to_table(
            columns=["pid", "kind", "name", "ts", "dur", "correlation", "external_id", "args"]
        )
    ).rename({"pid": "rank"})  # one process per rank: its pid tells the ranks apart
    ev = ev.with_columns(pl.col("kind").cast(pl.String), pl.col("name").cast(pl.String))
    ops = ev.filter(pl.col("kind") == "cpu_op", pl.col("args").str.contains("Input Dims"))
    rows = []
    for r in ops.iter_rows(named=True):
        f = _gemm_flops(r["name"], json.loads(r["args"])["Input Dims"])
        if f is not None:
            rows.append({"rank": r["rank"], "external_id": r["external_id"], "op": r["name"], "flops": f})
    flops = pl.DataFrame(rows)
    launches = ev.filter(pl.col("kind") == "runtime").select("rank", "external_id", "correlation")
    kernels = ev.filter(pl.col("kind") == "kernel").select(
        "rank", "correlation", pl.col("name").alias("kernel"), "dur"
    )
    return flops.join(launches, on=["rank", "external_id"]).join(kernels, on=["rank", "correlation"])


def _peak(kernel: str) -> float:
    low = kernel.lower()
    return next((p for part, p in H100 if part in low), H100_FP32)


def test_sample_kernels_run_below_the_peak(sample_gemms: pl.DataFrame) -> None:
    """Every GEMM kernel of the sample runs its op's FLOPs below the H100's peak at its precision
    (the old sample claimed 137 GFLOP in ~15 µs: 9 PFLOP/s)."""
    g = sample_gemms
    assert g.height > 10_000
    rate = g["flops"] / g["dur"] / 1e3  # TFLOP/s
    peaks = g["kernel"].map_elements(_peak, return_dtype=pl.Float64)
    assert (rate < peaks).all(), g.with_columns(rate=rate, peak=peaks).filter(rate >= peaks).head()
    assert set(g["op"]) == {"aten::mm", "aten::matmul", "aten::addmm", "aten::linear"}


def test_sample_copies_and_sets_run_below_their_links() -> None:
    """The sample's memsets move less than the H100's HBM3 (3.35 TB/s) and its input copies less
    than PCIe Gen5 x16 (64 GB/s) can (the old sample set 32 MiB in 3 µs: 11 TB/s)."""
    ev = pl.from_arrow(
        ds.dataset(sorted(SAMPLE.glob("node=*/rank=*/events-*.parquet")), format="parquet").to_table(
            columns=["kind", "memcpy_kind", "bytes", "dur"]
        )
    ).with_columns(pl.col("kind").cast(pl.String), pl.col("memcpy_kind").cast(pl.String))
    moves = ev.filter(pl.col("kind").is_in(["memset", "memcpy"]))
    assert moves["bytes"].null_count() == 0 and moves.height > 1000
    gbps = moves["bytes"] / moves["dur"]  # bytes per ns = GB/s
    limit = pl.Series(
        [3350.0 if k == "memset" else 64.0 for k in moves["kind"]]  # HtoD and DtoH over PCIe
    )
    assert (gbps < limit).all(), moves.with_columns(gbps=gbps).filter(gbps >= limit).head()


def test_sample_mfu_is_possible_and_from_the_datasheet(tmp_path: Path, sample_gemms) -> None:
    trace = tmp_path / "s"
    shutil.copytree(SAMPLE, trace, ignore=shutil.ignore_patterns(".profui"))
    p = _profui("summary", str(trace), "--json", cache=tmp_path / "cache")
    assert p.returncode == 0 and "Traceback" not in p.stderr, p.stderr
    t = json.loads(p.stdout)["sections"]["flops"]["totals"][0]
    # every shaped GEMM op counted, with the FLOPs its shapes give
    assert t["flops"] == float(sample_gemms["flops"].sum())
    assert t["counted_ops"] == sample_gemms.height
    # the manifest's GPU ("index", as profcap writes it) is found in the peak table
    assert (t["peak_tflops"], t["precision"], t["peak_source"]) == (
        989.5,
        "BF16",
        "https://www.nvidia.com/en-us/data-center/h100/",
    )
    assert 0 < t["mfu"] < 1 and t["mfu_problem"] == "" and t["mfu_impossible"] is None
    assert t["tflops"] < 989.5


def test_mfu_above_the_given_peak_is_flagged_not_shown(tmp_path: Path) -> None:
    """`--peak-tflops` far below what the kernels ran at: the MFU is impossible; summary text,
    takeaway and JSON say so with the cause, never as a plain percentage."""
    trace = tmp_path / "s"
    shutil.copytree(SAMPLE, trace, ignore=shutil.ignore_patterns(".profui"))
    p = _profui("summary", str(trace), "--json", "--peak-tflops", "10", cache=tmp_path / "cache")
    assert p.returncode == 0, p.stderr
    doc = json.loads(p.stdout)
    t = doc["sections"]["flops"]["totals"][0]
    assert t["mfu"] is None
    assert t["mfu_impossible"] == pytest.approx(t["step_flops"] / t["step_ns"] / 1e3 / 10)
    assert t["mfu_impossible"] > 1
    assert "impossible" in t["mfu_problem"] and "a wrong peak" in t["mfu_problem"]
    assert all(s["mfu"] is None for s in doc["sections"]["flops"]["steps"])
    text = _profui("summary", str(trace), "--peak-tflops", "10", cache=tmp_path / "cache")
    assert text.returncode == 0 and "Traceback" not in text.stderr
    out = " ".join(text.stdout.split())
    assert "is impossible (above 100%)" in out
    assert not re.search(r"MFU \d[\d.]*% (from|of)", out), out


def _inflated(tmp_path: Path) -> Path:
    """HTA's AMD trace with its two shaped ops claiming 10⁷× the rows they had."""
    raw = json.loads(gzip.open(shared_trace(AMD), "rt").read())
    ops = 0
    for e in raw["traceEvents"]:
        if e.get("name") in ("aten::linear", "aten::mm") and "Input Dims" in (e.get("args") or {}):
            e["args"]["Input Dims"][0][0] *= 10_000_000  # M of x / of the left operand
            ops += 1
    assert ops == 2
    src = tmp_path / "amd.json"
    src.write_text(json.dumps(raw))
    return src


def test_inflated_shapes_name_the_kernels(tmp_path: Path) -> None:
    """The datasheet peak is right, the FLOPs are not; the cause names the kernels that could
    not have run them."""
    src = _inflated(tmp_path)
    p = _profui("summary", str(src), "--json", cache=tmp_path / "cache")
    assert p.returncode == 0 and "Traceback" not in p.stderr, p.stderr
    t = json.loads(p.stdout)["sections"]["flops"]["totals"][0]
    assert t["mfu"] is None and t["mfu_impossible"] > 1
    assert "FLOPs are counted for kernels that did not run them: 2 kernels of 2" in t["mfu_problem"]


def test_dashboard_flags_the_impossible_mfu(tmp_path: Path) -> None:
    """The dashboard's FLOPs chart, as a user opens it: the impossible MFU and its cause, no
    plain percentage."""
    from profui.capture.ingest import import_trace
    from profui.tui.app import OpenTarget, ProfuiApp
    from profui.tui.views.dashboard import DashboardView

    trace = tmp_path / "amd"
    import_trace([_inflated(tmp_path)], trace)

    async def go() -> str:
        app = ProfuiApp(OpenTarget("trace", trace), poll_s=60)
        async with app.run_test(size=(120, 40)) as pilot:
            view = app.screen.query_one(DashboardView)
            for _ in range(1500):  # until every chart has drawn
                await pilot.pause()
                if view.complete:
                    break
                await asyncio.sleep(0.02)
            assert view.complete
            shown = view.panel("flops").takeaway_shown()
            await pilot.press("q")
            return shown

    shown = asyncio.run(go())
    assert "is impossible (above 100%)" in shown and "did not run them" in shown, shown
    assert not re.search(r"MFU \d[\d.]*% (from|of)", shown), shown
