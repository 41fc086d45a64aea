"""Every profui package's lazy names (capture/format/lazy.py): ``__all__`` is the map's keys,
each name resolves, the type checkers' imports name the same set, and no package writes its own
PEP 562 hook."""

from __future__ import annotations

import ast
import importlib
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = [
    "profui.capture",
    "profui.capture.format",
    "profui.capture.jax",
    "profui.capture.ingest",
    "profui.capture.nsys",
    "profui.analysis",
    "profui.analysis.pipeline",
]


def _source(package: str) -> ast.Module:
    path = ROOT.joinpath(*package.split(".")[1:], "__init__.py")
    return ast.parse(path.read_text())


def _homes(tree: ast.Module) -> dict:
    """The map given to lazy_exports, evaluated (a dict display of literals and dict.fromkeys)."""
    for node in tree.body:
        if isinstance(node, ast.Assign) and isinstance(node.value, ast.Call):
            if getattr(node.value.func, "id", None) == "lazy_exports":
                return eval(compile(ast.Expression(node.value.args[1]), "<map>", "eval"))  # noqa: S307
    raise AssertionError("no lazy_exports(...) call")


@pytest.mark.parametrize("package", PACKAGES)
def test_all_is_the_map_and_every_name_resolves(package: str) -> None:
    module = importlib.import_module(package)
    homes = _homes(_source(package))
    assert module.__all__ == sorted(homes)
    for name in module.__all__:
        module_name, _, attr = homes[name].partition(":")
        home = importlib.import_module(f"{package}.{module_name}")
        assert getattr(module, name) is getattr(home, attr or name), name
    assert set(module.__all__) <= set(dir(module))
    with pytest.raises(AttributeError, match="no attribute 'not_a_name'"):
        module.not_a_name  # noqa: B018


@pytest.mark.parametrize("package", PACKAGES)
def test_type_checking_imports_name_the_map(package: str) -> None:
    tree = _source(package)
    typed = {
        alias.asname or alias.name
        for node in tree.body
        if isinstance(node, ast.If) and getattr(node.test, "id", None) == "TYPE_CHECKING"
        for imp in node.body
        for alias in imp.names
    }
    assert not typed or typed == set(_homes(tree))


def test_no_package_writes_its_own_hook() -> None:
    own = [
        str(path.relative_to(ROOT))
        for top in ("capture", "analysis", "tui")
        for path in (ROOT / top).rglob("__init__.py")
        if any(
            isinstance(node, ast.FunctionDef) and node.name in ("__getattr__", "__dir__")
            for node in ast.parse(path.read_text()).body
        )
    ]
    assert own == []


def test_a_name_is_loaded_on_first_use_only() -> None:
    code = (
        "import sys, profui.analysis.pipeline as p; "
        "assert 'profui.analysis.pipeline.registry' not in sys.modules; "
        "p.REGISTRY; assert 'profui.analysis.pipeline.registry' in sys.modules"
    )
    import subprocess

    subprocess.run([sys.executable, "-c", code], check=True, timeout=120)
