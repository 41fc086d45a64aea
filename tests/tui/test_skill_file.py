"""The agent skill file (``tui/cli/mcp/SKILL.md``, issue 39) tells only what is true.

An agent follows it to the letter, so every command line it quotes must parse (each flag is in
that command's ``--help``), every MCP tool it names must be served, and every key and category
it explains must be one the JSON carries. The oracles are the CLI's own help, the server's tool
list and the declared key lists, read at test time.
"""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

from profui.analysis import findings_doc
from profui.analysis.findings_base import CATEGORIES

from realdata import run_profui

SKILL = Path(__file__).resolve().parents[2] / "tui" / "cli" / "mcp" / "SKILL.md"


def _text() -> str:
    return SKILL.read_text(encoding="utf-8")


def _section(title: str) -> str:
    """The body of the ``## title...`` section."""
    m = re.search(rf"^## {re.escape(title)}.*?$(.*?)(?=^## |\Z)", _text(), re.S | re.M)
    assert m, f"SKILL.md has no section {title!r}"
    return m.group(1)


def _spans(text: str) -> list[str]:
    return re.findall(r"`([^`]+)`", text)


def _help(*args: str) -> str:
    out = run_profui(*args, "--help", COLUMNS="200", NO_COLOR="1")
    assert out.returncode == 0, out.stderr
    return out.stdout


def test_front_matter_names_the_skill_and_says_when_to_use_it() -> None:
    head = re.match(r"---\n(.*?)\n---\n", _text(), re.S)
    assert head, "SKILL.md starts with a YAML front matter block"
    import yaml

    meta = yaml.safe_load(head.group(1))
    assert meta["name"] == "profui"
    assert "Use when" in meta["description"] and len(meta["description"]) <= 1024


def test_every_profui_command_line_it_quotes_parses() -> None:
    lines = [s for s in _spans(_text()) if s.startswith(("profui ", "profcap "))]
    assert len(lines) >= 8
    helps: dict[tuple[str, ...], str] = {}
    for line in lines:
        words = line.split()
        if words[0] == "profcap":
            key: tuple[str, ...] = ("profcap",)
            if key not in helps:
                helps[key] = subprocess.run(
                    [sys.executable, "-m", "profui.capture.profcap", "--help"],
                    capture_output=True,
                    text=True,
                    timeout=120,
                ).stdout
        else:
            key = ("profui", words[1])
            if key not in helps:
                helps[key] = _help(words[1])
        for flag in re.findall(r"(?<!\S)(--[a-z][a-z-]*)", line):
            assert flag in helps[key], f"{line!r}: {flag} is not an option of {' '.join(key)}"


def test_every_tool_it_names_is_served() -> None:
    pytest.importorskip("mcp", reason="the mcp extra is part of the test extra; CI installs it")
    from profui.tui.cli.mcp.server import TOOLS

    served = {fn.__name__ for fn in TOOLS}
    section = _section("Tools of")
    named = {s for s in _spans(section) if re.fullmatch(r"[a-z_]+", s)}
    assert named == served, f"named {sorted(named)}, served {sorted(served)}"


def test_the_keys_and_categories_it_explains_are_the_json_s() -> None:
    section = _section("Reading the findings")
    keys = set(findings_doc.KEYS) | set(findings_doc.FINDING_KEYS) | {"label", "value", "unit", "source"}
    categories = set(CATEGORIES)
    told = {s for s in _spans(section) if re.fullmatch(r"[a-z_.]+", s)}
    for word in told:
        if word.startswith("critical_path."):
            assert word.split(".", 1)[1] in ("length_ns", "by_kind", "events"), word
        else:
            assert word in keys | categories, f"SKILL.md explains {word!r}, which the JSON does not carry"
    # every category is told, so an agent can read any finding
    assert categories <= told, f"categories not explained: {sorted(categories - told)}"


def test_profui_mcp_skill_prints_the_file() -> None:
    out = run_profui("mcp", "--skill")
    assert out.returncode == 0, out.stderr
    assert out.stdout == _text()
