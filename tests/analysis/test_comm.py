"""Communication kernels: hand-checked frames, then real NCCL traces vs HTA."""

from __future__ import annotations

import json

import polars as pl
import pytest
from eventrows import events_frame

from profui.analysis.comm import (
    comm_by_collective,
    comm_comp_overlap,
    comm_kernels,
    comm_per_rank,
    comm_per_step,
)
from profui.analysis.hta_variants import hta_comm_comp_overlap

from realdata import hta_reference


def ev(rows: list[dict]) -> pl.LazyFrame:
    return events_frame(rows, node="n")


def k(ts, dur, name, rank=0, stream=7, args=None):
    return {
        "ts": ts,
        "dur": dur,
        "kind": "kernel",
        "name": name,
        "device": 0,
        "stream": stream,
        "rank": rank,
        "args": json.dumps(args) if args else None,
    }


AR = "ncclKernel_AllReduce_RING_LL_Sum_float(ncclDevComm*, unsigned long, ncclWork*)"
BC = "ncclDevKernel_Broadcast_RING_LL(ncclDevComm*, unsigned long, ncclWork*)"
SR = "ncclKernel_SendRecv(ncclWork*)"

SMALL = [
    # rank 0: compute [0, 100), [150, 200); comm AR [50, 170) (overlap 50 + 20 = 70 of 120)
    k(0, 100, "gemm"),
    k(150, 50, "relu"),
    k(
        50,
        120,
        AR,
        stream=20,
        args={
            "Collective name": "allreduce",
            "In msg nelems": 1000,
            "Out msg nelems": 1000,
            "dtype": "Float",
            "Group size": 2,
        },
    ),
    {
        "ts": 10,
        "dur": 5,
        "kind": "memcpy",
        "name": "Memcpy DtoD (Device -> Device)",
        "device": 0,
        "stream": 7,
    },
    # rank 1: compute [0, 140); comm BC [140, 180) no overlap; SendRecv [300, 310)
    k(0, 140, "gemm", rank=1),
    k(140, 40, BC, rank=1, stream=20),
    k(300, 10, SR, rank=1, stream=20),
]


def test_collective_names_and_sizes():
    c = comm_kernels(ev(SMALL)).collect().sort("ts")
    assert c["collective"].to_list() == ["AllReduce", "Broadcast", "SendRecv"]
    assert c["msg_bytes"].to_list() == [4000, None, None]
    by = comm_by_collective(ev(SMALL)).collect()
    assert by["collective"].to_list() == ["AllReduce", "Broadcast", "SendRecv"]
    assert by["total_ns"].to_list() == [120, 40, 10]
    assert by["share"].to_list() == pytest.approx([120 / 170, 40 / 170, 10 / 170])
    assert by["algbw_gbps"].to_list()[0] == pytest.approx(4000 / 120)  # bytes per ns = GB/s


def test_overlap_per_rank():
    o = comm_comp_overlap(ev(SMALL)).collect()
    r0 = o.filter(pl.col("rank") == 0).row(0, named=True)
    assert (r0["comm_ns"], r0["compute_ns"], r0["overlap_ns"]) == (120, 150, 70)
    assert r0["overlap_share"] == pytest.approx(70 / 120)
    r1 = o.filter(pl.col("rank") == 1).row(0, named=True)
    assert (r1["comm_ns"], r1["overlap_ns"], r1["overlap_share"]) == (50, 0, 0.0)


def test_per_rank_and_per_step():
    pr = comm_per_rank(ev(SMALL)).collect()
    assert pr["busy_ns"].to_list() == [120, 50]
    assert pr["span_ns"].to_list() == [200, 310]
    windows = pl.LazyFrame(
        {
            "node": ["n"] * 4,
            "rank": [0, 1, 0, 1],
            "step": [1, 1, 2, 2],
            "start": [0, 0, 200, 200],
            "end": [200, 200, 400, 400],
        }
    )
    ps = comm_per_step(ev(SMALL), windows).collect()
    s1 = ps.filter(pl.col("step") == 1).sort("rank")
    assert s1["comm_ns"].to_list() == [120, 40]
    assert s1["compute_ns"].to_list() == [150, 140]
    assert s1["exposed_comm_ns"].to_list() == [50, 40]


def h(ts, dur, name, rank=0, tid=1, kind="cpu_op", args=None):
    """A host event (an op or a record_function range)."""
    return {
        "ts": ts,
        "dur": dur,
        "kind": kind,
        "name": name,
        "rank": rank,
        "tid": tid,
        "args": json.dumps(args) if args else None,
    }


GLOO_ARGS = {"Input type": ["float"], "Input Dims": [[10, 25]]}

