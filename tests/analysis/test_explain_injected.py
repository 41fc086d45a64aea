"""``profui explain`` on real CPU training runs with one injected bottleneck each (issue 36).

Each script in ``injected/`` is recorded once under profcap (module-scoped) and explained by the
real CLI in a subprocess. The oracle is independent of profui: the script's own per-step clock
(``time.perf_counter`` around each loop iteration), run without profcap with and without the
cause; the gain of removing the cause is the difference of the medians. Where the script clocks
its cause (the batch's fetch, the host sleep), the recoverable time is held to the cause's cost in
the traced run itself, less that part's cost without it, the plain gain a floor: a loaded host
oversleeps more in one run than in another. For the late rank, the gloo rows read in plain
Python; for the kept activations, the bytes the script keeps.

Why profcap's overhead does not bias the comparison: the gain is measured on plain runs (no
profiler at all), and what profui must find is a wait that the profiler does not stretch (a
sleep in ``__getitem__``, a sleep outside any op, a rank's sleep before its forward); the
profiler's per-op cost lengthens the ops on both sides of a what-if equally, so it changes the
step, not the time the cause adds to it.
"""

from __future__ import annotations

import asyncio
import json
import re
import statistics
import subprocess
import sys
from pathlib import Path

import polars as pl
import pyarrow.parquet as pq
import pytest

from profui.analysis.pipeline.answers import answers

sys.path.insert(0, str(Path(__file__).resolve().parent / "injected"))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tui"))

from pilotwait import wait_dashboard  # noqa: E402
from runs import CAUSES, NPROC, measure, record  # noqa: E402
from steploop import WARMUP  # noqa: E402

PROFUI = str(Path(sys.executable).with_name("profui"))
#: The issue's bound: recoverable time within 25% of the measured gain.
TOLERANCE = 0.25
LATE_RANK = 1  # late_rank.py's LATE_RANK
#: Each straggler run's late rank (the scripts' LATE_RANK).
LATE = {"late_rank": LATE_RANK, "late_before_backward": 0}
#: activations_alive.py keeps its hidden activation each step: batch 256 x 4096 float32.
KEPT_BYTES_PER_STEP = 256 * 4096 * 4
GLOO = "gloo:all_reduce"


class Runs:
    """Each cause recorded, explained and measured at most once per module."""

    def __init__(self, tmp: Path) -> None:
        self.tmp = tmp
        self._traces: dict[str, Path] = {}
        self._clocks: dict[str, dict] = {}
        self._explain: dict[str, dict] = {}
        self._measured: dict[str, dict] = {}

    def trace(self, name: str) -> Path:
        """The cause's profcap trace."""
        if name not in self._traces:
            trace = self.tmp / name / "trace"
            proc = record(CAUSES[name], trace)
            assert proc.returncode == 0, f"{name}: profcap exited {proc.returncode}: {proc.stderr[-3000:]}"
            self._traces[name] = trace
            self._clocks[name] = json.loads([x for x in proc.stdout.splitlines() if x.startswith("{")][-1])
        return self._traces[name]

    def clock(self, name: str) -> dict:
        """The traced run's own clock (its JSON line: steploop.report)."""
        self.trace(name)
        return self._clocks[name]

    def cli(self, *args: str) -> dict:
        """``profui ARGS`` (a JSON command), parsed."""
        proc = subprocess.run([PROFUI, *args], capture_output=True, text=True, timeout=300)
        assert proc.returncode == 0, f"profui {' '.join(args)}: exit {proc.returncode}: {proc.stderr[-3000:]}"
        return json.loads(proc.stdout)

    def explain(self, name: str) -> dict:
        """``profui explain TRACE --json``."""
        if name not in self._explain:
            self._explain[name] = self.cli("explain", str(self.trace(name)), "--json")
        return self._explain[name]

    def measured(self, name: str) -> dict:
        """The script's own medians without profcap, with and without the cause."""
        if name not in self._measured:
            self._measured[name] = measure(CAUSES[name])
        return self._measured[name]


