"""What an agent waits for and reads: profui mcp's tools vs the CLI and nsys-ai's MCP server.

``profui mcp``'s tools against the same questions asked of the command line (``profui
summary/explain/diff --json``) and of nsys-ai's MCP server.

Each MCP session is a fresh server driven by the ``mcp`` SDK's own stdio client, with a fresh cache
(``PROFUI_CACHE``; the CPU sample copied to a fresh folder, since its analyses are recorded under
it): the tool is called twice with the same arguments, ``cold`` (import + first analysis) and
``warm`` (the recorded outputs). The CLI runs the same question twice in a fresh process each
(``benchmarks/peak.py``), first with an empty cache, then with the one the first filled. Figures:

- ``start``: spawn to the end of ``initialize`` (the server's start-up), and the bytes of its
  ``tools/list`` answer (the tool descriptions and schemas an agent keeps in its context);
- ``wall``/``cpu`` of each call: the client's wall time of ``tools/call``; the server process's
  CPU seconds (user + system, all its threads) over the call, read with psutil;
- ``bytes``: the structured result as compact JSON, and its text copy (what a client shows the
  model); the CLI's stdout;
- ``peak``: the server's ``VmHWM`` after both calls; the CLI's own peak RSS.

Traces: df_index (Kineto JSON, 216k events), the Nsight export ``mfu_2gpu_after.sqlite`` (and
``mfu_2gpu_before`` for the diff) and ``samples/mlp_cpu`` (a recorded CPU torch run). nsys-ai's MCP
server (``.venv-nsysai/bin/nsys-ai-mcp``, needs nsys-ai's ``mcp`` extra: ``.venv-nsysai/bin/pip
install 'mcp<2'``) is asked the closest questions it has on the same export, on a fresh copy per
session: ``profile_health_manifest`` (its overview) beside summary, ``root_cause_matcher`` beside
explain, ``top_kernels`` beside top, ``diff_profiles`` beside diff (it has no memory tool). Offline,
each of its calls first tries to download a DuckDB extension, then falls back to sqlite3: that
wait is in its wall time, not in its CPU seconds (the steady figure here). Medians of ``--repeat`` runs,
profui and nsys-ai alternating first; the machine's load before and after.

    .venv/bin/python benchmarks/mcp_answers.py [--repeat 3] [--no-nsys-ai]
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import statistics
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import anyio
import psutil
from mcp.client.session import ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client
from peak import run as measure

REPO = Path(__file__).resolve().parent.parent
PROFUI = str(Path(sys.executable).with_name("profui"))
KINETO = "hta-df_index_resolver-df_index_resolver.json.gz"
NSYS, NSYS_BEFORE = "nsys/mfu_2gpu_after.sqlite", "nsys/mfu_2gpu_before.sqlite"
#: The explain tool's default number of critical-path stretches, given to the CLI too.
PATH_EVENTS = 40


@dataclass
class Question:
    """One question: the tool and its arguments, and the same question on the command line."""

    label: str
    tool: str
    args: dict[str, Any]
    cli: list[str] | None = None
    files: list[str] = field(default_factory=list)  # the arguments that are trace paths


def profui_questions(trace: str, kind: str, before: str | None) -> list[Question]:
    """profui's questions on ``trace`` ("T" in the templates stands for its path)."""
    qs = [
        Question(
            "explain",
            "explain",
            {"trace": trace},
            ["explain", trace, "--json", f"--path-events={PATH_EVENTS}"],
        ),
        Question("summary", "summary", {"trace": trace}, ["summary", trace, "--json", "--sections="]),
        Question("top", "top", {"trace": trace, "what": "ops" if kind == "cpu" else "kernels", "n": 10}),
        Question("memory_peak", "memory_peak", {"trace": trace}),
    ]
    if before:
        qs.append(Question("diff", "diff", {"base": before, "new": trace}, ["diff", before, trace, "--json"]))
    return qs


def nsys_ai_questions(export: str, before: str) -> list[Question]:
    """nsys-ai's closest tools to profui's summary, explain, top kernels and diff."""

    def skill(label: str, name: str, **params: Any) -> Question:
        return Question(label, "run_skill", {"profile": export, "skill_name": name, "params": params})

    return [
        skill("explain", "root_cause_matcher"),
        skill("summary", "profile_health_manifest"),
        skill("top", "top_kernels", limit=10),
        Question("diff", "diff_profiles", {"before": before, "after": export}),
    ]


