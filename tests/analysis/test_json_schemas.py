"""Every ``--json`` output validates against its schema (``profui schema NAME``,
:func:`profui.analysis.json_schema.document`) with the ``jsonschema`` library, on every shared
trace (Kineto, the Nsight exports) and every sample: ``summary`` (default and ``--hta-compat``),
``explain``, ``info``, ``diff`` of a trace against itself with and without ``--fail-if``, and a
diff of two different runs. A key an output grows without its schema fails: real documents with
one key added (top level, a section's row, a finding, a diff metric, a gate condition, a GPU of
the manifest), one value of the wrong type, a null where the column is not declared nullable, a
whole summary's sections or tables missing are each refused; a summary of some sections
(``--sections``) and one run over ranks validate with the sections and tables their notes say.

The outputs come from the functions the CLI prints (``run_summary``, ``explain``,
``trace_info``, ``diff_result``), serialised as the CLI serialises them, one import per trace.
"""

from __future__ import annotations

import copy
import json
import shutil
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from jsonschema import Draft202012Validator

from profui.analysis.json_schema import (
    BY_RANKS_NOTE,
    NAMES,
    SECTIONS_NOTE,
    VERSIONS,
    document,
    rows_schema,
    summary_tables,
)
from profui.analysis.schemas import TABLES, table
from profui.capture.ingest import import_trace

from realdata import REPO, nsys_export, require_shared_traces, shared_trace, traces_dir

#: Shared files that are not profiler traces (an execution trace, a memory timeline): refused.
NOT_TRACES = (
    "hta-execution_trace-benchmark_simple_add_et.json.gz",
    "hta-memory_analysis-memory_timeline.raw.gz",
)
DF_INDEX = "hta-df_index_resolver-df_index_resolver.json.gz"
NEGATIVE_QUEUE = "hta-negative_queue_length_values_check-rank0.json.gz"


def _sources() -> list[str]:
    d = traces_dir()
    shared = sorted(p.name for p in d.glob("hta-*.json*") if p.name not in NOT_TRACES) if d.is_dir() else []
    nsys = sorted(f"nsys/{p.name}" for p in (d / "nsys").glob("*.sqlite")) if d.is_dir() else []
    return [
        *(shared or ["(shared traces missing)"]),
        *nsys,
        "samples/mlp_cpu",
        "samples/synthetic_gpu",
        "samples/jax_cpu",
    ]


@pytest.fixture(scope="module")
def validators() -> dict[str, Draft202012Validator]:
    return {name: Draft202012Validator(document(name)) for name in NAMES}


@pytest.fixture(scope="module")
def imported(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Callable[[str], Path]]:
    """Each source as a trace folder, imported once (its own import cache, samples copied without
    their cached analyses)."""
    from profui.tui.cli.sources import resolve_source

    root = tmp_path_factory.mktemp("json-schemas")
    done: dict[str, Path] = {}

    def get(name: str) -> Path:
        if name in done:
            return done[name]
        if name.startswith("samples/"):
            path = root / Path(name).name
            shutil.copytree(REPO / name, path, ignore=shutil.ignore_patterns(".profui"))
            folder = path if (path / "manifest.json").is_file() else Path(resolve_source(path))  # JAX logs
        elif name.startswith("nsys/"):
            folder = Path(resolve_source(nsys_export(Path(name).stem)))
        else:
            require_shared_traces()
            folder = root / name.split(".json")[0]
            import_trace([shared_trace(name)], folder)
        done[name] = folder
        return folder

    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("PROFUI_CACHE", str(root / "cache"))
        yield get


def _as_printed(doc: Any, **dumps: Any) -> Any:
    """``doc`` as the CLI prints it, read back."""
    return json.loads(json.dumps(doc, **dumps))


def summary_json(trace: Path, hta_compat: bool = False) -> dict[str, Any]:
    from profui.tui.cli.summary_cmd import run_summary

    s = run_summary([trace], None, hta_compat, None, [], None, None, False)
    return _as_printed(s.to_json_dict(), allow_nan=False)


