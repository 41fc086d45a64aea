"""The findings rules on hand-made critical-path tables, every expected number worked out by
hand in the comments (the oracle), so each rule is held apart from the critical path's own."""

from __future__ import annotations

import re

import polars as pl
import pytest

from profui.analysis import findings as fd
from profui.analysis.formatting import fmt_ns, fmt_pct
from profui.analysis.schemas import TABLES

MS = 1_000_000
CPU_ONLY = {"device_type": "none", "ranks": [0, 1], "duration_ns": 1000 * MS}
GPU_RUN = {"device_type": "gpu", "ranks": [0, 1], "duration_ns": 1000 * MS}


def frame(stage: str, file: str, rows: list[dict]) -> pl.DataFrame:
    """Rows in the declared schema of ``stage/file``."""
    empty = TABLES[(stage, file)].empty()
    return pl.DataFrame(rows, schema=empty.schema) if rows else empty


def cp_tables(
    lengths: dict, what_if: list[tuple], by_kind: list[tuple] = (), events: list[tuple] = ()
) -> dict:
    """critical_path outputs from ``{(rank, step): length_ms}``, ``(rank, step, change, after_ms)``,
    ``(rank, step, kind, ms)`` and ``(rank, step, seq, kind, name, start_ms, end_ms)``."""
    steps = [
        {"node": "n", "rank": r, "step": s, "start_ns": 0, "end_ns": ms * MS, "length_ns": ms * MS}
        for (r, s), ms in lengths.items()
    ]
    wi = [
        {
            "node": "n",
            "rank": r,
            "step": s,
            "change": c,
            "length_ns": round(a * MS),
            "saved_ns": round((lengths[(r, s)] - a) * MS),
        }
        for r, s, c, a in what_if
    ]
    bk = [{"node": "n", "rank": r, "step": s, "kind": k, "ns": ms * MS} for r, s, k, ms in by_kind]
    ev = [
        {
            "node": "n",
            "rank": r,
            "step": s,
            "seq": q,
            "kind": k,
            "lane": "host",
            "tid": 1,
            "device": None,
            "stream": None,
            "name": name,
            "start_ns": a * MS,
            "end_ns": b * MS,
        }
        for r, s, q, k, name, a, b in events
    ]
    return {
        "steps.parquet": frame("critical_path", "steps.parquet", steps),
        "what_if.parquet": frame("critical_path", "what_if.parquet", wi),
        "by_kind.parquet": frame("critical_path", "by_kind.parquet", bk),
        "events.parquet": frame("critical_path", "events.parquet", ev),
    }


def inputs(
    cp: dict, stragglers: list[dict] = (), per_step: list[dict] = (), shares=None, totals=None
) -> dict:
    """The findings stage's inputs around ``cp``."""
    return {
        "critical_path": cp,
        "comm": {"stragglers.parquet": pl.DataFrame(list(stragglers)) if stragglers else pl.DataFrame()},
        "allocations": {"per_step.parquet": frame("allocations", "per_step.parquet", list(per_step))},
        "precision": {
            "shares.parquet": shares if shares is not None else frame("precision", "shares.parquet", [])
        },
        "flops": {"totals.parquet": totals if totals is not None else pl.DataFrame()},
    }


def rows(out: dict) -> list[dict]:
    return out["findings.parquet"].to_dicts()


def evidence(out: dict, position: int) -> dict[str, float]:
    ev = out["evidence.parquet"].filter(pl.col("position") == position)
    return dict(zip(ev["label"], ev["value"], strict=True))


# Two ranks, three steps. The job's path per step is its slowest rank's:
#   step 1: r0 100, r1 120 -> 120; host replay r0 80, r1 90 -> max 90: saved 30
#   step 2: r0 100, r1 100 -> 100; host replay r0 70 only (r1 keeps 100) -> 100: saved 0
#   step 3: r0 110, r1  90 -> 110; host replay r0 60, r1 90 -> 90: saved 20
# mean (30 + 0 + 20) / 3 = 16.667 ms; job path 120 + 100 + 110 = 330 ms; share 50 / 330 = 0.1515
LENGTHS = {(0, 1): 100, (1, 1): 120, (0, 2): 100, (1, 2): 100, (0, 3): 110, (1, 3): 90}
HOST_WHAT_IF = [
    (0, 1, "host", 80),
    (1, 1, "host", 90),
    (0, 2, "host", 70),
    (0, 3, "host", 60),
    (1, 3, "host", 90),
]