def size(result: Any) -> tuple[int, int]:
    """Bytes of the structured content (compact JSON) and of the text copies."""
    structured = result.structured_content
    s = (
        0
        if structured is None
        else len(json.dumps(structured, separators=(",", ":"), ensure_ascii=False).encode())
    )
    t = sum(len(c.text.encode()) for c in result.content if getattr(c, "text", None) is not None)
    return s, t


def refusal(result: Any) -> str | None:
    """The error a result carries: an MCP tool error, or nsys-ai's ``{"error": ...}`` payload."""
    if result.is_error:
        return result.content[0].text[:300]
    err = (result.structured_content or {}).get("error")
    return json.dumps(err)[:300] if err else None


def session(command: list[str], env: dict[str, str], q: Question) -> dict[str, Any]:
    """A fresh server: its start-up, ``q`` asked twice (cold, warm), its peak RSS."""

    async def main() -> dict[str, Any]:
        params = StdioServerParameters(command=command[0], args=command[1:], env=env)
        before = {p.pid for p in psutil.Process().children()}
        out: dict[str, Any] = {}
        with tempfile.TemporaryFile("w+") as errlog:
            t = time.perf_counter()
            async with stdio_client(params, errlog=errlog) as (read, write), ClientSession(read, write) as s:
                await s.initialize()
                out["start"] = time.perf_counter() - t
                (server,) = [p for p in psutil.Process().children() if p.pid not in before]
                listing = await s.list_tools()
                out["tools"] = [t.name for t in listing.tools]
                dumped = [t.model_dump(mode="json", by_alias=True, exclude_none=True) for t in listing.tools]
                out["list_bytes"] = len(json.dumps(dumped).encode())
                out["output_schema_bytes"] = sum(
                    len(json.dumps(t.get("outputSchema", {})).encode()) for t in dumped
                )

                def cpu() -> float:
                    c = server.cpu_times()
                    return c.user + c.system + c.children_user + c.children_system

                for phase in ("cold", "warm"):
                    c, t = cpu(), time.perf_counter()
                    with anyio.fail_after(600):
                        result = await s.call_tool(q.tool, q.args)
                    wall = time.perf_counter() - t
                    error = refusal(result)
                    if error:
                        raise SystemExit(f"{' '.join(command)}: {q.tool} {q.args}: {error}")
                    out[phase] = {"wall": wall, "cpu": cpu() - c, "bytes": size(result)}
                out["doc"] = result.structured_content
                with open(f"/proc/{server.pid}/status") as f:
                    out["peak"] = next(int(x.split()[1]) for x in f if x.startswith("VmHWM")) / 1024
            errlog.seek(0)
            out["download_failed"] = "Failed to download extension" in errlog.read()
        return out

    return anyio.run(main)


def cli(args: list[str], env: dict[str, str]) -> dict[str, float]:
    """``profui ARGS`` in a fresh process: wall, CPU, peak MB, stdout bytes."""
    m = measure([PROFUI, *args], env=env, text=False)
    if m.code != 0:
        raise SystemExit(f"profui {' '.join(args)} failed: {m.stderr.decode()[-1000:]}")
    doc = json.loads(m.stdout)
    return {"wall": m.wall, "cpu": m.cpu, "peak": m.peak_mb, "bytes": len(m.stdout), "doc": doc}


def same_answer(a: Any, a_work: Path, b: Any, b_work: Path) -> bool:
    """Whether two JSON documents are equal once each one's working folder reads the same (and the
    name of its import in the cache, a hash of the copy's own path)."""

    def plain(doc: Any, work: Path) -> str:
        return re.sub(r"/imports/[0-9a-f]+", "/imports/H", json.dumps(doc).replace(str(work), "W"))

    return plain(a, a_work) == plain(b, b_work)


def fresh(files: dict[str, Path], work: Path) -> dict[str, str]:
    """Copies of ``files`` under ``work`` (a folder copied without its recorded analyses)."""
    out = {}
    for key, src in files.items():
        dst = work / key / src.name
        dst.parent.mkdir(parents=True)
        if src.is_dir():
            shutil.copytree(src, dst, ignore=shutil.ignore_patterns(".profui"))
        else:
            shutil.copy(src, dst)
        out[key] = str(dst)
    return out