HOST = [
    # rank 0 has an NCCL kernel: its host ranges describe the same collective and do not count
    k(0, 100, "gemm"),
    k(50, 120, AR, stream=20),
    h(40, 5, "c10d::allreduce_"),
    h(41, 3, "nccl:all_reduce", kind="annotation"),
    # rank 1 (no kernels): gloo ranges on a worker thread count; its c10d enqueue op does not
    h(0, 30, "aten::mm", rank=1),
    h(25, 2, "c10d::allreduce_", rank=1),
    h(20, 40, "gloo:all_reduce", rank=1, tid=2, kind="annotation", args=GLOO_ARGS),
    h(100, 10, "gloo:broadcast", rank=1, tid=2, kind="annotation"),
    # rank 2 records only dispatcher ops: they stand in
    h(0, 7, "c10d::allgather_", rank=2),
    h(10, 4, "aten::add", rank=2),
]


def test_host_collectives_one_source_per_rank():
    by = comm_by_collective(ev(HOST)).collect()
    got = {
        (r["source"], r["collective"]): (r["count"], r["total_ns"], r["bytes"])
        for r in by.iter_rows(named=True)
    }
    assert got == {
        ("device kernel", "AllReduce"): (1, 120, None),
        ("host op", "AllReduce"): (1, 40, 10 * 25 * 4),  # gloo:all_reduce over a 10x25 float
        ("host op", "Broadcast"): (1, 10, None),
        ("host op", "AllGather"): (1, 7, None),
    }
    pr = {r["rank"]: r for r in comm_per_rank(ev(HOST)).collect().iter_rows(named=True)}
    assert [pr[r]["source"] for r in (0, 1, 2)] == ["device kernel", "host op", "host op"]
    assert (pr[1]["busy_ns"], pr[1]["span_ns"]) == (50, 110)  # host span: first op to last range
    assert (pr[2]["busy_ns"], pr[2]["span_ns"]) == (7, 14)
    # host-op ranks: computation is their other CPU ops; rank 1's gloo [20, 60) meets mm [0, 30)
    o = {r["rank"]: r for r in comm_comp_overlap(ev(HOST)).collect().iter_rows(named=True)}
    assert (o[1]["comm_ns"], o[1]["compute_ns"], o[1]["overlap_ns"], o[1]["exposed_comm_ns"]) == (
        50,
        30,
        10,
        40,
    )
    assert (o[0]["comm_ns"], o[0]["compute_ns"], o[0]["overlap_ns"]) == (120, 100, 50)
    # kernels only on request (hta_compat)
    assert comm_by_collective(ev(HOST), host=False).collect()["source"].to_list() == ["device kernel"]


def test_host_op_ranks_use_their_host_step_window():
    windows = pl.LazyFrame(
        {
            "node": ["n", "n"],
            "rank": [0, 1],
            "step": [1, 1],
            "cpu_start_ns": [0, 0],
            "cpu_end_ns": [200, 50],
            "start_ns": [0, None],
            "end_ns": [200, None],
        }
    )
    ps = {r["rank"]: r for r in comm_per_step(ev(HOST), windows).collect().iter_rows(named=True)}
    assert (ps[1]["step_ns"], ps[1]["comm_ns"], ps[1]["compute_ns"]) == (50, 30, 30)  # gloo cut at 50
    assert (ps[0]["step_ns"], ps[0]["comm_ns"]) == (200, 120)


# -- real traces ------------------------------------------------------------------------------

MULTI = ("trace_filter-sampled_rank-0", "trace_filter-sampled_rank-1")


def _raw(stem: str) -> dict:
    return next(iter(hta_reference(f"hta-{stem}")["independent_raw_stats"].values()))


def test_nccl_by_collective_and_exact_overlap(imported_trace):
    """nccl_parser_config: 15 AllReduce kernels (46,762.159 µs) plus Broadcasts make up the
    46,876.493 µs of communication; 7,317.025 µs of it overlaps compute (exact, whole trace)."""
    raw = _raw("nccl_parser_config-nccl_data")
    ev = imported_trace("nccl_parser_config-nccl_data").events()
    by = comm_by_collective(ev).collect()
    ar = by.row(0, named=True)
    top = raw["top_gpu_events_by_sum"][0]
    assert (ar["collective"], ar["count"], ar["total_ns"]) == (
        "AllReduce",
        top["count"],
        round(top["sum_us"] * 1000),
    )
    assert by["collective"].to_list() == ["AllReduce", "Broadcast"]
    assert by["total_ns"].sum() == round(raw["sum_dur_by_type_us"]["COMMUNICATION"] * 1000)
    # NCCL args: AllReduce of float, 2 ranks; sizes from 'In msg nelems' x 4 bytes
    c = comm_kernels(ev).collect().filter(pl.col("collective") == "AllReduce")
    assert c["dtype"].unique().to_list() == ["Float"] and c["group_size"].unique().to_list() == [2]
    assert (c["msg_bytes"] == c["nelems"] * 4).all()
    o = comm_comp_overlap(ev).collect().row(0, named=True)
    assert o["overlap_ns"] == round(raw["comm_comp_overlap_us"] * 1000)
    assert o["comm_ns"] == round(raw["busy_by_type_merged_us"]["COMMUNICATION"] * 1000)
    assert round(100 * o["overlap_share"], 3) == raw["comm_comp_overlap_pct_of_comm_busy"]


