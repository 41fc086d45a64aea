"""Utilization over time: bucket shares, node averages, CPU utilization from metrics or host events."""

from __future__ import annotations

import polars as pl
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from profui.analysis.busy import gpu_busy
from profui.analysis.utilization import cpu_utilization, gpu_utilization, job_utilization, node_utilization


def k(ts, dur, device=0, node="n0", rank=0) -> dict:
    return {"ts": ts, "dur": dur, "kind": "kernel", "device": device, "stream": 7, "node": node, "rank": rank}


def test_gpu_buckets_hand_checked(make_events) -> None:
    ev = make_events([k(0, 10), k(25, 5), k(0, 30, device=1)])
    u = gpu_utilization(ev, bucket_ns=10).collect()
    assert u.filter(pl.col("device") == 0)["util"].to_list() == [1.0, 0.0, 0.5]
    assert u.filter(pl.col("device") == 1)["util"].to_list() == [1.0, 1.0, 1.0]
    n = node_utilization(u).collect()
    assert n["util"].to_list() == [1.0, 0.5, 0.75] and n["n_gpus"].to_list() == [2, 2, 2]


def test_node_and_job_averages(make_events) -> None:
    ev = make_events(
        [
            k(0, 10, node="a", rank=0),
            k(0, 5, node="a", rank=1),
            k(0, 10, node="b", rank=2),
            k(0, 0, node="b", rank=3, device=1),
        ]
    )
    u = gpu_utilization(ev, bucket_ns=10).collect()
    n = node_utilization(u).collect()
    assert n.select("node", "n_gpus", "util").rows() == [("a", 2, 0.75), ("b", 2, 0.5)]
    j = job_utilization(u).collect()
    assert j.select("n_gpus", "busy_ns", "util").rows() == [(4, 25, 0.625)]


@settings(max_examples=30, deadline=None)
@given(
    st.lists(st.tuples(st.integers(0, 500), st.integers(0, 120), st.integers(0, 1)), min_size=1, max_size=20),
    st.integers(1, 97),
)
def test_bucket_shares_sum_to_busy(make_events, rows, bucket) -> None:
    ev = make_events([k(t, d, device=g) for t, d, g in rows])
    u = gpu_utilization(ev, bucket_ns=bucket).collect()
    busy = gpu_busy(ev).collect()
    got = dict(u.group_by("device").agg(pl.col("busy_ns").sum()).rows())
    assert got == dict(busy.select("device", "busy_ns").rows())
    assert ((u["util"] >= 0) & (u["util"] <= 1)).all()


def test_real_trace_buckets(imported_trace) -> None:
    t = imported_trace("nccl_parser_config-nccl_data")
    u = t.utilization()
    assert 100 <= u.height <= 250  # a round bucket size giving about 200 buckets
    assert u["busy_ns"].sum() == t.gpu_busy()["busy_ns"].item()
    assert u["bucket_len_ns"][:-1].n_unique() == 1


def test_cpu_from_metrics(make_events) -> None:
    ev = make_events([{"ts": 0, "dur": 100, "kind": "cpu_op"}])
    metrics = pl.LazyFrame(
        {
            "ts": [0, 10, 20, 60, 60],
            "source": ["cpu", "cpu", "cpu", "cpu", "gpu"],
            "device": [-1, -1, -1, -1, 0],
            "metric": ["util_pct"] * 5,
            "value": [50.0, 70.0, 10.0, 30.0, 99.0],
            "node": ["n0"] * 5,
        }
    )
    c = cpu_utilization(ev, metrics, bucket_ns=50).collect()
    assert c["source"].unique().to_list() == ["metrics"]
    assert c.select("bucket", "util").rows() == [(0, pytest.approx(0.4333333)), (1, 0.3)]


def test_cpu_from_host_events(make_events, imported_trace) -> None:
    ev = make_events(
        [
            {"ts": 0, "dur": 100, "kind": "cpu_op", "tid": 1},
            {"ts": 10, "dur": 20, "kind": "cpu_op", "tid": 1},
            {"ts": 50, "dur": 100, "kind": "runtime", "tid": 2},
            {"ts": 0, "dur": 500, "kind": "annotation", "tid": 3},
        ]
    )
    c = cpu_utilization(ev, None, bucket_ns=100).collect()
    # threads 1 and 2 seen (annotations are not CPU work): bucket 0 busy 100 + 50 ns -> 1.5 threads
    assert c["source"].unique().to_list() == ["host_events"]
    assert c["busy_threads"].to_list()[:2] == [1.5, 0.5]
    assert c["util"].to_list()[:2] == [0.75, 0.25]
    # a thread is its node, rank, process and thread id: two ranks' threads that share a pid and
    # tid (ranks relabelled from one process's trace) are two threads, never one union
    twin = make_events(
        [
            {"ts": 0, "dur": 100, "kind": "cpu_op", "rank": 0},
            {"ts": 0, "dur": 100, "kind": "cpu_op", "rank": 1},
        ]
    )
    c2 = cpu_utilization(twin, None, bucket_ns=100).collect()
    assert c2.select("busy_threads", "util").row(0) == (2.0, 1.0)
    t = imported_trace("nccl_parser_config-nccl_data")
    real = t.cpu_utilization()
    assert real["source"].unique().to_list() == ["host_events"]
    assert ((real["util"] >= 0) & (real["util"] <= 1)).all() and real["util"].max() > 0