def ask_profui(kind: str, files: dict[str, Path], i: int) -> dict[str, dict[str, Any]]:
    """Every profui question on one trace: an MCP session each, then the CLI (or the other way
    round on odd repeats)."""
    out: dict[str, dict[str, Any]] = {}
    docs: dict[tuple[str, str], tuple[Any, Path]] = {}
    with tempfile.TemporaryDirectory() as tmp:
        probe = profui_questions("T", kind, "B" if "before" in files else None)
        for q in probe:
            for side in ("mcp", "cli")[:: 1 if i % 2 == 0 else -1]:
                if side == "cli" and q.cli is None:
                    continue
                work = Path(tempfile.mkdtemp(dir=tmp))
                paths = fresh(files, work)
                (cache := work / "cache").mkdir()
                env = {**os.environ, "PROFUI_CACHE": str(cache)}
                (real,) = [
                    x
                    for x in profui_questions(paths["trace"], kind, paths.get("before"))
                    if x.label == q.label
                ]
                got = out.setdefault(q.label, {})
                if side == "mcp":
                    got["mcp"] = session([PROFUI, "mcp"], {"PROFUI_CACHE": str(cache)}, real)
                    docs[q.label, side] = (got["mcp"].pop("doc"), work)
                else:
                    got["cli"] = {"cold": cli(real.cli, env), "warm": cli(real.cli, env)}
                    docs[q.label, side] = (got["cli"]["warm"].pop("doc"), work)
                    got["cli"]["cold"].pop("doc")
    for label, got in out.items():
        if "cli" in got:
            got["same"] = same_answer(*docs[label, "mcp"], *docs[label, "cli"])
    return out


def ask_nsys_ai(server: str, files: dict[str, Path]) -> dict[str, dict[str, Any]]:
    """nsys-ai's questions, a fresh server and fresh copies of the exports each."""
    out = {}
    with tempfile.TemporaryDirectory() as tmp:
        for q in nsys_ai_questions("T", "B"):
            paths = fresh(files, Path(tempfile.mkdtemp(dir=tmp)))
            (real,) = [x for x in nsys_ai_questions(paths["trace"], paths["before"]) if x.label == q.label]
            out[q.label] = {"mcp": session([server], {}, real)}
            out[q.label]["mcp"].pop("doc")
    return out


def median(runs: list[Any]) -> Any:
    """The element-wise median of equally shaped nested dicts, tuples and numbers."""
    first = runs[0]
    if isinstance(first, dict):
        return {k: median([r[k] for r in runs]) for k in first}
    if isinstance(first, tuple):
        return tuple(median([r[j] for r in runs]) for j in range(len(first)))
    if isinstance(first, bool):
        return all(runs)
    if isinstance(first, (int, float)):
        return statistics.median(runs)
    return first


def load() -> str:
    return "/".join(f"{x:.1f}" for x in os.getloadavg())


