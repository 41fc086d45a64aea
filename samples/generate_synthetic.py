#!/usr/bin/env python
"""Seeded generator of synthetic multi-node, multi-GPU training traces in the profui format.

SYNTHETIC DATA: used for scale (millions of events) and for shapes the real corpus lacks
(8 GPUs on 2 nodes with NCCL). The manifest says ``synthetic: true`` and ``source: "synthetic"``.

Per rank it writes one host thread with the usual nesting
``ProfilerStep#N`` ▸ ``forward``/``backward``/``optimizer`` annotations ▸ CPU ops ▸ runtime
launches (``cudaLaunchKernel``, ``cudaMemcpyAsync``, ``cudaMemsetAsync``, NCCL's
``cudaLaunchKernelExC``), and the device activity they cause (kernels, memcpy, memset) on
several streams of that rank's GPU, linked by ``correlation``. Every step has NCCL AllReduce
kernels on a separate communication stream whose ends are aligned across ranks (as a real
collective is), an input copy HtoD and a loss copy DtoH, and a ``cudaDeviceSynchronize`` that
makes the host wait for the GPU. Sampled GPU/CPU utilization comes from the generated busy time.

The output is a pure function of the arguments: same arguments, same bytes of data.
The total number of events is exactly ``events``.

Usage::

    python samples/generate_synthetic.py -o DIR --events 1000000 --nodes 2 --gpus-per-node 4 \\
        --streams 3 --steps 10 --seed 0

or, from Python, ``generate(out_dir, events=..., ...)``.
"""

from __future__ import annotations

import argparse
import json
import math
import sys
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pyarrow as pa

from profui.capture.format import EVENT_KINDS, Manifest, to_table, write_events, write_manifest, write_metrics

#: 2025-11-01T00:00:00Z in ns: the synthetic job "starts" here.
BASE_NS = 1_761_955_200_000_000_000
#: Events per written file at most (a rank's steps are grouped into files of about this size).
FILE_ROWS = 1 << 19
#: Fixed per-step events: the step, three phase annotations and the end-of-step synchronize.
STEP_OVERHEAD = 5
#: Smallest launch-group count per step (input copy, one kernel, an NCCL kernel, loss copy).
MIN_GROUPS = 4

#: ns per µs of the op tables' mean kernel durations: sized so the GPU keeps up with the host
#: most of the time (a mix of GPU-bound stretches and launch-bound idle gaps).
KERNEL_SCALE = 200.0

#: The GPU every synthetic rank runs on (profui's peak table knows it as the H100 SXM).
GPU_NAME = "NVIDIA H100 80GB HBM3 (synthetic)"
#: K and N of every synthetic GEMM; its M (rows) is the largest of :data:`GEMM_ROWS` whose FLOPs
#: the kernel's drawn time can run at a drawn :data:`GEMM_EFFICIENCY` of its precision's peak,
#: so no kernel claims more FLOP/s than the device has.
GEMM_KN = 2048
GEMM_ROWS = tuple(2**j for j in range(13))
GEMM_EFFICIENCY = (0.3, 0.65)
#: ``Input Dims`` of each FLOP-counted op, from its M, K and N (the layouts PyTorch records).
GEMM_LAYOUTS = {
    "aten::mm": lambda m, k, n: [[m, k], [k, n]],
    "aten::matmul": lambda m, k, n: [[m, k], [k, n]],
    "aten::addmm": lambda m, k, n: [[n], [m, k], [k, n]],
    "aten::linear": lambda m, k, n: [[m, k], [n, k], [n]],
}
#: Input dtype and the peak's precision of a GEMM kernel, by a part of its name.
#: The H100 SXM's memory (HBM3, 3.35 TB/s) and host link (PCIe Gen5 x16, 64 GB/s a direction)
#: bandwidths in GB/s; a set or a copy moves its bytes at a drawn share of them.
HBM_GBPS = 3350.0
PCIE_GBPS = 64.0
COPY_EFFICIENCY = (0.3, 0.7)
GEMM_TYPES = (("bf16", "c10::BFloat16", "BF16"), ("fp16", "c10::Half", "FP16"), ("tf32", "float", "TF32"))
FP32_TYPE = ("", "float", "FP32")

COMPUTE_STREAMS = (7, 20, 24, 28, 32, 36, 40, 44)
COMM_STREAM = 13

