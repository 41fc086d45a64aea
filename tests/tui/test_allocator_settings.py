"""The ``profui`` entry point asks Polars' allocator (jemalloc) for one arena per CPU it may run
on and for freed pages given back at once (``muzzy_decay_ms:0``), on Linux, each added to a
user's own ``_RJEM_MALLOC_CONF`` unless that chooses the setting itself: per-CPU arenas where
jemalloc takes them, else (a process confined to some of the machine's CPUs, where jemalloc
refuses them with a line on stderr) that many arenas. The oracle is jemalloc: with
``stats_print:true`` it prints, at the process's exit, the options it took (``opt.percpu_arena``,
``opt.narenas``, ``opt.muzzy_decay_ms``), and any complaint about its settings starts
``<jemalloc>:``."""

from __future__ import annotations

import os
import re
import subprocess
import sys

import pytest

from realdata import PROFUI, REPO

pytestmark = pytest.mark.skipif(
    not sys.platform.startswith("linux"), reason="the arena settings are Linux-only"
)


def _summary_under(tmp_path, conf: str | None, cpus: set[int] | None = None) -> tuple[dict[str, str], str]:
    """jemalloc's ``opt.*`` values (their first word) and the whole stderr of ``profui summary``
    of the CPU sample, run with ``conf`` as the user's setting, confined to ``cpus`` where given."""
    env = {k: v for k, v in os.environ.items() if k != "_RJEM_MALLOC_CONF"}
    if conf is not None:
        env["_RJEM_MALLOC_CONF"] = conf
    env["PROFUI_CACHE"] = str(tmp_path / "cache")
    cmd = [PROFUI, "summary", str(REPO / "samples" / "mlp_cpu"), "--json"]
    if cpus is not None:  # confined as taskset would: the affinity, then exec of the command
        confine = "import os, sys; os.sched_setaffinity(0, {%s}); os.execv(sys.argv[1], sys.argv[1:])"
        cmd = [sys.executable, "-c", confine % ", ".join(map(str, sorted(cpus))), *cmd]
    proc = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-2000:]
    return dict(re.findall(r"^\s*opt\.(\w+): (\S+)", proc.stderr, re.M)), proc.stderr


def test_one_arena_per_cpu_added_to_the_users_settings(tmp_path) -> None:
    # a trailing comma of the user's: no empty pair added after it (jemalloc: "Malformed conf string")
    opts, err = _summary_under(tmp_path, "stats_print:true,")
    assert opts["stats_print"] == "true"  # the user's own setting kept
    assert "<jemalloc>:" not in err, err[:500]
    assert opts["muzzy_decay_ms"] == "0"  # over Polars' own 1000
    assert opts["dirty_decay_ms"] == "500"  # Polars' own, unchanged
    usable = len(os.sched_getaffinity(0))
    if os.sysconf("SC_NPROCESSORS_ONLN") == os.sysconf("SC_NPROCESSORS_CONF") == usable:
        assert opts["percpu_arena"] == '"percpu"'
    else:  # this runner is confined to some CPUs: as in the test below
        assert (opts["narenas"], opts["percpu_arena"]) == (str(usable), '"disabled"')


@pytest.mark.skipif(os.sysconf("SC_NPROCESSORS_CONF") < 2, reason="needs a machine of 2 CPUs or more")
def test_a_process_confined_to_one_cpu_gets_one_arena_and_no_warning(tmp_path) -> None:
    """Per-CPU arenas in a process allowed one CPU of several made jemalloc print "Number of CPUs
    detected is not deterministic" on every command that loads Polars."""
    opts, err = _summary_under(tmp_path, "stats_print:true", cpus={min(os.sched_getaffinity(0))})
    assert "<jemalloc>:" not in err, err[:500]
    assert (opts["narenas"], opts["percpu_arena"]) == ("1", '"disabled"')


def test_a_user_who_chooses_the_arenas_keeps_them(tmp_path) -> None:
    opts, _ = _summary_under(tmp_path, "stats_print:true,narenas:3")
    assert opts["narenas"] == "3"
    assert opts["percpu_arena"] == '"disabled"'
    assert opts["muzzy_decay_ms"] == "0"  # the arenas the user's, the rest profui's


def test_a_user_who_chooses_the_muzzy_decay_keeps_it(tmp_path) -> None:
    opts, err = _summary_under(tmp_path, "stats_print:true,muzzy_decay_ms:250")
    assert "<jemalloc>:" not in err, err[:500]
    assert opts["muzzy_decay_ms"] == "250"
    usable = len(os.sched_getaffinity(0))
    if os.sysconf("SC_NPROCESSORS_ONLN") == os.sysconf("SC_NPROCESSORS_CONF") == usable:
        assert opts["percpu_arena"] == '"percpu"'


def test_nothing_set_gives_one_arena_per_cpu_and_no_muzzy_pages() -> None:
    code = "import os; from profui.tui import cli; cli._allocator_settings(); print(os.environ['_RJEM_MALLOC_CONF'])"
    env = {k: v for k, v in os.environ.items() if k != "_RJEM_MALLOC_CONF"}
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    usable = len(os.sched_getaffinity(0))
    deterministic = os.sysconf("SC_NPROCESSORS_ONLN") == os.sysconf("SC_NPROCESSORS_CONF") == usable
    arenas = "percpu_arena:percpu" if deterministic else f"narenas:{usable}"
    assert out.stdout.strip() == f"{arenas},muzzy_decay_ms:0"
