"""The ``profui`` entry point asks Polars' allocator (jemalloc) for one arena per CPU on Linux,
added to a user's own ``_RJEM_MALLOC_CONF`` unless that chooses the arenas itself. The oracle is
jemalloc: with ``stats_print:true`` it prints, at the process's exit, the options it took
(``opt.percpu_arena``, ``opt.narenas``)."""

from __future__ import annotations

import os
import re
import subprocess
import sys

import pytest

from realdata import PROFUI, REPO

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="percpu arenas are Linux-only")


def _jemalloc_options(tmp_path, conf: str | None) -> dict[str, str]:
    """The ``opt.*`` lines jemalloc printed after ``profui summary`` of the CPU sample."""
    env = {k: v for k, v in os.environ.items() if k != "_RJEM_MALLOC_CONF"}
    if conf is not None:
        env["_RJEM_MALLOC_CONF"] = conf
    env["PROFUI_CACHE"] = str(tmp_path / "cache")
    proc = subprocess.run(
        [PROFUI, "summary", str(REPO / "samples" / "mlp_cpu"), "--json"],
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    return dict(re.findall(r"^\s*opt\.(\w+): (.*)$", proc.stderr, re.M))


def test_one_arena_per_cpu_added_to_the_users_settings(tmp_path) -> None:
    opts = _jemalloc_options(tmp_path, "stats_print:true")
    assert opts["stats_print"] == "true"  # the user's own setting kept
    assert opts["percpu_arena"] == '"percpu"'


def test_a_user_who_chooses_the_arenas_keeps_them(tmp_path) -> None:
    opts = _jemalloc_options(tmp_path, "stats_print:true,narenas:3")
    assert opts["narenas"] == "3"
    assert opts["percpu_arena"] == '"disabled"'


def test_nothing_set_gives_one_arena_per_cpu() -> None:
    code = (
        "import os; from profui.tui import cli; cli._arena_per_cpu(); print(os.environ['_RJEM_MALLOC_CONF'])"
    )
    env = {k: v for k, v in os.environ.items() if k != "_RJEM_MALLOC_CONF"}
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "percpu_arena:percpu"
