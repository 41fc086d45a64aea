"""Which code made something profui keeps: the one code-version key of its caches.

Whatever profui derives and keeps (an import, a stage's outputs, the timeline index, the
inventory's tallies, a drawn dashboard) is believed only while the code that derived it is the
code running now. :func:`code_version` names that code by content: the bytes of the modules it
is given and of every profui module they import, transitively (imports inside functions and
``TYPE_CHECKING`` blocks too: profui imports its heavy modules where it uses them). An edit
anywhere in that closure changes the key; an edit elsewhere, a fresh checkout of the same code
(new modification times) or another install path does not. Nothing is bumped by hand.

Modules are found by their files, never imported (a warm ``profui info`` loads no pyarrow), and
read once per process: a running process keeps the code it loaded. Standard library only, so
that every layer, capture's caches included, keys by the same rule.
"""

from __future__ import annotations

import functools
import hashlib
import importlib.machinery
import importlib.util
import re
from collections.abc import Iterable
from pathlib import Path

#: The package whose modules count (imports of anything else are the environment's: a
#: dependency's version, where it matters, is a key's own part).
ROOT = "profui"

# ``from X import a, b`` / ``from X import (a, b)`` (X relative or absolute), ``import X``; at
# any indentation. A docstring line that reads like an import only adds a module to the key.
_FROM = re.compile(rb"^[ \t]*from[ \t]+(\.*)([\w.]*)[ \t]+import[ \t]+(\([^)]*\)|[^\n#;]*)", re.M)
_IMPORT = re.compile(rb"^[ \t]*import[ \t]+([\w.]+(?:[ \t]*,[ \t]*[\w.]+)*)", re.M)
_NAME = re.compile(r"[A-Za-z_]\w*")


def code_version(modules: Iterable[str], opaque: Iterable[str] = ()) -> str:
    """The code version of ``modules`` (dotted names under ``profui``): a short sha256 of the
    bytes of each module's file (source, or the compiled extension that stands for it) and of
    every profui module it imports, transitively, each with its name.

    ``opaque`` names modules whose own code counts but whose imports are not followed: a facade
    that imports every analysis lazily would otherwise make everything a dependency of
    everything. A module with no file (a name that is gone) counts by its name alone.
    """
    stop = frozenset(opaque)
    h = hashlib.sha256()
    for name in sorted(closure(modules, stop)):
        entry = _module(name)
        h.update(name.encode() + b"\0" + (entry[0] if entry else b"-") + b"\0")
    return h.hexdigest()[:24]


def closure(modules: Iterable[str], opaque: frozenset[str] = frozenset()) -> set[str]:
    """``modules`` and every profui module they import, transitively (not past ``opaque``)."""
    seen: set[str] = set()
    todo = list(modules)
    while todo:
        name = todo.pop()
        if name in seen:
            continue
        seen.add(name)
        entry = _module(name)
        if entry is not None and name not in opaque:
            todo.extend(entry[1])
    return seen


@functools.cache
def _module(name: str) -> tuple[bytes, tuple[str, ...]] | None:
    """``(sha256 of the module's file, the profui modules it imports)``; None without a file."""
    found = module_file(name)
    if found is None:
        return None
    path, is_package = found
    data = path.read_bytes()
    digest = hashlib.sha256(data).digest()
    if path.suffix != ".py":  # a compiled extension: its imports are not read from its bytes
        return digest, ()
    package = name if is_package else name.rpartition(".")[0]
    return digest, tuple(sorted(_imports(data, package)))


def _imports(source: bytes, package: str) -> set[str]:
    """The profui modules ``source`` (of a module in ``package``) imports, each resolved to the
    deepest name that is a module: ``from .x import y`` is ``x``, or ``x.y`` when y is one."""
    out: set[str] = set()
    for dots, base, names in _FROM.findall(source):
        target = _resolve(dots.decode(), base.decode(), package)
        if target is None or not _ours(target):
            continue
        out.add(target)
        found = module_file(target)
        if found is not None and found[1]:  # a package: its names may be its modules
            for item in _NAME.findall(names.decode()):
                if item != "as" and module_file(f"{target}.{item}") is not None:
                    out.add(f"{target}.{item}")
    for group in _IMPORT.findall(source):
        for item in group.decode().split(","):
            target = item.strip()
            if _ours(target):
                out.add(target)
    # ``from .x import y as z``: z is no module of ours; names that are not modules were dropped
    return {m for m in out if module_file(m) is not None}


def _ours(name: str) -> bool:
    return name == ROOT or name.startswith(ROOT + ".")


def _resolve(dots: str, base: str, package: str) -> str | None:
    """The absolute name of ``from <dots><base> import ...`` written in ``package``."""
    if not dots:
        return base or None
    parts = package.split(".")
    if len(dots) > len(parts):
        return None
    head = ".".join(parts[: len(parts) - len(dots) + 1])
    return f"{head}.{base}" if base else head


@functools.cache
def module_file(name: str) -> tuple[Path, bool] | None:
    """``(the file of module name, whether it is a package)`` without importing it (only the
    namespace above ``profui``'s packages is looked up); None when there is none."""
    parent, _, last = name.rpartition(".")
    if not parent or parent == ROOT:  # profui itself, or one of its packages: the import system
        try:
            spec = importlib.util.find_spec(name)
        except (ImportError, ValueError):
            return None
        if spec is None or not spec.origin or not Path(spec.origin).is_file():
            return None
        return Path(spec.origin), spec.submodule_search_locations is not None
    above = module_file(parent)
    if above is None or not above[1]:
        return None
    folder = above[0].parent
    init = folder / last / "__init__.py"
    if init.is_file():
        return init, True
    for suffix in (".py", *importlib.machinery.EXTENSION_SUFFIXES):
        candidate = folder / f"{last}{suffix}"
        if candidate.is_file():
            return candidate, False
    return None
