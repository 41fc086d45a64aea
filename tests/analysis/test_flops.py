"""FLOPs, achieved throughput and MFU (``analysis/flops.py``, ``analysis/peaks.py``).

Oracles: PyTorch's own ``torch.utils.flop_counter.FlopCounterMode`` run on the same model step
as a real CPU run recorded here with ``record_shapes=True`` (and torch's own SDPA formulas for the
CPU attention op, which FlopCounterMode has no formula for); the shapes in the raw JSON of a
shared GPU trace; hand-computed shapes and times of a small hand-written Kineto trace; the
vendors' datasheets for the peak table.
"""

from __future__ import annotations

import gzip
import json
import subprocess
import sys
from pathlib import Path

import polars as pl
import pytest

from profui.analysis import open_trace
from profui.analysis.peaks import peak_for
from profui.capture.ingest import import_trace

from realdata import run_profui, shared_trace

RECORD = r"""
import json, sys
import torch
from torch import nn
from torch.profiler import ProfilerActivity, profile, schedule
from torch.utils.flop_counter import FlopCounterMode, sdpa_backward_flop_count, sdpa_flop_count

out = sys.argv[1]
torch.manual_seed(0)
torch.set_num_threads(1)


class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(3, 8, 3, stride=2, padding=1)
        self.grouped = nn.Conv2d(8, 8, 3, padding=2, dilation=2, groups=2, bias=False)
        self.up = nn.ConvTranspose2d(8, 4, 2, stride=2)
        self.fc1 = nn.Linear(4 * 8 * 8, 32)
        self.fc2 = nn.Linear(16, 16, bias=False)

    def forward(self, x):
        y = self.up(self.grouped(self.conv(x).relu())).flatten(1)  # [4, 256]
        h = self.fc1(y).view(4, 2, 16)
        a = torch.bmm(h, h.transpose(1, 2))
        q = h.view(4, 1, 2, 16)
        att = nn.functional.scaled_dot_product_attention(q, q, q)
        z = self.fc2(att.reshape(4, 2, 16))
        return z.sum() + a.sum()


model = Model()
x = torch.randn(4, 3, 8, 8, requires_grad=True)


def step():
    model.zero_grad()
    model(x).backward()


with FlopCounterMode(display=False) as counter:
    step()
counts = {str(k): int(v) for k, v in counter.get_flop_counts()["Global"].items()}
qkv = (4, 1, 2, 16)
with profile(activities=[ProfilerActivity.CPU], record_shapes=True,
             schedule=schedule(wait=0, warmup=1, active=2),
             on_trace_ready=lambda p: p.export_chrome_trace(out)) as prof:
    for _ in range(3):
        step()
        prof.step()
json.dump({"counts": counts, "sdpa": sdpa_flop_count(qkv, qkv, qkv),
           "sdpa_backward": sdpa_backward_flop_count(qkv, qkv, qkv, qkv)}, sys.stdout)
"""


@pytest.fixture(scope="module")
def cpu_run(tmp_path_factory) -> tuple[Path, dict]:
    """A real CPU training step recorded with record_shapes=True, imported; and the counts
    FlopCounterMode gives for the same step."""
    pytest.importorskip("torch")
    d = tmp_path_factory.mktemp("flops_cpu")
    proc = subprocess.run(
        [sys.executable, "-c", RECORD, str(d / "run.json")], capture_output=True, text=True, timeout=600
    )
    assert proc.returncode == 0, proc.stderr
    oracle = json.loads(proc.stdout)
    import_trace([d / "run.json"], d / "trace")
    return d / "trace", oracle


