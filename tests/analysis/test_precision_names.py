"""Precision of the real kernels of every shared trace: the Kineto JSON files and the Nsight
Systems sqlite exports, read here with ``json`` and ``sqlite3`` (the oracles never go through
profui's importer), against hand-checked expectations per kernel family and shares computed
here from the raw durations."""

from __future__ import annotations

import gzip
import json
import re
import sqlite3
from pathlib import Path

import polars as pl
import pytest
from eventrows import events_frame

from profui.analysis.precision import EXCLUDED, PRECISIONS, kernel_precision, precision_shares
from profui.analysis.takeaways import precision_takeaway

# Substrings of real kernel names (each must occur in some shared trace) -> the precision every
# real kernel holding it must get from its name alone. Hand-checked against what each family's
# name spells; see analysis/precision.py for the rules.
HAND_CHECKED = {
    # cuBLAS-embedded cutlass on sm80, FP32 accumulate, 16x8x8 MMA, no half type: TF32
    "cutlass_80_tensorop_s1688gemm_": "TF32",
    # cuDNN convolutions on sm80 that spell tf32 / tfloat32_t
    "sm80_xmma_fprop_implicit_gemm_indexed_tf32f32_tf32f32_f32": "TF32",
    "sm80_xmma_wgrad_implicit_gemm_indexed_tf32f32_tf32f32_f32": "TF32",
    "cutlass_tensorop_s1688dgrad_optimized_tf32": "TF32",
    "cutlass_cudnn_train6KernelINS_4conv6kernel23ImplicitGemmConvolution": "TF32",
    # single precision: cuBLAS SIMT, xmma FFMA, cuDNN scudnn, complex single, AMD Tensile SB
    "sm80_xmma_gemm_f32f32_f32f32_f32_": "FP32",
    "ampere_sgemm_": "FP32",
    "volta_sgemm_": "FP32",
    "cutlass_80_simt_sgemm_": "FP32",
    "cudnn_infer_volta_scudnn_": "FP32",
    "cudnn_ampere_scudnn_": "FP32",
    "ampere_gcgemm_64x64_nt": "FP32",
    "Cijk_Alik_Bljk_SB_": "FP32",
    "Cijk_Ailk_Bjlk_SB_": "FP32",
    "at::native::CUDAFunctor_add<float>": "FP32",
    # float elements, double arguments: the narrowest floating type named wins
    "distribution_elementwise_grid_stride_kernel<float, 4": "FP32",
    # half
    "cutlass_70_wmma_tensorop_f16_s161616gemm_f16": "FP16",
    "cublasGemvTensorStridedBatched<__half const>": "FP16",
    "split_embedding_codegen_forward_unweighted_kernel<c10::Half": "FP16",
    "BinaryFunctor<c10::Half, c10::Half, c10::Half": "FP16",
    # bfloat16: flash-attention, cuBLASLt nvjet_tst, ATen elementwise
    "flash::flash_fwd_kernel<Flash_fwd_kernel_traits<(int)128, (int)128, (int)64, (int)4, (bool)0, (bool)0, "
    "cutlass::bfloat16_t": "BF16",
    "nvjet_tst_": "BF16",
    "CUDAFunctor_add<c10::BFloat16>": "BF16",
    "bfloat16_copy_kernel_cuda": "BF16",
    # fbgemm FP8 quantisation
    "_compute_FP8_quantize_cuda_kernel<float>": "FP8",
    "_float_to_hfp8_gpu": "FP8",
    # integers
    "at::native::FillFunctor<int>": "INT32",
    "CUDAFunctor_add<int>": "INT32",
    "CUDAFunctorOnSelf_add<long>": "other",
    "linearize_index_kernel<long>": "other",
    "ReduceOp<double": "other",
    # byte movers
    "ncclKernel_SendRecv_RING_SIMPLE_Sum_int8_t": "communication",
    "ncclKernel_Broadcast_RING_LL_Sum_int8_t": "communication",
    "ncclKernel_AllReduce_RING_LL_Sum_float": "communication",
    "ncclDevKernel_SendRecv": "communication",
    "CatArrayBatchedCopy_aligned16_contig<at::native::(anonymous namespace)::OpaqueType<4u>": "memory",
    "CatArrayBatchedCopy_vectorized<at::native::<unnamed>::OpaqueType<(unsigned int)2>": "memory",
    "index_put_kernel_impl<at::native::OpaqueType<4> >": "memory",
    # names that say nothing: the launching op's dtypes decide, when recorded
    "triton_poi_fused_add_cos_sin_0": "unknown",
    "cask_cudnn_infer::computeOffsetsKernel": "unknown",
}

