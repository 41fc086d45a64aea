"""profui's ``--hta-compat`` critical path against HTA 0.5.0's ``critical_path_analysis``.

For each shared trace with ProfilerSteps (and one other annotation of most: ``OTHER_ANNOTATIONS``),
and the two ``hta-critical_path-*`` traces with the annotations HTA's own tests use, both tools
analyse the same windows (per rank, each host instance of the annotation, paired by start: HTA
numbers them in its file's order): HTA in its venv (``.venv-bench``, a
subprocess: ``TraceAnalysis(trace_dir=...)`` then ``critical_path_analysis(rank, annotation,
instance)``), profui in this process (the imported trace's HTA view, then
:func:`profui.analysis.critical_path_hta.paths`). Printed per window: the path's length and its
time by kind for both, and the largest relative difference; per trace, both tools' CPU seconds
for the analysis of all its windows (each tool's trace already loaded: HTA's parsed ``Trace``,
profui's collected events), medians of ``--repeat`` runs, with the machine's load.

``--write-reference DIR`` writes HTA's numbers, one JSON file per trace (trace, HTA version,
and per window: rank, annotation, instance (HTA's), order (by start among the rank's host
instances: profui's instance), name, length_ns, by_kind_ns; or HTA's error): the
oracle ``tests/analysis/test_critical_path_hta.py`` reads.

    .venv/bin/python benchmarks/critical_path_vs_hta.py [--repeat 3] [--traces NAME ...]
                                                        [--write-reference tests/analysis/reference]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from hta_env import HTA_PYTHON, HTA_SETUP

REPO = Path(__file__).resolve().parent.parent
TRACES = Path(os.environ.get("PROFUI_TRACES", REPO.parent / "shared" / "traces"))

#: The critical-path traces and the annotations HTA's tests analyse them with.
CRITICAL_PATH = {
    "hta-critical_path-simple_add-benchmark_result_493459_1694039959_trace.json.gz": (
        "[param|pytorch.model.alex_net|0|0|0|measure|forward]"
    ),
    "hta-critical_path-cuda_event_sync_multi_stream-event_sync_trace.json.gz": "",
}
#: Other annotations of the shared traces, analysed instance by instance too.
OTHER_ANNOTATIONS = {
    "hta-amd_trace-mi250_minitoy_train_ROCm6_2_kineto.json.gz": "Optimizer.step",
    "hta-call_stack-backward_thread.json": "## backward ##",
    "hta-df_index_resolver-df_index_resolver.json.gz": "Optimizer.step",
    "hta-execution_trace-benchmark_simple_add_trace.json.gz": "[param|torch.add|0|0|0|measure|forward]",
    "hta-mtia_inference_trace-mtia_inference_rank_0.json.gz": "# TensorsToDeviceModule #",
    "hta-nccl_parser_config-nccl_data.json.gz": "Optimizer.step",
    "hta-negative_queue_length_values_check-rank0.json.gz": "## PooledEmbeddingsAwaitable wait() ##",
    "hta-ns_resolution_trace-rank-0.Apr_03_18_51_38.1102.pt.trace.json.gz": "Optimizer.step",
    "hta-trace_compare-base-base.json.gz": "nccl:all_reduce",
    "hta-trace_filter-sampled_rank-0.json.gz": "## encoder fp8 None ##",
    "hta-trace_filter-sampled_rank-1.json.gz": "## encoder fp8 None ##",
}
#: Shared files that are no Kineto trace.
NOT_KINETO = (
    "hta-execution_trace-benchmark_simple_add_et.json.gz",
    "hta-memory_analysis-memory_timeline.raw.gz",
)

HTA_CHILD = r"""
import json, logging, os, sys, tempfile, time, importlib.metadata
logging.disable(logging.CRITICAL)
from hta.configs.config import logger
logger.setLevel(logging.CRITICAL)
import warnings; warnings.filterwarnings("ignore")
from hta.trace_analysis import TraceAnalysis
path, annotation, repeat = sys.argv[1], sys.argv[2], int(sys.argv[3])
d = tempfile.mkdtemp()
os.symlink(os.path.abspath(path), os.path.join(d, os.path.basename(path)))
a = TraceAnalysis(trace_dir=d)
table = a.t.symbol_table.get_sym_table()
wins, cpu = [], []
for r in range(repeat):
    t0 = time.process_time()
    got = []
    for rank in sorted(a.t.traces):
        df = a.t.get_trace(rank)
        ids = [v for k, v in a.t.symbol_table.get_sym_id_map().items() if annotation in k]
        anns = df[df.name.isin(ids)] if annotation else df.iloc[:1]
        for i in range(len(anns)):
            rec = {"rank": int(rank), "annotation": annotation, "instance": i}
            if annotation:
                rec["name"] = table[int(anns.iloc[i]["name"])]
                rec["ts"] = int(anns.iloc[i]["ts"])
                if table[int(anns.iloc[i]["cat"])] == "gpu_user_annotation":
                    continue
            else:
                rec["name"] = ""
            try:
                res = a.critical_path_analysis(rank=rank, annotation=annotation, instance_id=i)
                if res is None or not res[1]:
                    raise ValueError("critical_path_analysis did not succeed")
                g = res[0]
                nodes = g.critical_path_nodes
                # HTA's weights are whole µs
                rec["length_ns"] = 1000 * int(sum(g.edges[u, v]["weight"] for u, v in zip(nodes, nodes[1:])))
                bd = g.get_critical_path_breakdown()
                rec["by_kind_ns"] = {k: 1000 * int(v) for k, v in bd.groupby("bound_by").duration.sum().items() if k}
            except Exception as e:
                rec["error"] = f"{type(e).__name__}: {str(e).splitlines()[0] if str(e) else ''}"
            got.append(rec)
    cpu.append(time.process_time() - t0)
    wins = got