def test_cpu_run_matches_flop_counter_mode(cpu_run) -> None:
    path, oracle = cpu_run
    counts = oracle["counts"]
    # FlopCounterMode counts no FLOPs for the CPU flash attention op; torch's own SDPA formulas do
    attention, attention_bwd = oracle["sdpa"], oracle["sdpa_backward"]
    per_step = sum(counts.values()) + attention + attention_bwd
    out = open_trace(path).result("flops")
    steps = out["steps.parquet"]
    assert steps.height == 2
    assert steps["flops"].to_list() == [float(per_step)] * 2
    by_type = dict(
        out["ops.parquet"].group_by("op_type").agg(pl.col("flops").sum()).iter_rows()
    )  # two steps of each
    assert by_type == {
        "matmul": 2.0 * (counts["aten.mm"] + counts["aten.addmm"] + counts["aten.bmm"]),
        "conv": 2.0 * counts["aten.convolution"],
        "conv_backward": 2.0 * counts["aten.convolution_backward"],
        "attention": 2.0 * attention,
        "attention_backward": 2.0 * attention_bwd,
    }
    ops = out["ops.parquet"]
    assert ops.filter(pl.col("name") == "aten::bmm")["flops"].item() == 2.0 * counts["aten.bmm"]
    # each FLOP once: the outermost op counts (linear, convolution), never what it holds
    assert not set(ops["name"]) & {"aten::addmm", "aten::_convolution", "aten::mkldnn_convolution"}
    t = out["totals.parquet"].row(0, named=True)
    assert t["flops"] == 2.0 * per_step and t["ops_without_flops"] == 0 and t["kernels"] == 0
    # a CPU run: achieved on the host, no peak known, never an invented one
    assert t["tflops"] == pytest.approx(t["step_flops"] / t["step_ns"] / 1e3)
    assert t["mfu"] is None and t["peak_tflops"] is None and "no peak known" in t["note"]
    assert steps["mfu"].null_count() == 2


#: The ops the CPU run's FLOPs are counted on, by type (what FlopCounterMode calls them aside).
CPU_RUN_TYPES = {
    "aten::linear": "matmul",
    "aten::matmul": "matmul",
    "aten::mm": "matmul",
    "aten::addmm": "matmul",
    "aten::bmm": "matmul",
    "aten::convolution": "conv",
    "aten::_convolution": "conv",
    "aten::convolution_backward": "conv_backward",
    "aten::scaled_dot_product_attention": "attention",
    "aten::_scaled_dot_product_flash_attention_for_cpu": "attention",
    "aten::_scaled_dot_product_flash_attention_for_cpu_backward": "attention_backward",
}


def test_cpu_run_flops_by_op_type(cpu_run) -> None:
    # FLOPs per type from FlopCounterMode; time per type from the raw Kineto events in plain
    # Python: the host time of each counted op that no other counted op of its thread encloses
    path, oracle = cpu_run
    counts = oracle["counts"]
    flops = {
        "matmul": 2.0 * (counts["aten.mm"] + counts["aten.addmm"] + counts["aten.bmm"]),
        "conv": 2.0 * counts["aten.convolution"],
        "conv_backward": 2.0 * counts["aten.convolution_backward"],
        "attention": 2.0 * oracle["sdpa"],
        "attention_backward": 2.0 * oracle["sdpa_backward"],
    }
    raw = json.loads((path.parent / "run.json").read_text())
    ev = [e for e in raw["traceEvents"] if e.get("ph") == "X" and e.get("name") in CPU_RUN_TYPES]

    def inside(a: dict, b: dict) -> bool:
        return (
            a is not b
            and (a["pid"], a["tid"]) == (b["pid"], b["tid"])
            and b["ts"] <= a["ts"]
            and a["ts"] + a["dur"] <= b["ts"] + b["dur"]
        )

    time_ns = dict.fromkeys(flops, 0)
    for a in ev:
        if not any(inside(a, b) for b in ev):
            time_ns[CPU_RUN_TYPES[a["name"]]] += round(a["dur"] * 1000)
    total = sum(flops.values())
    expected = sorted(
        ((t, f, time_ns[t], f / time_ns[t] / 1e3, f / total) for t, f in flops.items()),
        key=lambda r: (-r[1], r[0]),
    )
    table = open_trace(path).result("flops")["op_types.parquet"]
    assert table.columns == ["op_type", "flops", "time_ns", "tflops", "share"]
    got = table.rows()
    assert [r[:3] for r in got] == [r[:3] for r in expected]
    assert [r[3:] for r in got] == [pytest.approx(r[3:], rel=1e-12) for r in expected]
    # profui summary shows it, text and JSON, as the other FLOPs tables
    doc = json.loads(run_profui("summary", path, "--json", "--sections", "flops").stdout)
    rows = doc["sections"]["flops"]["op_types"]
    assert [(r["op_type"], r["flops"], r["time_ns"]) for r in rows] == [r[:3] for r in expected]
    text = run_profui("summary", path, COLUMNS="160").stdout
    assert "FLOPs per op type" in text and "conv_backward" in text


