"""Every stage output of every shared trace and sample, dumped as tables and compared exactly.

``dump OUT`` imports each source as ``profui summary`` does, into an isolated cache (nothing
imported or indexed by another code version is reused), and writes under ``OUT/<trace>/``:
``<mode>/<stage>/<output>``, every stage of the graph run in memory (``store.compute``, the bodies
``profui analyze`` runs), ``default`` and ``hta_compat``; ``import/``, the import's events, metrics,
manifest and footer side data, and ``import/files/<file>.json`` per events/metrics Parquet file: the
sha256 of its bytes (the dump's temporary paths in them written ``<work>``), its row groups' row counts, and per row group and column the compression, the
encodings and whether statistics are stored (what reading the tables back cannot show); ``timeline/``, the timeline index (``lod_open.build_lod``);
``analyze/``, what ``profui analyze`` records on disk, read back as the dashboard reads it;
``cli/``, what ``profui summary`` and ``profui info`` print (text and JSON). ``OUT/_cli/`` holds
every ``--help``. Tables are Parquet, the rest canonical JSON; a refused source is its one line
(``refused.json``), a failure of the code under test its error (``error.json``).

``compare A B`` compares two dumps table by table, rows in order, exactly: schema, row count,
nulls, and values, floats by their bits (-0.0 differs from 0.0; a NaN equals a NaN of the same
bits), in tables and in JSON alike (JSON types strict: 2 is not 2.0); one line per difference, a
count, exit 1 when anything differs.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import os
import re
import shutil
import struct
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import polars as pl
import pyarrow as pa

REPO = Path(__file__).resolve().parent.parent
MODES: dict[str, dict[str, Any]] = {"default": {}, "hta_compat": {"hta_compat": True}}
SAMPLES = ("mlp_cpu", "jax_cpu", "synthetic_gpu")
#: The two ranks of one 128-rank job, imported together as a 2-rank trace.
PAIR = ("hta-trace_filter-sampled_rank-0.json.gz", "hta-trace_filter-sampled_rank-1.json.gz")
PSEUDO_STAGES = ("import", "timeline", "analyze", "cli")
#: ``profui`` runs per trace (``cli``): output name, command, options after the trace.
CLI_RUNS = (("summary", "summary", []), ("summary_json", "summary", ["--json"]),
            ("info", "info", []), ("info_json", "info", ["--json"]))  # fmt: skip
CLI_COMMANDS = ("open", "import", "info", "summary", "analyze", "runs", "diff", "export")
#: JSON keys left out of the dump, by name, because they differ run to run by design: the
#: trace files' fingerprint (their paths, sizes and mtimes, set when the import ran) in
#: ingest's trace.json and the timeline's meta.json.
VOLATILE_KEYS = {"fingerprint"}

EXAMPLES = """examples:
  python benchmarks/compare_outputs.py dump /tmp/outputs-me
  python benchmarks/compare_outputs.py compare /tmp/outputs-base /tmp/outputs-me
  python benchmarks/compare_outputs.py dump /tmp/o --trace df_index --trace nsys- --stage kernels --stage import
  python benchmarks/compare_outputs.py compare /tmp/outputs-base /tmp/o --trace df_index --trace nsys- --stage kernels --stage import
  /tmp/basevenv/bin/python benchmarks/compare_outputs.py dump /tmp/outputs-base   # the baseline code
  python benchmarks/compare_outputs.py dump /tmp/o-x20 --also /tmp/profui-scale/x20.json --trace also- --stage summary