# (cpu op, kernel, mean kernel duration in µs, weight) per phase.
FORWARD_OPS = (
    ("aten::linear", "ampere_bf16_s16816gemm_bf16_128x128_ldg8_f2f_stages_64x3_tn", 60.0, 4),
    (
        "aten::matmul",
        "sm90_xmma_gemm_bf16bf16_bf16f32_f32_tn_n_tilesize128x128x64_warpgroupsize1x1x1_execute_segment_k_off_kernel__5x_cublas",
        80.0,
        2,
    ),
    ("aten::addmm", "ampere_fp16_s16816gemm_fp16_256x128_ldg8_f2f_stages_32x3_nn", 45.0, 1),
    ("aten::conv2d", "ampere_tf32_s1688gemm_tf32_128x128_16x3_nt", 70.0, 1),
    ("aten::mm", "volta_sgemm_128x64_nn", 90.0, 1),
    (
        "aten::gelu",
        "void at::native::vectorized_elementwise_kernel<4, at::native::GeluCUDAKernelImpl(at::TensorIteratorBase&, at::native::GeluType)::{lambda()#2}::operator()() const::{lambda()#4}::operator()() const::{lambda(c10::BFloat16)#1}, at::detail::Array<char*, 2> >(int, at::native::GeluCUDAKernelImpl(at::TensorIteratorBase&, at::native::GeluType)::{lambda()#2}::operator()() const::{lambda()#4}::operator()() const::{lambda(c10::BFloat16)#1}, at::detail::Array<char*, 2>)",
        12.0,
        3,
    ),
    (
        "aten::add",
        "void at::native::vectorized_elementwise_kernel<4, at::native::CUDAFunctor_add<c10::BFloat16>, at::detail::Array<char*, 3> >(int, at::native::CUDAFunctor_add<c10::BFloat16>, at::detail::Array<char*, 3>)",
        8.0,
        3,
    ),
    (
        "aten::_softmax",
        "void at::native::(anonymous namespace)::cunn_SoftMaxForward<4, c10::BFloat16, float, c10::BFloat16, at::native::(anonymous namespace)::SoftMaxForwardEpilogue>(c10::BFloat16*, c10::BFloat16 const*, int)",
        25.0,
        2,
    ),
    (
        "aten::native_layer_norm",
        "void at::native::(anonymous namespace)::vectorized_layer_norm_kernel<c10::BFloat16, float>(int, float, c10::BFloat16 const*, c10::BFloat16 const*, c10::BFloat16 const*, float*, float*, c10::BFloat16*)",
        15.0,
        2,
    ),
    (
        "aten::dropout",
        "void at::native::(anonymous namespace)::fused_dropout_kernel_vec<c10::BFloat16, float, unsigned int, 1, 4, bool>(at::cuda::detail::TensorInfo<c10::BFloat16 const, unsigned int>, at::cuda::detail::TensorInfo<c10::BFloat16, unsigned int>, at::cuda::detail::TensorInfo<bool, unsigned int>, unsigned int, float, at::PhiloxCudaState)",
        10.0,
        1,
    ),
)
BACKWARD_OPS = (
    ("aten::mm", "ampere_bf16_s16816gemm_bf16_256x128_ldg8_f2f_stages_64x3_nt", 75.0, 5),
    (
        "aten::mm",
        "sm90_xmma_gemm_bf16bf16_bf16f32_f32_nn_n_tilesize128x256x64_warpgroupsize2x1x1_execute_segment_k_off_kernel__5x_cublas",
        95.0,
        2,
    ),
    (
        "aten::gelu_backward",
        "void at::native::vectorized_elementwise_kernel<4, at::native::GeluBackwardCUDAKernelImpl(at::TensorIteratorBase&, at::native::GeluType)::{lambda()#2}::operator()() const::{lambda()#4}::operator()() const::{lambda(c10::BFloat16, c10::BFloat16)#1}, at::detail::Array<char*, 3> >(int, at::native::GeluBackwardCUDAKernelImpl(at::TensorIteratorBase&, at::native::GeluType)::{lambda()#2}::operator()() const::{lambda()#4}::operator()() const::{lambda(c10::BFloat16, c10::BFloat16)#1}, at::detail::Array<char*, 3>)",
        14.0,
        3,
    ),
    (
        "aten::_softmax_backward_data",
        "void at::native::(anonymous namespace)::cunn_SoftMaxBackward<4, c10::BFloat16, float, c10::BFloat16, at::native::(anonymous namespace)::SoftMaxBackwardEpilogue>(c10::BFloat16*, c10::BFloat16 const*, c10::BFloat16 const*, int)",
        28.0,
        2,
    ),
    (
        "aten::native_layer_norm_backward",
        "void at::native::(anonymous namespace)::layer_norm_grad_input_kernel<c10::BFloat16, float>(c10::BFloat16 const*, c10::BFloat16 const*, float const*, float const*, c10::BFloat16 const*, c10::BFloat16*, int)",
        20.0,
        2,
    ),
    (
        "aten::sum",
        "void at::native::reduce_kernel<512, 1, at::native::ReduceOp<c10::BFloat16, at::native::func_wrapper_t<c10::BFloat16, at::native::sum_functor<c10::BFloat16, float, c10::BFloat16>::operator()(at::TensorIterator&)::{lambda(float, float)#1}>, unsigned int, c10::BFloat16, 4> >(at::native::ReduceOp<c10::BFloat16, at::native::func_wrapper_t<c10::BFloat16, at::native::sum_functor<c10::BFloat16, float, c10::BFloat16>::operator()(at::TensorIterator&)::{lambda(float, float)#1}>, unsigned int, c10::BFloat16, 4>)",
        18.0,
        2,
    ),
)
OPTIMIZER_OPS = (
    (
        "aten::_fused_adamw_",
        "void at::native::(anonymous namespace)::multi_tensor_apply_kernel<at::native::(anonymous namespace)::TensorListMetadata<4>, at::native::(anonymous namespace)::FusedAdamMathFunctor<c10::BFloat16, 4, (at::native::ADAM_MODE)1, false>, double*, double, double, double, double, double, bool, double*, double*>(at::native::(anonymous namespace)::TensorListMetadata<4>, at::native::(anonymous namespace)::FusedAdamMathFunctor<c10::BFloat16, 4, (at::native::ADAM_MODE)1, false>, double*, double, double, double, double, double, bool, double*, double*)",
        40.0,
        3,
    ),
    (
        "aten::_foreach_mul_",
        "void at::native::(anonymous namespace)::multi_tensor_apply_kernel<at::native::(anonymous namespace)::TensorListMetadata<1>, at::native::(anonymous namespace)::BinaryOpScalarFunctor<float, 1, 1, 0>, std::multiplies<float>, float>(at::native::(anonymous namespace)::TensorListMetadata<1>, at::native::(anonymous namespace)::BinaryOpScalarFunctor<float, 1, 1, 0>, std::multiplies<float>, float)",
        10.0,
        1,
    ),
)
MEMSET = ("aten::zero_", "Memset (Device)")
PLAIN_OPS = ("aten::view", "aten::reshape", "aten::t", "aten::empty")
NCCL_OP = "nccl:all_reduce"
NCCL_KERNEL = "ncclDevKernel_AllReduce_Sum_bf16_RING_LL(ncclDevComm*, unsigned long, ncclWork*)"
HTOD = ("aten::copy_", "Memcpy HtoD (Pageable -> Device)")
DTOH = ("aten::item", "Memcpy DtoH (Device -> Pageable)")
PHASES = ("forward", "backward", "optimizer")