def test_cpu_run_with_given_peak_and_model_flops(cpu_run) -> None:
    path, _ = cpu_run
    t = open_trace(path)
    given = t.result("flops", peak_tflops=0.5)["totals.parquet"].row(0, named=True)
    assert given["peak_source"] == "--peak-tflops" and given["definition"] == "counted"
    assert given["mfu"] == pytest.approx(given["tflops"] / 0.5)
    model = t.result("flops", peak_tflops=0.5, model_flops=1e6)
    m = model["totals.parquet"].row(0, named=True)
    assert m["definition"] == "model" and m["model_flops"] == 1e6
    assert m["mfu"] == pytest.approx(1e6 * m["steps"] / m["step_ns"] / 1e3 / 0.5)
    s = model["steps.parquet"]
    assert s["mfu"].to_list() == pytest.approx([1e6 / ns / 1e3 / 0.5 for ns in s["step_ns"]])


# -- a hand-written GPU trace: shapes, times and the peak worked out by hand ---------------------


def _kineto(tmp: Path, name: str, events: list[dict], gpu: dict | None) -> Path:
    doc = {"schemaVersion": 1, "traceEvents": events}
    if gpu is not None:
        doc["deviceProperties"] = [gpu]
    p = tmp / f"{name}.json"
    p.write_text(json.dumps(doc))
    import_trace([p], tmp / name)
    return tmp / name


def _x(name, cat, ts, dur, tid=1, pid=100, **args):
    return {"ph": "X", "cat": cat, "name": name, "pid": pid, "tid": tid, "ts": ts, "dur": dur, "args": args}


GEMM = "sm90_xmma_gemm_bf16bf16_bf16f32_f32_tn_n_tilesize128x128x64"


def _gpu_events(dims: list, types: list[str], gemm: str = GEMM, gemm_us: int = 100) -> list[dict]:
    """One step: aten::linear (holding aten::addmm, which launches a GEMM and a bias kernel)
    and an elementwise op whose kernel has no FLOPs. Times in µs."""
    gpu = {"tid": 7, "pid": 0, "device": 0, "stream": 7}
    end = 1100 + gemm_us
    return [
        _x("ProfilerStep#1", "user_annotation", 1000, 1000),
        _x(
            "aten::linear", "cpu_op", 1010, 100, **{"Input Dims": dims, "Input type": types, "External id": 1}
        ),
        _x("aten::addmm", "cpu_op", 1020, 80, **{"Input Dims": [dims[2], dims[0], [4096, 4096], [], []]}),
        _x("cudaLaunchKernel", "cuda_runtime", 1030, 10, correlation=7),
        _x("cudaLaunchKernel", "cuda_runtime", 1050, 10, correlation=8),
        _x("aten::add_", "cpu_op", 1200, 50, **{"Input Dims": [[1024, 4096], [1024, 4096], []]}),
        _x("cudaLaunchKernel", "cuda_runtime", 1210, 10, correlation=9),
        _x(gemm, "kernel", 1100, gemm_us, correlation=7, **gpu),
        _x("void at::native::bias_kernel<c10::BFloat16>", "kernel", end, 5, correlation=8, **gpu),
        _x(
            "void at::native::vectorized_elementwise_kernel<c10::BFloat16>",
            "kernel",
            end + 100,
            20,
            correlation=9,
            **gpu,
        ),  # fmt: skip
    ]