--trace TEXT keeps the traces whose name contains TEXT (_cli: the --help texts); --stage NAME keeps
a stage of the graph, or import (events, metrics, manifest, footers, files' layout), timeline (the timeline
index), analyze (profui analyze's recorded outputs), cli (profui summary/info as printed).
A dump replaces, in each trace's folder it dumps, the stages it dumps (all: the whole folder).
Traces: $PROFUI_TRACES (default ../shared/traces), the Nsight exports in its nsys/, and the
samples of the profui being run.

compare is exact: schema, row count, nulls and every value, rows in order; floats by their bits
(-0.0 differs from 0.0, a NaN equals a NaN of the same bits), in tables and JSON alike; JSON types
strict (2 is not 2.0). import/files/ compares each events/metrics Parquet file as stored: the sha256
of its bytes, its row groups' rows, each column chunk's compression, encodings and statistics."""


def sources() -> list[tuple[str, list[Path]]]:
    """(trace name, its source paths): every shared trace file, the Nsight exports, the 2-rank
    pair, and the samples of the profui package being run (so a baseline dumps its own)."""
    import profui.analysis

    traces = Path(os.environ.get("PROFUI_TRACES", REPO.parent / "shared" / "traces")).resolve()
    stem = re.compile(r"(\.json\.gz|\.json|\.sqlite|\.raw\.gz)$")
    found = [
        (stem.sub("", f.name), [f]) for f in sorted(traces.iterdir()) if f.is_file() and f.suffix != ".md"
    ]
    found += [("nsys-" + stem.sub("", f.name), [f]) for f in sorted((traces / "nsys").glob("*.sqlite"))]
    found.append(("multirank-trace_filter-sampled_rank-0+1", [traces / p for p in PAIR]))
    samples = Path(profui.analysis.__file__).resolve().parent.parent / "samples"
    return found + [(f"sample-{s}", [samples / s]) for s in SAMPLES]


def _staged(name: str, paths: list[Path], work: Path) -> Path:
    """A single file is read in place (an import writes only into the cache); a folder or several
    files are copied first, so nothing is written beside the originals."""
    if len(paths) == 1 and paths[0].is_file():
        return paths[0]
    dest = work / "sources" / name
    for p in paths:
        if p.is_dir():
            shutil.copytree(p, dest, ignore=shutil.ignore_patterns(".profui"))
        else:
            dest.mkdir(parents=True, exist_ok=True)
            shutil.copy2(p, dest / p.name)
    return dest


def _json_default(obj: Any) -> Any:
    for attr in ("to_json_dict", "to_dict", "isoformat", "item"):
        if hasattr(obj, attr):
            return getattr(obj, attr)()
    if isinstance(obj, set | frozenset):
        return sorted(obj)
    if isinstance(obj, tuple | Path):
        return list(obj) if isinstance(obj, tuple) else str(obj)
    raise TypeError(f"not JSON-serialisable: {type(obj).__name__}")


class Writer:
    """Writes outputs under one trace's folder, with the run's temporary paths replaced by
    ``<trace>`` and ``<work>`` (they differ from dump to dump)."""

    def __init__(self, root: Path, trace_path: Path | None, work: Path) -> None:
        self.root, self.count = root, 0
        self.subs = [(str(trace_path), "<trace>")] if trace_path else []
        self.subs.append((str(work), "<work>"))

    def text(self, s: str) -> str:
        for old, new in self.subs:
            s = s.replace(old, new)
        return s

    def _plain(self, v: Any) -> Any:
        if isinstance(v, dict):
            return {k: self._plain(x) for k, x in v.items() if k not in VOLATILE_KEYS}
        if isinstance(v, list):
            return [self._plain(x) for x in v]
        return self.text(v) if isinstance(v, str) else v

    def write(self, rel: str, value: Any) -> None:
        """One output: a table (Polars, Arrow) as ``rel`` + ``.parquet``, anything else as JSON."""
        path = self.root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        if isinstance(value, pl.LazyFrame):
            value = value.collect()
        if not isinstance(value, pl.DataFrame) and type(value).__module__.startswith("pyarrow"):
            value = pl.from_arrow(value)
        if isinstance(value, pl.DataFrame):
            texts = [c for c, t in value.schema.items() if t == pl.String]
            for old, new in self.subs:
                has = [c for c in texts if value[c].str.contains(old, literal=True).any()]
                if has:
                    value = value.with_columns(pl.col(has).str.replace_all(old, new, literal=True))
            value.write_parquet(path.with_name(path.name.removesuffix(".parquet") + ".parquet"))
        else:
            plain = self._plain(json.loads(json.dumps(value, default=_json_default, allow_nan=True)))
            path.with_suffix(".json").write_text(json.dumps(plain, sort_keys=True, indent=1) + "\n")
        self.count += 1


def _dump_import(w: Writer, trace: Any) -> None:
    import pyarrow.parquet as pq

    w.write("import/events.parquet", trace.events().collect())
    w.write("import/metrics.parquet", trace.metrics().collect())
    w.write("import/manifest.json", trace.manifest.to_dict())
    side = {}
    for f in trace.dir.events:
        meta = pq.read_schema(f.path).metadata or {}
        side[f.path.relative_to(trace.path).as_posix()] = json.loads(meta.get(b"profui.source", b"null"))
    w.write("import/footers.json", side)
    for f in [*trace.dir.events, *trace.dir.metrics]:
        w.write(f"import/files/{f.path.relative_to(trace.path).as_posix()}.json", _file_layout(w, f.path))


def _file_layout(w: Writer, path: Path) -> dict[str, Any]:
    """A Parquet file as stored: the sha256 of its bytes (the dump's temporary paths in them, a
    staged source's path in the footer, written as in every output: ``<work>``), each row
    group's rows, and per row group and column its compression, encodings and whether
    statistics are stored."""
    import hashlib

    import pyarrow.parquet as pq

    meta = pq.ParquetFile(path).metadata
    groups = [meta.row_group(i) for i in range(meta.num_row_groups)]
    columns = [
        {
            g.column(j).path_in_schema: {
                "compression": g.column(j).compression,
                "encodings": list(g.column(j).encodings),
                "statistics": g.column(j).is_stats_set,
            }
            for j in range(g.num_columns)
        }
        for g in groups
    ]
    return {
        "sha256": hashlib.sha256(w.text(path.read_bytes().decode("latin-1")).encode("latin-1")).hexdigest(),
        "row_groups": meta.num_row_groups,
        "rows_per_row_group": [g.num_rows for g in groups],
        "columns_per_row_group": columns,
    }


def _dump_timeline(w: Writer, path: Path) -> None:
    import numpy as np

    from profui.analysis import lod, lod_open

    folder = lod_open.build_lod(path)
    dtypes = getattr(lod, "_ARRAYS", {})
    for f in sorted(folder.iterdir()):
        if f.name == "meta.json" and (folder / "index.json").is_file():
            continue  # the timeline stage's artifact record (its run, time and hashes): not the index
        if f.suffix == ".json":
            # the index's description: index.json since the index is a stage's output, meta.json
            # before; dumped under the one name, so dumps of both compare
            w.write("timeline/meta.json", json.loads(f.read_text()))
        elif f.suffix == ".parquet":
            w.write(f"timeline/{f.name}", pl.read_parquet(f))
        else:  # a .npy, or a raw array: typed where the index declares its dtype, else bytes
            array = np.load(f) if f.suffix == ".npy" else np.fromfile(f, dtype=dtypes.get(f.stem, np.uint8))
            w.write(f"timeline/{f.name}", pl.DataFrame({f.stem: array}))


def _dump_analyze(w: Writer, path: Path) -> None:
    from profui.analysis.pipeline.engine import analyze
    from profui.analysis.pipeline.outputs import load_output
    from profui.analysis.pipeline.registry import REGISTRY

    for stage in analyze(path, use_cache=False).stages:
        if REGISTRY.stages[stage].files:  # the timeline's index: its own pseudo-stage's
            continue
        for output, value in (load_output(path, stage) or {}).items():
            w.write(f"analyze/{stage}/{output}", value)


def profui_run(w: Writer, rel: str, args: list[str], *, own_process: bool = False) -> None:
    """``profui ARGS`` as its console script runs it, output piped, 160 columns: exit status,
    stdout, stderr. In this process (a process each would cost ~0.5 CPU-s of start-up 130 times),
    or in its own (``--help``: Typer prints it to the stdout it was imported with)."""
    os.environ["COLUMNS"] = "160"
    if own_process:
        exe = Path(sys.executable).with_name("profui")
        run = subprocess.run([exe, *args], capture_output=True, text=True, stdin=subprocess.DEVNULL)
        code, out, err = run.returncode, run.stdout, run.stderr
    else:
        from profui.tui.cli import main

        outs, errs, argv, code = io.StringIO(), io.StringIO(), sys.argv, 0
        sys.argv = ["profui", *args]
        try:
            with contextlib.redirect_stdout(outs), contextlib.redirect_stderr(errs):
                main()
        except SystemExit as exc:
            code = exc.code if isinstance(exc.code, int) else int(exc.code is not None)
        finally:
            sys.argv = argv
        out, err = outs.getvalue(), errs.getvalue()
    lines = {"stdout": w.text(out).splitlines(), "stderr": w.text(err).splitlines()}
    w.write(rel, {"args": [w.text(a) for a in args], "exit": code, **lines})


def dump_trace(name: str, paths: list[Path], out: Path, work: Path, stages: list[str]) -> str:
    """Dump one trace's outputs under ``out/name``; returns what it wrote, in words."""
    from profui.analysis.pipeline.registry import REGISTRY
    from profui.analysis.pipeline.store import compute
    from profui.analysis.trace import Trace
    from profui.capture.format import TraceFormatError, open_trace_dir
    from profui.tui.cli.sources import resolve_source

    src = _staged(name, paths, work)
    try:
        path = resolve_source(src)
    except TraceFormatError as exc:
        w = Writer(out / name, None, work)
        w.write("refused.json", {"refused": w.text(str(exc))})
        return f"refused: {w.text(str(exc))}"
    w = Writer(out / name, path, work)
    if "import" in stages:
        _dump_import(w, Trace(open_trace_dir(path)))
    # a files stage (the timeline's index) is dumped from its files, by its own pseudo-stage
    graph = [s for s in REGISTRY.order if s in stages and not REGISTRY.stages[s].files]
    for mode, params in MODES.items() if graph else ():
        try:
            store = compute(Trace(open_trace_dir(path)), graph, params)
        except Exception as exc:  # a stage's failure is an output too
            w.write(f"{mode}/error.json", {"error": type(exc).__name__, "line": w.text(str(exc))})
            continue
        for stage in graph:
            for output, value in store[stage].items():
                w.write(f"{mode}/{stage}/{output}", value)
    if "timeline" in stages:
        _dump_timeline(w, path)
    if "analyze" in stages:
        _dump_analyze(w, path)
    for label, command, options in CLI_RUNS if "cli" in stages else ():
        profui_run(w, f"cli/{label}.json", [command, str(src), *options])
    return f"{w.count} files"


def _cpu() -> float:
    t = os.times()
    return t.user + t.system + t.children_user + t.children_system


def _clear(folder: Path, stages: list[str] | None) -> None:
    """Remove what a dump of ``stages`` (None: all) rewrites under one trace's folder; the other
    stages' outputs stay."""
    if stages is None:
        shutil.rmtree(folder, ignore_errors=True)
        return
    for file in ("refused.json", "error.json"):
        (folder / file).unlink(missing_ok=True)
    graph = [s for s in stages if s not in PSEUDO_STAGES]
    for mode in MODES if graph else ():
        (folder / mode / "error.json").unlink(missing_ok=True)
    subs = [Path(s) for s in stages if s in PSEUDO_STAGES] + [Path(m, s) for m in MODES for s in graph]
    for sub in subs:
        shutil.rmtree(folder / sub, ignore_errors=True)


def dump(out: Path, traces: list[str], stages: list[str], also: list[Path] = ()) -> int:
    """``dump``: every selected trace's outputs under ``out``; ``also``: more sources, each
    named ``also-<its name>``."""
    work = Path(tempfile.mkdtemp(prefix="profui-compare-"))
    # an isolated cache: imports and timeline indexes of another code version are never reused
    os.environ["PROFUI_CACHE"] = str(work / "cache")
    os.environ["XDG_CACHE_HOME"] = str(work / "xdg")
    from profui.analysis.pipeline.registry import REGISTRY

    every = [*dict.fromkeys([*REGISTRY.order, *PSEUDO_STAGES])]
    if set(stages) - set(every):
        sys.exit(f"unknown stage(s) {sorted(set(stages) - set(every))}; stages: {', '.join(every)}")
    chosen, stages = bool(stages), stages or every
    start, cpu0 = time.perf_counter(), _cpu()
    try:
        if "cli" in stages and (not traces or "_cli" in traces):
            shutil.rmtree(out / "_cli", ignore_errors=True)
            w = Writer(out / "_cli", None, work)
            for cmd in ("", *CLI_COMMANDS):
                profui_run(
                    w, f"help/{cmd or 'profui'}", [*([cmd] if cmd else []), "--help"], own_process=True
                )
        for name, paths in [*sources(), *((f"also-{p.name}", [p.resolve()]) for p in also)]:
            if traces and not any(t in name for t in traces):
                continue
            t0 = time.perf_counter()
            _clear(out / name, stages if chosen else None)
            try:
                said = dump_trace(name, paths, out, work, stages)
            except Exception as exc:  # the code under test broke on this trace: an output too
                error = {"error": type(exc).__name__, "line": str(exc)}
                Writer(out / name, None, work).write("error.json", error)
                said = f"FAILED: {type(exc).__name__}: {exc}"
            print(f"{name}: {said}, {time.perf_counter() - t0:.1f} s", file=sys.stderr)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    wall, cpu = time.perf_counter() - start, _cpu() - cpu0
    print(f"dumped to {out} in {wall:.1f} s wall, {cpu:.1f} CPU-s (user+sys)", file=sys.stderr)
    return 0


# -- compare ------------------------------------------------------------------------------------


def _same(a: Any, b: Any) -> bool:
    """Exact: types strict, floats by their bits (-0.0 is not 0.0; NaN is NaN of the same bits)."""
    if isinstance(a, float) and isinstance(b, float):
        return struct.pack("<d", a) == struct.pack("<d", b)
    return type(a) is type(b) and a == b


def _as_bits(t: pa.DataType) -> pa.DataType:
    """``t`` with every float replaced by the unsigned integer of its width (nested types too)."""
    if pa.types.is_floating(t):
        return {16: pa.uint16(), 32: pa.uint32(), 64: pa.uint64()}[t.bit_width]
    if pa.types.is_list(t) or pa.types.is_large_list(t) or pa.types.is_fixed_size_list(t):
        inner = t.value_field.with_type(_as_bits(t.value_type))
        if pa.types.is_fixed_size_list(t):
            return pa.list_(inner, t.list_size)
        return pa.large_list(inner) if pa.types.is_large_list(t) else pa.list_(inner)
    if pa.types.is_struct(t):
        return pa.struct([t.field(i).with_type(_as_bits(t.field(i).type)) for i in range(t.num_fields)])
    return t


def _exact(s: pl.Series) -> pl.Series:
    """``s`` as compared: a column holding floats as their bits (Arrow's zero-copy view)."""
    arrow = s.to_arrow()
    bits = _as_bits(arrow.type)
    return s if bits == arrow.type else pl.Series(s.name, arrow.view(bits))


def _json_diff(a: Any, b: Any, where: str = "") -> str | None:
    """The first place two JSON values differ (types strict: 2 is not 2.0), or None."""
    if isinstance(a, dict) and isinstance(b, dict):
        if a.keys() != b.keys():
            only_a, only_b = sorted(a.keys() - b.keys()), sorted(b.keys() - a.keys())
            return f"keys at {where or '/'}: only in A {only_a}, only in B {only_b}"
        return next((d for k in a if (d := _json_diff(a[k], b[k], f"{where}/{k}"))), None)
    if isinstance(a, list) and isinstance(b, list):
        if len(a) != len(b):
            return f"length at {where or '/'}: A {len(a)}, B {len(b)}"
        pairs = enumerate(zip(a, b, strict=True))
        return next((d for i, (x, y) in pairs if (d := _json_diff(x, y, f"{where}[{i}]"))), None)
    return None if _same(a, b) else f"at {where or '/'}: A {a!r}, B {b!r}"


def _table_diff(a: pl.DataFrame, b: pl.DataFrame) -> str | None:
    """Schema, row count, then the first differing row and column (floats by their bits), or None."""
    if a.schema != b.schema:
        sa, sb = dict(a.schema), dict(b.schema)
        only = {side: [c for c in x if c not in y] for side, x, y in (("A", sa, sb), ("B", sb, sa))}
        parts = [f"only in {side} {cols}" for side, cols in only.items() if cols]
        parts += [f"{c}: A {sa[c]}, B {sb[c]}" for c in sa if c in sb and sa[c] != sb[c]]
        if [c for c in sa if c in sb] != [c for c in sb if c in sa]:
            parts.append(f"column order A {list(sa)}, B {list(sb)}")
        return "schema differs: " + "; ".join(parts)
    n = min(a.height, b.height)
    counts = "" if a.height == b.height else f"row count A {a.height}, B {b.height}; "
    firsts = []  # (first differing row, column position) per differing column
    for j, col in enumerate(a.columns):
        eq = _exact(a[col].head(n)).eq_missing(_exact(b[col].head(n)))
        if not eq.all():
            firsts.append((int(eq.arg_min()), j))
    if not firsts:
        return counts.removesuffix("; ") or None
    i, j = min(firsts)
    col = a.columns[j]
    return f"{counts}row {i} column {col}: A {a[col][i]!r}, B {b[col][i]!r} ({len(firsts)} column(s) differ)"


def _files(root: Path, traces: list[str], stages: list[str]) -> set[str]:
    rels = (p.relative_to(root).as_posix() for p in root.rglob("*") if p.is_file())
    return {
        r
        for r in rels
        if (not traces or any(t in r.split("/")[0] for t in traces))
        and (not stages or any(s in r.split("/")[1:3] for s in stages))
    }


def compare(a: Path, b: Path, traces: list[str], stages: list[str]) -> int:
    """``compare``: one line per differing output, a count; 1 when anything differs."""
    fa, fb = _files(a, traces, stages), _files(b, traces, stages)
    same = differ = 0
    for rel in sorted(fa | fb):
        if rel not in fb or rel not in fa:
            print(f"{rel}: only in {'A' if rel in fa else 'B'}")
            continue
        if rel.endswith(".parquet"):
            diff = _table_diff(pl.read_parquet(a / rel), pl.read_parquet(b / rel))
        else:
            diff = _json_diff(json.loads((a / rel).read_text()), json.loads((b / rel).read_text()))
        if diff:
            print(f"{rel}: {diff}")
        same, differ = same + (diff is None), differ + (diff is not None)
    only_a, only_b = len(fa - fb), len(fb - fa)
    print(f"{same} tables identical, {differ} differ, {only_a} only in A, {only_b} only in B")
    return 1 if differ or only_a or only_b else 0


def main(argv: list[str] | None = None) -> int:
    """The command line: ``dump OUT`` or ``compare A B``."""
    how = {"epilog": EXAMPLES, "formatter_class": argparse.RawDescriptionHelpFormatter}
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0], **how)
    sub = ap.add_subparsers(dest="cmd", required=True)
    d = sub.add_parser("dump", help="dump every output of every trace under OUT", **how)
    d.add_argument("out", type=Path)
    c = sub.add_parser("compare", help="compare two dumps; exit 1 when anything differs", **how)
    c.add_argument("a", type=Path)
    c.add_argument("b", type=Path)
    for p in (d, c):
        p.add_argument("--trace", action="append", default=[], help="only traces whose name contains this")
        p.add_argument("--stage", action="append", default=[], help="only this stage (see below)")
    d.add_argument("--also", action="append", default=[], type=Path, help="one more source (also-NAME)")
    args = ap.parse_args(argv)
    if args.cmd == "dump":
        return dump(args.out, args.trace, args.stage, args.also)
    return compare(args.a, args.b, args.trace, args.stage)


if __name__ == "__main__":
    sys.exit(main())