def test_recoverable_is_the_job_level_what_if_saving() -> None:
    cp = cp_tables(
        LENGTHS,
        HOST_WHAT_IF,
        by_kind=[(1, 1, "host_overhead", 40), (0, 2, "host_overhead", 30), (0, 3, "host_overhead", 50)],
        events=[
            (0, 3, 0, "host_compute", "aten::mm", 0, 10),
            (0, 3, 1, "host_overhead", "", 10, 60),
            (0, 3, 2, "host_compute", "aten::add", 60, 110),
        ],
    )
    out = fd.stage(inputs(cp), CPU_ONLY)
    (f,) = rows(out)
    assert f["category"] == "host" and f["position"] == 1
    assert f["recoverable_ns_per_step"] == round(50 * MS / 3)  # 16,666,667
    assert f["recoverable_share"] == pytest.approx(50 / 330)
    assert f["severity"] == "medium"  # 15% is between 5% and 20%
    # occurs where a rank's own replay saved time: r0 steps 1,2,3 (20, 30, 50), r1 step 1 (30)
    assert f["ranks"] == [0, 1] and f["steps"] == [1, 2, 3]
    # worst instance: rank 0, step 3 saved 50 ms; its longest host_overhead stretch starts at 10 ms
    assert (f["at_rank"], f["at_step"], f["at_ns"]) == (0, 3, 10 * MS)
    assert f["look_at"] == ["after aten::mm"]
    ev = evidence(out, 1)
    # by kind on the job's path (slowest rank per step: r1 s1, r0 s2 (tie -> rank 0), r0 s3): (40+30+50)/3
    assert ev["host time outside ops on the path per step"] == pytest.approx(40 * MS)
    assert ev["critical path per step"] == 110 * MS  # 330 / 3
    assert ev["most saved in one step"] == 50 * MS


def test_the_share_is_total_saving_over_total_path_and_never_passes_one() -> None:
    # skewed steps, one rank: paths 10, 10, 100 ms; the host replay saves 0, 0 and 90 ms.
    # mean saving 30 ms; over the median step (10 ms) that read 300%; over step time it is
    # (0 + 0 + 90) / (10 + 10 + 100) = 75%
    cp = cp_tables(
        {(0, 1): 10, (0, 2): 10, (0, 3): 100},
        [(0, 1, "host", 10), (0, 2, "host", 10), (0, 3, "host", 10)],
    )
    out = fd.stage(inputs(cp), CPU_ONLY)
    (f,) = rows(out)
    assert f["recoverable_ns_per_step"] == 30 * MS
    assert f["recoverable_share"] == pytest.approx(0.75)
    assert numbers_in(f["title"]) == ["30 ms", "75%"] and "(75% of step time)" in f["title"]
    ev = evidence(out, 1)
    assert ev["critical path per step"] == 40 * MS  # 120 / 3
    assert ev["share of step time"] == pytest.approx(
        ev["recoverable per step"] / ev["critical path per step"]
    )