H100 = {"id": 0, "name": "NVIDIA H100 80GB HBM3", "computeMajor": 9, "computeMinor": 0, "numSms": 132}
LINEAR = [[1024, 4096], [4096, 4096], [4096]]
BF16 = ["c10::BFloat16", "c10::BFloat16", "c10::BFloat16"]


def test_gpu_trace_kernel_flops_and_mfu(tmp_path) -> None:
    trace = _kineto(tmp_path, "h100", _gpu_events(LINEAR, BF16), H100)
    out = open_trace(trace).result("flops")
    flops = 2.0 * 1024 * 4096 * 4096  # linear: 2·M·K·N
    k = {r["name"]: r for r in out["kernels.parquet"].iter_rows(named=True)}
    gemm = k[GEMM]
    assert gemm["flops"] == flops and gemm["flops_count"] == 1
    assert gemm["tflops"] == pytest.approx(flops / 100_000 / 1e3)  # 100 µs
    # the op's bias kernel and the elementwise kernel: counted as kernels without FLOPs
    assert k["void at::native::bias_kernel<c10::BFloat16>"]["flops"] is None
    assert k["void at::native::vectorized_elementwise_kernel<c10::BFloat16>"]["flops"] is None
    ops = out["ops.parquet"]
    assert ops["name"].to_list() == ["aten::linear"]  # the add_ is no FLOP-bearing op; addmm nested
    assert ops["time_ns"].item() == 105_000  # its two kernels
    t = out["totals.parquet"].row(0, named=True)
    assert (t["kernels"], t["kernels_with_flops"], t["kernel_ns_without_flops"]) == (3, 1, 25_000)
    # step: from the first launch (1030 µs) to the end of the last kernel (1320 µs)
    step_ns = (1320 - 1030) * 1000
    assert t["step_ns"] == step_ns
    # H100 SXM, BF16 dense: 1,979 TFLOP/s with sparsity in the datasheet, 989.5 dense
    assert (t["peak_gpu"], t["precision"], t["peak_tflops"]) == ("H100 SXM", "BF16", 989.5)
    assert "nvidia.com" in t["peak_source"] and t["definition"] == "counted"
    assert t["mfu"] == pytest.approx(flops / step_ns / 1e3 / 989.5)
    assert out["steps.parquet"]["mfu"].item() == pytest.approx(t["mfu"])
    given = open_trace(trace).result("flops", peak_tflops=100.0)["totals.parquet"].row(0, named=True)
    assert (given["peak_tflops"], given["peak_source"]) == (100.0, "--peak-tflops")
    # 118% of the given 100 TFLOP/s: impossible, so no MFU; the ratio and the cause are kept
    assert given["mfu"] is None
    assert given["mfu_impossible"] == pytest.approx(flops / step_ns / 1e3 / 100.0)
    assert "a wrong peak" in given["mfu_problem"]


@pytest.mark.parametrize(
    ("gemm", "precision", "peak"),
    [
        ("ampere_sgemm_128x64_nn", "FP32", 19.5),
        # FP32 inputs on tensor cores: the name says TF32 (precision.py's rule)
        ("cutlass_80_tensorop_s1688gemm_128x128_32x3_nn_align4", "TF32", 156.0),
    ],
)
def test_gpu_trace_fp32_and_tf32(tmp_path, gemm: str, precision: str, peak: float) -> None:
    fp32 = ["float", "float", "float"]
    a100 = {"id": 0, "name": "NVIDIA A100-SXM4-80GB"}
    t = open_trace(_kineto(tmp_path, "a100", _gpu_events(LINEAR, fp32, gemm), a100)).result("flops")
    row = t["totals.parquet"].row(0, named=True)
    assert (row["precision"], row["peak_gpu"], row["peak_tflops"]) == (precision, "A100", peak)


