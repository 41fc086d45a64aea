"""Which code made something profui keeps: the one code-version key of its caches.

Whatever profui derives and keeps (an import, a stage's outputs, the timeline index, the
inventory's tallies, a drawn dashboard) is believed only while the code that derived it is the
code running now. :func:`code_version` names that code by content: the bytes of the modules it
is given and of every profui module that importing and running them loads, transitively: the
imports it makes at any indentation (profui imports its heavy modules inside the functions that
use them), the packages above each module (Python runs them first) and, for a name taken from a
package that loads its names lazily (:mod:`.lazy`), the module that holds the name. An edit
anywhere in that set changes the key; an edit elsewhere, a fresh checkout of the same code (new
modification times) or another install folder does not. Nothing is bumped by hand. A module
with no file to read (a zipapp, a wheel without sources) counts by its name and the installed
profui's version; one whose file cannot be read (mid-upgrade) by its name and a mark no file's
bytes give, so that a cache misses rather than serves what other code made.

Modules are found by their files, never imported (a warm ``profui info`` loads no pyarrow), and
read once per process: a running process keeps the code it loaded. Standard library only, so
that every layer, capture's caches included, keys by the same rule.
"""

from __future__ import annotations

import functools
import hashlib
import importlib.machinery
import importlib.util
import os
import re
import sys
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

#: The package whose modules count; a dependency's version, where it matters, is a key's own part.
ROOT = "profui"

# ``from X import a, b`` / ``from X import (a,\n b)`` (X relative or absolute); ``import X, Y``.
# Each starts with its keyword, so that the regex engine looks for the word before it tries a
# match (a pattern led by ``^[ \t]*`` is tried at every byte: twice the time of the whole key);
# :func:`_statements` keeps those that begin a line, at any indentation. A docstring line that
# reads like an import only adds a module to the key.
_FROM = re.compile(rb"from[ \t]+(\.*)([\w.]*)[ \t]+import[ \t]+(\([^)]*\)|[^\n#;]*)")
_IMPORT = re.compile(rb"import[ \t]+([\w.]+(?:[ \t]*,[ \t]*[\w.]+)*)")
# A module-level ``if TYPE_CHECKING:`` block: its imports never run. In a package they say where
# each lazily loaded name lives (``from .trace import Trace as Trace``).
_TYPING_BLOCK = re.compile(rb"if TYPE_CHECKING:[ \t]*\n(?:(?:[ \t]+[^\n]*)?\n)*")


def _statements(pattern: re.Pattern[bytes], data: bytes, indented: bool = True) -> list[re.Match[bytes]]:
    """The matches of ``pattern`` in ``data`` that begin a line (after spaces and tabs when
    ``indented``, else in its first column)."""
    out = []
    for m in pattern.finditer(data):
        start = data.rfind(b"\n", 0, m.start()) + 1
        if start == m.start() or (indented and not data[start : m.start()].strip(b" \t")):
            out.append(m)
    return out


def code_version(modules: Iterable[str], opaque: Iterable[str] = ()) -> str:
    """The code version of ``modules`` (dotted names under ``profui``): a short sha256 of the
    name and file bytes (source, or the compiled extension that stands for it) of each module
    in their :func:`closure`.

    ``opaque`` names modules whose own code counts but whose imports are not followed: a facade
    that imports every analysis inside its methods would otherwise make everything a dependency
    of everything. A module with no file (a zipapp's, a name that is gone) counts by its name,
    and the key then holds the installed profui's version (:func:`installed_version`): the bytes
    it runs are not there to read, and an upgrade changes the version. A file that cannot be read
    counts by its name and a mark that no file's digest equals.
    """
    h = hashlib.sha256()
    fileless = False
    for name in sorted(closure(modules, frozenset(opaque))):
        found = _module(name)
        fileless = fileless or found is None
        h.update(name.encode() + b"\0" + (found.digest if found else b"-") + b"\0")
    if fileless:
        h.update(b"version\0" + installed_version().encode())
    return h.hexdigest()[:24]


def closure(modules: Iterable[str], opaque: frozenset[str] = frozenset()) -> set[str]:
    """``modules`` and every profui module that importing and running them loads, transitively
    (not past the modules in ``opaque``): their imports and the packages above them."""
    seen: set[str] = set()
    todo = list(modules)
    while todo:
        name = todo.pop()
        if name in seen:
            continue
        seen.add(name)
        todo.extend(_ancestors(name))
        found = _module(name)
        if found is not None and name not in opaque:
            todo.extend(found.imports)
    return seen


def _ancestors(name: str) -> list[str]:
    """The packages above ``name`` that have a file (``profui`` itself is a namespace)."""
    parts = name.split(".")
    return [p for k in range(2, len(parts)) if module_file(p := ".".join(parts[:k])) is not None]


@dataclass(frozen=True)
class _Module:
    digest: bytes
    #: the profui modules running it imports
    imports: tuple[str, ...]


#: The digest of a module whose file cannot be read: shorter than any sha256 digest, so no
#: readable file's bytes give it.
UNREADABLE = b"unreadable"


