"""``profui schema [NAME]``: prints :func:`profui.analysis.json_schema.document` (a valid draft
2020-12 schema), lists the outputs without a name, refuses an unknown name in one line (exit 2)."""

from __future__ import annotations

import json

import pytest
from jsonschema import Draft202012Validator
from typer.testing import CliRunner

from profui.analysis.json_schema import NAMES, VERSIONS, document
from profui.tui.cli import app

from realdata import run_profui


@pytest.mark.parametrize("name", NAMES)
def test_schema_prints_the_document(name: str) -> None:
    res = CliRunner().invoke(app, ["schema", name])
    assert res.exit_code == 0, res.output
    printed = json.loads(res.stdout)
    assert printed == document(name)
    Draft202012Validator.check_schema(printed)
    assert res.stdout.startswith('{\n  "$schema"')  # indent 2


def test_schema_lists_names_and_versions() -> None:
    res = CliRunner().invoke(app, ["schema"])
    assert res.exit_code == 0, res.output
    lines = res.stdout.splitlines()
    assert [line.split()[0] for line in lines] == list(NAMES)
    assert [int(line.split()[2]) for line in lines] == [VERSIONS[n] for n in NAMES]
    assert all(line.split()[1] == "version" and len(line.split()) > 4 for line in lines)


def test_unknown_name_is_one_line_exit_2() -> None:
    proc = run_profui("schema", "sumary")
    assert proc.returncode == 2 and proc.stdout == ""
    assert proc.stderr.splitlines() == [
        "profui: schema 'sumary': no such output (there: summary, explain, diff, info, gate)"
    ]


def test_diff_schema_references_the_gate() -> None:
    diff = document("diff")
    gate = diff["properties"]["gate"]["anyOf"]
    assert {"$ref": document("gate")["$id"]} in gate and {"type": "null"} in gate
    assert diff["$defs"]["gate"] == document("gate")