def test_gpu_trace_unknown_gpu(tmp_path) -> None:
    odd = {"id": 0, "name": "Some Future GPU"}
    u = open_trace(_kineto(tmp_path, "odd", _gpu_events(LINEAR, BF16), odd)).result("flops")
    row = u["totals.parquet"].row(0, named=True)
    assert row["mfu"] is None and row["peak_tflops"] is None
    assert "no BF16 peak known for Some Future GPU" in row["note"]
    assert row["flops"] == 2.0 * 1024 * 4096 * 4096  # FLOPs and achieved still there


@pytest.mark.parametrize(
    "dims",
    [
        "not a list",
        [[1024, 4096], [4096, 4095], [4096]],  # K disagrees: x [M, K], W [N, K]
        [[[1024, 4096]], [4096, 4096]],  # nested too deep
        [[1024, "x"], [4096, 4096], [4096]],
        [[1024, -5], [4096, 4096], [4096]],
        [[4096], [4096, 4096]],  # a vector: mv, not counted (as FlopCounterMode)
    ],
)
def test_malformed_shapes_count_as_no_flops(tmp_path, dims) -> None:
    events = [
        _x("ProfilerStep#1", "user_annotation", 1000, 1000),
        _x("aten::linear", "cpu_op", 1010, 100, **{"Input Dims": dims, "Input type": ["float"]}),
        _x(
            "aten::mm", "cpu_op", 1300, 100, **{"Input Dims": [[8, 16], [16, 4]], "Input type": ["float"] * 2}
        ),
    ]
    out = open_trace(_kineto(tmp_path, "bad", events, None)).result("flops")
    t = out["totals.parquet"].row(0, named=True)
    assert (t["counted_ops"], t["ops_without_flops"], t["flops"]) == (1, 1, 2.0 * 8 * 16 * 4)
    assert t["ops_without_shapes"] == 0 and "1 op with unreadable shapes has no FLOPs" in t["note"]
    ops = {r["name"]: r for r in out["ops.parquet"].iter_rows(named=True)}
    assert ops["aten::linear"]["flops"] is None and ops["aten::linear"]["without_flops"] == 1


def test_nested_op_counts_when_its_parent_has_no_shapes(tmp_path) -> None:
    events = [
        _x("aten::linear", "cpu_op", 1000, 100, **{"Input Dims": "garbled"}),
        _x("aten::addmm", "cpu_op", 1010, 80, **{"Input Dims": [[16], [8, 32], [32, 16], [], []]}),
        _x("aten::mm", "cpu_op", 1020, 10, **{"Input Dims": [[8, 32], [32, 16]]}),  # inside addmm
    ]
    t = (
        open_trace(_kineto(tmp_path, "nested", events, None))
        .result("flops")["totals.parquet"]
        .row(0, named=True)
    )
    # addmm counts (2·8·32·16), its mm does not; the linear holding it is not "without FLOPs"
    assert (t["flops"], t["counted_ops"], t["ops_without_flops"]) == (2.0 * 8 * 32 * 16, 1, 0)


def test_no_shapes_recorded(tmp_path) -> None:
    events = [_x("aten::mm", "cpu_op", 1000, 100)]
    t = open_trace(_kineto(tmp_path, "noshapes", events, None)).result("flops")["totals.parquet"]
    row = t.row(0, named=True)
    assert (row["counted_ops"], row["ops_without_flops"], row["ops_without_shapes"]) == (0, 1, 1)
    from profui.analysis.takeaways import flops_takeaway

    assert flops_takeaway(t) == "No FLOPs counted: no op recorded its shapes (record_shapes=True)."
    assert row["note"].startswith("1 op recorded no shapes")