# Group types (per launch group: a CPU op, its runtime launch and the device activity).
G_KERNEL, G_MEMSET, G_HTOD, G_DTOH, G_NCCL = range(5)


@dataclass
class Generated:
    """What :func:`generate` wrote: the folder and its counts."""

    path: Path
    events: int
    ranks: int
    files: int
    metrics: int
    kinds: dict[str, int] = field(default_factory=dict)
    start_ns: int = 0
    end_ns: int = 0


class _Vocab:
    """Names as dictionary indices: a dictionary array per file is then a cheap take."""

    def __init__(self) -> None:
        self.names: list[str] = []
        self._index: dict[str, int] = {}

    def __call__(self, name: str) -> int:
        i = self._index.get(name)
        if i is None:
            i = self._index[name] = len(self.names)
            self.names.append(name)
        return i


@dataclass
class _Table:
    """The op tables of one phase as arrays: op name, kernel name, mean duration, weights."""

    ops: np.ndarray
    kernels: np.ndarray
    mean_us: np.ndarray
    p: np.ndarray


def _phase_table(vocab: _Vocab, rows: tuple) -> _Table:
    w = np.array([r[3] for r in rows], dtype=float)
    return _Table(
        ops=np.array([vocab(r[0]) for r in rows], dtype=np.int32),
        kernels=np.array([vocab(r[1]) for r in rows], dtype=np.int32),
        mean_us=np.array([r[2] for r in rows], dtype=float),
        p=w / w.sum(),
    )