def kb(n: float) -> str:
    return f"{n / 1000:.1f}"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--nsys-ai-mcp", default=str(REPO / ".venv-nsysai" / "bin" / "nsys-ai-mcp"))
    ap.add_argument("--no-nsys-ai", action="store_true", help="leave out nsys-ai's MCP server")
    ap.add_argument(
        "--traces", default=os.environ.get("PROFUI_TRACES", str(REPO.parent / "shared" / "traces"))
    )
    args = ap.parse_args()
    traces = Path(args.traces)
    sets = {
        "kineto df_index": ("kineto", {"trace": traces / KINETO}),
        "nsys mfu_after": ("nsys", {"trace": traces / NSYS, "before": traces / NSYS_BEFORE}),
        "cpu mlp_cpu": ("cpu", {"trace": REPO / "samples" / "mlp_cpu"}),
    }
    for _, files in sets.values():
        for p in files.values():
            if not p.exists():
                raise SystemExit(f"{p}: not found (--traces, or the samples)")
    nsys_ai = not args.no_nsys_ai
    if nsys_ai and not Path(args.nsys_ai_mcp).is_file():
        raise SystemExit(f"{args.nsys_ai_mcp}: not found (see this script's docstring, or --no-nsys-ai)")

    print(f"load (1/5/15 min) before: {load()}; {os.cpu_count()} cores", flush=True)
    runs: dict[tuple[str, str], list[dict[str, Any]]] = {}
    for i in range(args.repeat):
        for name, (kind, files) in sets.items():
            tools = ["profui", "nsys-ai"] if nsys_ai and kind == "nsys" else ["profui"]
            for tool in tools[i % len(tools) :] + tools[: i % len(tools)]:
                got = ask_profui(kind, files, i) if tool == "profui" else ask_nsys_ai(args.nsys_ai_mcp, files)
                runs.setdefault((name, tool), []).append(got)
        print(f"repeat {i + 1} done, load {load()}", flush=True)
    print(f"load (1/5/15 min) after:  {load()}")
    m = {key: median(r) for key, r in runs.items()}

    print(f"medians of {args.repeat}; a fresh server per question; seconds, KB (1000 bytes), MB")
    head = (
        f"{'trace':<16} {'server':<8} {'question':<12} {'start':>5} {'cold s':>7} {'cpu':>6} {'warm s':>7}"
        f" {'cpu':>6} {'KB json':>8} {'KB text':>8} {'peak':>5} | {'CLI cold':>8} {'cpu':>6} {'warm':>6}"
        f" {'cpu':>6} {'KB':>7} {'peak':>5} same"
    )
    print(head)
    for (name, tool), qs in m.items():
        for label, r in qs.items():
            s = r["mcp"]
            line = (
                f"{name:<16} {tool:<8} {label:<12} {s['start']:>5.2f} {s['cold']['wall']:>7.2f}"
                f" {s['cold']['cpu']:>6.2f} {s['warm']['wall']:>7.2f} {s['warm']['cpu']:>6.2f}"
                f" {kb(s['warm']['bytes'][0]):>8} {kb(s['warm']['bytes'][1]):>8} {s['peak']:>5.0f}"
            )
            if "cli" in r:
                c = r["cli"]
                line += (
                    f" | {c['cold']['wall']:>8.2f} {c['cold']['cpu']:>6.2f} {c['warm']['wall']:>6.2f}"
                    f" {c['warm']['cpu']:>6.2f} {kb(c['warm']['bytes']):>7} {c['cold']['peak']:>5.0f}"
                    f" {'yes' if r['same'] else 'NO'}"
                )
            print(line)
    for tool in dict.fromkeys(t for _, t in m):
        sessions = [r["mcp"] for (_, t), qs in m.items() if t == tool for r in qs.values()]
        print(
            f"{tool}: tools {', '.join(sessions[0]['tools'])}; tools/list {kb(sessions[0]['list_bytes'])} KB"
            f" (output schemas {kb(sessions[0]['output_schema_bytes'])} KB);"
            f" start-up {statistics.median(s['start'] for s in sessions):.2f} s (median of its sessions)"
        )

    # MCP warm vs the CLI (warm cache) on the questions both answer, every trace
    pairs = [r for (_, t), qs in m.items() if t == "profui" for r in qs.values() if "cli" in r]
    mcp_warm = sum(r["mcp"]["warm"]["wall"] for r in pairs)
    cli_warm = sum(r["cli"]["warm"]["wall"] for r in pairs)
    mcp_cold = sum(r["mcp"]["cold"]["wall"] for r in pairs)
    cli_cold = sum(r["cli"]["cold"]["wall"] for r in pairs)
    same = all(r["same"] for r in pairs)
    parts = [
        f"MCP/CLI wall warm {mcp_warm / cli_warm:.2f} cold {mcp_cold / cli_cold:.2f}"
        f" (summary, explain, diff; answers {'equal' if same else 'NOT all equal'})"
    ]
    if nsys_ai:
        ours, theirs = m[("nsys mfu_after", "profui")], m[("nsys mfu_after", "nsys-ai")]
        shared = [q for q in theirs if q in ours]

        def ratio(phase: str, key: str, j: int | None = None) -> float:
            a = sum(
                ours[q]["mcp"][phase][key] if j is None else ours[q]["mcp"][phase][key][j] for q in shared
            )
            b = sum(
                theirs[q]["mcp"][phase][key] if j is None else theirs[q]["mcp"][phase][key][j] for q in shared
            )
            return a / b

        parts.insert(
            0,
            f"profui/nsys-ai on {NSYS} ({', '.join(shared)}): wall cold {ratio('cold', 'wall'):.2f}"
            f" warm {ratio('warm', 'wall'):.2f}, cpu cold {ratio('cold', 'cpu'):.2f} warm"
            f" {ratio('warm', 'cpu'):.2f}, bytes json {ratio('warm', 'bytes', 0):.2f} text"
            f" {ratio('warm', 'bytes', 1):.2f}",
        )
    if any(r["mcp"]["download_failed"] for (_, t), qs in m.items() if t == "nsys-ai" for r in qs.values()):
        print(
            "nsys-ai: its calls tried to download DuckDB's sqlite_scanner extension, failed (no network)"
            " and fell back to sqlite3: that wait is in its wall time, not in its CPU"
        )
    print("ratios: " + "; ".join(parts))


if __name__ == "__main__":
    main()
