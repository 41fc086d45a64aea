"""The one formatting module: hand-checked readings of durations, shares, sizes and names."""

from __future__ import annotations

from profui.analysis.formatting import (
    block_label,
    elide,
    elide_all,
    fmt_bytes,
    fmt_gbps,
    fmt_gpus,
    fmt_ns,
    fmt_pct,
    plural,
    short_name,
)


def test_durations_in_readable_units():
    assert [fmt_ns(v) for v in (850, 12_300, 4_560_000, 1_230_000_000, None)] == [
        "850 ns",
        "12.3 µs",
        "4.56 ms",
        "1.23 s",
        "-",
    ]
    assert fmt_ns(-5_000) == "-5 µs"
    assert fmt_ns(125e9) == "2m05s"


def test_shares_are_fractions_and_never_round_to_none_or_all():
    assert fmt_pct(0.462) == "46.2%"
    assert fmt_pct(0.462, 0) == "46%"
    assert fmt_pct(0.0001, 0) == "<0.1%"
    assert fmt_pct(0.005, 0) == "0.5%"
    assert fmt_pct(0.998, 0) == ">99%"
    assert fmt_pct(1.0, 0) == "100%"
    assert fmt_pct(0.0, 0) == "0%"
    assert fmt_pct(0.00001) == "<0.1%"
    assert fmt_pct(None) == "-"


def test_sizes_counts_and_names():
    assert fmt_bytes(1_500_000) == "1.5 MB"
    assert fmt_gbps(136.04) == "136 GB/s"
    assert plural(1, "kernel") == "1 kernel" and plural(2700, "launch") == "2,700 launches"
    name = (
        "void at::native::vectorized_elementwise_kernel<4, at::native::CUDAFunctor_add<float> >(int, float)"
    )
    assert short_name(name, width=60) == "at::native::vectorized_elementwise_kernel"
    assert short_name(name) == "vectorized_elementwise_kernel"  # too long: namespace dropped
    assert short_name("ncclKernel_AllReduce_RING_LL_Sum_float(ncclDevComm*, unsigned long)") == (
        "ncclKernel_AllReduce_RING_LL_Sum_float"
    )
    # every qualifier goes, not all but the last "::" part (which named another op: AccumulateGrad)
    grad = "autograd::engine::evaluate_function: torch::autograd::AccumulateGrad"
    assert short_name(grad) == "evaluate_function: AccumulateGrad"
    assert short_name(grad, width=80) == grad
    assert short_name("torch.distributed.ddp.reducer::copy_bucket_to_grad") == "copy_bucket_to_grad"
    assert short_name(name, width=12) == "vector…ernel"  # cut in the middle
    # a timeline block: the same short form for its room, its head kept
    assert block_label(name, 12) == "vectorized_e"
    assert block_label(name, 60) == "at::native::vectorized_elementwise_kernel"
    assert block_label(grad, 40) == "evaluate_function: AccumulateGrad"
    assert block_label("## reduce_scatter_base_bw (all_gather) ##", 30) == "## reduce_scatter_base_bw ##"


def test_gpu_counts_say_how_many_of_the_listed_gpus_ran():
    assert fmt_gpus(1, 8) == "1 of 8 GPUs active"
    assert fmt_gpus(4, 4) == "4 GPUs" and fmt_gpus(1, 1) == "1 GPU"
    assert fmt_gpus(2, 0) == "2 GPUs"  # nothing listed (no deviceProperties)
    assert fmt_gpus(0, 0) == "no GPU" and fmt_gpus(0, 8) == "0 of 8 GPUs active"


def test_elision_keeps_the_part_that_tells_kernels_apart():
    a = "void cutlass::Kernel<cutlass_80_tensorop_s1688gemm_64x64_32x6_tn_align4>(cutlass_80_tensorop_s1688gemm_64x64_32x6_tn_align4::Params)"
    b = a.replace("64x64_32x6_tn", "256x64_16x4_nn")
    assert elide(a, 40) == "Kernel<cutlass_80_te…x64_32x6_tn_align4>"
    assert elide(b, 40) == "Kernel<cutlass_80_te…x64_16x4_nn_align4>"
    assert elide("ncclKernel_AllReduce_RING_LL_Sum_float(ncclDevComm*, unsigned long, ncclWork*)", 40) == (
        "ncclKernel_AllReduce_RING_LL_Sum_float"
    )
    assert elide("Memcpy HtoD (Pageable -> Device)", 40) == "Memcpy HtoD (Pageable -> Device)"  # fits
    assert elide("ampere_sgemm_128x64_tn", 10) == "amper…4_tn"  # 5 head, …, 4 tail
    # two real cuDNN names differing only in the middle: the plain cut reads the same for both
    x = "sm80_xmma_dgrad_implicit_gemm_tf32f32_tf32f32_f32_nhwckrsc_nhwc_tilesize128x128x16_stage4_warpsize2x2x1_g1_tensor16x8x8_execute_kernel_cudnn_infer"
    y = "sm80_xmma_dgrad_implicit_gemm_tf32f32_tf32f32_f32_nhwckrsc_nhwc_tilesize64x128x32_stage5_warpsize2x2x1_g1_tensor16x8x8_execute_kernel_cudnn_infer"
    assert elide(x, 53) == elide(y, 53)
    cx, cy = elide_all([x, y], 53)
    assert cx != cy and len(cx) <= 53 and len(cy) <= 53
    assert "tilesize128x128x16" in cx and "tilesize64x128x32" in cy
    assert elide_all(["same", "same"], 53) == ["same", "same"]


def test_bare_names_drop_every_qualifier_dotted_or_not() -> None:
    """A kernel's bare name (the summary tables' kernel column) loses each namespace qualifier,
    a dotted one included: the old rule kept ``torch.distributed.ddp.`` of
    ``torch.distributed.ddp.reducer::copy_bucket_to_grad`` and named a function that is not there."""
    from profui.analysis.formatting import _bare

    assert _bare("torch.distributed.ddp.reducer::copy_bucket_to_grad") == "copy_bucket_to_grad"
    assert _bare("aten::mm") == "mm"
    assert (
        _bare("void at::native::vectorized_elementwise_kernel<4, at::native::FillFunctor<float> >(int)")
        == "vectorized_elementwise_kernel<4, FillFunctor<float> >"
    )
    assert _bare("Memcpy HtoD (Pageable -> Device)") == "Memcpy HtoD (Pageable -> Device)"
