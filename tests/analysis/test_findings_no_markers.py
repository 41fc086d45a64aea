"""A trace without step markers is analysed as one window, the whole trace, and says so: explain's
note, its findings' titles and evidence, its text and the summary's first line speak per trace,
never of a step (review finding, issue 39: an Nsight export said "step 0 is the job's median
analysed step" and "per step").

Real inputs: the shared Nsight exports (their NVTX tables hold no ``ProfilerStep`` range, read
with sqlite3) and a shared Kineto trace with two ``ProfilerStep#`` markers, stripped of them in
plain Python; the unstripped trace is the control that still speaks per step."""

from __future__ import annotations

import gzip
import json
import re
import sqlite3
from pathlib import Path

import pytest

from realdata import run_profui, shared_trace, traces_dir

NOTE = "no step markers: the whole trace is analysed as one window"
KINETO = "hta-trace_filter-sampled_rank-0.json.gz"
#: Words that name a step (the whole trace is no step): "step 0", "per step", "step time", "steps".
STEP_WORDS = re.compile(r"\bsteps?\b(?! on a side stream)", re.IGNORECASE)


def nsight_exports() -> list[Path]:
    found = sorted((traces_dir() / "nsys").glob("*.sqlite"))
    if not found:
        pytest.skip(f"no Nsight export in {traces_dir() / 'nsys'}")
    return found


def explain(trace: Path, cache: Path) -> tuple[dict, str]:
    doc = run_profui("explain", trace, "--json", cache=cache)
    text = run_profui("explain", trace, cache=cache, COLUMNS="200")
    assert doc.returncode == 0 and text.returncode == 0, doc.stderr + text.stderr
    return json.loads(doc.stdout), text.stdout


def said(doc: dict) -> list[str]:
    """What explain's JSON says in words about the findings: titles, evidence labels, headline."""
    out = [doc["headline"]]
    for f in doc["findings"]:
        out += [f["title"], *(e["label"] for e in f["evidence"])]
    return out


def assert_whole_trace(doc: dict, text: str) -> None:
    assert NOTE in doc["notes"] and not any("median analysed step" in n for n in doc["notes"])
    assert doc["findings"], "no finding"
    for words in said(doc):
        assert not STEP_WORDS.search(words), words
    timed = [f for f in doc["findings"] if f["recoverable_ns_per_step"] > 0]
    assert timed and all(" per trace (" in f["title"] and "of trace time)" in f["title"] for f in timed)
    assert "per trace" in doc["headline"]
    # the text: the note, the path of the whole trace, each worst instance by rank and time only
    assert f"note: {NOTE}" in text and "Critical path of the whole trace on rank " in text
    assert not re.search(r"\bstep \d", text), text
    worst = [line for line in text.splitlines() if line.strip().startswith("worst:")]
    assert worst and all(re.fullmatch(r"\s*worst: rank \d+ at .+ into the trace", w) for w in worst), worst


def test_an_nsight_export_without_markers_speaks_per_trace(tmp_path):
    for export in nsight_exports():
        with sqlite3.connect(f"file:{export}?mode=ro", uri=True) as db:
            marked = db.execute(
                "SELECT count(*) FROM NVTX_EVENTS WHERE text LIKE 'ProfilerStep%'"
            ).fetchone()[0]
        assert marked == 0, export  # the premise: no step markers
        doc, text = explain(export, tmp_path / export.stem)
        assert_whole_trace(doc, text)
        first = run_profui(
            "summary", export, cache=tmp_path / export.stem, COLUMNS="300"
        ).stdout.splitlines()[0]
        assert first == doc["headline"] and "per trace" in first and not STEP_WORDS.search(first)


def test_a_kineto_trace_stripped_of_its_step_markers_speaks_per_trace(tmp_path):
    with gzip.open(shared_trace(KINETO), "rt") as f:
        raw = json.load(f)
    markers = [e for e in raw["traceEvents"] if str(e.get("name", "")).startswith("ProfilerStep#")]
    assert len(markers) == 2  # the control has two steps
    control, control_text = explain(shared_trace(KINETO), tmp_path / "control")
    assert NOTE not in control["notes"] and " per step (" in control["findings"][0]["title"]
    assert re.search(r"worst: rank \d+, step \d+", control_text)
    raw["traceEvents"] = [e for e in raw["traceEvents"] if e not in markers]
    stripped = tmp_path / "stripped.json"
    stripped.write_text(json.dumps(raw))
    doc, text = explain(stripped, tmp_path / "cache")
    assert_whole_trace(doc, text)
    # one window: its path is the one the findings measure, not a mean over steps
    for f in doc["findings"]:
        ev = {e["label"]: e["value"] for e in f["evidence"]}
        if "critical path per trace" in ev:
            assert ev["critical path per trace"] == doc["critical_path"]["length_ns"]