@pytest.fixture(scope="module")
def runs(tmp_path_factory) -> Runs:
    return Runs(tmp_path_factory.mktemp("injected"))


def _brief(findings: list[dict]) -> str:
    return ", ".join(f"{f['category']} {f['recoverable_ns_per_step'] / 1e6:.2f} ms" for f in findings)


@pytest.mark.parametrize(
    "name",
    [
        "dataloader_sleep",
        "host_stall",
        "late_rank",
        "late_before_backward",
        "compute_heavy",
        "activations_alive",
    ],
)
def test_top_finding_names_the_cause(runs, name):
    findings = runs.explain(name)["findings"]
    assert findings, f"{name}: no findings"
    top = findings[0]
    assert top["category"] == CAUSES[name].category, f"{name}: findings {_brief(findings)}"
    # high-severity risks (memory rising every step ends in an OOM) first, then by recoverable time
    risks = [f["category"] in ("memory", "precision", "idle") and f["severity"] == "high" for f in findings]
    assert risks == sorted(risks, reverse=True)
    ranked = [f["recoverable_ns_per_step"] for f, risk in zip(findings, risks, strict=True) if not risk]
    assert ranked == sorted(ranked, reverse=True)
    if name in LATE:
        assert top["timeline"]["rank"] == LATE[name]
        assert LATE[name] in top["ranks"]
        assert re.search(rf"\brank {LATE[name]}\b", top["title"], re.IGNORECASE), top["title"]


@pytest.mark.parametrize("name", ["dataloader_sleep", "host_stall", "late_rank", "late_before_backward"])
def test_recoverable_time_is_the_measured_gain(runs, name):
    m = runs.measured(name)  # measured first: the plain runs do not share the CPUs with anything of ours
    findings = runs.explain(name)["findings"]
    mine = [f for f in findings if f["category"] == CAUSES[name].category]
    assert mine, f"{name}: no {CAUSES[name].category} finding; findings {_brief(findings)}"
    got, gain = mine[0]["recoverable_ns_per_step"], m["gain_ns"]
    own = runs.clock(name).get("cause_ns")
    if own is not None:
        # the cause's cost in the traced run itself: the script's clock around it (the batch's
        # fetch, the sleep) in the analysed steps, less that part's cost without the cause (the
        # plain runs' median). A loaded host oversleeps, more in one traced run than in the
        # plain runs' least disturbed (seen: 2 ms sleeps x 8 a step, 25.4 ms recovered against
        # a plain gain of 17.0 at load ~8); that gain stays a floor
        assert got >= (1 - TOLERANCE) * gain, (
            f"{name}: recoverable {got / 1e6:.2f} ms vs plain gain {gain / 1e6:.2f} ms"
        )
        steps = answers(runs.trace(name), ["critical_path"], lambda: None).outputs["critical_path"][
            "steps.parquet"
        ]
        without = statistics.median(v for r in m["runs"] if not r["cause"] for v in r["cause_ns"][WARMUP:])
        gain = round(statistics.mean(own[n] for n in steps["step"]) - without)
    assert abs(got - gain) <= TOLERANCE * gain, (
        f"{name}: recoverable {got / 1e6:.2f} ms vs measured {gain / 1e6:.2f} ms "
        f"({(got - gain) / gain:+.0%}; steps {m['median_step_with_ns'] / 1e6:.2f} -> "
        f"{m['median_step_without_ns'] / 1e6:.2f} ms)"
    )
    # the share is of the step this trace's own steps take
    assert 0 < mine[0]["recoverable_share"] <= 1


