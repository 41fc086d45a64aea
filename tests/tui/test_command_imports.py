"""Each command loads only the libraries it uses (issue #40, target 2).

A fresh process runs one command line and reports, at exit, the modules it imported (the
top-level ones, and the watched parts of a library: pyarrow.compute, ~0.04 s on its own).
Every installed third-party library is watched. The oracle is each command's declared use below
(what the command needs and why), not a record of what the code loads today: a library loaded and
not declared is a failure. Small commands
are mostly start-up, so a library loaded and not used is time every user waits for (pyarrow with
numpy ~0.1 s, polars ~0.1 s, pydantic ~0.05 s, textual ~0.2 s).
"""

from __future__ import annotations

import functools
import itertools
import json
import os
import shutil
import subprocess
import sys
from importlib.metadata import packages_distributions
from pathlib import Path

import pytest

from realdata import SAMPLES, shared_trace


@functools.cache
def watched() -> frozenset[str]:
    """Every installed third-party top-level module (profui's own and those a bare interpreter
    loads at start-up, site's .pth hooks such as setuptools' _distutils_hack, are no command's),
    and the watched parts of a library."""
    bare = subprocess.run(
        [sys.executable, "-c", "import sys; print(*sys.modules)"], capture_output=True, text=True, check=True
    ).stdout.split()
    return frozenset(packages_distributions()) - {"profui", *bare} | {"pyarrow.compute"}


# typer, with its own small dependencies: shellingham (the shell, for completion), annotated_doc;
# not pydantic, with which typer >= 0.2x coerces every value of a command line: profui's commands
# take theirs plainly (tui/cli/plain_values.py)
TYPER = frozenset({"typer", "shellingham", "annotated_doc"})
# help (and the help shown for no arguments) is click's plain text, which typer vendors: nothing
# more (typer's rich panels would load rich, markdown_it and pygments, ~0.08 s)
HELP = TYPER
# pyarrow's core (pyarrow.lib) imports numpy, and cloudpickle (when installed) for pickling
PYARROW = frozenset({"pyarrow", "numpy", "cloudpickle"})
# Polars' compiled runtime is a distribution of its own (polars-runtime-32, -64, -compat: which one
# a fresh install picks, and so its module's name, is Polars' choice)
POLARS = frozenset(
    {"polars"}
    | {
        m
        for m, dists in packages_distributions().items()
        if any(d.startswith("polars-runtime") for d in dists)
    }
)
# msgspec loads typing_extensions where it is installed
MSGSPEC = frozenset({"msgspec", "typing_extensions"})
# the analysis: Polars frames, numpy where a stage computes on arrays, msgspec run records
ANALYSIS = POLARS | {"numpy"} | MSGSPEC
# the Kineto importer: pyarrow tables and compute functions, msgspec JSON (msgspec loads
# typing_extensions where it is installed), isal's gzip
IMPORTER = PYARROW | MSGSPEC | {"pyarrow.compute", "isal"}

SMALL_KINETO = "hta-trace_compare-base-base.json.gz"

PROBE = """
import atexit, json, os, sys

def _dump():
    with open(os.environ["PROBE_OUT"], "w") as f:
        json.dump(sorted(sys.modules), f)

atexit.register(_dump)
tool, *args = sys.argv[1:]
sys.argv = [tool, *args]
if tool == "profcap":
    from profui.capture.profcap import main
else:
    from profui.tui.cli import main
main()
"""


