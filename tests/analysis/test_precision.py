"""Kernel precision: the launching op's input dtypes first, then the kernel name, else unknown."""

from __future__ import annotations

import json

import polars as pl
import pytest

from profui.analysis.precision import EXCLUDED, PRECISIONS, kernel_precision, precision_shares


def op(ts, dur, ext, types, tid=1) -> dict:
    return {
        "ts": ts,
        "dur": dur,
        "kind": "cpu_op",
        "name": "aten::mm",
        "external_id": ext,
        "tid": tid,
        "args": json.dumps({"Input type": types}) if types is not None else None,
    }


def kern(ts, name, ext=None, corr=None, dur=10) -> dict:
    return {
        "ts": ts,
        "dur": dur,
        "kind": "kernel",
        "name": name,
        "device": 0,
        "stream": 7,
        "external_id": ext,
        "correlation": corr,
    }


def test_rules_hand_checked(make_events) -> None:
    ev = make_events(
        [
            op(0, 10, 1, ["c10::BFloat16", "float", "Scalar"]),
            kern(100, "gemm_kernel", ext=1),  # dtypes: BF16 wins
            op(20, 10, 2, ["float", "float"]),
            kern(110, "sm80_xmma_gemm_tf32f32_tf32", ext=2),  # FP32 op + tf32 name
            op(30, 10, 3, ["long int", "bool"]),
            kern(120, "index_kernel", ext=3),  # ints -> other
            op(40, 10, 4, ["", "Scalar"]),
            kern(130, "ampere_hgemm_128x64", ext=4),  # no tensor dtype -> name
            kern(140, "cutlass_80_tensorop_s16816gemm_relu"),  # name: FP16
            kern(150, "void at::native::kernel<c10::BFloat16>"),  # name: BF16
            kern(160, "sm90_xmma_gemm_e4m3e4m3_fp32"),  # name: FP8
            kern(170, "imma_gemm_i8"),
            kern(180, "mystery_kernel"),  # INT8; unknown
            kern(190, "ncclKernel_SendRecv_RING_SIMPLE_Sum_int8_t"),  # bytes: communication
            op(50, 10, 9, ["c10::Half"]),
            {"ts": 55, "dur": 2, "kind": "runtime", "external_id": 9, "correlation": 77},
            kern(200, "some_kernel", ext=None, corr=77),  # via correlation
        ]
    )
    got = {r["name"]: (r["precision"], r["rule"]) for r in kernel_precision(ev).collect().to_dicts()}
    assert got == {
        "gemm_kernel": ("BF16", "input_dtypes"),
        "sm80_xmma_gemm_tf32f32_tf32": ("TF32", "input_dtypes"),
        "index_kernel": ("other", "input_dtypes"),
        "ampere_hgemm_128x64": ("FP16", "kernel_name"),
        "cutlass_80_tensorop_s16816gemm_relu": ("FP16", "kernel_name"),
        "void at::native::kernel<c10::BFloat16>": ("BF16", "kernel_name"),
        "sm90_xmma_gemm_e4m3e4m3_fp32": ("FP8", "kernel_name"),
        "imma_gemm_i8": ("INT8", "kernel_name"),
        "mystery_kernel": ("unknown", "none"),
        "ncclKernel_SendRecv_RING_SIMPLE_Sum_int8_t": ("communication", "kernel_name"),
        "some_kernel": ("FP16", "input_dtypes"),
    }
    shares = precision_shares(ev).collect()
    assert shares["precision"].to_list() == [*PRECISIONS, *EXCLUDED]
    assert shares["in_shares"].to_list() == [True] * len(PRECISIONS) + [False] * len(EXCLUDED)
    assert shares["share"].sum() == pytest.approx(1.0) and shares["count"].sum() == 11
    comm = shares.filter(pl.col("precision") == "communication").row(0, named=True)
    assert (comm["count"], comm["time_ns"], comm["share"]) == (1, 10, None)
    # the NCCL kernel's 10 ns are in no denominator: 10 of the other 100 ns are BF16
    assert shares.filter(pl.col("precision") == "BF16")["share"].item() == pytest.approx(20 / 100)
    assert shares.filter(pl.col("precision") == "FP16")["time_by_dtypes_ns"].item() == 10


def test_enclosing_op_when_ids_do_not_link(make_events) -> None:
    """Old traces: kernel and launch External id equal the correlation; the op around the launch
    on the launching thread decides. Only the op that started last before the launch is tried:
    when that one already ended (a finished sibling), the kernel name decides instead."""
    ev = make_events(
        [
            op(0, 100, 500, ["int", "int"], tid=4),
            {"ts": 10, "dur": 5, "kind": "runtime", "external_id": 42, "correlation": 42, "tid": 4},
            kern(50, "permute_kernel", ext=42, corr=42),
            op(200, 100, 600, ["int"], tid=4),
            op(205, 2, 601, ["float"], tid=4),
            {"ts": 210, "dur": 5, "kind": "runtime", "external_id": 43, "correlation": 43, "tid": 4},
            kern(250, "scan_kernel<int32>", ext=43, corr=43),
        ]
    )
    got = kernel_precision(ev).select("name", "precision", "rule").collect().rows()
    assert got == [
        ("permute_kernel", "INT32", "input_dtypes"),
        ("scan_kernel<int32>", "INT32", "kernel_name"),
    ]


def test_triton_uses_the_launching_op(imported_trace) -> None:
    t = imported_trace("triton_example-triton_example")
    r = kernel_precision(t.cached_events()).collect().row(0, named=True)
    assert (r["precision"], r["rule"], r["op_name"]) == (
        "FP32",
        "input_dtypes",
        "triton_poi_fused_add_cos_sin_0",
    )


@pytest.mark.parametrize(
    "name",
    [
        "amd_trace-mi250_minitoy_train_ROCm6_2_kineto",
        "trace_filter-sampled_rank-0",
        "nccl_parser_config-nccl_data",
    ],
)
def test_real_traces(imported_trace, name) -> None:
    t = imported_trace(name)
    kp = kernel_precision(t.cached_events()).collect()
    n_kernels = t.cached_events().filter(pl.col("kind") == "kernel").select(pl.len()).collect().item()
    assert kp.height == n_kernels  # one row per kernel, none lost or duplicated by the joins
    shares = t.precision()
    assert shares["time_ns"].sum() == kp["dur"].sum()
    assert shares["share"].sum() == pytest.approx(1.0)
    # byte movers go by name ahead of any dtypes (rule 0)
    with_types = kp.filter(
        pl.col("input_types").is_not_null(),
        pl.col("input_types").str.contains("float"),
        ~pl.col("precision").is_in(EXCLUDED),
    )
    if name != "nccl_parser_config-nccl_data":  # that trace recorded no shapes: names decide
        assert (with_types["rule"] == "input_dtypes").all() and with_types.height > 0
    else:
        assert (kp["rule"] != "input_dtypes").all()