def explain_json(trace: Path) -> dict[str, Any]:
    from profui.tui.cli.explain_cmd import explain

    return _as_printed(explain([trace], None, None, None, None, None, False), allow_nan=False)


def info_json(trace: Path) -> dict[str, Any]:
    from profui.analysis.inventory import trace_info

    return _as_printed(trace_info(trace))


def diff_json(base: Path, new: Path, fail_if: list[str]) -> dict[str, Any]:
    from profui.tui.cli.diff_cmd import diff_result

    return _as_printed(diff_result(str(base), str(new), 15, fail_if), default=str)


def conditions_for(result: dict[str, Any]) -> list[str]:
    """A ``--fail-if`` condition for each metric of ``result`` both traces have, in the unit
    its kind takes (shares in points, times in µs, counts plain, the rest relative)."""
    out = []
    for name, m in result["metrics"].items():
        if m["delta"] is None:
            continue
        if m["unit"] == "share":
            out.append(f"{name}>+1pt")
        elif m["unit"] == "ns":
            out.append(f"{name}>+1us")
        elif m["unit"] == "count":
            out.append(f"{name}>+100")
        elif m["rel"] is not None:
            out.append(f"{name}>=+5%")
    return out


def errors(validator: Draft202012Validator, doc: Any) -> list[str]:
    """Each validation error as ``path: message`` (the first ten)."""
    found = sorted(validator.iter_errors(doc), key=lambda e: list(map(str, e.absolute_path)))
    return [f"{'/'.join(map(str, e.absolute_path))}: {e.message[:300]}" for e in found[:10]]


@pytest.mark.parametrize("name", _sources())
def test_every_output_validates_on_every_trace(name: str, imported, validators) -> None:
    trace = imported(name)
    docs = {
        "summary": summary_json(trace),
        "summary --hta-compat": summary_json(trace, hta_compat=True),
        "explain": explain_json(trace),
        "info": info_json(trace),
        "diff": diff_json(trace, trace, []),
    }
    conditions = conditions_for(docs["diff"])
    docs["diff --fail-if"] = diff_json(trace, trace, conditions)
    from profui.capture.format import open_trace_dir

    raw = open_trace_dir(trace).manifest.gpus
    shown = docs["info"]["manifest"]["gpus"]
    assert [{**{k: v for k, v in g.items() if k != "more"}, **g.get("more", {})} for g in shown] == raw
    for what, doc in docs.items():
        kind = what.split()[0]
        assert doc["version"] == VERSIONS[kind], what
        assert not errors(validators[kind], doc), (what, errors(validators[kind], doc))
    assert docs["diff"]["gate"] is None
    gate = docs["diff --fail-if"]["gate"]
    if conditions:
        assert [c["condition"] for c in gate["conditions"]] == conditions
        # a trace against itself: every change is 0 and none of these conditions holds at 0
        assert gate["passed"] is True and all(
            c["change"] == 0 and not c["broken"] for c in gate["conditions"]
        )
        assert not errors(validators["gate"], gate)
    else:  # no metric both traces have (a trace with no device work, no steps): nothing to gate on
        assert gate is None


def test_two_different_runs_diff_validates(imported, validators) -> None:
    base, new = imported(DF_INDEX), imported(NEGATIVE_QUEUE)
    plain = diff_json(base, new, [])
    assert not errors(validators["diff"], plain)
    gated = diff_json(base, new, conditions_for(plain))
    assert not errors(validators["diff"], gated), errors(validators["diff"], gated)
    assert gated["gate"]["passed"] is not any(c["broken"] for c in gated["gate"]["conditions"])