def test_compute_looks_at_ops_and_kernels_not_runtime_calls() -> None:
    # one 100 ms step on a GPU run; on its path: cudaLaunchKernel 30 ms (host time inside an op,
    # spent launching), a 30 ms gap outside ops after it, aten::mm 10, a kernel 25, and 5 ms of
    # host op time named by nothing. By time the compute names would be cudaLaunchKernel 30,
    # gemm 25, aten::mm 10, the gap 5; the runtime call is launch overhead and the gap no op:
    # gemm, aten::mm. The host stall keeps its gap label.
    events = [
        (0, 1, 0, "host_compute", "cudaLaunchKernel", 0, 30),
        (0, 1, 1, "host_overhead", "", 30, 60),
        (0, 1, 2, "host_compute", "aten::mm", 60, 70),
        (0, 1, 3, "device_compute", "gemm", 70, 95),
        (0, 1, 4, "host_compute", "", 95, 100),
    ]
    cp = cp_tables({(0, 1): 100}, [(0, 1, "compute", 65), (0, 1, "host", 70)], events=events)
    by = {f["category"]: f for f in rows(fd.stage(inputs(cp), GPU_RUN))}
    assert by["compute"]["look_at"] == ["gemm", "aten::mm"]
    assert by["host"]["look_at"] == ["after cudaLaunchKernel"]


def numbers_in(title: str) -> list[str]:
    return re.findall(r"\d[\d.,]*\s?(?:ns|µs|ms|s|%|kB|MB|GB|B)", title)


def test_titles_say_the_numbers_of_their_evidence() -> None:
    cp = cp_tables(LENGTHS, HOST_WHAT_IF)
    out = fd.stage(inputs(cp), CPU_ONLY)
    f = rows(out)[0]
    ev = evidence(out, 1)
    assert numbers_in(f["title"]) == [
        fmt_ns(ev["recoverable per step"]),
        fmt_pct(ev["share of step time"], 0),
    ]
    assert numbers_in(f["title"]) == ["16.7 ms", "15%"]  # by hand: 16.667 ms, 15.15%


def test_a_change_saving_under_one_percent_is_dropped_and_order_is_by_saving() -> None:
    # step 1 only (r0 100 ms): input saves 0.5 ms (0.5% -> dropped), sync 10, compute 30
    cp = cp_tables({(0, 1): 100}, [(0, 1, "input", 99.5), (0, 1, "sync", 90), (0, 1, "compute", 70)])
    got = [
        (f["position"], f["category"], f["recoverable_ns_per_step"])
        for f in rows(fd.stage(inputs(cp), CPU_ONLY))
    ]
    assert got == [(1, "compute", 30 * MS), (2, "sync", 10 * MS)]


def test_the_late_ranks_cause_is_the_straggler_finding_not_a_second_one() -> None:
    # rank 1 late in both steps (host stall): straggler replay saves 40, host replay 45
    lengths = {(0, 1): 100, (1, 1): 100, (0, 2): 100, (1, 2): 100}
    wi = [(r, s, c, a) for r in (0, 1) for s in (1, 2) for c, a in (("straggler", 60), ("host", 55))]
    stragglers = [
        {
            "step": s,
            "straggler_rank": 1,
            "lateness_ns": late * MS,
            "wait_ns": 38 * MS,
            "cause": "host",
            "recurs": True,
        }
        for s, late in ((1, 39), (2, 41))
    ]
    # rank 1's path in step 2: a 41 ms stall from 50 ms, after aten::mm
    events = [(1, 2, 0, "host_compute", "aten::mm", 0, 50), (1, 2, 1, "host_overhead", "", 50, 91)]
    out = fd.stage(inputs(cp_tables(lengths, wi, events=events), stragglers), CPU_ONLY)
    (f,) = rows(out)
    assert f["category"] == "straggler" and f["recoverable_ns_per_step"] == 40 * MS
    assert f["title"].startswith("Rank 1 arrives last at the collectives in 2 of 2 steps, host:")
    assert f["next_step"].startswith("Rank 1 arrives late; its cause: host stall. Remove the stall")
    # worst instance on the late rank: the step it was latest in (2), at its stall
    assert (f["at_rank"], f["at_step"], f["at_ns"]) == (1, 2, 50 * MS)
    assert f["look_at"] == ["after aten::mm"]
    ev = evidence(out, 1)
    assert ev["late rank"] == 1 and ev["steps it is late"] == 2
    assert ev["its median lateness"] == 40 * MS and ev["others' median wait"] == 38 * MS