@pytest.fixture(scope="module")
def work(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A copy of the small sample trace (commands write their cache under it), a folder for outputs."""
    root = tmp_path_factory.mktemp("imports")
    shutil.copytree(SAMPLES / "mlp_cpu", root / "mlp")
    shutil.copytree(SAMPLES / "mlp_cpu", root / "mlp2")
    return root


_RUNS = itertools.count()


def loaded(tool: str, args: list[str], tmp: Path) -> tuple[set[str], subprocess.CompletedProcess]:
    """Top-level modules a fresh ``tool args`` process imported, with the watched submodules it
    imported, and the process."""
    out = tmp / f"modules-{next(_RUNS)}.json"
    env = {**os.environ, "PROBE_OUT": str(out), "COLUMNS": "100", "PROFUI_CACHE": str(tmp / "cache")}
    proc = subprocess.run(
        [sys.executable, "-c", PROBE, tool, *args], capture_output=True, text=True, timeout=300, env=env
    )
    modules = set(json.loads(out.read_text()))
    return {m.split(".")[0] for m in modules} | (modules & watched()), proc


def _check(tool: str, args: list[str], uses: frozenset[str], tmp: Path, rc: int = 0) -> None:
    mods, proc = loaded(tool, args, tmp)
    assert proc.returncode == rc, (proc.stdout[-800:], proc.stderr[-2000:])
    unused = sorted((mods & watched()) - uses)
    assert not unused, f"`{tool} {' '.join(args)}` loads {unused}, which it does not use"


COMMANDS = [
    "open",
    "import",
    "info",
    "summary",
    "explain",
    "analyze",
    "runs",
    "diff",
    "export",
    "schema",
    "mcp",
]


@pytest.mark.parametrize(
    "args",
    [["--help"], ["-h"], *([c, "--help"] for c in COMMANDS), ["info", "-h"]],
    ids=lambda a: " ".join(a),
)
def test_help_loads_only_typer(args: list[str], tmp_path: Path) -> None:
    _check("profui", args, HELP, tmp_path)


def test_no_arguments_shows_help_with_typer_only(tmp_path: Path) -> None:
    _check("profui", [], HELP, tmp_path, rc=2)


def test_profcap_help_loads_none(tmp_path: Path) -> None:
    # argparse; psutil, NVML and torch are the recorder's, loaded once it records
    _check("profcap", ["--help"], frozenset(), tmp_path)


@pytest.mark.parametrize("extra", [[], ["--json"]], ids=["text", "json"])
def test_info_of_a_trace_folder(extra: list[str], tmp_path: Path) -> None:
    # typer alone: info's parameters (a path, flags) are taken without pydantic (info_cmd's
    # PlainValuesCommand); the first info counts the events (pyarrow reads four columns, numpy
    # counts them: it comes with pyarrow) and keeps their tallies; the next reads only them
    trace = tmp_path / "mlp"
    shutil.copytree(SAMPLES / "mlp_cpu", trace, ignore=shutil.ignore_patterns(".profui"))
    _check("profui", ["info", str(trace), *extra], TYPER | PYARROW, tmp_path)
    _check("profui", ["info", str(trace), *extra], TYPER, tmp_path)


def test_info_of_kineto_json_imports_it_first(tmp_path: Path) -> None:
    _check("profui", ["info", str(shared_trace(SMALL_KINETO))], TYPER | IMPORTER, tmp_path)


def test_import(tmp_path: Path) -> None:
    # rich: the progress bar, on a terminal
    args = ["import", str(shared_trace(SMALL_KINETO)), "-o", str(tmp_path / "out")]
    _check("profui", args, TYPER | IMPORTER | {"rich"}, tmp_path)


@pytest.mark.parametrize("extra", [[], ["--json"]], ids=["text", "json"])
def test_summary(work: Path, extra: list[str], tmp_path: Path) -> None:
    # reads events with Polars (the footer in plain Python): no pyarrow; one process: no dask
    _check("profui", ["summary", str(work / "mlp"), *extra], TYPER | ANALYSIS | {"rich"}, tmp_path)


@pytest.mark.parametrize("extra", [[], ["--json"]], ids=["text", "json"])
def test_explain(work: Path, extra: list[str], tmp_path: Path) -> None:
    # the pipeline's findings in memory (Polars), its text written plainly: no rich, no pyarrow
    _check("profui", ["explain", str(work / "mlp"), *extra], TYPER | ANALYSIS, tmp_path)


def test_analyze_and_plan(work: Path, tmp_path: Path) -> None:
    uses = TYPER | ANALYSIS | {"rich"}
    _check("profui", ["analyze", str(work / "mlp2"), "--quiet"], uses, tmp_path)
    _check("profui", ["analyze", str(work / "mlp2"), "--plan"], uses, tmp_path)


def test_runs_reads_records_only(work: Path, tmp_path: Path) -> None:
    # run records are JSON (msgspec); listing them computes nothing: no Polars
    _check("profui", ["runs", str(work / "mlp")], TYPER | MSGSPEC | {"rich"}, tmp_path)


def test_diff(work: Path, tmp_path: Path) -> None:
    _check(
        "profui",
        ["diff", str(work / "mlp"), str(work / "mlp2")],
        TYPER | ANALYSIS | {"rich"},
        tmp_path,
    )


@pytest.mark.parametrize("args", [[], ["summary"]], ids=["list", "summary"])
def test_schema(args: list[str], tmp_path: Path) -> None:
    # the schemas are built from the declared tables (Polars dtypes) and the vocabularies of the
    # analysis modules that own them (the critical path's kinds: numpy, which those modules load)
    _check("profui", ["schema", *args], TYPER | ANALYSIS, tmp_path)


def test_export(work: Path, tmp_path: Path) -> None:
    # selection in Polars, the Chrome-trace writer over pyarrow tables
    args = ["export", str(work / "mlp"), "-o", str(tmp_path / "trace.json")]
    _check("profui", args, TYPER | ANALYSIS | PYARROW, tmp_path)


def test_open_refuses_a_bad_path_before_loading_the_app(tmp_path: Path) -> None:
    # `profui open` uses the app (textual), the analysis and the importer; a path it refuses in one
    # line needs none of them: a missing path is refused before any look-up, and a file that is no
    # trace source finds no sources to look up in the import cache (its run records: msgspec)
    _check("profui", ["open", str(tmp_path / "missing")], TYPER, tmp_path, rc=2)
    (tmp_path / "notes.txt").write_text("hello")
    _check("profui", ["open", str(tmp_path / "notes.txt")], TYPER, tmp_path, rc=2)