def test_gate_says_why_a_met_condition_did_not_break(imported, validators) -> None:
    """Hand-checked on a trace against itself: every change is 0, so ``>=+0`` is met by each; the
    median step's bootstrap interval holds 0 (the same steps on both sides): within step-to-step
    noise, so it holds; a count has no noise rule, so it breaks."""
    trace = imported("samples/synthetic_gpu")
    doc = diff_json(trace, trace, ["step_p50>=+0%", "kernel_count>=+0"])
    assert not errors(validators["diff"], doc)
    step, count = doc["gate"]["conditions"]
    lo, hi = doc["metrics"]["step_p50"]["ci95"]
    assert lo <= 0 <= hi
    assert (step["change"], step["broken"], step["within_noise"]) == (0.0, False, True)
    assert "within step-to-step noise" in step["line"]
    assert (count["change"], count["broken"], count["within_noise"]) == (0, True, False)
    assert (step["op"], step["threshold"], step["unit"], count["unit"]) == (">=", 0.0, "%", "")
    assert doc["gate"]["passed"] is False


# -- a key the schema lacks, a value of the wrong type: refused ------------------------------


@pytest.fixture(scope="module")
def real_docs(imported) -> dict[str, dict[str, Any]]:
    trace = imported("samples/synthetic_gpu")
    return {
        "summary": summary_json(trace),
        "explain": explain_json(trace),
        "info": info_json(trace),
        "diff": diff_json(trace, trace, ["step_p50>+5%"]),
    }


def _first_row(doc: dict[str, Any]) -> dict[str, Any]:
    return next(rows[0] for tables in doc["sections"].values() for rows in tables.values() if rows)


MUTATIONS: dict[str, tuple[str, Callable[[dict[str, Any]], None]]] = {
    "summary: top-level key": ("summary", lambda d: d.update(extra=1)),
    "summary: key in a section's row": ("summary", lambda d: _first_row(d).update(extra=1)),
    "summary: table no stage writes": ("summary", lambda d: d["sections"]["kernels"].update(extra=[])),
    "summary: wrong type in a row": (
        "summary",
        lambda d: d["sections"]["kernels"]["stats"][0].update(count="1"),
    ),
    "summary: takeaway of no chart": ("summary", lambda d: d["takeaways"].update(no_chart="text")),
    "summary: null in a column not nullable": (
        "summary",
        lambda d: d["sections"]["kernels"]["stats"][0].update(name=None),
    ),
    "summary: a row of nulls": (
        "summary",
        lambda d: d["sections"]["kernels"]["top_by_time"].append(
            dict.fromkeys(d["sections"]["kernels"]["top_by_time"][0])
        ),
    ),
    "summary: no sections": ("summary", lambda d: d.update(sections={})),
    "summary: a section left out without a note": ("summary", lambda d: d["sections"].pop("idle")),
    "summary: a table left out": ("summary", lambda d: d["sections"]["kernels"].pop("runtime")),
    "summary: wrong version": ("summary", lambda d: d.update(version=VERSIONS["summary"] + 1)),
    "explain: top-level key": ("explain", lambda d: d.update(extra=1)),
    "explain: key in a finding": ("explain", lambda d: d["findings"][0].update(extra=1)),
    "explain: key in evidence": ("explain", lambda d: d["findings"][0]["evidence"][0].update(extra=1)),
    "explain: wrong type in a finding": (
        "explain",
        lambda d: d["findings"][0].update(recoverable_ns_per_step="12 ms"),
    ),
    "explain: kind no path has": ("explain", lambda d: d["critical_path"]["by_kind"].update(nap=1)),
    "explain: key in a path event": ("explain", lambda d: d["critical_path"]["events"][0].update(extra=1)),
    "explain: null title": ("explain", lambda d: d["findings"][0].update(title=None)),
    "explain: null evidence value": ("explain", lambda d: d["findings"][0]["evidence"][0].update(value=None)),
    "explain: null seq of a path event": (
        "explain",
        lambda d: d["critical_path"]["events"][0].update(seq=None),
    ),
    "explain: null rank of a finding": ("explain", lambda d: d["findings"][0]["ranks"].append(None)),
    "info: top-level key": ("info", lambda d: d.update(extra=1)),
    "info: key in the manifest": ("info", lambda d: d["manifest"].update(extra=1)),
    "info: wrong type": ("info", lambda d: d.update(num_events=1.5)),
    "info: key in a GPU": ("info", lambda d: d["manifest"]["gpus"][0].update(extra=1)),
    "info: GPU name a number": ("info", lambda d: d["manifest"]["gpus"][0].update(name=3)),
    "diff: top-level key": ("diff", lambda d: d.update(extra=1)),
    "diff: key in a metric": ("diff", lambda d: d["metrics"]["step_p50"].update(extra=1)),
    "diff: key in a gate condition": ("diff", lambda d: d["gate"]["conditions"][0].update(extra=1)),
    "diff: gate as a list (version 1)": ("diff", lambda d: d.update(gate=d["gate"]["conditions"])),
    "diff: wrong type in a kernel row": ("diff", lambda d: d["kernels"][0].update(delta_ns="1")),
}