#: GEMM / convolution / attention kernels of the families profui knows by name (``fbgemm_gpu::``
#: is a library of embedding kernels, not a GEMM).
GEMM_OR_CONV = re.compile(r"(?<!fb)gemm|gemv|conv|fprop|dgrad|wgrad|scudnn|nvjet|flash|^cijk_", re.IGNORECASE)


def _kineto_kernels(path: Path) -> list[tuple[str, float]]:
    opener = gzip.open if path.suffix == ".gz" else open
    with opener(path, "rt") as f:
        doc = json.load(f)
    if not isinstance(doc, dict):
        return []
    return [
        (e["name"], float(e.get("dur", 0)))
        for e in doc.get("traceEvents", [])
        if str(e.get("cat", "")).lower() == "kernel" and e.get("ph") == "X"
    ]


def _nsys_kernels(path: Path) -> list[tuple[str, float]]:
    con = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    try:
        rows = con.execute(
            "SELECT s.value, k.end - k.start FROM CUPTI_ACTIVITY_KIND_KERNEL k "
            "JOIN StringIds s ON s.id = k.demangledName"
        ).fetchall()
    finally:
        con.close()
    return [(name, dur / 1000.0) for name, dur in rows]  # ns -> µs, as the Kineto files


@pytest.fixture(scope="module")
def real_kernels(shared_traces: Path) -> dict[str, list[tuple[str, float]]]:
    """Every shared trace with kernels -> its kernels as (name, duration in µs)."""
    out = {}
    for p in sorted(shared_traces.glob("hta-*.json*")):
        kernels = _kineto_kernels(p)
        if kernels:
            out[p.name] = kernels
    for p in sorted((shared_traces / "nsys").glob("*.sqlite")):
        out[p.name] = _nsys_kernels(p)
    assert len(out) >= 15 and sum(f.endswith(".sqlite") for f in out) == 3
    return out


def _events(kernels: list[tuple[str, float]]) -> pl.LazyFrame:
    """One device kernel per (name, µs) with no launching op: only the name can decide."""
    return events_frame(
        [
            {"ts": 1000 * i, "dur": round(1000 * d), "kind": "kernel", "name": n, "device": 0, "stream": 7}
            for i, (n, d) in enumerate(kernels)
        ]
    )


@pytest.fixture(scope="module")
def by_name(real_kernels) -> dict[str, tuple[str, str]]:
    """Every distinct real kernel name -> (precision, rule) from its name alone."""
    names = sorted({n for ks in real_kernels.values() for n, _ in ks})
    kp = kernel_precision(_events([(n, 1.0) for n in names])).collect()
    assert kp.height == len(names)
    return {r["name"]: (r["precision"], r["rule"]) for r in kp.iter_rows(named=True)}


@pytest.mark.parametrize(("part", "expected"), HAND_CHECKED.items(), ids=list(HAND_CHECKED))
def test_hand_checked_families(by_name, part, expected) -> None:
    hits = {n: v for n, v in by_name.items() if part in n}
    assert hits, f"no real kernel name holds {part!r}"
    rule = "none" if expected == "unknown" else "kernel_name"
    assert {n: v for n, v in hits.items() if v != (expected, rule)} == {}


