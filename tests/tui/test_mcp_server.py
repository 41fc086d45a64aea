"""``profui mcp`` as an agent meets it: the real command started as a subprocess, driven by the
official SDK's stdio client (``mcp.client.stdio`` + ``ClientSession``), which also validates
each result against the tool's declared output schema.

Oracles: the commands' own ``--json`` (run as subprocesses on the same trace, one PROFUI_CACHE
shared by both) for summary, explain, diff and info; plain-Python sums over the raw events for
``top`` and ``events`` (the trace folder's Parquet rows read with pyarrow, and for the Kineto
trace the JSON file itself); the ``[memory]`` events' running sum for ``memory_peak``.
"""

from __future__ import annotations

import gzip
import json
import os
import shutil
import subprocess
import sys
import time
from collections import defaultdict
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("mcp")

import anyio  # noqa: E402
from mcp.client.session import ClientSession  # noqa: E402
from mcp.client.stdio import StdioServerParameters, stdio_client  # noqa: E402

from ddp_job import record_ddp  # noqa: E402
from realdata import PROFUI, SAMPLES, nsys_export, run_profui, shared_trace  # noqa: E402

KINETO = "hta-df_index_resolver-df_index_resolver.json.gz"  # 1 rank, 5 steps, [memory] events
NSYS = "h100_2gpu_1s"  # 2 ranks, no memory events
TOOLS = {"list_traces", "import_trace", "summary", "explain", "diff", "top", "events", "memory_peak"}