@pytest.mark.parametrize("case", list(MUTATIONS))
def test_a_key_the_schema_lacks_or_a_wrong_type_fails(case: str, real_docs, validators) -> None:
    kind, mutate = MUTATIONS[case]
    doc = copy.deepcopy(real_docs[kind])
    assert not errors(validators[kind], doc)
    mutate(doc)
    assert errors(validators[kind], doc), f"{case}: validated"


# -- the schemas themselves -------------------------------------------------------------------


@pytest.mark.parametrize("name", NAMES)
def test_each_schema_is_a_2020_12_schema(name: str) -> None:
    doc = document(name)
    Draft202012Validator.check_schema(doc)
    assert doc["$schema"] == "https://json-schema.org/draft/2020-12/schema"
    assert doc["$id"] == f"urn:profui:schema:{name}:{VERSIONS[name]}"
    assert doc["title"] and doc["description"]


def test_rows_schema_types_columns_by_dtype() -> None:
    """Hand-checked on ``findings/findings.parquet``: Int64 → integer, Float64 → number, String →
    string, List(Int64) → array of integers (items never null); null only in the columns
    declared nullable (the worst instance: at_rank, at_step, at_ns), none beyond the declared."""
    tbl = table("findings", "findings")
    s = rows_schema(tbl)
    row = s["items"]
    assert s["type"] == "array" and row["additionalProperties"] is False
    props = row["properties"]
    assert list(props) == list(tbl.names) and row["required"] == list(tbl.names)
    assert props["position"]["type"] == "integer"
    assert props["recoverable_share"]["type"] == "number"
    assert props["title"]["type"] == "string"
    assert props["ranks"]["type"] == "array" and props["ranks"]["items"]["type"] == "integer"
    assert props["look_at"]["items"]["type"] == "string"
    assert [k for k, p in props.items() if "null" in p["type"]] == ["at_rank", "at_step", "at_ns"]
    assert props["at_ns"]["type"] == ["integer", "null"]
    assert "mean per analysed step" in props["recoverable_ns_per_step"]["description"]
    assert "[ns]" in props["recoverable_ns_per_step"]["description"]


def test_optional_columns_are_not_required() -> None:
    tbl = TABLES[("kernels", "stats.parquet")]
    row = rows_schema(tbl)["items"]
    optional = {c.name for c in tbl.columns if c.optional}
    assert optional == {"node", "rank"} and not optional & set(row["required"])
    assert set(row["required"]) == set(tbl.names) - optional


# -- nulls where declared; the sections a summary holds ----------------------------------------


def test_a_null_where_declared_validates(real_docs, validators) -> None:
    """A finding with no one worst instance (at_* null), a rank with one step (std null)."""
    explain = copy.deepcopy(real_docs["explain"])
    explain["findings"][0]["timeline"] = {"rank": None, "step": None, "ts_ns": None}
    assert not errors(validators["explain"], explain)
    summary = copy.deepcopy(real_docs["summary"])
    summary["sections"]["steps"]["stats"][0]["std_ns"] = None
    assert not errors(validators["summary"], summary)


