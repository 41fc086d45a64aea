"""The straggler rule (issue 36): per step, the rank that arrives last at the step's collectives,
the others' wait for it, and its cause — hand-checked on a small host-collective case, then on
real NCCL traces against arrivals recomputed here in plain Python from the events' rows."""

from __future__ import annotations

import re

import polars as pl
import pyarrow.parquet as pq
import pytest
from eventrows import events_frame

from profui.analysis.collectives import arrivals
from profui.analysis.comm import stragglers, usual_straggler

LOADER = "enumerate(DataLoader)#_SingleProcessDataLoaderIter.__next__"


def op(ts: int, dur: int, name: str, rank: int, tid: int = 1, kind: str = "cpu_op") -> dict:
    return {"ts": ts, "dur": dur, "kind": kind, "name": name, "rank": rank, "tid": tid}


def gloo(ts: int, end: int, rank: int) -> dict:
    return op(ts, end - ts, "gloo:all_reduce", rank, tid=2, kind="annotation")


# three ranks, steps 1-3 of 1000 ns; rank 0 alone has a step 4 (its collective: one rank only)
EVENTS = [
    # step 1: rank 1 loads data for 200 ns before arriving at 300; the first arrives at 100
    op(0, 100, "aten::mm", 0), gloo(100, 400, 0),
    op(0, 100, "aten::mm", 1), op(100, 200, LOADER, 1), gloo(300, 400, 1),
    op(0, 150, "aten::mm", 2), gloo(150, 400, 2),
    # step 2: rank 0 idles 300 ns (no op) before arriving at 1400; the others at 1120, 1130
    op(1000, 100, "aten::mm", 0), gloo(1400, 1500, 0),
    op(1000, 100, "aten::mm", 1), gloo(1120, 1500, 1),
    op(1000, 100, "aten::mm", 2), gloo(1130, 1500, 2),
    # step 3: rank 1 computes 50 and idles 200 before arriving at 2250
    gloo(2050, 2300, 0),
    op(2000, 50, "aten::mm", 1), gloo(2250, 2300, 1),
    gloo(2060, 2300, 2),
    # step 4: rank 0 only
    gloo(3100, 3200, 0),
]  # fmt: skip


def windows() -> pl.LazyFrame:
    rows = [(r, s) for r in (0, 1, 2) for s in (1, 2, 3)] + [(0, 4)]
    start = [1000 * (s - 1) for _, s in rows]
    return pl.LazyFrame(
        {
            "node": ["n"] * len(rows),
            "rank": [r for r, _ in rows],
            "step": [s for _, s in rows],
            "cpu_start_ns": start,
            "cpu_end_ns": [s + 1000 for s in start],
            "start_ns": [None] * len(rows),
            "end_ns": [None] * len(rows),
        },
        schema_overrides={"start_ns": pl.Int64, "end_ns": pl.Int64},
    )


def test_hand_checked_arrivals_and_stragglers() -> None:
    a = arrivals(events_frame(EVENTS, node="n"), windows())
    got = {(r["rank"], r["step"]): r for r in a.iter_rows(named=True)}
    assert len(got) == 10 and {r["seq"] for r in a.filter(rank=0).iter_rows(named=True)} == {0, 1, 2, 3}
    # rank 1, step 1: [0, 300) = 100 compute, then 200 in the DataLoader
    r = got[(1, 1)]
    assert (r["from_ns"], r["compute_ns"], r["input_ns"], r["host_ns"]) == (0, 100, 200, 0)
    # rank 0, step 2: from its previous collective's end (400) or the step start (1000): 1000
    r = got[(0, 2)]
    assert (r["from_ns"], r["compute_ns"], r["host_ns"]) == (1000, 100, 300)
    assert got[(1, 3)]["compute_ns"] == 50 and got[(1, 3)]["host_ns"] == 200
    st = stragglers(a).collect()
    rows = [
        (
            s["step"],
            s["ranks"],
            s["straggler_rank"],
            s["lateness_ns"],
            s["wait_ns"],
            s["cause"],
            s["cause_ns"],
            s["recurs"],
        )
        for s in st.iter_rows(named=True)
    ]
    assert rows == [
        # late 150 (300 - 150, the latest other arrival); waits 300-100 and 300-150; input 200 vs 0
        (1, 3, 1, 150, (200 + 150) / 2, "input", 200.0, True),
        # late 270 (1400 - 1130); waits 280, 270; host 300 vs (20 + 30) / 2
        (2, 3, 0, 270, (280 + 270) / 2, "host", 275.0, False),
        # late 190 (2250 - 2060); waits 200, 190; host 200 vs (50 + 60) / 2
        (3, 3, 1, 190, (200 + 190) / 2, "host", 145.0, True),
    ]  # no step 4: only rank 0 reached its collective
    assert usual_straggler(st) == ("n", 1, 2, 3)


COMM = re.compile(r"^nccl.*Kernel")