@functools.cache
def _module(name: str) -> _Module | None:
    """What ``name``'s file is and imports; None without a file; :data:`UNREADABLE` and no
    imports when its file cannot be read."""
    try:
        found = _read(name)
    except OSError:
        return _Module(UNREADABLE, ())
    if found is None:
        return None
    data, package = found
    digest = hashlib.sha256(data).digest()
    if package is None:  # a compiled extension: its imports are not read from its bytes
        return _Module(digest, ())
    runtime = data
    for block in reversed(_statements(_TYPING_BLOCK, data, indented=False)):
        runtime = runtime[: block.start()] + runtime[block.end() :]
    return _Module(digest, tuple(sorted(_imports(runtime, package))))


@functools.cache
def _read(name: str) -> tuple[bytes, str | None] | None:
    """``(the bytes of name's file, the package its relative imports start from)``, the package
    None for a compiled extension; None without a file. Raises OSError when the file cannot be
    read."""
    found = module_file(name)
    if found is None:
        return None
    path, is_package = found
    package = name if is_package else name.rpartition(".")[0]
    return path.read_bytes(), package if path.suffix == ".py" else None


@functools.cache
def _lazy_names(name: str) -> dict[str, str]:
    """The names package ``name`` loads lazily, each with the module that holds it (its
    ``TYPE_CHECKING`` imports); empty for a module that has none or cannot be read."""
    try:
        found = _read(name)
    except OSError:
        return {}
    if found is None:
        return {}
    data, package = found
    if package is None:  # a compiled extension
        return {}
    lazy: dict[str, str] = {}
    for block in _statements(_TYPING_BLOCK, data, indented=False):
        for dots, base, names in (m.groups() for m in _statements(_FROM, block.group())):
            target = _resolve(dots.decode(), base.decode(), package)
            if target is not None and _ours(target):
                lazy.update((bound, target) for _, bound in _imported_names(names.decode()))
    return lazy


def _imports(source: bytes, package: str) -> set[str]:
    """The profui modules that ``source`` (of a module in ``package``) loads by its imports:
    ``from X import y`` loads X and, for each y, X.y when it is a module, or the module a lazy
    package takes y from."""
    out: set[str] = set()
    for dots, base, names in (m.groups() for m in _statements(_FROM, source)):
        target = _resolve(dots.decode(), base.decode(), package)
        if target is None or not _ours(target) or module_file(target) is None:
            continue
        out.add(target)
        lazy = _lazy_names(target)
        for name, _ in _imported_names(names.decode()):
            if module_file(f"{target}.{name}") is not None:
                out.add(f"{target}.{name}")
            elif name in lazy:
                out.add(lazy[name])
    for group in (m.group(1) for m in _statements(_IMPORT, source)):  # ``import profui.x.y``
        for item in group.decode().split(","):
            target = item.strip()
            if _ours(target) and module_file(target) is not None:
                out.add(target)
    return out


def _imported_names(names: str) -> list[tuple[str, str]]:
    """``(imported, bound)`` for each name of ``a, b as c`` / ``(a,\\n b)``."""
    out = []
    for part in names.strip().strip("()").split(","):
        words = part.split()
        if words:
            out.append((words[0], words[-1]))
    return out


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
    namespace above profui's packages is looked up); None when there is none."""
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
    folder = os.path.dirname(above[0])
    names = _listing(folder)
    if last in names and "__init__.py" in _listing(os.path.join(folder, last)):
        return Path(folder, last, "__init__.py"), True
    for suffix in (".py", *importlib.machinery.EXTENSION_SUFFIXES):
        if last + suffix in names:
            return Path(folder, last + suffix), False
    return None


@functools.cache
def _listing(folder: str) -> frozenset[str]:
    """The names in ``folder`` (one listing per package, not a stat per name looked up)."""
    try:
        return frozenset(os.listdir(folder))
    except OSError:
        return frozenset()


def installed_version() -> str:
    """The installed profui's version, as ``importlib.metadata.version("profui")`` finds it (the
    first ``profui`` distribution on ``sys.path``: a ``.dist-info``'s ``METADATA`` or an
    ``.egg-info``'s ``PKG-INFO``), its ``Version:`` line read alone: importlib.metadata parses the
    whole file with the email package (2-3 ms of CPU in every import, 2.4 MB resident for the
    modules), ``"unknown"`` where none is found."""
    for entry in sys.path:
        try:
            names = os.listdir(entry or ".")
        except OSError:
            continue
        for name in sorted(names):
            stem, dot, suffix = name.rpartition(".")
            if dot and suffix in ("dist-info", "egg-info") and _DIST_NAME.fullmatch(stem):
                version = _version_line(Path(entry or ".") / name)
                if version is not None:
                    return version
    return "unknown"


#: A distribution folder's name (before ``.dist-info``/``.egg-info``) for profui: its name, as
#: written or normalised, then the version and, in egg-info, more tags.
_DIST_NAME = re.compile(r"profui(?:-.*)?", re.IGNORECASE)


def _version_line(folder: Path) -> str | None:
    """The ``Version:`` of a distribution folder's metadata; None when it has none to read."""
    meta = folder / ("METADATA" if folder.name.endswith(".dist-info") else "PKG-INFO")
    try:
        with open(meta, encoding="utf-8") as fh:
            for line in fh:
                if not line.strip():
                    return None  # the headers end at the first empty line
                if line.startswith("Version:"):
                    return line[len("Version:") :].strip()
    except (OSError, UnicodeDecodeError):
        pass
    return None
