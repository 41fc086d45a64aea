"""Communication kernels: hand-checked frames, then real NCCL traces vs HTA."""

from __future__ import annotations

import json

import polars as pl
import pytest

from profui.analysis.comm import (
    comm_by_collective,
    comm_comp_overlap,
    comm_kernels,
    comm_per_rank,
    comm_per_step,
    stragglers,
)
from profui.analysis.trace import EVENTS_POLARS_SCHEMA


def ev(rows: list[dict]) -> pl.LazyFrame:
    base = {
        "ts": 0, "dur": 0, "kind": "cpu_op", "name": "x", "pid": 1, "tid": 1, "device": -1, "stream": -1,
        "correlation": None, "external_id": None, "bytes": None, "memcpy_kind": None, "args": None,
        "node": "n", "rank": 0,
    }
    return pl.DataFrame([{**base, **r} for r in rows], schema=EVENTS_POLARS_SCHEMA).lazy()


def k(ts, dur, name, rank=0, stream=7, args=None):
    return {"ts": ts, "dur": dur, "kind": "kernel", "name": name, "device": 0, "stream": stream, "rank": rank,
            "args": json.dumps(args) if args else None}


AR = "ncclKernel_AllReduce_RING_LL_Sum_float(ncclDevComm*, unsigned long, ncclWork*)"
BC = "ncclDevKernel_Broadcast_RING_LL(ncclDevComm*, unsigned long, ncclWork*)"
SR = "ncclKernel_SendRecv(ncclWork*)"

SMALL = [
    # rank 0: compute [0, 100), [150, 200); comm AR [50, 170) (overlap 50 + 20 = 70 of 120)
    k(0, 100, "gemm"), k(150, 50, "relu"),
    k(50, 120, AR, stream=20, args={"Collective name": "allreduce", "In msg nelems": 1000, "Out msg nelems": 1000,
                                    "dtype": "Float", "Group size": 2}),
    {"ts": 10, "dur": 5, "kind": "memcpy", "name": "Memcpy DtoD (Device -> Device)", "device": 0, "stream": 7},
    # rank 1: compute [0, 140); comm BC [140, 180) no overlap; SendRecv [300, 310)
    k(0, 140, "gemm", rank=1), k(140, 40, BC, rank=1, stream=20), k(300, 10, SR, rank=1, stream=20),
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
    assert r0["overlap_pct"] == pytest.approx(100 * 70 / 120)
    r1 = o.filter(pl.col("rank") == 1).row(0, named=True)
    assert (r1["comm_ns"], r1["overlap_ns"], r1["overlap_pct"]) == (50, 0, 0.0)


def test_per_rank_and_stragglers():
    pr = comm_per_rank(ev(SMALL)).collect()
    assert pr["busy_ns"].to_list() == [120, 50]
    assert pr["span_ns"].to_list() == [200, 310]
    windows = pl.LazyFrame(
        {"node": ["n"] * 4, "rank": [0, 1, 0, 1], "step": [1, 1, 2, 2], "start": [0, 0, 200, 200], "end": [200, 200, 400, 400]}
    )
    ps = comm_per_step(ev(SMALL), windows).collect()
    s1 = ps.filter(pl.col("step") == 1).sort("rank")
    assert s1["comm_ns"].to_list() == [120, 40]
    assert s1["compute_ns"].to_list() == [150, 140]
    assert s1["exposed_comm_ns"].to_list() == [50, 40]
    st = stragglers(ps.lazy()).collect()
    assert st["step"].to_list() == [1, 2]
    assert st["straggler_rank"].to_list()[0] == 0
    assert st["lag_ns"].to_list()[0] == pytest.approx(150 - 145)