def test_the_note_counts_ops_in_words(tmp_path) -> None:
    """A count in the note reads as every count does ("1,200 ops", not "1200 op(s)")."""
    events = [_x("aten::mm", "cpu_op", 1000 + 10 * i, 5) for i in range(1200)]
    t = open_trace(_kineto(tmp_path, "many", events, None)).result("flops")["totals.parquet"]
    row = t.row(0, named=True)
    assert row["ops_without_shapes"] == 1200
    assert row["note"].startswith("1,200 ops recorded no shapes (record the trace with record_shapes=True)")


def test_no_shapes_on_a_known_gpu_is_no_mfu(tmp_path) -> None:
    """No op recorded its shapes on an H100 (a peak known): nothing was counted, so there is no
    throughput and no MFU (null), not 0 TFLOP/s and an MFU of 0%, per step or in total; the
    diff then has no MFU to compare."""
    events = _gpu_events(LINEAR, BF16)
    for e in events:
        e["args"].pop("Input Dims", None)
        e["args"].pop("Input type", None)
    trace = _kineto(tmp_path, "noshapes_h100", events, H100)
    out = open_trace(trace).result("flops")
    t = out["totals.parquet"].row(0, named=True)
    known = peak_for(H100, t["precision"])  # the datasheet's, at the precision the stage took
    assert t["counted_ops"] == 0 and known is not None and t["peak_tflops"] == known.tflops
    assert t["tflops"] is None and t["mfu"] is None
    assert out["steps.parquet"]["tflops"].null_count() == out["steps.parquet"].height == 1
    assert out["steps.parquet"]["mfu"].null_count() == 1
    diff = json.loads(run_profui("diff", trace, trace, "--json").stdout)
    assert "mfu" not in diff["metrics"] and "achieved_tflops" not in diff["metrics"]


# -- a shared real GPU trace: FLOPs from its raw JSON shapes, the peak from its deviceProperties ---


AMD = "hta-amd_trace-mi250_minitoy_train_ROCm6_2_kineto.json.gz"


def test_shared_amd_trace(tmp_path) -> None:
    src = shared_trace(AMD)
    raw = json.loads(gzip.open(src, "rt").read())
    expected = 0
    for e in raw["traceEvents"]:
        a = e.get("args") or {}
        if e.get("name") == "aten::linear":  # x [M, K], W [N, K]
            (m, k), (n, _) = a["Input Dims"][:2]
            expected += 2 * m * k * n
        if e.get("name") == "aten::mm":  # the backward's mm, inside AddmmBackward0
            (m, k), (_, n) = a["Input Dims"]
            expected += 2 * m * k * n
    import_trace([src], tmp_path / "amd")
    out = open_trace(tmp_path / "amd").result("flops")
    t = out["totals.parquet"].row(0, named=True)
    assert t["flops"] == float(expected) and t["counted_ops"] == 2 and t["kernels_with_flops"] == 2
    # "AMD Radeon Graphics", compute 9.0, 104 CUs: one MI250 GCD; FP32 matrix 90.5 / 2
    props = raw["deviceProperties"][0]
    assert (props["name"], props["computeMajor"], props["numSms"]) == ("AMD Radeon Graphics", 9, 104)
    assert (t["precision"], t["peak_tflops"]) == ("FP32", 45.25)
    assert t["mfu"] == pytest.approx(t["tflops"] / 45.25)


# -- the peak table, pinned to the datasheets -------------------------------------------------


