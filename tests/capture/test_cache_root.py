"""Where profui's cache lives: ``$PROFUI_CACHE``, else ``$XDG_CACHE_HOME/profui`` when that is an
absolute path, else ``~/.cache/profui`` (the XDG base-directory specification: a relative path in
an XDG variable is invalid and ignored). The oracle is the rule spelled out on real folders; the
last tests run a real ``profui info`` of a Kineto file and look where its import landed.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from profui.capture.format import default_cache_root
from profui.capture.format.layout import baselines_dir, combined_dir, imports_dir, locks_dir, traces_dir


@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    home = tmp_path / "home"
    home.mkdir()
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.delenv("PROFUI_CACHE", raising=False)
    monkeypatch.delenv("XDG_CACHE_HOME", raising=False)
    return home


def test_without_either_variable_the_cache_is_under_home(home: Path) -> None:
    assert default_cache_root() == home / ".cache" / "profui"


def test_xdg_cache_home_holds_the_cache(home: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    xdg = tmp_path / "xdg"
    monkeypatch.setenv("XDG_CACHE_HOME", str(xdg))
    assert default_cache_root() == xdg / "profui"


def test_profui_cache_wins_over_xdg(home: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    monkeypatch.setenv("PROFUI_CACHE", "~/mine")
    assert default_cache_root() == home / "mine"


@pytest.mark.parametrize("value", ["", "relative/cache", "./cache"])
def test_an_empty_or_relative_xdg_cache_home_is_ignored(
    home: Path, monkeypatch: pytest.MonkeyPatch, value: str
) -> None:
    monkeypatch.setenv("XDG_CACHE_HOME", value)
    assert default_cache_root() == home / ".cache" / "profui"


def test_each_folder_of_the_store_is_under_the_root(home: Path, tmp_path: Path) -> None:
    root = home / ".cache" / "profui"
    assert [f() for f in (imports_dir, combined_dir, traces_dir, baselines_dir, locks_dir)] == [
        root / "imports",
        root / "combined",
        root / "traces",
        root / "baselines",
        root / "locks",
    ]
    mine = tmp_path / "elsewhere"
    assert imports_dir(mine) == mine / "imports" and combined_dir("~/x") == home / "x" / "combined"


def _info(source: Path, env: dict[str, str], cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-c", "from profui.tui.cli import main; main()", "info", str(source)],
        env=env,
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=300,
    )


def _env(home: Path, xdg: str | None) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in ("PROFUI_CACHE", "XDG_CACHE_HOME")}
    env["HOME"] = str(home)
    if xdg is not None:
        env["XDG_CACHE_HOME"] = xdg
    return env


def test_an_import_lands_in_xdg_cache_home(tmp_path: Path) -> None:
    from realdata import shared_trace

    src = shared_trace("hta-trace_filter-sampled_rank-0.json.gz")
    home, xdg = tmp_path / "home", tmp_path / "xdg"
    home.mkdir()
    proc = _info(src, _env(home, str(xdg)), tmp_path)
    assert proc.returncode == 0, proc.stderr
    (entry,) = (xdg / "profui" / "imports").iterdir()
    assert (entry / "manifest.json").is_file()
    assert not (home / ".cache").exists()


def test_with_a_relative_xdg_cache_home_an_import_lands_under_home(tmp_path: Path) -> None:
    from realdata import shared_trace

    src = shared_trace("hta-trace_filter-sampled_rank-0.json.gz")
    home = tmp_path / "home"
    home.mkdir()
    proc = _info(src, _env(home, "xdg"), tmp_path)  # run in tmp_path, where "xdg" would resolve
    assert proc.returncode == 0, proc.stderr
    (entry,) = (home / ".cache" / "profui" / "imports").iterdir()
    assert (entry / "manifest.json").is_file()
    assert not (tmp_path / "xdg").exists()