def test_another_ranks_cause_stays_a_finding_of_its_own() -> None:
    # rank 1 late in steps 1-2 (host); rank 0 late in step 3 from compute: compute stays
    lengths = {(r, s): 100 for r in (0, 1) for s in (1, 2, 3)}
    wi = [
        (r, s, c, a)
        for r in (0, 1)
        for s in (1, 2, 3)
        for c, a in (("straggler", 70), ("host", 60), ("compute", 80))
    ]
    stragglers = [
        {"step": s, "straggler_rank": r, "lateness_ns": MS, "wait_ns": MS, "cause": c, "recurs": True}
        for s, r, c in ((1, 1, "host"), (2, 1, "host"), (3, 0, "compute"))
    ]
    got = [
        (f["category"], f["at_rank"])
        for f in rows(fd.stage(inputs(cp_tables(lengths, wi), stragglers), CPU_ONLY))
    ]
    assert got == [("straggler", 1), ("compute", 0)]


def test_no_launch_finding_when_the_launch_delay_is_queued_behind_copies() -> None:
    # 100 ms step: transfer saves 60, launch 20; the path's launch delay (20 ms) follows a copy
    cp = cp_tables(
        {(0, 1): 100},
        [(0, 1, "transfer", 40), (0, 1, "launch", 80)],
        events=[
            (0, 1, 0, "transfer", "Memcpy HtoD", 0, 60),
            (0, 1, 1, "launch_delay", "cudaLaunchKernel", 60, 80),
            (0, 1, 2, "device_compute", "gemm", 80, 100),
        ],
    )
    cats = [f["category"] for f in rows(fd.stage(inputs(cp), GPU_RUN))]
    assert cats == ["transfer"]
    # the same delay after compute (not a copy) is a launch finding
    cp["events.parquet"] = cp["events.parquet"].with_columns(
        pl.when(pl.col("seq") == 0).then(pl.lit("device_compute")).otherwise(pl.col("kind")).alias("kind")
    )
    assert [f["category"] for f in rows(fd.stage(inputs(cp), GPU_RUN))] == ["transfer", "launch"]


def per_step(floors: list[int]) -> list[dict]:
    return [
        {
            "node": "n",
            "rank": 0,
            "device_type": "CUDA",
            "device": 0,
            "step": s,
            "start_ns": s * 100 * MS,
            "end_ns": (s + 1) * 100 * MS,
            "events": 10,
            "start_allocated_bytes": f,
            "min_allocated_bytes": f,
            "peak_allocated_bytes": f + 10**9,
            "end_allocated_bytes": f,
            "growth_bytes": 0,
        }
        for s, f in enumerate(floors, 1)
    ]


def test_memory_floor_rising_every_step_is_a_risk_finding() -> None:
    # floors 100, 130, 160, 190 MB: +30 MB per step over 4 steps
    empty = cp_tables({}, [])
    out = fd.stage(
        inputs(empty, per_step=per_step([100_000_000, 130_000_000, 160_000_000, 190_000_000])), GPU_RUN
    )
    (f,) = rows(out)
    assert (f["category"], f["severity"], f["recoverable_ns_per_step"]) == ("memory", "high", 0)
    assert (
        f["title"] == "Memory floor on cuda0 rises every step, by a median 30 MB per step over 4 steps: "
        "activations kept alive"
    )
    assert evidence(out, 1)["median floor rise per step"] == 30_000_000
    assert (f["at_step"], f["at_ns"]) == (4, 400 * MS)
    # a floor that falls once is steady, not rising
    assert rows(fd.stage(inputs(empty, per_step=per_step([100, 130, 120, 190])), GPU_RUN)) == []
    # the first traced step's floor is the trace's baseline (0): rises 8, 4, 4, 4 MB -> median 4 MB
    # (first to last over the steps would say 20 / 4 = 5 MB)
    out = fd.stage(
        inputs(empty, per_step=per_step([0, 8 * 10**6, 12 * 10**6, 16 * 10**6, 20 * 10**6])), GPU_RUN
    )
    assert evidence(out, 1)["median floor rise per step"] == 4 * 10**6
    assert "by a median 4 MB per step over 5 steps" in rows(out)[0]["title"]