def test_summary_tables_are_the_whole_summarys(real_docs) -> None:
    """The sections and tables the schema requires are those a whole summary holds: 15 sections,
    66 tables (every table of them but the four detail tables)."""
    doc = real_docs["summary"]
    got = {stage: list(tables) for stage, tables in doc["sections"].items()}
    assert got == summary_tables()
    assert (len(got), sum(map(len, got.values()))) == (15, 66)


def test_sections_and_a_run_over_ranks_validate_as_their_notes_say(imported, validators) -> None:
    """``--sections steps,idle`` holds those two, all their tables, and a note naming the rest; a
    run over ranks every section (as the whole summary's) and no such note; under
    ``hta_compat`` the per-rank and job tables, the path and the findings, and a note saying
    what it leaves out. Each
    validates; without its note (or with the sections emptied) it does not."""
    from profui.tui.cli.summary_cmd import json_document, run_summary

    trace = imported("samples/synthetic_gpu")
    whole = run_summary([trace], None, False, None, [], None, None, False)
    some = _as_printed(json_document(whole, ["steps", "idle"]), allow_nan=False)
    assert list(some["sections"]) == ["steps", "idle"]
    assert some["notes"][-1].startswith(SECTIONS_NOTE)
    assert not errors(validators["summary"], some)
    assert errors(validators["summary"], {**some, "notes": some["notes"][:-1]})
    partial = copy.deepcopy(some)
    partial["sections"]["idle"].pop("queue")
    assert errors(validators["summary"], partial)

    whole_tables = {s: list(ts) for s, ts in whole.to_json_dict()["sections"].items()}
    every = _as_printed(
        run_summary([trace], None, False, None, [], None, 2, False).to_json_dict(), allow_nan=False
    )
    assert {stage: list(tables) for stage, tables in every["sections"].items()} == whole_tables
    assert not any(n.startswith(BY_RANKS_NOTE) for n in every["notes"])
    assert not errors(validators["summary"], every)

    ranks = _as_printed(
        run_summary([trace], None, True, None, [], None, 2, False).to_json_dict(), allow_nan=False
    )
    got = {stage: list(tables) for stage, tables in ranks["sections"].items()}
    # every table a run by ranks always gives, in the whole summary's order
    always = summary_tables(by_ranks=True)
    assert all(set(names) <= set(got.get(stage, ())) for stage, names in always.items())
    assert list(got) == [s for s in whole_tables if s in got]
    assert all(ts == [t for t in whole_tables[s] if t in ts] for s, ts in got.items())
    assert "critical_path" in got and "findings" in got  # HTA's path is per rank
    assert any(n.startswith(BY_RANKS_NOTE) for n in ranks["notes"])
    assert not errors(validators["summary"], ranks)
    assert errors(validators["summary"], {**ranks, "sections": {}})
    unnoted = {**ranks, "notes": [n for n in ranks["notes"] if not n.startswith(BY_RANKS_NOTE)]}
    assert errors(validators["summary"], unnoted)


def test_gpu_item_keeps_what_the_trace_said() -> None:
    """Hand-checked: known keys of their type kept in GPU_KEYS' order; an unknown key and a known
    key of another type under ``more``; nothing else added."""
    from profui.analysis.inventory import gpu_item

    raw = {"name": "A100", "node": "n0", "id": 1, "fanSpeed": 3, "numSms": "108", "warpSize": True}
    assert gpu_item(raw) == {
        "node": "n0",
        "id": 1,
        "name": "A100",
        "more": {"fanSpeed": 3, "numSms": "108", "warpSize": True},
    }
    assert gpu_item({"index": 0}) == {"index": 0}
