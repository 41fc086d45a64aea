"""Peak dense throughput of a GPU by its name and a precision, from the vendors' datasheets.

MFU divides achieved FLOP/s by a peak; a wrong peak makes a wrong MFU. Every number below is
the **dense** (no structured sparsity) peak of **one device as the trace sees it** (one GPU;
for AMD's two-die MI250/MI250X one GCD, which is what ROCm lists as a device), in TFLOP/s, as
the datasheet cited on its row gives it. NVIDIA's datasheets print the tensor-core rates with
2:4 sparsity (marked ``*``); the dense rate is half and is what is written here.

Precisions are those of :data:`profui.analysis.precision.PRECISIONS` that have a peak:
``FP32`` (NVIDIA: the CUDA-core rate, what an FP32 GEMM without TF32 runs at; AMD: the matrix
core rate, where rocBLAS runs FP32 GEMMs), ``TF32``, ``FP16``/``BF16`` (one rate) and ``FP8``. A
precision a GPU has no units for (TF32 or FP8 on Volta/Ampere, BF16 on Volta) has no entry:
no peak known, never a guessed one.

A device is matched by the first row whose pattern the ``deviceProperties`` name contains
(case-insensitive); ROCm may name an Instinct die only "AMD Radeon Graphics", which is then
matched by its compute capability and compute-unit count (``computeMajor``, ``numSms``).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

#: Precisions a peak is given for (FP16 and BF16 share one rate on every GPU listed).
PEAK_PRECISIONS = ("FP32", "TF32", "FP16", "BF16", "FP8")


@dataclass(frozen=True)
class PeakRow:
    """One GPU model: its label, the name pattern, (for unnamed AMD dies) the compute major and
    unit count, dense TFLOP/s per precision, and the datasheet the numbers come from."""

    gpu: str
    pattern: str
    tflops: dict[str, float]
    source: str
    compute_major: int | None = None
    num_sms: int | None = None


def _half(fp32: float, tf32: float | None, half: float | None, fp8: float | None = None) -> dict[str, float]:
    out = {"FP32": fp32}
    if tf32 is not None:
        out["TF32"] = tf32
    if half is not None:
        out["FP16"] = out["BF16"] = half
    if fp8 is not None:
        out["FP8"] = fp8
    return out


_NV = "https://www.nvidia.com/"
_AMD = "https://www.amd.com/"

#: The table, most specific pattern first (``H100 NVL`` before ``H100``, ``A100`` before ``A10``).
PEAKS: tuple[PeakRow, ...] = (
    # H200 datasheet (nvidia.com/en-us/data-center/h200): SXM FP32 67, TF32 989*, BF16/FP16
    # 1,979*, FP8 3,958*; NVL FP32 60, TF32 835*, BF16/FP16 1,671*, FP8 3,341* (* sparse)
    PeakRow("H200 NVL", r"h200.*nvl", _half(60.0, 417.5, 835.5, 1670.5), _NV + "en-us/data-center/h200/"),
    PeakRow("H200 SXM", r"h200", _half(67.0, 494.5, 989.5, 1979.0), _NV + "en-us/data-center/h200/"),
    # H100 datasheet (nvidia.com/en-us/data-center/h100): SXM FP32 67, TF32 989*, BF16 1,979*,
    # FP8 3,958*; PCIe FP32 51, TF32 756*, BF16 1,513*, FP8 3,026*; NVL FP32 60, TF32 835*,
    # BF16 1,671*, FP8 3,341* (* sparse). The SXM part reports itself "NVIDIA H100 80GB HBM3".
    PeakRow("H100 NVL", r"h100.*nvl", _half(60.0, 417.5, 835.5, 1670.5), _NV + "en-us/data-center/h100/"),
    PeakRow("H100 PCIe", r"h100.*pcie", _half(51.0, 378.0, 756.5, 1513.0), _NV + "en-us/data-center/h100/"),
    PeakRow("H100 SXM", r"h100", _half(67.0, 494.5, 989.5, 1979.0), _NV + "en-us/data-center/h100/"),
    # A100 datasheet (nvidia-a100-datasheet-us-nvidia-1758950-r4-web.pdf): FP32 19.5, TF32 156,
    # BF16/FP16 312 dense, the same for PCIe and SXM4, 40 and 80 GB (PG509 is the SXM4 board)
    PeakRow("A100", r"a100", _half(19.5, 156.0, 312.0), _NV + "en-us/data-center/a100/"),
    # L40S datasheet: FP32 91.6, TF32 183 | 366*, BF16/FP16 362.05 | 733*, FP8 733 | 1,466*
    PeakRow("L40S", r"l40s", _half(91.6, 183.0, 362.05, 733.0), _NV + "en-us/data-center/l40s/"),
    # L4 datasheet: FP32 30.3, TF32 120*, BF16/FP16 242*, FP8 485* (* sparse)
    PeakRow("L4", r"\bl4\b", _half(30.3, 60.0, 121.0, 242.5), _NV + "en-us/data-center/l4/"),
    # A10 datasheet: FP32 31.2, TF32 62.5 | 125*, BF16/FP16 125 | 250*
    PeakRow("A10", r"\ba10\b", _half(31.2, 62.5, 125.0), _NV + "en-us/data-center/products/a10-gpu/"),
    # V100 datasheet (volta-v100-datasheet-update-us-1165301-r5): SXM2 FP32 15.7, tensor (FP16)
    # 125; PCIe 14, 112; V100S PCIe 16.4, 130. Volta has no BF16, TF32 or FP8 units.
    PeakRow("V100S PCIe", r"v100s", {"FP32": 16.4, "FP16": 130.0}, _NV + "en-us/data-center/v100/"),
    PeakRow("V100 PCIe", r"v100.*pcie", {"FP32": 14.0, "FP16": 112.0}, _NV + "en-us/data-center/v100/"),
    PeakRow("V100 SXM2", r"v100", {"FP32": 15.7, "FP16": 125.0}, _NV + "en-us/data-center/v100/"),
    # MI300X datasheet: FP32 matrix 163.4, TF32 653.7, BF16/FP16 1,307.4, FP8 2,614.9 (dense)
    PeakRow(
        "MI300X",
        r"mi300x",
        _half(163.4, 653.7, 1307.4, 2614.9),
        _AMD + "en/products/accelerators/instinct/mi300/mi300x.html",
    ),
    # MI250X datasheet (2 GCDs, 220 CUs): FP32 matrix 95.7, BF16/FP16 383.0 -> per GCD (110 CUs)
    PeakRow(
        "MI250X (one GCD)",
        r"mi250x|amd radeon graphics",
        _half(47.85, None, 191.5),
        _AMD + "en/products/accelerators/instinct/mi200/mi250x.html",
        compute_major=9,
        num_sms=110,
    ),
    # MI250 datasheet (2 GCDs, 208 CUs): FP32 matrix 90.5, BF16/FP16 362.1 -> per GCD (104 CUs);
    # MI210 (one 104-CU die: FP32 matrix 45.3, BF16/FP16 181.0) has the same per-die rates
    PeakRow(
        "MI250 / MI210 (one GCD)",
        r"mi250|mi210|amd radeon graphics",
        _half(45.25, None, 181.05),
        _AMD + "en/products/accelerators/instinct/mi200/mi250.html",
        compute_major=9,
        num_sms=104,
    ),
)


@dataclass(frozen=True)
class Peak:
    """The peak used for MFU: TFLOP/s, the GPU row (or ``--peak-tflops``), the precision, and
    where the number comes from."""

    tflops: float
    gpu: str
    precision: str
    source: str


def gpu_row(props: dict[str, Any]) -> PeakRow | None:
    """The :data:`PEAKS` row of one ``deviceProperties`` entry (``name``, optionally
    ``computeMajor`` and ``numSms``); None when no row matches."""
    name = str(props.get("name") or "").lower()
    if not name:
        return None
    for row in PEAKS:
        if not re.search(row.pattern, name):
            continue
        if row.num_sms is not None and not re.search(r"mi\d", name):
            # an unnamed AMD die: its compute capability and unit count must say which it is
            if props.get("computeMajor") != row.compute_major or props.get("numSms") != row.num_sms:
                continue
        return row
    return None


def peak_for(props: dict[str, Any], precision: str) -> Peak | None:
    """The dense peak of the GPU ``props`` describes at ``precision``; None when the GPU or its
    rate at that precision is not in the table."""
    row = gpu_row(props)
    if row is None or precision not in row.tflops:
        return None
    return Peak(row.tflops[precision], row.gpu, precision, row.source)
