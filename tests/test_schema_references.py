"""No consumer names a column its producer's schema does not declare.

Walks the consumers of the typed result (takeaways, the text summary, the dashboard and its
views) and collects every column name they read: ``pl.col("x")``, ``frame["x"]``, ``row["x"]``,
``.filter``/``.sort``/``.select`` arguments, and the first element of the text summary's column
specs. Each must be declared by some table of :mod:`profui.analysis.schemas`, be a stage, output or
parameter name of the registry, a key of the JSON outputs the schema module declares, or a name the
same module made itself (``.alias("x")``, a ``rename``, a ``with_columns`` keyword).
"""

from __future__ import annotations

import ast

import pytest

from profui.analysis.pipeline import REGISTRY
from profui.analysis.schemas import JSON_KEYS, TABLES

from realdata import REPO

CONSUMERS = (
    "analysis/takeaways.py",
    "tui/cli/summary_cmd.py",
    "tui/views/dashboard_charts.py",
    "tui/views/dashboard.py",
    "tui/views/kernels.py",
    "tui/views/steps.py",
    "tui/views/table_sections.py",
    "tui/views/communication.py",
    "tui/views/launches.py",
    "tui/views/idle.py",
    "tui/views/sync.py",
)

_FRAME_METHODS = {
    "filter",
    "sort",
    "select",
    "group_by",
    "partition_by",
    "drop_nulls",
    "unique",
    "with_columns",
}


def _declared() -> set[str]:
    names = {c.name for t in TABLES.values() for c in t.columns}
    names |= {k for keys in JSON_KEYS.values() for k in keys}
    names |= set(REGISTRY.params)
    for stage in REGISTRY.stages.values():
        names.add(stage.name)
        names |= {f for f in stage.outputs} | {f.rsplit(".", 1)[0] for f in stage.outputs}
    return names


def _strings(node: ast.AST) -> list[str]:
    return [n.value for n in ast.walk(node) if isinstance(n, ast.Constant) and isinstance(n.value, str)]


def _references(tree: ast.AST) -> tuple[set[str], set[str]]:
    """(names read as columns, names the module creates itself)."""
    read: set[str] = set()
    made: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Call):
            f = node.func
            name = f.attr if isinstance(f, ast.Attribute) else f.id if isinstance(f, ast.Name) else ""
            if name == "col" and isinstance(f, ast.Attribute):
                read |= {s for a in node.args for s in _strings(a)}
            elif name in _FRAME_METHODS and isinstance(f, ast.Attribute):
                read |= {
                    a.value for a in node.args if isinstance(a, ast.Constant) and isinstance(a.value, str)
                }
                made |= {k.arg for k in node.keywords if k.arg and name == "with_columns"}
            elif name == "alias":
                made |= {s for a in node.args for s in _strings(a)}
            elif name == "rename":
                for a in node.args:
                    if isinstance(a, ast.Dict):
                        made |= {v.value for v in a.values if isinstance(v, ast.Constant)}
        elif isinstance(node, ast.Subscript) and isinstance(node.slice, ast.Constant):
            if isinstance(node.slice.value, str):
                read.add(node.slice.value)
        elif isinstance(node, ast.Tuple) and len(node.elts) == 3:  # summary_cmd's (column, header, fmt)
            first = node.elts[0]
            if (
                isinstance(first, ast.Constant)
                and isinstance(first.value, str)
                and isinstance(node.elts[2], ast.Name)
            ):
                read.add(first.value)
    return read, made


@pytest.mark.parametrize("module", CONSUMERS)
def test_consumers_read_only_declared_columns(module: str) -> None:
    tree = ast.parse((REPO / module).read_text())
    read, made = _references(tree)
    unknown = sorted(read - _declared() - made)
    assert not unknown, f"{module} reads columns no schema declares: {unknown}"


def test_every_table_output_has_a_schema_and_every_schema_an_output() -> None:
    # a files stage's files (the timeline's index) are its own, handed on as paths: not tables
    tables = [s for s in REGISTRY.stages.values() if not s.files]
    outputs = {(s.name, f) for s in tables for f in s.outputs if f.endswith(".parquet")}
    assert outputs == set(TABLES)
    json_outputs = {(s.name, f) for s in tables for f in s.outputs if f.endswith(".json")}
    assert json_outputs == set(JSON_KEYS)


def test_the_walk_catches_an_undeclared_column() -> None:
    read, made = _references(ast.parse('df.filter(pl.col("busy_pct") > 0)\nrow["gpu_util"]\nx.alias("mine")'))
    assert {"busy_pct", "gpu_util"} <= read - _declared() and "mine" in made


def test_analysis_view_sections_show_only_their_tables_declared_columns() -> None:
    """Each table of the Communication/Launches/Idle/Sync views names columns of the stage
    output it shows (and sorts by, and opens kernels from, one of them)."""
    from profui.analysis.pipeline.result import Result
    from profui.tui.views.communication import comm_sections
    from profui.tui.views.idle import idle_sections
    from profui.tui.views.launches import launch_sections
    from profui.tui.views.sync import sync_sections

    # each stage's declared tables, without rows: what the views read through the typed result
    tables = Result(
        {
            s.name: {f: TABLES[(s.name, f)].empty() for f in s.outputs if f.endswith(".parquet")}
            for s in REGISTRY.stages.values()
            if s.name != "summary" and not s.files  # no table: its JSON documents; files
        },
        "declared",
    )
    for build in (comm_sections, launch_sections, idle_sections, sync_sections):
        for sec in build(tables):
            declared = TABLES[(sec.stage, sec.file)].names
            unknown = [c for c in sec.columns if c not in declared]
            assert not unknown, f"{sec.title}: {sec.stage}/{sec.file} declares no {unknown}"
            for col in (sec.sort_by, sec.kernel):
                assert col is None or col in sec.columns, (sec.title, col)