def _split(total: int, parts: int) -> np.ndarray:
    """``total`` split into ``parts`` integers differing by at most one (larger ones first)."""
    out = np.full(parts, total // parts, dtype=np.int64)
    out[: total % parts] += 1
    return out


def _stream_schedule(req: np.ndarray, dur: np.ndarray, free_at: float, gap: float) -> np.ndarray:
    """Start times of kernels run in order on one stream.

    Kernel i starts at ``max(req[i], end[i-1] + gap)``; solved without a Python loop:
    with ``d = dur + gap`` and ``D`` its cumulative sum, ``end_i + gap = D_i + max_{j<=i}(req_j - D_{j-1})``.
    """
    if req.size == 0:
        return req
    d = dur + gap
    D = np.cumsum(d)
    r = req.copy()
    r[0] = max(r[0], free_at)
    ends = D + np.maximum.accumulate(r - (D - d))
    return ends - d


@dataclass
class _RankState:
    node: str
    rank: int
    local: int
    pid: int
    host_t: float  # next step's start on the host (ns from BASE_NS)
    stream_free: dict[int, float]
    corr: int = 0
    ext: int = 0
    parts: list[pa.Table] = field(default_factory=list)
    part_rows: int = 0
    seq: int = 0
    kernel_ts: list[np.ndarray] = field(default_factory=list)
    kernel_end: list[np.ndarray] = field(default_factory=list)
    host_ts: list[np.ndarray] = field(default_factory=list)
    host_end: list[np.ndarray] = field(default_factory=list)


def _layout(groups: int, n_nccl: int, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    """Phase (0/1/2) and group type of each launch group of one step, in host order."""
    kf = max(1, round(groups * 0.3))
    kb = max(n_nccl, round(groups * 0.5))
    kb = min(kb, groups - kf - 1)
    ko = groups - kf - kb
    phase = np.repeat(np.array([0, 1, 2], dtype=np.int8), [kf, kb, ko])
    gtype = np.where(rng.random(groups) < 0.03, G_MEMSET, G_KERNEL).astype(np.int8)
    gtype[0] = G_HTOD
    gtype[-1] = G_DTOH
    # NCCL buckets spread over the backward phase, the last one at its end.
    pos = kf + np.unique(np.round(np.linspace(kb - 1, 0, n_nccl, endpoint=False)[::-1]).astype(int))
    gtype[pos] = G_NCCL
    return phase, gtype


def generate(
    out_dir: str | Path,
    events: int = 1_000_000,
    nodes: int = 2,
    gpus_per_node: int = 4,
    streams: int = 3,
    steps: int = 10,
    seed: int = 0,
    first_step: int = 1,
    name: str | None = None,
) -> Generated:
    """Write a synthetic trace of exactly ``events`` events into ``out_dir``.

    ``streams`` compute/copy streams per GPU (1..8) plus one NCCL communication stream;
    one rank per GPU; ``steps`` training steps named ``ProfilerStep#<first_step + i>``.
    Raises ``ValueError`` when ``events`` is too small for the requested shape.
    """
    if not 1 <= streams <= len(COMPUTE_STREAMS):
        raise ValueError(f"streams must be 1..{len(COMPUTE_STREAMS)}")
    if nodes < 1 or gpus_per_node < 1 or steps < 1:
        raise ValueError("nodes, gpus-per-node and steps must be at least 1")
    n_ranks = nodes * gpus_per_node
    min_events = n_ranks * steps * (STEP_OVERHEAD + 3 * MIN_GROUPS)
    if events < min_events:
        raise ValueError(
            f"--events {events} is too small for {n_ranks} ranks x {steps} steps (need >= {min_events})"
        )
    out = Path(out_dir)
    if out.exists() and any(out.iterdir()):
        raise ValueError(f"{out}: output folder exists and is not empty")
    out.mkdir(parents=True, exist_ok=True)

    vocab = _Vocab()
    tables = [_phase_table(vocab, t) for t in (FORWARD_OPS, BACKWARD_OPS, OPTIMIZER_OPS)]
    names = {
        "phase": np.array([vocab(p) for p in PHASES], dtype=np.int32),
        "step": np.array([vocab(f"ProfilerStep#{first_step + s}") for s in range(steps)], dtype=np.int32),
        "plain": np.array([vocab(p) for p in PLAIN_OPS], dtype=np.int32),
        "launch": vocab("cudaLaunchKernel"),
        "launch_ex": vocab("cudaLaunchKernelExC"),
        "memcpy": vocab("cudaMemcpyAsync"),
        "memset": vocab("cudaMemsetAsync"),
        "sync": vocab("cudaDeviceSynchronize"),
        "nccl_op": vocab(NCCL_OP),
        "nccl_kernel": vocab(NCCL_KERNEL),
        "memset_op": vocab(MEMSET[0]),
        "memset_dev": vocab(MEMSET[1]),
        "htod_op": vocab(HTOD[0]),
        "htod_dev": vocab(HTOD[1]),
        "dtoh_op": vocab(DTOH[0]),
        "dtoh_dev": vocab(DTOH[1]),
    }
    dictionary = pa.array(vocab.names, pa.string())
    kind_dict = pa.array(list(EVENT_KINDS), pa.string())
    memcpy_dict = pa.array(["HtoD", "DtoH"], pa.string())
    bucket_bytes = 25 * 1024 * 1024
    nccl_args_template = (
        '{{"Collective name": "allreduce", "In msg nelems": {n}, "Out msg nelems": {n}, "Group size": {g}, '
        '"dtype": "BFloat16", "Process Group Name": "0", "Process Group Ranks": "[{ranks}]"}}'
    )
    nccl_args = nccl_args_template.format(
        n=bucket_bytes // 2, g=n_ranks, ranks=", ".join(str(r) for r in range(n_ranks))
    )
    gemm = _gemm_shapes(vocab, tables)
    args_dict = pa.array([nccl_args, *gemm.args], pa.string())

    compute_streams = COMPUTE_STREAMS[:streams]
    master = np.random.default_rng(seed)
    states: list[_RankState] = []
    for r in range(n_ranks):
        node = f"node-{r // gpus_per_node}"
        st = _RankState(
            node=node,
            rank=r,
            local=r % gpus_per_node,
            pid=10_000 + 17 * r,
            host_t=float(master.integers(0, 20_000)),
            stream_free={s: 0.0 for s in (*compute_streams, COMM_STREAM)},
        )
        states.append(st)

    per_rank = _split(events, n_ranks)
    per_step = [_split(int(n), steps) for n in per_rank]
    kind_counts = np.zeros(len(EVENT_KINDS), dtype=np.int64)
    files = 0
    t_min, t_max = 1 << 62, 0
    for s in range(steps):
        pending = []
        for st in states:
            rng = np.random.default_rng([seed, st.rank, s])
            budget = int(per_step[st.rank][s])
            pending.append(_host_and_compute(st, s, budget, rng, tables, names, compute_streams, gemm))
        _align_nccl(pending, states, np.random.default_rng([seed, 1_000_003, s]))
        for st, p in zip(states, pending, strict=True):
            cols = _finish_step(st, p)
            kind_counts += np.bincount(cols["kind"], minlength=len(EVENT_KINDS))
            t_min = min(t_min, int(cols["ts"].min()))
            t_max = max(t_max, int((cols["ts"] + cols["dur"]).max()))
            table = _to_arrow(cols, dictionary, kind_dict, memcpy_dict, args_dict)
            st.parts.append(table)
            st.part_rows += table.num_rows
            if st.part_rows >= FILE_ROWS or s == steps - 1:
                files += _flush(out, st)
    metrics = _write_metrics(
        out, states, gpus_per_node, float(t_min), float(t_max), np.random.default_rng([seed, 7])
    )
    manifest = Manifest(
        name=name or f"synthetic-{nodes}x{gpus_per_node}gpu-{events}ev-seed{seed}",
        status="completed",
        source="synthetic",
        synthetic=True,
        command=[
            "samples/generate_synthetic.py",
            "--events",
            str(events),
            "--nodes",
            str(nodes),
            "--gpus-per-node",
            str(gpus_per_node),
            "--streams",
            str(streams),
            "--steps",
            str(steps),
            "--seed",
            str(seed),
        ],
        exit_code=0,
        start_ns=BASE_NS + t_min,
        end_ns=BASE_NS + t_max,
        hosts=sorted({st.node for st in states}),
        gpus=[
            {
                "node": f"node-{n}",
                "index": g,
                "name": GPU_NAME,
                "memory_bytes": 85_520_809_984,
            }
            for n in range(nodes)
            for g in range(gpus_per_node)
        ],
        ranks=list(range(n_ranks)),
        capture={
            "generator": "samples/generate_synthetic.py",
            "seed": seed,
            "events": events,
            "streams": streams,
            "steps": steps,
        },
        notes=["synthetic trace made by samples/generate_synthetic.py: not a real capture"],
    )
    write_manifest(out, manifest)
    return Generated(
        path=out,
        events=int(kind_counts.sum()),
        ranks=n_ranks,
        files=files,
        metrics=metrics,
        kinds={k: int(c) for k, c in zip(EVENT_KINDS, kind_counts, strict=True) if c},
        start_ns=manifest.start_ns,
        end_ns=manifest.end_ns,
    )


@dataclass
class _Gemms:
    """The FLOP-counted ops' shapes: ``args`` the argument strings (``Input type`` and ``Input
    Dims`` per layout, M and dtype), and per vocabulary id the op's layout (-1: none) and the
    kernel's dtype and peak (FLOP per ns)."""

    args: list[str]
    layout: np.ndarray
    dtype: np.ndarray
    peak: np.ndarray


def _gemm_shapes(vocab: _Vocab, tables: list) -> _Gemms:
    from profui.analysis.peaks import peak_for

    layouts = list(GEMM_LAYOUTS)
    size = len(vocab.names) + 1
    g = _Gemms([], np.full(size, -1), np.zeros(size, dtype=np.int64), np.zeros(size))
    for layout in layouts:
        for m in GEMM_ROWS:
            for _part, dtype, _precision in (*GEMM_TYPES, FP32_TYPE):
                dims = GEMM_LAYOUTS[layout](m, GEMM_KN, GEMM_KN)
                types = [dtype] * len(dims)
                g.args.append(json.dumps({"Input type": types, "Input Dims": dims}))
    for t in tables:
        for op, k in zip(t.ops, t.kernels, strict=True):
            name = vocab.names[k].lower()
            if vocab.names[op] not in GEMM_LAYOUTS or "gemm" not in name:
                continue
            g.layout[op] = layouts.index(vocab.names[op])
            types = (*GEMM_TYPES, FP32_TYPE)
            i = next(i for i, (part, _d, _p) in enumerate(types) if part in name or not part)
            g.dtype[k] = i
            g.peak[k] = peak_for({"name": GPU_NAME}, types[i][2]).tflops * 1e3
    return g


def _gemm_args(g: _Gemms, op: np.ndarray, kernel: np.ndarray, dur: np.ndarray, rng) -> np.ndarray:
    """Each GEMM op's ``args`` index (into ``g.args``, 1-based as the table's first entry is
    NCCL's), -1 for other ops; lengthens a kernel too short for even the smallest GEMM."""
    n_types = len(GEMM_TYPES) + 1
    out = np.full(op.size, -1, dtype=np.int32)
    sel = np.flatnonzero(g.layout[op] >= 0)
    if not sel.size:
        return out
    per_row = 2.0 * GEMM_KN * GEMM_KN
    rate = g.peak[kernel[sel]] * rng.uniform(*GEMM_EFFICIENCY, sel.size)
    dur[sel] = np.maximum(dur[sel], per_row * GEMM_ROWS[0] / rate)
    rows = np.floor(np.log2(np.maximum(dur[sel] * rate / per_row, 1.0))).astype(np.int64)
    rows = np.clip(rows, 0, len(GEMM_ROWS) - 1)
    out[sel] = 1 + (g.layout[op[sel]] * len(GEMM_ROWS) + rows) * n_types + g.dtype[kernel[sel]]
    return out


def _copy_bytes(gtype: np.ndarray, dur: np.ndarray, rng) -> np.ndarray:
    """Bytes of each copy and set, as many as its time moves at a drawn share of the link's
    bandwidth (a set: the GPU's memory; an input copy: PCIe); a loss copy moves 4 bytes."""
    nbytes = np.zeros(gtype.size, dtype=np.int64)
    for gt, gbps in ((G_MEMSET, HBM_GBPS), (G_HTOD, PCIE_GBPS)):
        sel = gtype == gt
        rate = gbps * rng.uniform(*COPY_EFFICIENCY, int(sel.sum()))  # GB/s = bytes per ns
        nbytes[sel] = np.maximum(np.floor(dur[sel] * rate / 4096), 1).astype(np.int64) * 4096
    nbytes[gtype == G_DTOH] = 4
    return nbytes


def _host_and_compute(st, s, budget, rng, tables, names, compute_streams, gemm) -> dict:
    """Host events of one step of one rank and the schedule of its compute-stream activity."""
    groups = (budget - STEP_OVERHEAD) // 3
    extra = (budget - STEP_OVERHEAD) % 3
    n_nccl = 1 if groups < 20 else 2
    phase, gtype = _layout(groups, n_nccl, rng)

    # Host items in order: `extra` plain ops first (no launch), then the launch groups.
    n_items = extra + groups
    item_phase = np.concatenate([np.zeros(extra, dtype=np.int8), phase])
    gap = rng.lognormal(np.log(1500), 0.5, n_items)
    gap[1:][np.diff(item_phase) != 0] += 4000  # phase boundary
    pre = rng.uniform(800, 4000, groups)
    launch = rng.lognormal(np.log(4500), 0.3, groups)
    launch[gtype == G_NCCL] *= 2.5
    post = rng.uniform(500, 2500, groups)
    op_dur = np.concatenate([rng.uniform(600, 2500, extra), pre + launch + post])
    t0 = st.host_t
    first = t0 + 3000.0 + 2000.0  # step start, then the first annotation
    starts = first + np.cumsum(gap) + np.concatenate([[0.0], np.cumsum(op_dur)[:-1]])
    ends = starts + op_dur
    g_start = starts[extra:]
    l_start = g_start + pre

    # Names of the CPU ops and of their device activity.
    op_name = np.empty(groups, dtype=np.int32)
    dev_name = np.empty(groups, dtype=np.int32)
    dev_dur = np.empty(groups, dtype=float)
    for p, t in enumerate(tables):
        sel = np.flatnonzero((phase == p) & (gtype == G_KERNEL))
        pick = rng.choice(len(t.p), size=sel.size, p=t.p)
        op_name[sel] = t.ops[pick]
        dev_name[sel] = t.kernels[pick]
        dev_dur[sel] = t.mean_us[pick] * KERNEL_SCALE * rng.lognormal(0.0, 0.35, sel.size)
    for gt, op, dev, mean in (
        (G_MEMSET, "memset_op", "memset_dev", 3000.0),
        (G_HTOD, "htod_op", "htod_dev", 40_000.0),
        (G_DTOH, "dtoh_op", "dtoh_dev", 2500.0),
        (G_NCCL, "nccl_op", "nccl_kernel", 0.0),
    ):
        sel = gtype == gt
        op_name[sel] = names[op]
        dev_name[sel] = names[dev]
        dev_dur[sel] = mean * rng.lognormal(0.0, 0.2, int(sel.sum()))
    gemm_args = _gemm_args(gemm, op_name, dev_name, dev_dur, rng)
    nbytes = _copy_bytes(gtype, dev_dur, rng)
    launch_name = np.full(groups, names["launch"], dtype=np.int32)
    launch_name[gtype == G_MEMSET] = names["memset"]
    launch_name[(gtype == G_HTOD) | (gtype == G_DTOH)] = names["memcpy"]
    launch_name[gtype == G_NCCL] = names["launch_ex"]

    # Device streams: most kernels on the first stream; input copies on a copy stream.
    stream = np.full(groups, compute_streams[0], dtype=np.int32)
    if len(compute_streams) > 1:
        others = np.array(compute_streams[1:], dtype=np.int32)
        side = rng.random(groups) < 0.2
        stream[side] = others[rng.integers(0, others.size, int(side.sum()))]
        stream[gtype == G_HTOD] = compute_streams[-1]
    stream[gtype == G_DTOH] = compute_streams[0]
    stream[gtype == G_NCCL] = COMM_STREAM
    req = l_start + launch * 0.6 + rng.lognormal(np.log(5000), 0.4, groups)
    dev_start = np.zeros(groups)
    for sid in compute_streams:
        sel = np.flatnonzero(stream == sid)
        dev_start[sel] = _stream_schedule(req[sel], dev_dur[sel], st.stream_free[sid], 1200.0)
        if sel.size:
            st.stream_free[sid] = float(dev_start[sel[-1]] + dev_dur[sel[-1]])

    corr = st.corr + 1 + np.arange(groups, dtype=np.int64)
    st.corr += groups
    ext = st.ext + 1 + np.arange(n_items, dtype=np.int64)
    st.ext += n_items
    op_all = np.concatenate([names["plain"][rng.integers(0, len(PLAIN_OPS), extra)], op_name])
    op_args = np.full(op_all.size, -1, dtype=np.int32)
    op_args[extra:] = gemm_args
    op_args[extra:][gtype == G_NCCL] = 0
    return {
        "t0": t0,
        "starts": starts,
        "ends": ends,
        "item_phase": item_phase,
        "op_name": op_all,
        "op_args": op_args,
        "ext": ext,
        "extra": extra,
        "gtype": gtype,
        "l_start": l_start,
        "launch": launch,
        "launch_name": launch_name,
        "dev_name": dev_name,
        "dev_start": dev_start,
        "dev_dur": dev_dur,
        "stream": stream,
        "req": req,
        "corr": corr,
        "bytes": nbytes,
        "step": s,
        "names": names,
    }


def _align_nccl(pending: list[dict], states: list[_RankState], rng: np.random.Generator) -> None:
    """Schedule the step's NCCL kernels: the k-th collective ends at the same time on every rank."""
    idx = [np.flatnonzero(p["gtype"] == G_NCCL) for p in pending]
    n = min(i.size for i in idx)
    free = [st.stream_free[COMM_STREAM] for st in states]
    for k in range(n):
        starts = []
        for r, p in enumerate(pending):
            g = idx[r][k] if k < n - 1 else idx[r][-1]
            starts.append(max(float(p["req"][g]), free[r] + 1200.0))
        compute = max(float(p["dev_dur"][p["gtype"] == G_KERNEL].sum()) for p in pending)
        xfer = max(20_000.0, 0.1 * compute / n) * float(rng.lognormal(0.0, 0.15))
        end = max(starts) + xfer
        for r, p in enumerate(pending):
            g = idx[r][k] if k < n - 1 else idx[r][-1]
            p["dev_start"][g] = starts[r]
            p["dev_dur"][g] = end - starts[r]
            free[r] = end
    # Ranks with more buckets than the smallest (uneven budgets) schedule the rest locally.
    for r, p in enumerate(pending):
        for g in idx[r][n - 1 : -1] if idx[r].size > n else ():
            p["dev_start"][g] = max(float(p["req"][g]), free[r] + 1200.0)
            p["dev_dur"][g] = 20_000.0
            free[r] = p["dev_start"][g] + p["dev_dur"][g]
    for r, st in enumerate(states):
        st.stream_free[COMM_STREAM] = free[r]


def _finish_step(st: _RankState, p: dict) -> dict:
    """All event columns of one step of one rank (host ops, launches, device, sync, phases, step)."""
    gpu_end = float((p["dev_start"] + p["dev_dur"]).max())
    host_end = float(p["ends"][-1])
    sync_ts = host_end + 2000.0
    sync_end = max(gpu_end, sync_ts + 2000.0) + 3000.0
    step_end = sync_end + 2000.0
    groups = p["gtype"].size
    n_items = p["starts"].size
    extra = p["extra"]
    # Phase annotations span their items.
    ph_ts = np.empty(3)
    ph_end = np.empty(3)
    for i in range(3):
        sel = np.flatnonzero(p["item_phase"] == i)
        ph_ts[i] = p["starts"][sel[0]] - 1000.0
        ph_end[i] = p["ends"][sel[-1]] + 1000.0
    n = 1 + 3 + n_items + 2 * groups + 1
    K = {k: i for i, k in enumerate(EVENT_KINDS)}
    ts = np.concatenate([[p["t0"]], ph_ts, p["starts"], p["l_start"], p["dev_start"], [sync_ts]])
    dur = np.concatenate(
        [
            [step_end - p["t0"]],
            ph_end - ph_ts,
            p["ends"] - p["starts"],
            p["launch"],
            p["dev_dur"],
            [sync_end - sync_ts],
        ]
    )
    gt = p["gtype"]
    dev_kind = np.full(groups, K["kernel"], dtype=np.int8)
    dev_kind[gt == G_MEMSET] = K["memset"]
    dev_kind[(gt == G_HTOD) | (gt == G_DTOH)] = K["memcpy"]
    kind = np.concatenate(
        [
            [K["step"]],
            np.full(3, K["annotation"]),
            np.full(n_items, K["cpu_op"]),
            np.full(groups, K["runtime"]),
            dev_kind,
            [K["runtime"]],
        ]
    ).astype(np.int8)
    from_names = p["names"]
    name = np.concatenate(
        [
            [from_names["step"][p["step"]]],
            from_names["phase"],
            p["op_name"],
            p["launch_name"],
            p["dev_name"],
            [from_names["sync"]],
        ]
    ).astype(np.int32)
    host = np.ones(n, dtype=bool)
    host[1 + 3 + n_items + groups : 1 + 3 + n_items + 2 * groups] = False
    device = np.where(host, -1, st.local).astype(np.int32)
    stream = np.full(n, -1, dtype=np.int32)
    stream[~host] = p["stream"]
    tid = np.full(n, st.pid, dtype=np.int64)
    tid[~host] = p["stream"]
    corr = np.full(n, -1, dtype=np.int64)
    lo = 1 + 3 + n_items
    corr[lo : lo + groups] = p["corr"]
    corr[lo + groups : lo + 2 * groups] = p["corr"]
    ext = np.full(n, -1, dtype=np.int64)
    ext[4 : 4 + n_items] = p["ext"]
    ext[lo : lo + groups] = p["ext"][extra:]
    ext[lo + groups : lo + 2 * groups] = p["ext"][extra:]
    nbytes = np.full(n, -1, dtype=np.int64)
    has_bytes = p["bytes"] > 0
    nbytes[lo + groups : lo + 2 * groups][has_bytes] = p["bytes"][has_bytes]
    mk = np.full(n, -1, dtype=np.int8)
    mk[lo + groups : lo + 2 * groups][gt == G_HTOD] = 0
    mk[lo + groups : lo + 2 * groups][gt == G_DTOH] = 1
    args = np.full(n, -1, dtype=np.int32)
    args[4 : 4 + n_items] = p["op_args"]
    args[lo + groups : lo + 2 * groups][gt == G_NCCL] = 0
    st.host_t = step_end + 30_000.0 + 10_000.0 * (st.rank % 3)
    dev = slice(lo + groups, lo + 2 * groups)
    kern = np.flatnonzero(dev_kind != K["memcpy"])
    st.kernel_ts.append(ts[dev][kern])
    st.kernel_end.append(ts[dev][kern] + dur[dev][kern])
    st.host_ts.append(ts[4 : 4 + n_items])
    st.host_end.append(ts[4 : 4 + n_items] + dur[4 : 4 + n_items])
    ts_ns = np.round(ts).astype(np.int64)
    return {
        "ts": ts_ns,
        "dur": np.maximum(np.round(ts + dur).astype(np.int64) - ts_ns, 1),
        "kind": kind,
        "name": name,
        "pid": st.pid,
        "tid": tid,
        "device": device,
        "stream": stream,
        "corr": corr,
        "ext": ext,
        "bytes": nbytes,
        "memcpy_kind": mk,
        "args": args,
    }


def _to_arrow(
    cols: dict, dictionary: pa.Array, kind_dict: pa.Array, memcpy_dict: pa.Array, args_dict: pa.Array
) -> pa.Table:
    n = cols["ts"].size

    def nullable(values: np.ndarray) -> pa.Array:
        return pa.array(values, mask=values < 0)

    def dict_col(idx: np.ndarray, d: pa.Array) -> pa.Array:
        return pa.DictionaryArray.from_arrays(pa.array(idx.astype(np.int32), mask=idx < 0), d)

    return to_table(
        "events",
        {
            "ts": pa.array(cols["ts"] + BASE_NS),
            "dur": pa.array(cols["dur"]),
            "kind": dict_col(cols["kind"], kind_dict),
            "name": dict_col(cols["name"], dictionary),
            "pid": pa.array(np.full(n, cols["pid"], dtype=np.int64)),
            "tid": pa.array(cols["tid"]),
            "device": pa.array(cols["device"]),
            "stream": pa.array(cols["stream"]),
            "correlation": nullable(cols["corr"]),
            "external_id": nullable(cols["ext"]),
            "bytes": nullable(cols["bytes"]),
            "memcpy_kind": dict_col(cols["memcpy_kind"], memcpy_dict),
            "args": dict_col(cols["args"], args_dict).cast(pa.string()),
        },
    )


def _flush(out: Path, st: _RankState) -> int:
    if not st.parts:
        return 0
    table = pa.concat_tables(st.parts)
    write_events(out, st.node, st.rank, table, seq=st.seq, extra_metadata={"profui.synthetic": "true"})
    st.parts.clear()
    st.part_rows = 0
    st.seq += 1
    return 1


def _busy_integral(starts: np.ndarray, ends: np.ndarray, x: np.ndarray) -> np.ndarray:
    """Sum over intervals of their length before each ``x`` (overlaps counted twice)."""
    s = np.sort(starts)
    e = np.sort(ends)
    cs = np.concatenate([[0.0], np.cumsum(s)])
    ce = np.concatenate([[0.0], np.cumsum(e)])
    i = np.searchsorted(s, x)
    j = np.searchsorted(e, x)
    return (i * x - cs[i]) - (j * x - ce[j])


def _write_metrics(
    out: Path,
    states: list[_RankState],
    gpus_per_node: int,
    start: float,
    end: float,
    rng: np.random.Generator,
) -> int:
    """Per node: GPU util/memory/power per GPU and CPU util, sampled from the generated busy time."""
    span = max(end - start, 1.0)
    interval = float(min(100_000_000, max(1_000_000, 10 ** math.floor(math.log10(span / 200)))))
    edges = start + interval * np.arange(int(span // interval) + 2)
    total = 0
    by_node: dict[str, list[_RankState]] = {}
    for st in states:
        by_node.setdefault(st.node, []).append(st)
    for node, ranks in by_node.items():
        ts_all, source, device, metric, value = [], [], [], [], []
        host_frac = np.zeros(edges.size - 1)
        m = edges.size - 1
        for st in ranks:
            k_ts = np.concatenate(st.kernel_ts)
            k_end = np.concatenate(st.kernel_end)
            busy = np.diff(_busy_integral(k_ts, k_end, edges)) / interval
            util = np.clip(busy * 100.0, 0.0, 100.0)
            h_ts = np.concatenate(st.host_ts)
            h_end = np.concatenate(st.host_end)
            host_frac += np.clip(np.diff(_busy_integral(h_ts, h_end, edges)) / interval, 0.0, 1.0)
            mem = 30e9 + 40e9 * util / 100.0 + rng.normal(0, 2e8, m)
            power = 90.0 + 5.6 * util + rng.normal(0, 8.0, m)
            for met, vals in (("util_pct", util), ("mem_used_bytes", mem), ("power_w", power)):
                ts_all.append(edges[1:])
                source.append(np.full(m, 0, dtype=np.int32))
                device.append(np.full(m, st.local, dtype=np.int32))
                metric.append(
                    np.full(m, {"util_pct": 0, "mem_used_bytes": 1, "power_w": 2}[met], dtype=np.int32)
                )
                value.append(vals)
        cpu = np.clip(100.0 * (host_frac + 0.5) / 16.0 + rng.normal(0, 1.0, m), 0.0, 100.0)
        ts_all.append(edges[1:])
        source.append(np.full(m, 1, dtype=np.int32))
        device.append(np.full(m, -1, dtype=np.int32))
        metric.append(np.full(m, 0, dtype=np.int32))
        value.append(cpu)
        ts = np.round(np.concatenate(ts_all)).astype(np.int64) + BASE_NS
        table = to_table(
            "metrics",
            {
                "ts": pa.array(ts),
                "source": pa.DictionaryArray.from_arrays(
                    pa.array(np.concatenate(source)), pa.array(["gpu", "cpu"])
                ),
                "device": pa.array(np.concatenate(device)),
                "metric": pa.DictionaryArray.from_arrays(
                    pa.array(np.concatenate(metric)), pa.array(["util_pct", "mem_used_bytes", "power_w"])
                ),
                "value": pa.array(np.concatenate(value)),
            },
        )
        write_metrics(out, node, table, seq=0, extra_metadata={"profui.synthetic": "true"})
        total += table.num_rows
    return total


def main(argv: list[str] | None = None) -> int:
    """Command line: write a synthetic trace and print one line about it."""
    ap = argparse.ArgumentParser(
        description="Write a seeded synthetic multi-GPU training trace (profui format)."
    )
    ap.add_argument("-o", "--out", required=True, help="output trace folder (must not exist or be empty)")
    ap.add_argument("--events", type=int, default=1_000_000, help="total number of events (exact)")
    ap.add_argument("--nodes", type=int, default=2)
    ap.add_argument("--gpus-per-node", type=int, default=4)
    ap.add_argument(
        "--streams", type=int, default=3, help="compute/copy streams per GPU (plus one NCCL stream)"
    )
    ap.add_argument("--steps", type=int, default=10)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--first-step", type=int, default=1, help="number of the first ProfilerStep")
    a = ap.parse_args(argv)
    try:
        g = generate(
            a.out,
            events=a.events,
            nodes=a.nodes,
            gpus_per_node=a.gpus_per_node,
            streams=a.streams,
            steps=a.steps,
            seed=a.seed,
            first_step=a.first_step,
        )
    except ValueError as exc:
        print(f"generate_synthetic: {exc}", file=sys.stderr)
        return 2
    print(
        json.dumps(
            {
                "path": str(g.path),
                "events": g.events,
                "ranks": g.ranks,
                "files": g.files,
                "metrics": g.metrics,
                "kinds": g.kinds,
            }
        )
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