def shares(fp32: float) -> pl.DataFrame:
    return frame(
        "precision",
        "shares.parquet",
        [
            {
                "precision": "FP32",
                "count": 10,
                "time_ns": int(fp32 * 100 * MS),
                "time_by_dtypes_ns": 0,
                "time_by_name_ns": 0,
                "share": fp32,
                "in_shares": True,
            },
        ],
    )


def test_fp32_on_a_tensor_core_gpu_is_a_precision_finding_and_never_on_a_cpu_run() -> None:
    empty = cp_tables({}, [])
    a100 = pl.DataFrame({"peak_gpu": ["A100"]})  # FP16 312 > 2 x FP32 19.5: tensor cores
    out = fd.stage(inputs(empty, shares=shares(0.8), totals=a100), GPU_RUN)
    (f,) = rows(out)
    assert (
        f["category"] == "precision"
        and f["title"] == "FP32 is 80% of the kernel time on A100, which has tensor cores"
    )
    assert "TF32" in f["next_step"] and "bfloat16" in f["next_step"]  # Ampere has both
    # Volta (V100: FP16 125 > 2 x FP32 15.7) has neither TF32 nor bf16: fp16 autocast is the advice
    (v100,) = rows(
        fd.stage(inputs(empty, shares=shares(0.8), totals=pl.DataFrame({"peak_gpu": ["V100 SXM2"]})), GPU_RUN)
    )
    assert (
        "float16" in v100["next_step"]
        and "TF32" not in v100["next_step"]
        and "bfloat16" not in v100["next_step"]
    )
    assert rows(fd.stage(inputs(empty, shares=shares(0.4), totals=a100), GPU_RUN)) == []
    assert rows(fd.stage(inputs(empty, shares=shares(0.8), totals=a100), CPU_ONLY)) == []
    # 80 ms of FP32 in a 10 s trace is under 1% of its span: no risk worth a finding
    assert (
        rows(fd.stage(inputs(empty, shares=shares(0.8), totals=a100), {**GPU_RUN, "duration_ns": 10**10}))
        == []
    )
    assert (
        rows(fd.stage(inputs(empty, shares=shares(0.8), totals=pl.DataFrame({"peak_gpu": [None]})), GPU_RUN))
        == []
    )


def test_device_idle_on_the_path_is_a_risk_finding_on_device_runs_only() -> None:
    # 100 ms path with 12 ms of device_overhead: 12%
    cp = cp_tables({(0, 1): 100}, [], by_kind=[(0, 1, "device_compute", 88), (0, 1, "device_overhead", 12)])
    (f,) = rows(fd.stage(inputs(cp), GPU_RUN))
    assert (f["category"], f["severity"], f["recoverable_ns_per_step"]) == ("idle", "low", 0)
    assert (
        f["title"] == "GPU idle on the critical path with no other cause: 12 ms per step (12% of step time)"
    )
    assert rows(fd.stage(inputs(cp), CPU_ONLY)) == []


def device_peak(reserved: int) -> pl.DataFrame:
    row = {c: None for c in TABLES[("allocations", "devices.parquet")].empty().columns}
    row.update(
        node="n",
        rank=0,
        device_type="CUDA",
        device=1,
        peak_allocated_bytes=reserved - 10**9,
        peak_ns=5 * MS,
        peak_reserved_bytes=reserved,
        peak_reserved_ns=7 * MS,
        peak_op="aten::mm",
        peak_step=3,
    )
    return frame("allocations", "devices.parquet", [row])


