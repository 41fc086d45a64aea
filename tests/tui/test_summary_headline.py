"""``profui summary``'s first line is the top finding, or truthfully why there is none; the JSON
carries the findings once (its ``findings`` section), no headline beside them.

Hand-made findings tables hold the wording rules; real runs hold the surface: a CPU training run
recorded here with a 20 ms sleep between steps, a sample with step markers and the shared Nsight
export without any. Oracle: the rows of ``summary --json``'s findings and steps sections."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import polars as pl
import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "capture"))

from test_profcap_support import TRAIN, run_profcap  # noqa: E402

from profui.analysis.formatting import fmt_ns  # noqa: E402
from profui.analysis.headline import headline  # noqa: E402
from profui.analysis.schemas import TABLES  # noqa: E402

from realdata import SAMPLES, run_profui, traces_dir  # noqa: E402

MS = 1_000_000


def findings(*rows: dict) -> pl.DataFrame:
    empty = TABLES[("findings", "findings.parquet")].empty()
    full = [
        {
            **{c: None for c in empty.columns},
            "ranks": [0],
            "steps": [1],
            "look_at": [],
            "next_step": "",
            **r,
        }
        for r in rows
    ]
    return pl.DataFrame(full, schema=empty.schema) if full else empty


def windows(*names: str) -> pl.DataFrame:
    return pl.DataFrame({"name": list(names)}, schema={"name": pl.String})


def test_the_top_finding_is_position_one_with_its_time_per_step() -> None:
    f = findings(
        {"position": 2, "category": "input", "severity": "low", "title": "Data loading: 1 ms per step (5%)",
         "recoverable_ns_per_step": MS, "recoverable_share": 0.05},
        {"position": 1, "category": "host", "severity": "high",
         "title": "Host time outside any op on the critical path: 20.9 ms per step (98%)",
         "recoverable_ns_per_step": 20_900_000, "recoverable_share": 0.98},
    )  # fmt: skip
    # the title says its recoverable time per step already: said once
    assert headline(f) == "Top finding: Host time outside any op on the critical path: 20.9 ms per step (98%)"
    # a title that does not say it gets it: 2.5 ms of 10 ms is 25%
    bare = f.with_columns(
        pl.when(pl.col("position") == 1).then(pl.lit("Host stall")).otherwise("title").alias("title")
    )
    bare = bare.with_columns(
        pl.when(pl.col("position") == 1)
        .then(2_500_000)
        .otherwise("recoverable_ns_per_step")
        .alias("recoverable_ns_per_step"),
        pl.when(pl.col("position") == 1).then(0.25).otherwise("recoverable_share").alias("recoverable_share"),
    )
    assert headline(bare) == "Top finding: Host stall: 2.5 ms per step (25%)"
    risk = findings(
        {"position": 1, "category": "memory", "severity": "medium", "title": "Memory floor rises every step.",
         "recoverable_ns_per_step": 0, "recoverable_share": 0.0}
    )  # fmt: skip
    assert (
        headline(risk)
        == "Top finding: Memory floor rises every step (medium risk, no time to recover per step)"
    )
    # without step markers the one window is the whole trace: per trace, the same rule
    assert headline(bare, windows("(whole trace)")) == "Top finding: Host stall: 2.5 ms per trace (25%)"
    assert headline(risk, windows("(whole trace)")).endswith("(medium risk, no time to recover per trace)")


def test_no_finding_says_why() -> None:
    none = findings()
    assert headline(none, windows("(whole trace)")) == (
        "No finding: no step markers, so no critical path to rank changes on."
    )
    marked = windows("ProfilerStep#4", "ProfilerStep#5")
    cp_empty = TABLES[("critical_path", "steps.parquet")].empty()
    assert (
        headline(none, marked, cp_empty)
        == "No finding: no step was analysed, so no critical path to rank changes on."
    )
    cp_one = pl.DataFrame(
        [{"node": "n", "rank": 0, "step": 4, "start_ns": 0, "end_ns": 10, "length_ns": 10}],
        schema=cp_empty.schema,
    )
    assert headline(none, marked, cp_one) == (
        "No finding: nothing on the critical path would save ≥ 1% of a step, and no risk was found."
    )
    # no step markers, yet the stage took the whole trace's path as one window (an Nsight
    # export): there is a critical path, the line says whose, and no step is named
    whole = cp_one.with_columns(pl.lit(0, pl.Int64).alias("step"))
    assert headline(none, windows("(whole trace)"), whole) == (
        "No finding: nothing on the critical path of the whole trace (no step markers: one window) "
        "would save ≥ 1% of its time, and no risk was found."
    )
    assert headline(none, windows("(whole trace)"), cp_empty) == (
        "No finding: no step markers, so no critical path to rank changes on."
    )


def summary(trace: Path, cache: Path) -> tuple[str, dict]:
    text = run_profui("summary", trace, cache=cache, COLUMNS="200")
    doc = run_profui("summary", trace, "--json", cache=cache)
    assert text.returncode == 0 and doc.returncode == 0, text.stderr + doc.stderr
    return text.stdout, json.loads(doc.stdout)


def test_a_host_stall_run_leads_with_its_top_finding(tmp_path) -> None:
    proc, trace = run_profcap(tmp_path, ["--steps", "4-9"], TRAIN, env={"STEPS": "12", "SLEEP": "0.02"})
    assert proc.returncode == 0, proc.stderr[-2000:]
    text, doc = summary(trace, tmp_path / "cache")
    # the JSON has the findings once, in their section; no headline key beside them
    assert set(doc) == {"version", "trace", "params", "takeaways", "notes", "sections"}
    rows = sorted(doc["sections"]["findings"]["findings"], key=lambda r: r["position"])
    if not rows:
        pytest.fail("no findings on a run with a 20 ms host stall per step (critical_path/findings stages)")
    top = rows[0]
    first = text.splitlines()[0]
    assert first.startswith("Top finding: ") and top["title"].rstrip(".") in first, (first, top)
    # the first line says the top finding's time per step as the JSON holds it
    assert top["category"] == "host" and fmt_ns(top["recoverable_ns_per_step"]) + " per step" in first


def test_the_shared_nsight_export_leads_with_its_transfer_finding(tmp_path) -> None:
    src = traces_dir() / "nsys" / "h100_2gpu_1s.sqlite"
    if not src.is_file():
        pytest.fail(f"{src} not found")
    text, doc = summary(src, tmp_path)
    first = text.splitlines()[0]
    # no step markers: the whole trace is the one window, and its path is still taken
    assert {w["name"] for w in doc["sections"]["steps"]["windows"]} == {"(whole trace)"}
    rows = sorted(doc["sections"]["findings"]["findings"], key=lambda r: r["position"])
    # the GPUs spend the run copying host to device (issue 36): the top finding is transfer
    assert rows and rows[0]["category"] == "transfer", rows[:2]
    assert first.startswith("Top finding: ") and rows[0]["title"].rstrip(".") in first
    assert "launch-bound" not in " ".join(r["title"] for r in rows)
    # the one window is the whole trace: its time is per trace, no step is named
    assert " per trace (" in first and "step" not in first


def test_a_sample_with_steps_never_says_it_has_none(tmp_path) -> None:
    text, doc = summary(SAMPLES / "mlp_cpu", tmp_path)
    assert {w["name"] for w in doc["sections"]["steps"]["windows"]} != {"(whole trace)"}
    assert "no step markers" not in text.splitlines()[0]


def test_a_summary_by_ranks_opens_with_the_whole_traces_finding(tmp_path) -> None:
    """By ranks the critical path and the findings are the whole trace's: the same first line,
    with ``--hta-compat`` too."""
    for hta in ((), ("--hta-compat",)):
        whole = run_profui("summary", SAMPLES / "mlp_cpu", *hta, cache=tmp_path, COLUMNS="200")
        by_ranks = run_profui(
            "summary", SAMPLES / "mlp_cpu", "--workers", "2", *hta, cache=tmp_path, COLUMNS="200"
        )
        assert whole.returncode == 0 and by_ranks.returncode == 0, whole.stderr + by_ranks.stderr
        assert by_ranks.stdout.splitlines()[0] == whole.stdout.splitlines()[0]
    # the default run's line is a finding (under --hta-compat, HTA's path has no what-if: none)
    assert run_profui("summary", SAMPLES / "mlp_cpu", cache=tmp_path).stdout.startswith("Top finding: ")


def test_a_wrapped_headline_hangs_under_its_first_line(tmp_path) -> None:
    wide = run_profui("summary", SAMPLES / "mlp_cpu", cache=tmp_path, COLUMNS="300", NO_COLOR="1")
    narrow = run_profui("summary", SAMPLES / "mlp_cpu", cache=tmp_path, COLUMNS="60", NO_COLOR="1")
    assert wide.returncode == 0 and narrow.returncode == 0, wide.stderr + narrow.stderr
    one = wide.stdout.splitlines()[0]
    assert one.startswith("Top finding: ") and len(one) > 60  # it has to wrap at 60
    lines = narrow.stdout.splitlines()
    end = next(i for i, line in enumerate(lines) if line.startswith("mlp_cpu "))  # the trace's line
    assert end > 1 and all(line.startswith("  ") for line in lines[1:end]), lines[:end]
    assert all(len(line) <= 60 for line in lines[:end])
    assert " ".join(line.strip() for line in lines[:end]) == one
