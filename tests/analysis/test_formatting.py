"""The one formatting module: hand-checked readings of durations, shares, sizes and names."""

from __future__ import annotations

from profui.analysis.formatting import fmt_bytes, fmt_gbps, fmt_ns, fmt_pct, plural, short_name


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
