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
    cache: Path, calls: list[tuple[str, dict[str, Any]]], progress: list | None = None
) -> list[Any]:
    """Start ``profui mcp``, list its tools, make ``calls`` in order; the tools listing and each
    call's result (a CallToolResult), each call bounded to 240 s."""

    async def main() -> list[Any]:
        params = StdioServerParameters(command=PROFUI, args=["mcp"], env={"PROFUI_CACHE": str(cache)})
        out: list[Any] = []
        with open(os.devnull, "w") as errlog:
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


def test_every_tool_has_an_input_and_an_output_schema(cache: Path) -> None:
    (tools,) = session_calls(cache, [])
    assert {t.name for t in tools} == TOOLS
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


def sums(rows: list[dict[str, Any]], end: int | None = None) -> dict[str, tuple[int, int]]:
    """``{name: (count, total duration)}``, each duration cut at ``end`` when given."""
    out: dict[str, list[int]] = defaultdict(lambda: [0, 0])
    for r in rows:
        out[r["name"]][0] += 1
        out[r["name"]][1] += r["dur"] if end is None else min(r["ts"] + r["dur"], end) - r["ts"]
    return {k: (c, t) for k, (c, t) in out.items()}


def ranked(totals: dict[str, tuple[int, int]], n: int) -> list[tuple[str, int, int]]:
    return sorted(((k, c, t) for k, (c, t) in totals.items()), key=lambda x: (-x[2], x[0]))[:n]


def top_rows(doc: dict[str, Any]) -> list[tuple[str, int, int]]:
    return [(r["name"], r["count"], r["total_ns"]) for r in doc["rows"]]


@pytest.mark.parametrize(("kind", "step", "rank"), [("kineto", 3, 1), ("nsys", 0, 1), ("cpu", 4, 0)])
def test_top_equals_plain_sums_over_the_steps_raw_events(
    kind: str, step: int, rank: int, cache: Path, cpu_run: Path
) -> None:
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
    klo, khi = device or host
    mine = [r for r in rows if r["rank"] == rank]
    k = [r for r in mine if r["kind"] == "kernel" and klo <= r["ts"] < khi]
    o = [r for r in mine if r["kind"] == "cpu_op" and host[0] <= r["ts"] < host[1]]
    a = [r for r in mine if r["kind"] in ("annotation", "gpu_annotation") and host[0] <= r["ts"] < host[1]]
    assert top_rows(ok(kernels)) == ranked(sums(k, khi), 8)
    assert top_rows(ok(ops)) == ranked(sums(o, host[1]), 8)
    assert top_rows(ok(annotations)) == ranked(sums(a, host[1]), 8)
    assert ok(ops)["names"] == len(sums(o)) and ok(ops)["window_ns"] == host[1] - host[0]
    for r in ok(ops)["rows"]:
        assert r["share"] == pytest.approx(r["total_ns"] / (host[1] - host[0]), rel=1e-12)
    span_end = max(r["ts"] + r["dur"] for r in rows) + 1
    assert top_rows(ok(whole)) == ranked(sums([r for r in rows if r["kind"] == "cpu_op"], span_end), 5)
    if kind == "cpu":
        assert not ok(kernels)["rows"]  # a CPU-only run has no kernels, and the answer says why
        assert ok(kernels)["note"].startswith("no device work in this trace")
        assert not any(w in ok(kernels)["note"] for w in ("GPU", "CUDA", "kernel"))
    else:
        assert ok(kernels)["rows"], "the step ran kernels"