# the host instances of each rank by start: the windows profui numbers in that order
for rank in {w["rank"] for w in wins}:
    mine = sorted((w for w in wins if w["rank"] == rank), key=lambda w: (w.get("ts", 0), w["instance"]))
    for k, w in enumerate(mine):
        w["order"] = k
        w.pop("ts", None)
print(json.dumps({"hta_version": importlib.metadata.version("HolisticTraceAnalysis"), "windows": wins, "cpu_s": cpu}))
"""


def hta_windows(trace: Path, annotation: str, repeat: int) -> dict:
    """HTA's critical path of every host instance of ``annotation`` in ``trace`` (a subprocess)."""
    proc = subprocess.run(
        [str(HTA_PYTHON), "-c", HTA_CHILD, str(trace), annotation, str(repeat)],
        capture_output=True,
        text=True,
        timeout=3600,
    )
    if proc.returncode != 0:
        last = (proc.stderr.strip().splitlines() or ["no output"])[-1]
        return {"error": last, "windows": [], "cpu_s": []}
    return json.loads(proc.stdout.strip().splitlines()[-1])


def ours(trace: Path, annotation: str, repeat: int, cache: Path) -> tuple[list[dict], list[float]]:
    """profui's hta_compat critical path of the same windows, and the CPU seconds of each repeat."""
    from profui.analysis import critical_path_hta as ch
    from profui.analysis import open_trace
    from profui.capture.ingest import import_trace

    out = cache / trace.name.split(".json")[0]
    if not out.exists():
        import_trace([trace], out)
    events = open_trace(out).hta_events().collect()
    cpu, rows = [], []
    for _ in range(repeat):
        t0 = time.process_time()
        got = ch.paths(events, annotation)
        cpu.append(time.process_time() - t0)
        rows = [
            {
                "rank": rank,
                "instance": i,
                "name": name,
                "length_ns": p.length_ns if p else None,
                "by_kind_ns": p.by_kind if p else None,
            }
            for _node, rank, i, name, _s, _e, p in got
        ]
    return rows, cpu


def rel_diff(a: int, b: int) -> float:
    """|a - b| relative to b (0 when both are 0)."""
    return 0.0 if a == b else abs(a - b) / max(abs(b), 1)


def worst(ref: dict, got: dict) -> float:
    """The largest relative difference of a window's length and each kind's time."""
    kinds = set(ref["by_kind_ns"]) | set(got["by_kind_ns"])
    d = [rel_diff(got["length_ns"], ref["length_ns"])]
    d += [rel_diff(got["by_kind_ns"].get(k, 0), ref["by_kind_ns"].get(k, 0)) for k in kinds]
    return max(d)


def default_traces() -> list[tuple[str, str]]:
    """(file, annotation): the critical-path traces, then every shared Kineto trace with ProfilerSteps."""
    todo = list(CRITICAL_PATH.items())
    for f in sorted(TRACES.glob("hta-*.json*")):
        if f.name in CRITICAL_PATH or f.name in NOT_KINETO:
            continue
        todo.append((f.name, "ProfilerStep"))
    return todo + list(OTHER_ANNOTATIONS.items())