def test_a_peak_within_5_percent_of_the_gpus_memory_is_a_risk_finding() -> None:
    gpus = [{"node": "n", "id": 1, "totalGlobalMem": 34_000_000_000}]
    empty = inputs(cp_tables({}, []))
    # 33.0 of 34.0 GB: 97.06% >= 95%
    empty["allocations"]["devices.parquet"] = device_peak(33_000_000_000)
    out = fd.stage(empty, GPU_RUN, gpus)
    (f,) = rows(out)
    assert (f["category"], f["severity"], f["recoverable_ns_per_step"]) == ("memory", "high", 0)
    assert f["title"] == "Memory peak on cuda1 is 33 GB of its 34 GB (97%): near out of memory"
    assert (f["at_rank"], f["at_step"], f["at_ns"], f["look_at"]) == (0, 3, 7 * MS, ["aten::mm"])
    assert evidence(out, 1)["of the device's memory"] == pytest.approx(33 / 34)
    # 32.0 of 34.0 GB is 94%: no finding; a GPU whose memory is unknown: none
    empty["allocations"]["devices.parquet"] = device_peak(32_000_000_000)
    assert rows(fd.stage(empty, GPU_RUN, gpus)) == []
    empty["allocations"]["devices.parquet"] = device_peak(33_000_000_000)
    assert rows(fd.stage(empty, GPU_RUN, [{"node": "n", "id": 1}])) == []


def test_a_high_severity_risk_ranks_above_every_time_finding() -> None:
    # a 100 ms step whose compute replay saves 50 ms (50%, high) and a floor rising 30 MB every
    # step (a high risk, 0 ms): the risk ends in an out-of-memory error, so it comes first; a
    # medium risk (the device idle 10% of the path with no other cause) stays below the time
    cp = cp_tables(
        {(0, 1): 100},
        [(0, 1, "compute", 50)],
        by_kind=[(0, 1, "device_compute", 90), (0, 1, "device_overhead", 10)],
    )
    floors = per_step([100_000_000, 130_000_000, 160_000_000, 190_000_000])
    got = [
        (f["position"], f["category"], f["severity"])
        for f in rows(fd.stage(inputs(cp, per_step=floors), GPU_RUN))
    ]
    assert got == [(1, "memory", "high"), (2, "compute", "high"), (3, "idle", "low")]


def test_sync_and_straggler_say_what_their_numbers_are() -> None:
    # one 100 ms step: removing the sync saves 40 ms though only 2 ms of sync wait is on the path
    # (the rest is work it kept from overlapping): the title says what removing it saves, the
    # evidence what is on the path
    cp = cp_tables({(0, 1): 100}, [(0, 1, "sync", 60)], by_kind=[(0, 1, "sync_wait", 2)])
    (f,) = rows(out := fd.stage(inputs(cp), GPU_RUN))
    assert f["title"] == "Synchronize calls removed: 40 ms per step (40% of step time) recoverable"
    assert "blocked" not in f["title"]
    assert evidence(out, 1)["sync wait on the path per step"] == 2 * MS
    # the straggler's own kind on the path is the others' wait for it, and says so
    cp = cp_tables({(0, 1): 100}, [(0, 1, "straggler", 70)], by_kind=[(0, 1, "rank_wait", 20)])
    stragglers = [{"step": 1, "straggler_rank": 1, "lateness_ns": 25 * MS, "wait_ns": 20 * MS, "cause": None}]
    out = fd.stage(inputs(cp, stragglers), GPU_RUN)
    assert evidence(out, 1)["waiting for a rank on the path per step"] == 20 * MS
    assert evidence(out, 1)["recoverable per step"] == 30 * MS


def test_look_at_names_drop_python_object_addresses() -> None:
    # the same built-in in two steps at two addresses (as two runs would have): one name, 30 ms
    name = "<built-in method run_backward of torch._C._EngineBase object at 0x7f3a2c1b5e40>"
    other = name.replace("0x7f3a2c1b5e40", "0x7f99aa01cd10")
    events = [
        (0, 1, 0, "host_compute", name, 0, 20),
        (0, 1, 1, "host_compute", "aten::mm", 20, 45),
        (0, 2, 0, "host_compute", other, 0, 10),
    ]
    cp = cp_tables({(0, 1): 100, (0, 2): 100}, [(0, 1, "compute", 50), (0, 2, "compute", 50)], events=events)
    (f,) = rows(fd.stage(inputs(cp), CPU_ONLY))
    assert f["look_at"] == ["<built-in method run_backward of torch._C._EngineBase object>", "aten::mm"]