@pytest.mark.parametrize(
    "names",
    [("nccl_parser_config-nccl_data",), ("df_index_resolver-df_index_resolver",), MULTI],
)
def test_hta_compat_overlap_matches_reference(imported_trace, names):
    stem = "trace_filter-sampled_rank-0+1_multirank" if names == MULTI else names[0]
    ref = hta_reference(f"hta-{stem}")["comm_comp_overlap"]
    o = hta_comm_comp_overlap(imported_trace(*names).hta_events()).collect()
    for r in ref:
        got = o.filter(pl.col("rank") == r["rank"])["overlap_share"].item()
        assert round(100 * got, 2) == pytest.approx(r["comp_comm_overlap_pctg"], abs=0.011)


def test_two_rank_trace_per_rank_and_per_step(imported_trace):
    """trace_filter rank 0 + rank 1 imported together: 10 SendRecv per rank, every one inside a
    step (the straggler rule's tests: ``test_stragglers.py``)."""
    t = imported_trace(*MULTI)
    ev = t.events()
    pr = comm_per_rank(ev).collect()
    for rank in (0, 1):
        raw = _raw(f"trace_filter-sampled_rank-{rank}")
        row = pr.filter(pl.col("rank") == rank).row(0, named=True)
        assert row["count"] == 10
        assert row["busy_ns"] == round(raw["busy_by_type_merged_us"]["COMMUNICATION"] * 1000)
    steps = ev.filter(pl.col("kind") == "step").select(
        "node",
        "rank",
        pl.col("name").str.extract(r"#(\d+)").cast(pl.Int64).alias("step"),
        pl.col("ts").alias("start"),
        (pl.col("ts") + pl.col("dur")).alias("end"),
    )
    ps = comm_per_step(ev, steps).collect()
    assert ps.height == 4  # 2 steps x 2 ranks
    # every SendRecv lies inside a step: the per-step comm adds up to the per-rank union
    per_rank = ps.group_by("rank").agg(pl.col("comm_ns").sum()).sort("rank")["comm_ns"].to_list()
    assert per_rank == pr.sort("rank")["busy_ns"].to_list()


#: Communication kernel names the shared traces do not hold, each as its library writes it:
#: RCCL keeps NCCL's names, its one kernel for every collective ``__global__ void
#: ncclDevKernel_Generic(ncclDevKernelArgs4K ...)`` (NCCL/RCCL src/device/common.h) listed by ROCm
#: kernel tables with its argument storage and, where RCCL builds several, a ``_1`` suffix;
#: RCCL's general kernel of ROCm 5 to 6.0, ``extern __global__ void rccl_main_kernel(struct
#: ncclDevComm*, uint64_t, struct ncclWork*)``; and a template kernel, ``template <typename T,
#: uint32_t NRANKS> __global__ void ncclKernel_AllReduce_DDA_Flat(...)`` (an NCCL fork's
#: all-reduce), whose demangled name starts with its return type as every template kernel's in
#: the shared traces does (``void at::native::...``).
RCCL_AND_TEMPLATE_COMM = {
    "ncclDevKernel_Generic(ncclDevKernelArgsStorage<4096ul>)": "Generic",
    "ncclDevKernel_Generic_1(ncclDevKernelArgsStorage<4096ul>)": "Generic",
    "rccl_main_kernel(ncclDevComm*, unsigned long, ncclWork*)": "other",
    "void ncclKernel_AllReduce_DDA_Flat<float, 8u>(unsigned long, DdaDeviceState*, int, float const*, float*, "
    "unsigned long)": "AllReduce",
}


def test_rccl_and_template_kernel_names_are_communication():
    """Each name above is a communication kernel (and only those); the collective is read from
    the name where it says one, else ``other`` (no ``Collective name`` recorded here)."""
    others = ["void at::native::vectorized_elementwise_kernel<4, at::native::FillFunctor<float>>", "gemm"]
    rows = [k(10 * i, 5, n) for i, n in enumerate([*RCCL_AND_TEMPLATE_COMM, *others])]
    c = comm_kernels(ev(rows)).collect()
    assert dict(zip(c["name"], c["collective"], strict=True)) == RCCL_AND_TEMPLATE_COMM