def union(iv: list[tuple[int, int]]) -> int:
    total, end = 0, None
    for lo, hi in sorted(iv):
        if end is None or lo > end:
            total, end = total + hi - lo, hi
        elif hi > end:
            total, end = total + hi - end, hi
    return total


def clipped(rows: list[dict], lo: int, hi: int) -> list[tuple[int, int]]:
    return [
        (max(r["ts"], lo), min(r["ts"] + r["dur"], hi))
        for r in rows
        if r["ts"] < hi and r["ts"] + r["dur"] > lo
    ]


def plain_arrivals(trace, windows: pl.DataFrame) -> dict[tuple[int, int], dict]:
    """(rank, seq) -> arrival, step and stretch classes, from the events' rows in plain Python:
    NCCL kernels numbered per collective in start order, stepped by the device window."""
    out = {}
    for f in sorted(trace.path.glob("node=*/rank=*/events-*.parquet")):
        rows = pq.read_table(f).to_pylist()
        rank = int(f.parent.name.split("=")[1])
        comm = sorted(
            (r for r in rows if r["kind"] == "kernel" and COMM.match(r["name"])),
            key=lambda r: (r["ts"], r["dur"]),
        )
        transfer = [r for r in rows if r["kind"] in ("memcpy", "memset")]
        compute = [r for r in rows if r["kind"] == "kernel" and not COMM.match(r["name"])]
        loading = [
            r
            for r in rows
            if r["kind"] in ("cpu_op", "annotation") and r["name"].startswith("enumerate(DataLoader)#")
        ]
        mine = windows.filter(rank=rank).sort("start_ns").iter_rows(named=True)
        w = [(x["step"], x["start_ns"], x["end_ns"]) for x in mine]
        seqs: dict[str, int] = {}
        prev_end = None
        for r in comm:
            coll = re.match(r"^nccl(?:Dev)?Kernel_([A-Za-z]+?)(?:_|\(|$)", r["name"]).group(1)
            seq = seqs.get(coll, 0)
            seqs[coll] = seq + 1
            inside = [s for s in w if s[1] <= r["ts"] < s[2]]
            if inside:
                step, start, _ = inside[-1]
                lo = min(max(start, prev_end if prev_end is not None else start), r["ts"])
                t = union(clipped(transfer, lo, r["ts"]))
                tc = union(clipped(transfer + compute, lo, r["ts"]))
                tci = union(clipped(transfer + compute + loading, lo, r["ts"]))
                out[(rank, coll, seq)] = {"step": step, "arrive": r["ts"], "transfer": t, "compute": tc - t,
                                          "input": tci - tc, "host": r["ts"] - lo - tci}  # fmt: skip
            prev_end = max(prev_end or 0, r["ts"] + r["dur"])
    return out


@pytest.mark.parametrize(
    "names",
    [
        ("hta-trace_filter-sampled_rank-0", "hta-trace_filter-sampled_rank-1"),
        ("hta-nccl_parser_config-nccl_data",),
    ],
)
def test_nccl_traces_hold_the_rule(imported_trace, names) -> None:
    trace = imported_trace(*names)
    result = trace.result("comm")
    windows = trace.result("steps")["windows.parquet"]
    want = plain_arrivals(trace, windows)
    got = result["arrivals.parquet"]
    assert got.height == len(want) > 0
    for r in got.iter_rows(named=True):
        w = want[(r["rank"], r["collective"], r["seq"])]
        assert (r["step"], r["arrive_ns"]) == (w["step"], w["arrive"])
        assert [r[f"{c}_ns"] for c in ("transfer", "compute", "input", "host")] == [
            w[c] for c in ("transfer", "compute", "input", "host")
        ]
    # the straggler per step, from the plain arrivals: most lateness, the other's wait for it
    st = result["stragglers.parquet"]
    ranks = {rank for rank, _, _ in want}
    if len(ranks) == 1:
        assert st.is_empty()  # one rank: no one to be late for
        return
    steps: dict[int, dict[int, list]] = {}
    for (rank, coll, seq), w in want.items():
        steps.setdefault(w["step"], {}).setdefault(rank, []).append(((coll, seq), w["arrive"]))
    assert st["step"].to_list() == sorted(steps)
    for s in st.iter_rows(named=True):
        arr = {rank: dict(rows) for rank, rows in steps[s["step"]].items()}
        keys = set.intersection(*(set(a) for a in arr.values()))
        # lateness: the arrival minus the latest of the other ranks' (0 unless last)
        late = {
            rank: sum(max(a[k] - max(b[k] for o, b in arr.items() if o != rank), 0) for k in keys)
            for rank, a in arr.items()
        }
        last = min(late, key=lambda rank: (-late[rank], rank))
        waits = [sum(max(arr[last][k] - a[k], 0) for k in keys) for rank, a in arr.items() if rank != last]
        assert (s["straggler_rank"], s["lateness_ns"], s["ranks"]) == (last, late[last], len(arr))
        assert s["wait_ns"] == sum(waits) / len(waits)