def test_top_kernels_of_a_step_against_the_kineto_json(cache: Path) -> None:
    """The same question answered from the JSON file itself: ProfilerStep#3's launches
    (cuda_runtime with a correlation inside it) give the device window (the first launch to the
    end of the last device event they started); the kernels starting in it, summed by name."""
    path = shared_trace(KINETO)
    _, got = session_calls(cache, [("top", {"trace": str(path), "what": "kernels", "step": 3, "n": 20})])
    events = json.load(gzip.open(path))["traceEvents"]
    ns = lambda e, k="ts": round(e[k] * 1000)  # noqa: E731  (Kineto's µs)
    (mark,) = [e for e in events if e.get("name") == "ProfilerStep#3" and e.get("ph") == "X"]
    lo, hi = ns(mark), ns(mark) + ns(mark, "dur")
    corr = {
        e["args"]["correlation"]
        for e in events
        if e.get("cat") == "cuda_runtime" and lo <= ns(e) < hi and "correlation" in e.get("args", {})
    }
    dev = [
        e
        for e in events
        if e.get("cat") in ("kernel", "gpu_memcpy", "gpu_memset")
        and e.get("args", {}).get("correlation") in corr
    ]
    first_launch = min(
        ns(e)
        for e in events
        if e.get("cat") == "cuda_runtime" and lo <= ns(e) < hi and "correlation" in e["args"]
    )
    dlo, dhi = first_launch, max(ns(e) + ns(e, "dur") for e in dev)
    kernels = [
        {"name": e["name"], "ts": ns(e), "dur": ns(e, "dur")}
        for e in events
        if e.get("cat") == "kernel" and dlo <= ns(e) < dhi
    ]
    assert top_rows(ok(got)) == ranked(sums(kernels, dhi), 20)
    assert ok(got)["window_ns"] == dhi - dlo


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
    host, device = step_windows(rows, 3, 1)
    lo, hi = host[0], max(host[1], device[1] if device else host[1])
    inside = [r for r in rows if r["rank"] == 1 and lo <= r["ts"] < hi]
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
    starts = sorted({r["ts"] for r in inside})
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
    _, got, none = session_calls(
        cache, [("memory_peak", {"trace": str(path)}), ("memory_peak", {"trace": str(nsys_export(NSYS))})]
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
    assert not empty["has_memory_events"] and "no memory events" in empty["note"] and empty["peak"] is None


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


DDP_JOB = """
import os
import torch
import torch.distributed as dist
from profui.capture import annotate

dist.init_process_group("gloo")
torch.manual_seed(dist.get_rank())
torch.set_num_threads(1)
model = torch.nn.parallel.DistributedDataParallel(torch.nn.Linear(32, 8))
opt = torch.optim.SGD(model.parameters(), lr=0.01)
for i in range(8):
    x, y = torch.randn(16, 32), torch.randn(16, 8)
    with annotate("fwd_bwd"):
        loss = ((model(x) - y) ** 2).mean()
        opt.zero_grad()
        loss.backward()
    opt.step()
dist.destroy_process_group()
os._exit(0)  # gloo's exit-time destructors abort now and then; the trace is written by then
"""


@pytest.fixture(scope="module")
def ddp_run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A recorded 2-rank gloo DDP run on the CPU: gloo's all_reduce annotation runs on its worker
    thread, past the step's host window."""
    tmp = tmp_path_factory.mktemp("ddp")
    (tmp / "job.py").write_text(DDP_JOB)
    trace = tmp / "trace"
    run = [sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc_per_node", "2"]
    cmd = [sys.executable, "-m", "profui.capture.profcap", "-o", str(trace), "--steps", "3-5", "--no-perf"]
    proc = subprocess.run(
        [*cmd, "--", *run, str(tmp / "job.py")],
        capture_output=True,
        text=True,
        timeout=300,
        env={**os.environ, "OMP_NUM_THREADS": "1"},
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    return trace


def test_top_cuts_each_events_time_at_the_windows_end(cache: Path, ddp_run: Path) -> None:
    """The oracle: rank 0's raw annotation rows starting in a step's host window, each counted up
    to the window's end, summed by name in plain Python; a row's share is then at most 1."""
    rows = raw_events(ddp_run)
    steps = sorted(int(r["name"].rsplit("#", 1)[1]) for r in rows if r["rank"] == 0 and r["kind"] == "step")
    annotations = [r for r in rows if r["rank"] == 0 and r["kind"] in ("annotation", "gpu_annotation")]

    def inside(step: int) -> tuple[tuple[int, int], list[dict[str, Any]]]:
        host, _ = step_windows(rows, step, 0)
        return host, [r for r in annotations if host[0] <= r["ts"] < host[1]]

    past = [s for s in steps if any(r["ts"] + r["dur"] > inside(s)[0][1] for r in inside(s)[1])]
    assert past, "an annotation runs past a step's window (gloo's all_reduce on its thread)"
    step = past[0]
    (lo, hi), mine = inside(step)
    _, got = session_calls(
        cache, [("top", {"trace": str(ddp_run), "what": "annotations", "step": step, "rank": 0, "n": 50})]
    )
    doc = ok(got)
    assert top_rows(doc) == ranked(sums(mine, hi), 50)
    assert top_rows(doc) != ranked(sums(mine), 50)  # the uncut sums differ: one ran past the end
    assert doc["window_ns"] == hi - lo
    for r in doc["rows"]:
        assert r["share"] == pytest.approx(r["total_ns"] / (hi - lo), rel=1e-12) and r["share"] <= 1