@pytest.mark.parametrize(
    ("name", "precision", "tflops"),
    [
        # A100 datasheet: FP32 19.5, TF32 156, BF16/FP16 312 (dense), PCIe = SXM4
        ("NVIDIA A100-PG509-200", "FP32", 19.5),  # the shared traces' A100
        ("NVIDIA A100-SXM4-80GB", "TF32", 156.0),
        ("NVIDIA A100-PCIE-40GB", "BF16", 312.0),
        ("NVIDIA A100 80GB PCIe", "FP16", 312.0),
        # H100 datasheet: sparse 1,979 / 1,513 / 1,671 BF16; 3,958 / 3,026 / 3,341 FP8
        ("NVIDIA H100 80GB HBM3", "BF16", 989.5),
        ("NVIDIA H100 80GB HBM3", "FP8", 1979.0),
        ("NVIDIA H100 80GB HBM3", "FP32", 67.0),
        ("NVIDIA H100 PCIe", "BF16", 756.5),
        ("NVIDIA H100 NVL", "FP8", 1670.5),
        ("NVIDIA H200", "BF16", 989.5),
        ("NVIDIA H200 NVL", "BF16", 835.5),
        ("NVIDIA L4", "BF16", 121.0),
        ("NVIDIA L40S", "FP8", 733.0),
        ("NVIDIA A10", "TF32", 62.5),
        ("Tesla V100-SXM2-32GB", "FP16", 125.0),  # the shared traces' V100
        ("Tesla V100-PCIE-16GB", "FP32", 14.0),
        ("Tesla V100S-PCIE-32GB", "FP16", 130.0),
        ("AMD Instinct MI300X", "BF16", 1307.4),
    ],
)
def test_peak_table(name: str, precision: str, tflops: float) -> None:
    p = peak_for({"name": name}, precision)
    assert p is not None and p.tflops == tflops and p.source.startswith("https://")


@pytest.mark.parametrize(
    ("props", "precision"),
    [
        ({"name": "Tesla V100-SXM2-32GB"}, "BF16"),  # Volta has no BF16 units
        ({"name": "NVIDIA A100-SXM4-80GB"}, "FP8"),  # nor Ampere FP8
        ({"name": "AMD Radeon Graphics", "computeMajor": 11, "numSms": 48}, "FP32"),  # a desktop GPU
        ({"name": "NVIDIA GeForce RTX 4090"}, "BF16"),  # not in the table
        ({"name": ""}, "FP32"),
    ],
)
def test_no_peak_is_invented(props: dict, precision: str) -> None:
    assert peak_for(props, precision) is None


# -- the diff: achieved throughput and MFU per step, and their deltas ---------------------------


def test_diff_names_the_mfu_regression(tmp_path) -> None:
    from profui.analysis.diff import diff, profile_of, sentence

    base = _kineto(tmp_path, "base", _gpu_events(LINEAR, BF16, gemm_us=100), H100)
    new = _kineto(tmp_path, "new", _gpu_events(LINEAR, BF16, gemm_us=300), H100)  # the GEMM 3x slower
    res = diff(profile_of(base), profile_of(new))
    flops = 2.0 * 1024 * 4096 * 4096
    # step: first launch at 1030 µs to the end of the elementwise kernel at 1220 + gemm µs
    b_ns, n_ns = (1320 - 1030) * 1000, (1520 - 1030) * 1000
    m = res["metrics"]
    assert m["achieved_tflops"]["base"] == pytest.approx(flops / b_ns / 1e3)
    assert m["achieved_tflops"]["new"] == pytest.approx(flops / n_ns / 1e3)
    assert m["mfu"]["base"] == pytest.approx(flops / b_ns / 1e3 / 989.5)
    assert m["mfu"]["new"] == pytest.approx(flops / n_ns / 1e3 / 989.5)
    assert m["mfu"]["verdict"] == "regression" and m["achieved_tflops"]["verdict"] == "regression"
    assert m["flops_per_step"]["verdict"] == "same"  # same model, same FLOPs
    assert sentence(m["mfu"]).startswith("MFU fell from ") and sentence(m["mfu"]).endswith(": a regression.")
    assert (
        res["base"]["mfu_basis"] == res["new"]["mfu_basis"] == "counted FLOPs, peak H100 SXM BF16 990 TFLOP/s"
    )
    assert not any("MFU" in n for n in res["notes"])