def test_compute_heavy_has_no_host_or_input_finding(runs):
    """A compute-bound loop has no host or input finding over 10% of its traced steps' time, save
    the time its thread was off the CPU in them (the script's own clocks: wall minus thread CPU
    time from the end of iteration first-1 to the end of iteration last, which holds the traced
    steps). The loop neither sleeps nor reads, so that time is the OS running other
    processes: preempted between two ops, the thread shows a stretch outside any op that the trace
    cannot tell from a stall (at load ~9, 12-64 ms ones; idle, none over 1 ms). Idle it is ~0 and
    the bound is 10%."""
    trace = runs.trace("compute_heavy")
    clock = runs.clock("compute_heavy")
    steps = answers(trace, ["critical_path"], lambda: None).outputs["critical_path"]["steps.parquet"]
    first, last = steps["step"].min(), steps["step"].max()
    assert sorted(steps["step"]) == list(range(first, last + 1)) and first >= 1, steps
    ends, cpu = clock["ends_ns"], clock["ends_cpu_ns"]
    wall = ends[last] - ends[first - 1]
    off_cpu = wall - (cpu[last] - cpu[first - 1])
    path = steps["length_ns"].sum()
    # the premise: ProfilerStep#N is iteration N's end to end (within 1%), but the last one ends
    # earlier (when the profiler stops): the script's window holds the traced steps
    inner = steps.filter(pl.col("step") < last)["length_ns"].sum()
    assert abs(ends[last - 1] - ends[first - 1] - inner) <= 0.01 * inner, (ends, steps)
    assert path <= wall, (wall, path)
    for f in runs.explain("compute_heavy")["findings"]:
        if f["category"] in ("host", "input"):
            total = f["recoverable_ns_per_step"] * steps.height
            assert total <= 0.10 * path + off_cpu, (
                f,
                f"path {path / 1e6:.1f} ms, off CPU {off_cpu / 1e6:.1f} ms",
            )


def test_kept_activations_are_a_memory_risk(runs):
    findings = runs.explain("activations_alive")["findings"]
    mem = [f for f in findings if f["category"] == "memory"]
    assert mem, f"no memory finding; findings {_brief(findings)}"
    assert mem[0]["recoverable_ns_per_step"] == 0 and mem[0]["recoverable_share"] == 0
    assert mem[0]["severity"]


def test_memory_finding_states_the_kept_bytes_per_step(runs):
    """The finding's rise per step is what the loop keeps each step (4 MiB), within 5%."""
    (mem,) = [f for f in runs.explain("activations_alive")["findings"] if f["category"] == "memory"]
    per_step = [e for e in mem["evidence"] if e["unit"] == "bytes" and "per step" in e["label"]]
    assert per_step, mem["evidence"]
    rise = per_step[0]["value"]
    assert abs(rise - KEPT_BYTES_PER_STEP) <= 0.05 * KEPT_BYTES_PER_STEP, (
        f"stated rise {rise / 1e6:.2f} MB/step vs kept {KEPT_BYTES_PER_STEP / 1e6:.2f} MB/step; {mem['title']}"
    )


def _gloo_arrivals(trace: Path, nproc: int = NPROC) -> dict[int, dict[int, int]]:
    """Per traced step and rank, the start of the rank's first gloo all-reduce in the step (plain
    Python over the events files: ProfilerStep#N windows, gloo:all_reduce rows); steps every
    rank reached only."""
    first: dict[int, dict[int, int]] = {}
    for f in sorted(trace.glob("node=*/rank=*/events-*.parquet")):
        rank = int(f.parent.name.split("=")[1])
        rows = pq.read_table(f, columns=["ts", "dur", "kind", "name"]).to_pylist()
        steps = {
            int(r["name"].split("#")[1]): (r["ts"], r["ts"] + r["dur"])
            for r in rows
            if r["kind"] == "step" and r["name"].startswith("ProfilerStep#")
        }
        for r in rows:
            if r["name"] != GLOO:
                continue
            for n, (lo, hi) in steps.items():
                if lo <= r["ts"] < hi:
                    cur = first.setdefault(n, {}).get(rank)
                    first[n][rank] = r["ts"] if cur is None else min(cur, r["ts"])
    return {n: by for n, by in first.items() if len(by) == nproc}