def test_no_real_gemm_or_conv_kernel_is_unknown(by_name) -> None:
    """cask's ``compute*OffsetsKernel`` index helpers run beside a convolution but compute no
    data type, so they are not GEMM/conv kernels here."""
    family = [n for n in by_name if GEMM_OR_CONV.search(n) and "offsets" not in n.lower()]
    assert len(family) > 100
    assert [n for n in family if by_name[n][0] == "unknown"] == []


def test_communication_kernels_are_never_in_the_shares(real_kernels) -> None:
    for file, kernels in real_kernels.items():
        ns = [(n, round(1000 * d)) for n, d in kernels]
        nccl = sum(d for n, d in ns if n.startswith("nccl"))
        opaque = sum(d for n, d in ns if not n.startswith("nccl") and "OpaqueType<" in n)
        total = sum(d for _, d in ns)
        shares = precision_shares(_events(kernels)).collect()
        row = {r["precision"]: r for r in shares.iter_rows(named=True)}
        assert row["communication"]["time_ns"] == nccl, file
        assert row["memory"]["time_ns"] == opaque, file
        assert (row["communication"]["share"], row["memory"]["share"]) == (None, None), file
        inside = shares.filter(pl.col("in_shares"))
        assert inside["precision"].to_list() == list(PRECISIONS), file
        assert inside["time_ns"].sum() == total - nccl - opaque, file
        if total - nccl - opaque:
            assert inside["share"].sum() == pytest.approx(1.0), file
        kp = kernel_precision(_events([k for k in kernels if k[0].startswith("nccl")])).collect()
        assert set(kp["precision"]) <= {"communication"}, file


def test_nsys_nccl_time_from_sql(shared_traces) -> None:
    """The mfu pair's NCCL time, summed by SQL, is what the shares leave out."""
    path = shared_traces / "nsys" / "mfu_2gpu_before.sqlite"
    con = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    try:
        (nccl_ns,) = con.execute(
            "SELECT SUM(k.end - k.start) FROM CUPTI_ACTIVITY_KIND_KERNEL k "
            "JOIN StringIds s ON s.id = k.demangledName WHERE s.value LIKE 'nccl%'"
        ).fetchone()
    finally:
        con.close()
    shares = precision_shares(_events(_nsys_kernels(path))).collect()
    assert nccl_ns > 0
    assert shares.filter(pl.col("precision") == "communication")["time_ns"].item() == nccl_ns


def _tf32_oracle(path: Path) -> tuple[float, float, float]:
    """(TF32 µs, s1688gemm µs, compute µs) of a Kineto file: TF32 kernels are the cutlass
    ``s1688`` ones and those spelling ``tf32``/``tfloat32``; compute leaves out NCCL and the
    type-erased ``OpaqueType`` copies."""
    kernels = _kineto_kernels(path)
    compute = [(n, d) for n, d in kernels if not n.startswith("nccl") and "OpaqueType<" not in n]
    tf32 = sum(d for n, d in compute if "s1688" in n or "tf32" in n.lower() or "tfloat32" in n.lower())
    s1688gemm = sum(d for n, d in compute if "cutlass_80_tensorop_s1688gemm" in n)
    return tf32, s1688gemm, sum(d for _, d in compute)