def reference_name(trace: str, annotation: str) -> str:
    """The reference file of a trace's windows of one annotation (ProfilerStep's and the
    critical-path traces' own: no suffix)."""
    stem = f"critical_path-{trace.split('.json')[0]}"
    if annotation in ("ProfilerStep", CRITICAL_PATH.get(trace)):
        return f"{stem}.json"
    return f"{stem}@{''.join(c if c.isalnum() else '_' for c in annotation).strip('_')}.json"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--traces", nargs="*", help="file names under PROFUI_TRACES (default: all that apply)")
    ap.add_argument("--write-reference", type=Path, metavar="DIR")
    opts = ap.parse_args()
    if not HTA_PYTHON.exists():
        sys.exit(f"{HTA_PYTHON}: no HTA venv; create it: {HTA_SETUP}")
    todo = default_traces()
    if opts.traces:
        todo = [(f, a) for f, a in todo if f in opts.traces or any(f.startswith(t) for t in opts.traces)]
    cache = Path(tempfile.mkdtemp(prefix="cp-vs-hta-"))
    print(f"load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} CPUs; medians of {opts.repeat}")
    summary: list[tuple[str, int, int, float, float, float]] = []
    hdr = f"{'trace':48} {'rank':>4} {'inst':>4} {'HTA ms':>10} {'ours ms':>10} {'max rel diff':>12}"
    for name, ann in todo:
        hta = hta_windows(TRACES / name, ann, opts.repeat)
        mine, cpu = ours(TRACES / name, ann, opts.repeat, cache)
        if not hta["windows"] and not hta.get("error") and not mine:
            continue
        print(f"\n{name}  annotation {ann!r}\n{hdr}")
        if hta.get("error"):
            print(f"  HTA fails on the trace: {hta['error']}")
        by_key = {(w["rank"], w["instance"]): w for w in mine}
        compared, diffs = 0, [0.0]
        for w in hta["windows"]:
            m = by_key.get((w["rank"], w["order"]))
            if "error" in w or m is None or m["length_ns"] is None:
                why = w.get("error") or "profui has no path"
                print(f"  {w['name'][:46]:46} {w['rank']:>4} {w['instance']:>4}  {why}")
                continue
            compared += 1
            diffs.append(worst(w, m))
            print(
                f"  {w['name'][:46]:46} {w['rank']:>4} {w['instance']:>4} {w['length_ns'] / 1e6:>10.3f} "
                f"{m['length_ns'] / 1e6:>10.3f} {worst(w, m):>12.2e}"
            )
            for k in sorted(set(w["by_kind_ns"]) | set(m["by_kind_ns"])):
                a, b = w["by_kind_ns"].get(k, 0), m["by_kind_ns"].get(k, 0)
                print(f"      {k:40} {a / 1e6:>10.3f} {b / 1e6:>10.3f} {rel_diff(b, a):>12.2e}")
        if hta["cpu_s"] and cpu:
            h, o = statistics.median(hta["cpu_s"]), statistics.median(cpu)
            print(f"  CPU s, all windows: HTA {h:.3f}, ours {o:.3f}: HTA / ours {h / max(o, 1e-9):.1f}x")
            label = reference_name(name, ann).removeprefix("critical_path-hta-").removesuffix(".json")
            summary.append((label, compared, len(hta["windows"]), max(diffs), h, o))
        if opts.write_reference:
            opts.write_reference.mkdir(parents=True, exist_ok=True)
            ref = {
                "trace": name,
                "hta_version": hta.get("hta_version"),
                "annotation": ann,
                "error": hta.get("error"),
                "windows": hta["windows"],
            }
            path = opts.write_reference / reference_name(name, ann)
            path.write_text(json.dumps(ref, indent=1, sort_keys=True) + "\n")
    print(f"\n{'trace':60} {'compared':>13} {'max rel diff':>12} {'HTA/ours CPU':>12}")
    for name, n, of, d, h, o in summary:
        print(f"{name[:60]:60} {f'{n}/{of}':>13} {d:>12.2e} {h / max(o, 1e-9):>11.1f}x")
    ok = [r for r in summary if r[1] == r[2] and r[1] > 0]
    if ok:
        h, o = sum(r[4] for r in ok), sum(r[5] for r in ok)
        print(f"traces HTA analyses whole ({len(ok)}): CPU s HTA {h:.2f}, ours {o:.2f}: {h / o:.1f}x")
    print(f"load average at the end {os.getloadavg()[0]:.1f}")


if __name__ == "__main__":
    main()