def test_steps_and_communication_name_the_same_straggler(runs):
    trace = runs.trace("late_rank")
    arrivals = _gloo_arrivals(trace)
    oracle = {n: max(by, key=by.get) for n, by in arrivals.items()}
    assert oracle and set(oracle.values()) == {LATE_RANK}, oracle
    sections = runs.cli("summary", str(trace), "--json")["sections"]
    # Communication: the rank arriving last at the collectives, each step, how late, and why
    stragglers = sections["comm"]["stragglers"]
    named = {r["step"]: r["straggler_rank"] for r in stragglers}
    assert named == oracle
    for r in stragglers:  # one collective per step: lateness = last arrival - the next-to-last
        by = sorted(arrivals[r["step"]].values())
        assert r["lateness_ns"] == by[-1] - by[-2], r
        assert r["cause"] == "host", r  # rank 1 sleeps outside any op before its forward
    # Steps: the late rank is the one that waits least in communication in its steps (the others
    # wait for it there), read from the steps' own breakdown table
    waits: dict[int, dict[int, int]] = {}
    for r in sections["steps"]["breakdown"]:
        waits.setdefault(r["step"], {})[r["rank"]] = r["communication_ns"]
    least = {n: min(by, key=by.get) for n, by in waits.items()}
    assert least == named


def test_a_wait_inside_a_users_range_is_waiting_for_the_late_rank(runs):
    """late_before_backward: rank 1's main thread waits for the all-reduce outside any op but
    inside its ``fwd_bwd`` annotation (the premise, read from the events in plain Python); each
    analysed step's path on rank 1 waits for rank 0 as long as rank 0 arrived after rank 1 (the
    gloo rows' starts), within 10% or 0.5 ms, and that wait is no host time (before the fix: 0
    waiting for a rank, ~20 ms of host time outside ops per step)."""
    name = "late_before_backward"
    trace = runs.trace(name)
    arrivals = _gloo_arrivals(trace, CAUSES[name].nproc)
    late = LATE[name]
    rows = pq.read_table(next(trace.glob("node=*/rank=1/events-*.parquet"))).to_pylist()
    main = {r["tid"] for r in rows if r["kind"] == "step"}
    ops = [(r["ts"], r["ts"] + r["dur"]) for r in rows if r["kind"] == "cpu_op" and r["tid"] in main]
    ranges = [(r["ts"], r["ts"] + r["dur"]) for r in rows if r["name"] == "fwd_bwd" and r["tid"] in main]
    for n, by in arrivals.items():
        at = by[late]  # when rank 1's all-reduce could end: rank 0 arrived
        assert by[1] < at and not any(lo < at < hi for lo, hi in ops), n
        assert any(lo < at < hi for lo, hi in ranges), n
    out = answers(trace, ["critical_path"], lambda: None).outputs["critical_path"]
    kinds = out["by_kind.parquet"].filter(rank=1)
    steps = sorted(set(kinds["step"].to_list()) & set(arrivals))
    assert len(steps) >= 10, steps
    hosts, wants = [], []
    for n in steps:
        want = arrivals[n][late] - arrivals[n][1]
        got = kinds.filter(step=n, kind="rank_wait")["ns"].sum()
        assert abs(got - want) <= max(0.10 * want, 500_000), (n, got, want)
        hosts.append(kinds.filter(step=n, kind="host_overhead")["ns"].sum())
        wants.append(want)
    # the wait is no host time (a loaded host adds some to a step now and then: the medians)
    assert statistics.median(hosts) < statistics.median(wants) / 4, (hosts, wants)


def _dashboard_headline(trace: Path) -> str:
    """The headline the dashboard draws for ``trace`` (a Pilot run of the app)."""
    from profui.tui.app import OpenTarget, ProfuiApp

    async def go() -> str:
        app = ProfuiApp(OpenTarget("trace", trace), poll_s=3600)
        async with app.run_test(size=(100, 30)) as pilot:
            view = await wait_dashboard(pilot, app)
            return str(view.query_one("#dash-headline").render())

    return asyncio.run(go())


@pytest.mark.parametrize("name", list(CAUSES))
def test_dashboard_headline_is_explains_top_finding(runs, name):
    doc = runs.explain(name)
    assert doc["findings"], f"{name}: no findings"
    top = doc["findings"][0]
    shown = _dashboard_headline(runs.trace(name))
    assert shown.startswith("Top finding: " + top["title"].rstrip(".")), (shown, top["title"])
    assert "GPU" not in shown  # CPU-only runs