def test_a100_cutlass_s1688_trace_is_tf32(imported_trace, shared_traces) -> None:
    """nccl_parser_config (A100, no shapes recorded): TF32 is a third of compute-kernel time,
    a share computed here from the raw JSON; the 46.9 ms of NCCL are named, not shared."""
    tf32_us, gemm_us, compute_us = _tf32_oracle(shared_traces / "hta-nccl_parser_config-nccl_data.json.gz")
    assert gemm_us / compute_us > 0.15  # the cutlass s1688 GEMMs alone; cuDNN's TF32 convs add the rest
    t = imported_trace("nccl_parser_config-nccl_data")
    shares = t.precision()
    row = {r["precision"]: r for r in shares.iter_rows(named=True)}
    assert row["TF32"]["share"] == pytest.approx(tf32_us / compute_us, rel=1e-4)
    assert row["TF32"]["share"] == pytest.approx(0.334, abs=0.001)
    assert row["TF32"]["time_by_name_ns"] == row["TF32"]["time_ns"]
    assert shares.filter(pl.col("in_shares"))["time_ns"].sum() == pytest.approx(1000 * compute_us, rel=1e-6)
    assert row["communication"]["time_ns"] == pytest.approx(46_876_493, abs=100)
    assert row["unknown"]["share"] < 0.001
    text = precision_takeaway(shares)
    assert text.startswith(
        f"FP32 dominates kernel time ({100 * row['FP32']['share']:.0f}%), excluding 46.9 ms communication "
    )


def test_fp32_op_on_a_s1688_kernel_is_tf32(imported_trace) -> None:
    """sampled_rank-0 recorded shapes: aten ops on float tensors launch the cutlass s1688
    kernels, which the name shows to be tensor-core TF32."""
    kp = kernel_precision(imported_trace("trace_filter-sampled_rank-0").cached_events()).collect()
    gemm = kp.filter(pl.col("name").str.contains("cutlass_80_tensorop_s1688gemm", literal=True))
    assert gemm.height > 50
    assert set(gemm["precision"]) == {"TF32"}
    assert (gemm["rule"] == "input_dtypes").sum() > 0
    assert set(kp.filter(pl.col("name").str.starts_with("nccl"))["precision"]) == {"communication"}


def test_takeaway_names_what_it_leaves_out(make_events) -> None:
    ev = make_events(
        [
            {
                "ts": 0,
                "dur": 300,
                "kind": "kernel",
                "name": "cutlass_80_tensorop_s1688gemm_64x64",
                "device": 0,
            },
            {"ts": 1, "dur": 100, "kind": "kernel", "name": "ampere_sgemm_32x32", "device": 0},
            {"ts": 2, "dur": 5000, "kind": "kernel", "name": "ncclDevKernel_SendRecv(x)", "device": 0},
            {
                "ts": 3,
                "dur": 70,
                "kind": "kernel",
                "name": "CatArrayBatchedCopy<OpaqueType<4u>>",
                "device": 0,
            },
        ]
    )
    shares = precision_shares(ev).collect()
    assert shares.filter(~pl.col("in_shares"))["precision"].to_list() == list(EXCLUDED)
    assert precision_takeaway(shares) == (
        "TF32 dominates kernel time (75%), excluding 5 µs communication and 70 ns memory kernels; "
        "FP16/BF16/FP8/INT8 0%."
    )
    only_comm = precision_shares(ev.filter(pl.col("name").str.starts_with("nccl"))).collect()
    assert (
        precision_takeaway(only_comm)
        == "No compute-kernel time to classify, excluding 5 µs communication kernels."
    )


def test_rccl_and_template_communication_names() -> None:
    """Communication kernels by name alone, whichever library wrote them (the names and where
    each comes from: tests/analysis/test_comm.py's RCCL_AND_TEMPLATE_COMM); precision's rule
    before comm.COMM_PATTERN (``^(void )?(nccl|rccl)``) counted each of them too."""
    from test_comm import RCCL_AND_TEMPLATE_COMM

    names = [
        *RCCL_AND_TEMPLATE_COMM,
        "void at::native::vectorized_elementwise_kernel<4, at::native::FillFunctor<float>>",
    ]
    kp = kernel_precision(_events([(n, 1.0) for n in names])).collect()
    got = {r["name"]: (r["precision"], r["rule"]) for r in kp.iter_rows(named=True)}
    assert {n: got[n] for n in RCCL_AND_TEMPLATE_COMM} == dict.fromkeys(
        RCCL_AND_TEMPLATE_COMM, ("communication", "kernel_name")
    )
    assert got[names[-1]] == ("FP32", "kernel_name")