@pytest.fixture(scope="module")
def cache(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """One import and baseline cache for the server and the commands it is compared with."""
    return tmp_path_factory.mktemp("mcp-cache")


@pytest.fixture(scope="module")
def cpu_run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A recorded CPU torch run (the mlp sample, copied: analyses write under the trace)."""
    dst = tmp_path_factory.mktemp("cpu") / "mlp_cpu"
    shutil.copytree(SAMPLES / "mlp_cpu", dst, ignore=shutil.ignore_patterns(".profui"))
    return dst


def session_calls(
    cache: Path,
    calls: list[tuple[str, dict[str, Any]]],
    progress: list | None = None,
    command: list[str] | None = None,
    stderr: Path | None = None,
) -> list[Any]:
    """Start ``profui mcp`` (or ``command``), list its tools, make ``calls`` in order; the tools
    listing and each call's result (a CallToolResult), each call bounded to 240 s. The server's
    stderr goes to ``stderr`` when given."""

    async def main() -> list[Any]:
        exe, *args = command or [PROFUI, "mcp"]
        params = StdioServerParameters(command=exe, args=args, env={"PROFUI_CACHE": str(cache)})
        out: list[Any] = []
        with open(stderr or os.devnull, "w") as errlog:
            async with stdio_client(params, errlog=errlog) as (read, write), ClientSession(read, write) as s:
                await s.initialize()
                out.append((await s.list_tools()).tools)

                async def on_progress(value: float, total: float | None, message: str | None) -> None:
                    if progress is not None:
                        progress.append((value, total, message))

                for name, args in calls:
                    with anyio.fail_after(240):
                        out.append(await s.call_tool(name, args, progress_callback=on_progress))
        return out

    return anyio.run(main)


def ok(result: Any) -> dict[str, Any]:
    """The structured content of a successful call, checked to be the text copy too."""
    assert not result.is_error, result.content[0].text
    assert json.loads(result.content[0].text) == result.structured_content
    return result.structured_content


def cli_json(cache: Path, *args: str | Path) -> Any:
    proc = run_profui(*args, "--json", cache=cache)
    assert proc.returncode == 0, proc.stderr[-2000:]
    return json.loads(proc.stdout)


def traces(cpu_run: Path) -> dict[str, Path]:
    return {"kineto": shared_trace(KINETO), "nsys": nsys_export(NSYS), "cpu": cpu_run}


# -- schemas ---------------------------------------------------------------------------------------


def nested_objects(value: Any, path: tuple = ()) -> dict[tuple, tuple]:
    """The objects inside ``value`` (not itself), one per place in its shape: ``{shape: path}``
    (the shape a path with each list index 0)."""
    items = value.items() if isinstance(value, dict) else enumerate(value) if isinstance(value, list) else []
    out: dict[tuple, tuple] = {}
    for k, v in items:
        here = (*path, k)
        if isinstance(v, dict):
            out.setdefault(tuple(0 if isinstance(p, int) else p for p in here), here)
        for shape, full in nested_objects(v, here).items():
            out.setdefault(shape, full)
    return out


def test_every_tool_has_an_input_and_an_output_schema(cache: Path, cpu_run: Path) -> None:
    """Each output schema (JSON Schema 2020-12, checked by jsonschema) validates a real result of
    its tool and refuses it with one more key, at the top and in each object inside."""
    import copy

    from jsonschema import Draft202012Validator

    trace = str(shared_trace(KINETO))
    tools, *results = session_calls(
        cache,
        [
            ("list_traces", {"folder": str(cpu_run.parent)}),
            ("import_trace", {"path": trace}),
            ("summary", {"trace": trace, "sections": ["all"]}),
            ("explain", {"trace": trace}),
            ("diff", {"base": str(cpu_run), "new": str(cpu_run), "fail_if": ["step_p50>+5%"]}),
            ("top", {"trace": trace, "what": "annotations", "step": 3}),
            ("events", {"trace": trace, "step": 3, "limit": 20}),
            ("memory_peak", {"trace": trace}),
        ],
    )
    assert {t.name for t in tools} == TOOLS
    by_tool = {t.name: t for t in tools}
    names = ["list_traces", "import_trace", "summary", "explain", "diff", "top", "events", "memory_peak"]
    for name, result in zip(names, results, strict=True):
        doc = ok(result)
        check = Draft202012Validator(by_tool[name].output_schema)
        assert not list(check.iter_errors(doc)), name
        assert not check.is_valid({**doc, "extra": 1}), name
        inner = nested_objects(doc).values()
        assert inner or name == "list_traces", name
        for path in inner:
            grown = copy.deepcopy(doc)
            target = grown
            for k in path:
                target = target[k]
            target["profui_extra_key"] = {"not": ["a value of this object"]}
            assert not check.is_valid(grown), (name, path)
    for t in tools:
        assert t.input_schema["type"] == "object" and t.input_schema.get("properties"), t.name
        assert t.output_schema and t.output_schema.get("type") == "object", t.name
        assert len(t.description) > 80, t.name  # written for an agent choosing a tool
    by_name = {t.name: t for t in tools}
    assert set(by_name["events"].input_schema["properties"]) == {
        "trace",
        "rank",
        "step",
        "start_ns",
        "end_ns",
        "limit",
    }
    assert by_name["top"].input_schema["properties"]["what"]["enum"] == ["kernels", "ops", "annotations"]


# -- the commands' documents -----------------------------------------------------------------------


@pytest.mark.parametrize("kind", ["kineto", "nsys", "cpu"])
def test_summary_explain_info_equal_the_commands_json(kind: str, cache: Path, cpu_run: Path) -> None:
    trace = str(traces(cpu_run)[kind])
    _, imported, summary, summary_top, brief, explain, explain_step = session_calls(
        cache,
        [
            ("import_trace", {"path": trace}),
            ("summary", {"trace": trace, "sections": ["all"]}),
            ("summary", {"trace": trace, "top": 3, "hta_compat": kind == "kineto", "sections": ["all"]}),
            ("summary", {"trace": trace, "sections": ["steps", "findings"]}),
            ("explain", {"trace": trace, "path_events": None}),
            ("explain", {"trace": trace, "step": None, "rank": None, "top": 2}),
        ],
    )
    imp = ok(imported)
    assert imp["info"] == cli_json(cache, "info", trace)
    assert Path(imp["trace"]) == Path(imp["info"]["path"])
    assert ok(summary) == cli_json(cache, "summary", trace)
    hta = ["--hta-compat"] if kind == "kineto" else []
    assert ok(summary_top) == cli_json(cache, "summary", trace, "--top", "3", *hta)
    assert ok(brief) == cli_json(cache, "summary", trace, "--sections", "steps,findings")
    assert ok(explain) == cli_json(cache, "explain", trace)
    assert ok(explain_step) == cli_json(cache, "explain", trace, "--top", "2", "--path-events", "40")


def test_explain_of_a_step_and_rank_equals_the_commands_json(cache: Path) -> None:
    trace = str(nsys_export(NSYS))
    _, doc = session_calls(cache, [("explain", {"trace": trace, "step": 0, "rank": 1})])
    assert ok(doc) == cli_json(cache, "explain", trace, "--step", "0", "--rank", "1", "--path-events", "40")
    assert ok(doc)["rank"] == 1


def test_diff_of_traces_and_of_a_saved_baseline_equals_the_commands_json(cache: Path, cpu_run: Path) -> None:
    before, after = str(nsys_export("mfu_2gpu_before")), str(nsys_export("mfu_2gpu_after"))
    saved = run_profui("diff", "--save-baseline", "mcp-test-base", str(cpu_run), cache=cache)
    assert saved.returncode == 0, saved.stderr
    gate = ["kernel_time>+5%", "idle_pct>+3pt"]
    _, pair, baseline = session_calls(
        cache,
        [
            ("diff", {"base": before, "new": after, "fail_if": gate}),
            ("diff", {"base": "mcp-test-base", "new": str(cpu_run), "top": 0}),
        ],
    )
    cli = run_profui(
        "diff", before, after, "--json", *(a for g in gate for a in ("--fail-if", g)), cache=cache
    )
    assert cli.returncode in (0, 1), cli.stderr  # 1: a condition broke; the document is printed whole
    got = ok(pair)
    assert got == json.loads(cli.stdout)
    assert all(json.dumps(g) in json.dumps(got["gate"]) for g in gate)  # each condition's verdict
    assert ok(baseline) == cli_json(cache, "diff", "baseline:mcp-test-base", cpu_run, "--top", "0")


# -- raw-event oracles -----------------------------------------------------------------------------


def raw_events(folder: Path) -> list[dict[str, Any]]:
    """Every event row of a trace folder, read with pyarrow, its rank from the folder name."""
    import pyarrow.parquet as pq

    rows = []
    for f in sorted(folder.glob("node=*/rank=*/events-*.parquet")):
        rank = int(f.parent.name.removeprefix("rank="))
        rows += [{**r, "rank": rank} for r in pq.read_table(f).to_pylist()]
    return rows


def step_windows(
    rows: list[dict[str, Any]], step: int, rank: int
) -> tuple[tuple[int, int], tuple[int, int] | None]:
    """The host window of ``step`` on ``rank`` (its step marker, else step 0 is the rank's whole
    span) and its device window as HTA
    takes it: from the first launch call in the host window to the end of the last device event
    those launches started (matched by correlation)."""
    marks = [r for r in rows if r["rank"] == rank and r["kind"] == "step"]
    if marks:
        (mark,) = [r for r in marks if r["name"].endswith(f"#{step}")]
        host = (mark["ts"], mark["ts"] + mark["dur"])
    else:  # no step markers (the Nsight exports): step 0 is the rank's whole span, instants aside
        spans = [(r["ts"], r["ts"] + r["dur"]) for r in rows if r["rank"] == rank and r["kind"] != "instant"]
        host = (min(a for a, _ in spans), max(b for _, b in spans))
    launches = [
        r
        for r in rows
        if r["rank"] == rank
        and r["kind"] in ("runtime", "driver")
        and r["correlation"] is not None
        and host[0] <= r["ts"] < host[1]
    ]
    launched = {r["correlation"] for r in launches}
    device = [
        r
        for r in rows
        if r["rank"] == rank
        and r["kind"] in ("kernel", "memcpy", "memset", "sync")
        and r["correlation"] in launched
    ]
    if not device:
        return host, None
    return host, (min(r["ts"] for r in launches), max(r["ts"] + r["dur"] for r in device))


def launched(rows: list[dict[str, Any]], host: tuple[int, int], rank: int) -> list[dict[str, Any]]:
    """The device rows of ``rank`` whose correlation is that of a launch call (runtime/driver)
    starting in the host window ``host``: the work the step launched."""
    calls = {
        r["correlation"]
        for r in rows
        if r["rank"] == rank
        and r["kind"] in ("runtime", "driver")
        and r["correlation"] is not None
        and host[0] <= r["ts"] < host[1]
    }
    on_device = [
        r for r in rows if r["rank"] == rank and (r["device"] if r["device"] is not None else -1) >= 0
    ]
    return [r for r in on_device if r["correlation"] in calls]


def sums(rows: list[dict[str, Any]], window: tuple[int, int] | None = None, side: str = "cpu") -> dict:
    """``{(side, name): (count, total duration)}``, each duration cut to ``window`` when given."""
    out: dict[tuple[str, str], list[int]] = defaultdict(lambda: [0, 0])
    for r in rows:
        lo, hi = window or (r["ts"], r["ts"] + r["dur"])
        out[(side, r["name"])][0] += 1
        out[(side, r["name"])][1] += min(r["ts"] + r["dur"], hi) - max(r["ts"], lo)
    return {k: (c, t) for k, (c, t) in out.items()}


def ranked(totals: dict[tuple[str, str], tuple[int, int]], n: int) -> list[tuple[str, str, int, int]]:
    return sorted(((*k, c, t) for k, (c, t) in totals.items()), key=lambda x: (-x[3], x[0], x[1]))[:n]


def top_rows(doc: dict[str, Any]) -> list[tuple[str, str, int, int]]:
    return [(r["side"], r["name"], r["count"], r["total_ns"]) for r in doc["rows"]]


def meeting(rows: list[dict[str, Any]], window: tuple[int, int]) -> list[dict[str, Any]]:
    """The ranges of ``rows`` that meet ``window`` (start before its end, end after its start)."""
    return [r for r in rows if r["ts"] < window[1] and r["ts"] + r["dur"] > window[0]]


@pytest.mark.parametrize(("kind", "step", "rank"), [("kineto", 3, 1), ("nsys", 0, 1), ("cpu", 4, 0)])
def test_top_equals_plain_sums_over_the_steps_raw_events(
    kind: str, step: int, rank: int, cache: Path, cpu_run: Path
) -> None:
    """Kernels: the step's launches' correlations (each kernel whole); ops: starting in the host
    window, cut at its end; annotations: host ranges meeting the host window, device ranges the
    device window, each cut to it."""
    trace = str(traces(cpu_run)[kind])
    calls = [
        ("top", {"trace": trace, "what": w, "step": step, "rank": rank, "n": 8})
        for w in ("kernels", "ops", "annotations")
    ]
    calls.append(("top", {"trace": trace, "what": "ops", "n": 5}))  # the whole trace, every rank
    _, kernels, ops, annotations, whole = session_calls(cache, calls)
    folder = Path(ok(kernels)["trace"])
    rows = raw_events(folder)
    host, device = step_windows(rows, step, rank)
    mine = [r for r in rows if r["rank"] == rank]
    k = [r for r in launched(rows, host, rank) if r["kind"] == "kernel"]
    o = [r for r in mine if r["kind"] == "cpu_op" and host[0] <= r["ts"] < host[1]]
    a = sums(meeting([r for r in mine if r["kind"] == "annotation"], host), host)
    a |= sums(
        meeting([r for r in mine if r["kind"] == "gpu_annotation"], device or host), device or host, "gpu"
    )
    assert top_rows(ok(kernels)) == ranked(sums(k, side="gpu"), 8)
    assert top_rows(ok(ops)) == ranked(sums(o, (host[0], host[1])), 8)
    assert top_rows(ok(annotations)) == ranked(a, 8)
    assert ok(ops)["names"] == len(sums(o)) and ok(ops)["window_ns"] == host[1] - host[0]
    for r in ok(ops)["rows"]:
        assert r["share"] == pytest.approx(r["total_ns"] / (host[1] - host[0]), rel=1e-12)
    span = (min(r["ts"] for r in rows), max(r["ts"] + r["dur"] for r in rows) + 1)
    assert top_rows(ok(whole)) == ranked(sums([r for r in rows if r["kind"] == "cpu_op"], span), 5)
    if kind == "cpu":
        assert not ok(kernels)["rows"]  # a CPU-only run has no kernels, and the answer says why
        assert ok(kernels)["note"].startswith("no device work in this trace")
        assert not any(w in ok(kernels)["note"] for w in ("GPU", "CUDA", "kernel"))
    else:
        assert ok(kernels)["rows"], "the step ran kernels"


def kineto_step_kernels(events: list[dict[str, Any]], step: int) -> list[dict[str, Any]]:
    """From a Kineto JSON's events: ProfilerStep#``step``'s range, the runtime/driver calls
    starting in it (their correlation ids), the kernels with those ids (ts, dur in ns)."""
    ns = lambda e, k="ts": round(e[k] * 1000)  # noqa: E731  (Kineto's µs)
    (mark,) = [e for e in events if e.get("name") == f"ProfilerStep#{step}" and e.get("ph") == "X"]
    lo, hi = ns(mark), ns(mark) + ns(mark, "dur")
    corr = {
        e["args"]["correlation"]
        for e in events
        if e.get("cat") in ("cuda_runtime", "cuda_driver")
        and lo <= ns(e) < hi
        and "correlation" in e.get("args", {})
    }
    return [
        {"name": e["name"], "ts": ns(e), "dur": ns(e, "dur")}
        for e in events
        if e.get("cat") == "kernel" and e.get("args", {}).get("correlation") in corr
    ]


@pytest.mark.parametrize(
    ("name", "steps"),
    [("hta-negative_queue_length_values_check-rank0.json.gz", [550, 551, 552, 553, 554]), (KINETO, [3])],
)
def test_top_kernels_of_a_step_are_those_it_launched_per_the_kineto_json(
    name: str, steps: list[int], cache: Path
) -> None:
    """The same question answered from the JSON file itself (ProfilerStep#N's range, the launch
    calls in it, the kernels with their correlation ids). On negative_queue the device runs
    behind the host, so a step's device window reaches into the next steps': each kernel still
    counts once, in the step that launched it."""
    path = shared_trace(name)
    _, *got = session_calls(
        cache, [("top", {"trace": str(path), "what": "kernels", "step": s, "n": 1000}) for s in steps]
    )
    events = json.load(gzip.open(path))["traceEvents"]
    counted = 0
    for step, doc in zip(steps, got, strict=True):
        kernels = kineto_step_kernels(events, step)
        assert top_rows(ok(doc)) == ranked(sums(kernels, side="gpu"), 1000)
        assert all(r["share"] <= 1 for r in ok(doc)["rows"])
        counted += sum(r["count"] for r in ok(doc)["rows"])
    assert counted <= sum(e.get("cat") == "kernel" for e in events)


def test_top_annotations_keep_their_side_as_summary_measures_them(cache: Path) -> None:
    """ns_resolution step 102: each (side, name) row equals summary --json's annotations per_step
    of that step (host ranges in the host window, device ranges in the device window); from the
    JSON itself, ``## backward ##``'s one device range of the step, cut to the device window
    (first launch in ProfilerStep#102 to the end of the last device event it launched)."""
    path = shared_trace("hta-ns_resolution_trace-rank-0.Apr_03_18_51_38.1102.pt.trace.json.gz")
    _, got = session_calls(
        cache, [("top", {"trace": str(path), "what": "annotations", "step": 102, "rank": 0, "n": 100})]
    )
    per_step = cli_json(cache, "summary", path, "--sections", "annotations")["sections"]["annotations"][
        "per_step"
    ]
    mine = [r for r in per_step if r["step"] == 102 and r["rank"] == 0 and r["count"]]
    assert {(r[0], r[1]): r[2:] for r in top_rows(ok(got))} == {
        (r["side"], r["name"]): (r["count"], r["time_ns"]) for r in mine
    }
    for r in ok(got)["rows"]:  # the share of its side's window, as per_step's
        (same,) = [m for m in mine if (m["side"], m["name"]) == (r["side"], r["name"])]
        assert r["share"] == pytest.approx(same["share"], rel=1e-12)
    events = json.load(gzip.open(path))["traceEvents"]
    ns = lambda e, k="ts": round(e[k] * 1000)  # noqa: E731
    (mark,) = [e for e in events if e.get("name") == "ProfilerStep#102" and e.get("ph") == "X"]
    lo, hi = ns(mark), ns(mark) + ns(mark, "dur")
    calls = [
        e
        for e in events
        if e.get("cat") == "cuda_runtime" and lo <= ns(e) < hi and "correlation" in e["args"]
    ]
    corr = {e["args"]["correlation"] for e in calls}
    work = [
        e
        for e in events
        if e.get("cat") in ("kernel", "gpu_memcpy", "gpu_memset", "cuda_sync")
        and e.get("args", {}).get("correlation") in corr
    ]
    dlo, dhi = min(ns(e) for e in calls), max(ns(e) + ns(e, "dur") for e in work)
    backward = [
        (max(ns(e), dlo), min(ns(e) + ns(e, "dur"), dhi))
        for e in events
        if e.get("cat") == "gpu_user_annotation" and e["name"] == "## backward ##"
        and ns(e) < dhi and ns(e) + ns(e, "dur") > dlo
    ]  # fmt: skip
    (row,) = [r for r in ok(got)["rows"] if (r["side"], r["name"]) == ("gpu", "## backward ##")]
    assert (row["count"], row["total_ns"]) == (len(backward), sum(b - a for a, b in backward)) == (1, 28833)


def step_event_rows(rows: list[dict[str, Any]], step: int, rank: int) -> tuple[tuple[int, int], list[dict]]:
    """A step's events on ``rank``, from the raw rows: host rows starting in its host window, the
    device rows it launched, device rows without a correlation starting in its device window;
    and the span of both windows."""
    host, device = step_windows(rows, step, rank)
    dev = device or host
    mine = [r for r in rows if r["rank"] == rank]
    device_row = lambda r: (r["device"] if r["device"] is not None else -1) >= 0  # noqa: E731
    picked = [r for r in mine if not device_row(r) and host[0] <= r["ts"] < host[1]]
    picked += launched(rows, host, rank)
    picked += [r for r in mine if device_row(r) and r["correlation"] is None and dev[0] <= r["ts"] < dev[1]]
    return (min(host[0], dev[0]), max(host[1], dev[1])), picked


def test_a_steps_events_are_its_host_window_and_what_it_launched(cache: Path) -> None:
    """On negative_queue the device runs behind: step 550's events hold none of step 551's host
    events, and every device event is one step 550 launched."""
    trace = str(shared_trace("hta-negative_queue_length_values_check-rank0.json.gz"))
    _, got = session_calls(cache, [("events", {"trace": trace, "step": 550, "limit": 5000})])
    doc = ok(got)
    rows = raw_events(Path(doc["trace"]))
    (lo, hi), expected = step_event_rows(rows, 550, 0)
    assert doc["window"] == {"start_ns": lo, "end_ns": hi, "clipped": False}
    assert doc["total"] == len(expected) and doc["truncated"] == (len(expected) > 5000)
    host, _ = step_windows(rows, 550, 0)
    first = sorted(expected, key=lambda r: (r["ts"], r["kind"], r["name"], r["tid"]))[:5000]
    assert [(r[0], r[2], r[3]) for r in doc["rows"]] == [(r["ts"], r["kind"], r["name"]) for r in first]
    assert all(r[0] < host[1] for r in doc["rows"] if r[5] is None or r[5] < 0)  # no host event of 551


def test_events_are_the_windows_raw_rows_bounded_and_clipped(cache: Path) -> None:
    trace = str(shared_trace(KINETO))
    _, step_rows, cut, span, whole = session_calls(
        cache,
        [
            ("events", {"trace": trace, "rank": 1, "step": 3, "limit": 5000}),
            ("events", {"trace": trace, "step": 3, "limit": 100}),
            ("top", {"trace": trace, "n": 1}),  # for the trace's start below
            ("events", {"trace": trace, "limit": 7}),
        ],
    )
    doc = ok(step_rows)
    rows = raw_events(Path(doc["trace"]))
    (lo, hi), inside = step_event_rows(rows, 3, 1)
    assert doc["window"] == {"start_ns": lo, "end_ns": hi, "clipped": False}
    assert doc["columns"] == ["ts_ns", "dur_ns", "kind", "name", "tid", "device", "stream", "correlation"]
    assert doc["total"] == len(inside) > 5000 and doc["truncated"] and doc["count"] == 5000
    key = lambda r: (r[0], r[2], r[3], r[4])  # noqa: E731
    expected = sorted(
        (
            [r["ts"], r["dur"], r["kind"], r["name"], r["tid"], r["device"], r["stream"], r["correlation"]]
            for r in inside
        ),
        key=key,
    )
    # in start order (ties by kind, name, thread), each row one of the window's raw rows
    assert [key(r) for r in doc["rows"]] == [key(r) for r in expected[:5000]]
    pool = defaultdict(int)
    for r in expected:
        pool[json.dumps(r)] += 1
    for r in doc["rows"]:
        pool[json.dumps(r)] -= 1
    assert min(pool.values()) >= 0
    small = ok(cut)
    assert small["count"] == 100 and small["total"] == len(inside) and small["truncated"]
    assert [key(r) for r in small["rows"]] == [key(r) for r in expected[:100]]
    first = ok(whole)
    assert first["total"] == sum(r["rank"] == 1 for r in rows) and first["count"] == 7
    start = min(r["ts"] for r in rows)
    end = max(r["ts"] + r["dur"] for r in rows)
    assert first["window"]["start_ns"] == start
    # a window of 10^15 ns from the trace's start reaches far past its end: clipped, not an error
    # a window between two events' starts holds the first and not the second ([start, end))
    starts = sorted({r["ts"] for r in inside if r["device"] is None or r["device"] < 0})
    a, b = starts[100], starts[160]
    _, wide, between = session_calls(
        cache,
        [
            ("events", {"trace": trace, "start_ns": start, "end_ns": start + 10**15, "limit": 3}),
            ("events", {"trace": trace, "rank": 1, "start_ns": a, "end_ns": b, "limit": 5000}),
        ],
    )
    got = ok(between)
    assert got["total"] == sum(a <= r["ts"] < b for r in rows) == got["count"] and not got["truncated"]
    assert got["rows"][0][0] == a and max(r[0] for r in got["rows"]) < b
    w = ok(wide)
    assert w["window"] == {"start_ns": start, "end_ns": end + 1, "clipped": True}
    assert w["total"] == first["total"] and w["count"] == 3 and w["truncated"]
    assert ok(span)["ranks"] == [1]


# -- memory ----------------------------------------------------------------------------------------


def test_memory_peak_is_the_running_sums_maximum_and_a_trace_without_memory_says_so(cache: Path) -> None:
    path = shared_trace(KINETO)
    _, got, none, jax = session_calls(
        cache,
        [
            ("memory_peak", {"trace": str(path)}),
            ("memory_peak", {"trace": str(nsys_export(NSYS))}),
            ("memory_peak", {"trace": str(SAMPLES / "jax_cpu")}),
        ],
    )
    by_device: dict[tuple[int, int], list[dict]] = defaultdict(list)
    for e in json.load(gzip.open(path))["traceEvents"]:
        if e.get("name") == "[memory]":
            by_device[(e["args"]["Device Type"], e["args"]["Device Id"])].append(e)
    peaks = {}
    for dev, evs in by_device.items():
        evs.sort(key=lambda e: (e["ts"], e["args"]["Ev Idx"]))
        level = evs[0]["args"]["Total Allocated"] - evs[0]["args"]["Bytes"]  # allocated before the first
        best = (level, None)
        for e in evs:
            level += e["args"]["Bytes"]
            if level > best[0]:
                best = (level, round(e["ts"] * 1000))
        peaks[dev] = best
    doc = ok(got)
    assert doc["has_memory_events"] and doc["note"] is None
    cuda = peaks[(1, 1)]
    assert (doc["peak"]["device_type"], doc["peak"]["device"]) == ("CUDA", 1)
    assert (doc["peak"]["peak_allocated_bytes"], doc["peak"]["peak_ns"]) == cuda
    assert doc["peak"]["peak_op"]  # the op holding the peak is named
    assert sorted(d["peak_allocated_bytes"] for d in doc["devices"]) == sorted(p[0] for p in peaks.values())
    assert all(a["bytes"] <= cuda[0] for a in doc["live_at_peak"])
    empty = ok(none)
    assert not empty["has_memory_events"] and empty["peak"] is None
    # one note, worded for the trace's source (no profile_memory switch brings them to Nsight or JAX)
    assert empty["note"].startswith("no memory events ([memory]): an Nsight Systems export brings none")
    assert ok(jax)["note"].startswith("no memory events ([memory]): a JAX trace brings none")
    notes = cli_json(cache, "summary", nsys_export(NSYS))["notes"]
    assert empty["note"] in notes


# -- listing, importing, progress ------------------------------------------------------------------


def test_list_traces_names_trace_folders_files_and_what_it_skipped(
    cache: Path, cpu_run: Path, tmp_path: Path
) -> None:
    root = tmp_path / "runs"
    shutil.copytree(cpu_run, root / "mlp")
    shutil.copy(shared_trace("hta-trace_filter-sampled_rank-0.json.gz"), root / "rank0.json.gz")
    shutil.copy(shared_trace("hta-execution_trace-benchmark_simple_add_et.json.gz"), root / "et.json.gz")
    _, listed = session_calls(cache, [("list_traces", {"folder": str(root)})])
    doc = ok(listed)
    assert [Path(t["path"]) for t in doc["traces"]] == [root / "mlp"]
    assert doc["files"] == [str((root / "rank0.json.gz").resolve())]
    assert [Path(s["path"]).name for s in doc["skipped"]] == ["et.json.gz"]
    assert "execution trace" in doc["skipped"][0]["why"]


def test_import_reports_progress_and_is_reused(tmp_path: Path) -> None:
    fresh = tmp_path / "cache"
    path = str(shared_trace("hta-trace_filter-sampled_rank-0.json.gz"))
    seen: list = []
    calls = [("import_trace", {"path": path}), ("import_trace", {"path": path})]
    calls += [("top", {"trace": path, "n": 1}), ("top", {"trace": path, "what": "ops", "n": 1})]
    _, first, again, analysed, warm = session_calls(fresh, calls, progress=seen)
    assert ok(first)["trace"] == ok(again)["trace"] == ok(analysed)["trace"]
    assert Path(ok(first)["trace"]).is_relative_to(fresh)
    messages = [m for _, _, m in seen]
    assert any(m and m.startswith("importing") for m in messages), messages
    assert any(m and m.startswith("using cached import") for m in messages), messages
    # the first analysis says each stage it runs; the next call reads the outputs it recorded
    assert any(m and "ingest" in m for m in messages) and any(m and "steps" in m for m in messages), messages
    assert messages[-1] == "reading cached analysis outputs" and ok(warm)["rows"]


#: The server with every trace summarised rank by rank on Dask, as one over 512 MiB is.
BY_RANKS_SERVER = [
    sys.executable,
    "-c",
    "import profui.analysis.distributed as d; d.IN_PROCESS_BYTES = 0; "
    "from profui.tui.cli.mcp.server import serve; serve()",
]


def test_a_summary_by_ranks_reports_each_rank_to_the_client(tmp_path: Path) -> None:
    """Forced onto the by-ranks path: the client hears that path named and ``k/N ranks`` as each
    rank finishes; the server's stderr carries none of it, and no line says 'in memory'."""
    seen: list = []
    trace = str(nsys_export(NSYS))
    err = tmp_path / "stderr.log"
    _, doc = session_calls(
        tmp_path / "cache", [("summary", {"trace": trace})], seen, command=BY_RANKS_SERVER, stderr=err
    )
    assert ok(doc)["trace"]["ranks"] == [0, 1]
    messages = [m for _, _, m in seen]
    assert "analysing rank by rank on a local Dask cluster (its events files are over 0 MiB)" in messages
    assert messages[-2:] == ["1/2 ranks", "2/2 ranks"], messages
    assert not any("in memory" in m for m in messages)
    assert "ranks" not in err.read_text()


def test_many_ranks_are_named_first_to_last(tmp_path: Path) -> None:
    """A 10-rank job (the project's synthetic generator: 2 nodes of 5 GPUs): a refusal names its
    ranks as '0 to 9', the rule of every such message."""
    trace = tmp_path / "ten"
    made = subprocess.run(
        [sys.executable, str(SAMPLES / "generate_synthetic.py"), "-o", str(trace), "--events", "20000"]
        + ["--nodes", "2", "--gpus-per-node", "5", "--steps", "3"],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert made.returncode == 0, made.stderr
    _, no_rank, bad_rank, memory = session_calls(
        tmp_path / "cache",
        [
            ("events", {"trace": str(trace)}),
            ("events", {"trace": str(trace), "rank": 99}),
            ("memory_peak", {"trace": str(trace), "rank": 99}),
        ],
    )
    assert one_line(no_rank) == "profui: rank: the trace has ranks 0 to 9; name one"
    assert one_line(bad_rank) == "profui: rank 99: no such rank (ranks: 0 to 9)"
    assert one_line(memory) == "profui: rank 99: no such rank (ranks: 0 to 9)"


# -- hostile input ---------------------------------------------------------------------------------


def one_line(result: Any) -> str:
    assert result.is_error
    text = result.content[0].text
    assert "\n" not in text.strip() and text.startswith("profui: "), text
    return text


def test_bad_input_is_a_one_line_tool_error_and_the_server_goes_on(cache: Path, tmp_path: Path) -> None:
    trace = str(shared_trace(KINETO))
    fifo = tmp_path / "pipe.json"
    os.mkfifo(fifo)
    (tmp_path / "empty").mkdir()
    missing = str(tmp_path / "missing.json.gz")
    healthy = ("top", {"trace": trace, "step": 3, "n": 1})
    hostile = [
        ("summary", {"trace": missing}),
        ("explain", {"trace": str(fifo)}),
        ("import_trace", {"path": str(fifo)}),
        ("list_traces", {"folder": str(fifo)}),
        ("diff", {"base": str(fifo), "new": trace}),
        ("summary", {"trace": str(tmp_path / "empty")}),
        ("events", {"trace": trace, "rank": 1, "start_ns": 0, "end_ns": 10**15, "limit": 10**9}),
        ("events", {"trace": trace, "rank": 1, "start_ns": 0, "end_ns": 10**15}),  # before the trace
        ("events", {"trace": trace, "rank": 1, "start_ns": 10**18, "end_ns": 10**17}),  # inverted
        ("explain", {"trace": trace, "step": 99}),
        ("top", {"trace": trace, "step": 99}),
        ("events", {"trace": trace, "rank": 7}),
        ("memory_peak", {"trace": trace, "rank": 7}),
        ("diff", {"base": "no-such-baseline", "new": trace}),
        ("top", {"trace": trace, "what": "threads"}),
        ("events", {}),
    ]
    calls = [c for h in hostile for c in (h, healthy)]
    t0 = time.monotonic()
    _, *results = session_calls(cache, calls)
    assert time.monotonic() - t0 < 200  # the FIFO never blocks a call
    lines = {}
    for (name, args), bad, good in zip(hostile, results[::2], results[1::2], strict=True):
        lines[(name, json.dumps(args))] = one_line(bad)
        assert ok(good)["rows"], (name, args)  # answered correctly after the refusal
    texts = list(lines.values())
    # the command line's own line where the command takes the same input, a flag named as the argument
    for i, cli in (
        (0, ("summary", missing)),
        (9, ("explain", trace, "--step", "99")),
        (13, ("diff", "no-such-baseline", trace)),
    ):
        proc = run_profui(*cli, cache=cache)
        line = proc.stderr.strip().replace("--step 99", "step 99")
        assert proc.returncode == 2 and texts[i] == line, (texts[i], proc.stderr)
    assert texts[9].startswith("profui: step 99: no such step (steps: ")
    assert "FIFO" in texts[1] or "not a trace" in texts[1]
    assert "is a FIFO" in texts[3]
    assert "5000" in texts[6]
    assert "outside rank 1's events" in texts[7]
    assert "start is not before its end" in texts[8]
    assert "no such step" in texts[10] and "steps: 2, 3, 4, 5, 6" in texts[10]
    assert "no such rank (ranks: 1)" in texts[11] and "no such rank" in texts[12]
    assert "'kernels', 'ops' or 'annotations'" in texts[14] and texts[15].startswith("profui: events: trace:")


def test_a_negative_top_and_a_step_gate_on_an_old_baseline_are_refused_saying_why(
    cpu_run: Path, tmp_path: Path
) -> None:
    """diff --top -1 is refused as summary and explain refuse theirs (it meant 'all'); a gate on
    step_p50 against a baseline saved before step periods were kept (version 1, no runtime
    calls) says why it cannot be gated and what to do. The tool's line is the command's."""
    cache = tmp_path / "cache"
    saved = run_profui("diff", "--save-baseline", "old", str(cpu_run), cache=cache)
    assert saved.returncode == 0, saved.stderr
    file = cache / "baselines" / "old.json"
    doc = json.loads(file.read_text())
    del doc["runtime"]
    file.write_text(json.dumps({**doc, "version": 1}))
    _, negative, gated = session_calls(
        cache,
        [
            ("diff", {"base": str(cpu_run), "new": str(cpu_run), "top": -1}),
            ("diff", {"base": "old", "new": str(cpu_run), "fail_if": ["step_p50>+5%"]}),
        ],
    )
    cli = run_profui("diff", cpu_run, cpu_run, "--top", "-1", cache=cache)
    assert cli.returncode == 2 and cli.stderr == "profui: --top: must be at least 0 (0: all), got -1\n"
    assert one_line(negative) == "profui: top: must be at least 0 (0: all), got -1"
    cli = run_profui("diff", "old", cpu_run, "--fail-if", "step_p50>+5%", cache=cache)
    line = cli.stderr.strip()
    assert cli.returncode == 2 and one_line(gated) == line.replace("--fail-if", "fail_if"), cli.stderr
    assert line.startswith(
        "profui: --fail-if 'step_p50>+5%': step_p50 cannot be gated: step time not compared:"
    )
    assert "saved before step periods were kept" in line and line.endswith(
        "save it again with --save-baseline"
    )


def test_without_the_sdk_profui_mcp_says_how_to_install_it(tmp_path: Path) -> None:
    code = "import sys; sys.modules['mcp'] = None; sys.argv = ['profui', 'mcp']; from profui.tui.cli import main; main()"
    proc = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=60, stdin=subprocess.DEVNULL
    )
    assert proc.returncode == 2 and proc.stdout == ""
    assert proc.stderr == "profui: profui mcp needs the mcp package: pip install 'profui[mcp]'\n"


def test_stdout_carries_the_protocol_only(cache: Path) -> None:
    """Raw JSON-RPC over the pipes: every line the server writes is a JSON-RPC message, through an
    import and an analysis (whose progress goes to the client, never to stdout as text)."""
    trace = str(shared_trace("hta-trace_filter-sampled_rank-1.json.gz"))
    messages = [
        {
            "jsonrpc": "2.0",
            "id": 1,
            "method": "initialize",
            "params": {
                "protocolVersion": "2025-06-18",
                "capabilities": {},
                "clientInfo": {"name": "t", "version": "0"},
            },
        },
        {"jsonrpc": "2.0", "method": "notifications/initialized"},
        {
            "jsonrpc": "2.0",
            "id": 2,
            "method": "tools/call",
            "params": {"name": "summary", "arguments": {"trace": trace}, "_meta": {"progressToken": "p"}},
        },
    ]
    env = {**os.environ, "PROFUI_CACHE": str(cache)}
    proc = subprocess.Popen(
        [PROFUI, "mcp"],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        env=env,
        text=True,
    )
    assert proc.stdin and proc.stdout
    proc.stdin.write("\n".join(json.dumps(m) for m in messages) + "\n")
    proc.stdin.flush()
    seen = []
    deadline = time.monotonic() + 240
    while time.monotonic() < deadline:
        line = proc.stdout.readline()
        if not line:
            break
        msg = json.loads(line)  # a line that is not JSON fails here
        assert msg["jsonrpc"] == "2.0"
        seen.append(msg)
        if msg.get("id") == 2:
            break
    proc.stdin.close()
    proc.wait(timeout=30)
    result = seen[-1]["result"]
    assert not result.get("isError") and result["structuredContent"]["trace"]["ranks"] == [1]
    assert any(m.get("method") == "notifications/progress" for m in seen)


# -- what an agent's context holds -----------------------------------------------------------------


def test_results_are_bounded_and_their_text_is_compact_json(cache: Path) -> None:
    """explain keeps the 40 longest path stretches by default (in path order, the total said)
    and summary only the sections asked for; the text copy is the result without indentation.
    The oracle: the command's whole document, its stretches sorted by duration by hand."""
    trace = str(nsys_export(NSYS))
    _, explain, few, summary = session_calls(
        cache,
        [
            ("explain", {"trace": trace}),
            ("explain", {"trace": trace, "path_events": 3}),
            ("summary", {"trace": trace}),
        ],
    )
    full = cli_json(cache, "explain", trace)["critical_path"]["events"]
    assert len(full) > 40
    longest = sorted(full, key=lambda e: (e["start_ns"] - e["end_ns"], e["seq"]))
    for result, n in ((explain, 40), (few, 3)):
        path = ok(result)["critical_path"]
        assert path["events"] == sorted(longest[:n], key=lambda e: e["seq"])
        assert path["events_total"] == len(full) and path["events_truncated"]
    doc = ok(summary)
    assert doc["sections"] == {} and doc["notes"][-1].startswith("sections left out (ask for them by name): ")
    for result in (explain, summary):
        assert result.content[0].text == json.dumps(result.structured_content, separators=(",", ":"))
    assert len(explain.content[0].text) < 40_000 and len(summary.content[0].text) < 10_000


def test_unknown_arguments_are_refused_naming_the_valid_ones(cache: Path) -> None:
    trace = str(SAMPLES / "mlp_cpu")
    tools, typo, fine = session_calls(
        cache, [("explain", {"trace": trace, "steps": 5}), ("top", {"trace": trace, "what": "ops"})]
    )
    assert all(t.input_schema["additionalProperties"] is False for t in tools)
    assert one_line(typo) == (
        "profui: explain: unknown argument 'steps' (arguments: trace, step, rank, top, hta_compat, path_events)"
    )
    assert ok(fine)["rows"]


def test_a_relative_path_names_the_servers_working_folder(cache: Path) -> None:
    _, missing = session_calls(cache, [("explain", {"trace": "samples/no-such-run"})])
    line = one_line(missing)
    assert line.startswith("profui: samples/no-such-run: no such file or directory") and os.getcwd() in line


def test_list_traces_goes_below_skips_hidden_folders_and_reports_progress(
    cache: Path, cpu_run: Path, tmp_path: Path
) -> None:
    root = tmp_path / "runs"
    (root / "nsys").mkdir(parents=True)
    (root / ".cache" / "deep").mkdir(parents=True)
    shutil.copy(shared_trace("hta-trace_filter-sampled_rank-0.json.gz"), root / "rank0.json.gz")
    shutil.copy(nsys_export(NSYS), root / "nsys" / "run.sqlite")
    shutil.copy(
        shared_trace("hta-execution_trace-benchmark_simple_add_et.json.gz"), root / "nsys" / "et.json"
    )
    shutil.copy(
        shared_trace("hta-trace_filter-sampled_rank-1.json.gz"), root / ".cache" / "deep" / "r1.json.gz"
    )
    seen: list = []
    _, listed = session_calls(cache, [("list_traces", {"folder": str(root)})], progress=seen)
    doc = ok(listed)
    assert doc["files"] == [str((root / "rank0.json.gz").resolve())]
    assert doc["below"] == [str((root / "nsys" / "run.sqlite").resolve())]
    assert [Path(s["path"]).name for s in doc["skipped"]] == ["et.json"]
    assert ".cache" not in json.dumps(doc)  # hidden folders are never walked
    # the walk saw: rank0.json.gz, nsys/ (in the folder), run.sqlite, et.json (below)
    assert doc["walk"] == {"max_depth": 6, "entries": 4, "cut": False}
    assert seen and seen[0][2] == f"looking at and below {root}"


def test_a_folder_of_several_jobs_names_each_jobs_folder(tmp_path: Path) -> None:
    """Two runs that never overlap in time are two jobs: the refusal names a trace folder per
    job, and each is a trace the tools take."""
    root = tmp_path / "mixed"
    root.mkdir()
    shutil.copy(shared_trace("hta-trace_filter-sampled_rank-0.json.gz"), root / "a.json.gz")
    shutil.copy(shared_trace(KINETO), root / "b.json.gz")
    _, refused = session_calls(tmp_path / "cache", [("import_trace", {"path": str(root)})])
    line = one_line(refused)
    assert line.startswith(f"profui: {root}: its trace files are 2 jobs, not one"), line
    jobs = line.split("call import_trace (or this tool) on one of: ")[1].split(", ")
    assert len(jobs) == 2 and all((Path(j) / "manifest.json").is_file() for j in jobs)
    _, *infos = session_calls(tmp_path / "cache", [("import_trace", {"path": j}) for j in jobs])
    assert all(ok(i)["info"]["num_events"] > 0 and Path(ok(i)["trace"]) in map(Path, jobs) for i in infos)


@pytest.fixture(scope="module")
def ddp_run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A recorded 2-rank gloo DDP run on the CPU: gloo's all_reduce annotation runs on its worker
    thread, past the step's host window."""
    return record_ddp(tmp_path_factory.mktemp("ddp"), 2)


def test_top_cuts_each_events_time_to_the_window(cache: Path, ddp_run: Path) -> None:
    """The oracle: rank 0's raw host annotation rows meeting a step's host window, each counted
    only inside it, summed by name in plain Python; a row's share is then at most 1."""
    rows = raw_events(ddp_run)
    steps = sorted(int(r["name"].rsplit("#", 1)[1]) for r in rows if r["rank"] == 0 and r["kind"] == "step")
    annotations = [r for r in rows if r["rank"] == 0 and r["kind"] == "annotation"]
    assert not any(r["rank"] == 0 and r["kind"] == "gpu_annotation" for r in rows)  # a CPU run

    def inside(step: int) -> tuple[tuple[int, int], list[dict[str, Any]]]:
        host, _ = step_windows(rows, step, 0)
        return host, meeting(annotations, host)

    past = [s for s in steps if any(r["ts"] + r["dur"] > inside(s)[0][1] for r in inside(s)[1])]
    assert past, "an annotation runs past a step's window (gloo's all_reduce on its thread)"
    step = past[0]
    (lo, hi), mine = inside(step)
    _, got = session_calls(
        cache, [("top", {"trace": str(ddp_run), "what": "annotations", "step": step, "rank": 0, "n": 50})]
    )
    doc = ok(got)
    assert top_rows(doc) == ranked(sums(mine, (lo, hi)), 50)
    assert top_rows(doc) != ranked(sums(mine), 50)  # the uncut sums differ: one ran past the end
    assert doc["window_ns"] == hi - lo
    for r in doc["rows"]:
        assert r["share"] == pytest.approx(r["total_ns"] / (hi - lo), rel=1e-12) and r["share"] <= 1
