"""Stages and the DAG they form: declaration checks, order, ancestry, selection closure."""

from __future__ import annotations

import functools
import hashlib
import inspect
import opcode
import sys
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from types import CodeType, FunctionType, ModuleType
from typing import Any

from profui.capture.format.code_version import code_version

from .errors import PipelineError
from .params import Param

#: The pseudo-input naming the trace directory itself.
TRACE = "trace"


@dataclass(frozen=True)
class Stage:
    """One named stage.

    ``inputs`` are names of other stages (whose outputs it reads) or :data:`TRACE`; ``params`` the
    names of the parameters it uses; ``outputs`` its file names (``.parquet`` for frames,
    ``.json`` for small dicts); ``run(ctx)`` returns ``{output file name: frame or dict}``.
    ``modules`` lists the analysis modules the body calls (which :mod:`.bodies` imports
    directly): their code and that of every module they load is part of the code version, so
    editing an analysis recomputes its stage without anyone bumping ``version``. ``cost`` is the
    body's work relative to the others' (a scheduling hint of the in-memory store: the costliest
    chains start first).

    ``files``: the body writes its outputs itself, as files in ``ctx.scratch`` (any suffix),
    and returns each one's path; they are kept and handed on as paths, never loaded (the
    timeline memory-maps its arrays). ``on_demand``: a run without ``--stages`` leaves it out;
    it runs when asked for by name (``--stages timeline``, or a surface that draws it).
    """

    name: str
    inputs: tuple[str, ...]
    params: tuple[str, ...]
    outputs: tuple[str, ...]
    run: Callable[[Any], Mapping[str, Any]] = field(compare=False, repr=False)
    help: str = ""
    version: str = "1"
    modules: tuple[str, ...] = ()
    cost: float = field(default=1.0, compare=False)
    files: bool = False
    on_demand: bool = False

    @functools.cached_property
    def code_version(self) -> str:
        """``<version>+<hash of the body's code and of its modules' code version>``.

        The body by its own bytecode, not its module's source, and with it the bytecode of every
        function of its module that it calls, followed through the functions they call, and the
        plain-data constants of that module they read (:func:`_body_code`): an edit of one body
        recomputes that stage only, an edit of a helper every stage that calls it. The modules
        (its declared ``modules``, those the body's functions take names from, the conforming of
        every output, :data:`_CONFORM`, and the reading of the trace, :data:`_READER`), by
        :func:`~profui.capture.format.code_version.code_version`, the one rule of every cache."""
        h = hashlib.sha256()
        modules = set(self.modules)
        fn = inspect.unwrap(self.run)
        if isinstance(fn, FunctionType):
            modules |= _body_code(h, fn)
        else:
            h.update(self.run.__qualname__.encode())
        h.update(code_version(sorted({*modules, _CONFORM, *_READER}), opaque=_FACADES).encode())
        return f"{self.version}+{h.hexdigest()[:12]}"


def _body_code(h: Any, body: FunctionType) -> set[str]:
    """Feed ``body``'s code into ``h``, then, by name, that of each function of its module it
    reads as a global (transitively) and the value of each plain-data global it reads; return
    the other profui modules those functions read (a module alias, or a function or class
    imported from one), for the code-version key. A global read by attribute name alone
    (``r.kernels``) is not one: only the global loads of the bytecode count."""
    space, home = body.__globals__, body.__module__
    modules: set[str] = set()
    seen = {body.__name__}
    todo = [body.__code__]
    while todo:
        code = todo.pop(0)
        _hash_code(h, code)
        for name in _global_loads(code):
            if name in seen or name not in space:
                continue
            seen.add(name)
            value = space[name]
            if isinstance(value, FunctionType) and value.__module__ == home:
                h.update(b"\0def " + name.encode())
                todo.append(value.__code__)
            elif isinstance(value, type) and value.__module__ == home:
                # a class of the body's module, like a function of it: its methods' code (not
                # the whole module's, which would move the stage with every other body) and
                # the modules its bases come from
                h.update(b"\0class " + name.encode())
                todo.extend(_method_code(value))
                modules.update(
                    b.__module__ for b in value.__mro__[1:] if b.__module__ not in (home, "builtins")
                )
            elif isinstance(value, ModuleType):
                modules.add(value.__name__)
            elif (plain := _plain(value)) is not None:
                h.update(b"\0" + name.encode() + b"=" + plain.encode())
            else:
                owner = getattr(value, "__module__", None)
                if isinstance(owner, str) and owner.startswith("profui."):
                    modules.add(owner)
    return {m for m in modules if m.startswith("profui.")}


def _method_code(cls: type) -> list[CodeType]:
    """The code of ``cls``'s own functions (methods, static and class methods, properties), in
    definition order."""
    out: list[CodeType] = []
    for value in vars(cls).values():
        if isinstance(value, (staticmethod, classmethod)):
            value = value.__func__
        if isinstance(value, property):
            out.extend(
                f.__code__ for f in (value.fget, value.fset, value.fdel) if isinstance(f, FunctionType)
            )
        elif isinstance(value, FunctionType):
            out.append(value.__code__)
    return out


_LOAD_GLOBAL, _LOAD_NAME, _EXTENDED_ARG = (
    opcode.opmap["LOAD_GLOBAL"],
    opcode.opmap["LOAD_NAME"],
    opcode.EXTENDED_ARG,
)
#: From 3.11 LOAD_GLOBAL's argument holds the name's index shifted left by one (its low bit says
#: whether a NULL is pushed before it).
_GLOBAL_SHIFT = 1 if sys.version_info >= (3, 11) else 0


def _global_loads(code: CodeType) -> list[str]:
    """The global names ``code`` and the code nested in it load, in order. Read from the raw
    bytecode: ``dis.get_instructions`` costs more than the rest of every stage's key."""
    out: list[str] = []
    raw, ext = code.co_code, 0
    for i in range(0, len(raw), 2):
        op, arg = raw[i], raw[i + 1] | ext
        if op == _EXTENDED_ARG:
            ext = arg << 8
            continue
        ext = 0
        if op == _LOAD_GLOBAL:
            out.append(code.co_names[arg >> _GLOBAL_SHIFT])
        elif op == _LOAD_NAME:
            out.append(code.co_names[arg])
    for const in code.co_consts:
        if isinstance(const, CodeType):
            out.extend(_global_loads(const))
    return out


def _plain(value: Any) -> str | None:
    """A text that says ``value`` when it is plain data (numbers, strings, None and the
    containers of them; a set's items sorted, so the text does not follow string hashing);
    None for anything else, whose ``repr`` may hold a memory address."""
    if value is None or isinstance(value, (bool, int, float, str, bytes)):
        return repr(value)
    if isinstance(value, dict):
        items = _plain_each([x for pair in value.items() for x in pair])
        return None if items is None else f"dict({','.join(items)})"
    if isinstance(value, (tuple, list, set, frozenset)):
        items = _plain_each(value)
        if items is None:
            return None
        return f"{type(value).__name__}({','.join(sorted(items) if isinstance(value, (set, frozenset)) else items)})"
    return None


def _plain_each(values: Iterable[Any]) -> list[str] | None:
    """:func:`_plain` of each of ``values``; None when one is not plain data."""
    out = []
    for v in values:
        text = _plain(v)
        if text is None:
            return None
        out.append(text)
    return out


def _hash_code(h: Any, code: CodeType) -> None:
    """Feed what ``code`` does into ``h``: its bytecode, names and constants, nested code
    included. Reading the body's source instead (``inspect.getsource``) tokenizes the whole
    module once per stage, which a warm dashboard open pays before it draws anything."""
    h.update(code.co_code)
    h.update("\0".join(code.co_names).encode())
    for const in code.co_consts:
        if isinstance(const, CodeType):
            _hash_code(h, const)
        else:
            h.update(repr(const).encode())


#: What every stage's outputs pass through before they are kept (the declared schemas' casts and
#: checks): a change there changes what is kept, whichever stage made it.
_CONFORM = "profui.analysis.pipeline.conform"
#: What every stage reads the trace and its inputs through (the run's Trace and its event
#: reader, the stage context and the artifacts it loads): later stages are keyed by their
#: inputs' output hashes, which an edit of the reader need not move, so each is keyed by it.
_READER = ("profui.analysis.trace", "profui.analysis.pipeline.context")
#: The notebook's facade: it imports every analysis inside its methods, so its own code counts
#: and what it imports only where a stage's modules import it themselves.
_FACADES = ("profui.analysis.notebook",)


class Registry:
    """The stages and parameters of a pipeline, checked to form a DAG."""

    def __init__(self, stages: Iterable[Stage], params: Iterable[Param]) -> None:
        self.params: dict[str, Param] = {}
        for p in params:
            if p.name in self.params:
                raise ValueError(f"parameter {p.name} declared twice")
            self.params[p.name] = p
        self.stages: dict[str, Stage] = {}
        for s in stages:
            if s.name in self.stages or s.name == TRACE:
                raise ValueError(f"stage name {s.name!r} used twice or reserved")
            for i in s.inputs:
                if i != TRACE and i not in self.stages:
                    raise ValueError(f"stage {s.name}: input {i!r} must be a stage declared before it")
            for name in s.params:
                if name not in self.params:
                    raise ValueError(f"stage {s.name}: unknown parameter {name!r}")
            if not s.outputs:
                raise ValueError(f"stage {s.name}: declares no outputs")
            self.stages[s.name] = s

    @property
    def order(self) -> list[str]:
        """Stage names in a topological order (the declaration order, which is one)."""
        return list(self.stages)

    @property
    def default_order(self) -> list[str]:
        """The stages a run without a selection runs, in :attr:`order`: all but the on-demand ones."""
        return [s.name for s in self.stages.values() if not s.on_demand]

    def with_ancestors(self, names: Iterable[str]) -> list[str]:
        """``names`` and every stage upstream of them, in :attr:`order`."""
        names = list(names)
        needed = set(names) | self.ancestors(names)
        return [s for s in self.order if s in needed]

    def children(self, name: str) -> list[str]:
        """Stages that read ``name``'s outputs directly."""
        return [s.name for s in self.stages.values() if name in s.inputs]

    def ancestors(self, names: Iterable[str]) -> set[str]:
        """Every stage upstream of any of ``names`` (excluding them unless upstream of another)."""
        seen: set[str] = set()
        todo = [i for n in names for i in self.stages[n].inputs if i != TRACE]
        while todo:
            n = todo.pop()
            if n not in seen:
                seen.add(n)
                todo.extend(i for i in self.stages[n].inputs if i != TRACE)
        return seen

    def descendants(self, names: Iterable[str]) -> set[str]:
        """Every stage downstream of any of ``names``."""
        seen: set[str] = set()
        todo = [c for n in names for c in self.children(n)]
        while todo:
            n = todo.pop()
            if n not in seen:
                seen.add(n)
                todo.extend(self.children(n))
        return seen

    def users_of(self, param: str) -> set[str]:
        """Stages that declare parameter ``param``."""
        return {s.name for s in self.stages.values() if param in s.params}

    def check_selection(self, selection: Iterable[str]) -> list[str]:
        """Validate a ``--stages`` selection; return it in topological order.

        Refuses unknown names and selections not closed under paths (a stage lying on a path
        between two selected stages must be selected too), naming the missing stages.
        """
        chosen = [s.strip() for s in selection if s.strip()]
        if not chosen:
            raise PipelineError("--stages is empty; name at least one stage")
        unknown = [s for s in chosen if s not in self.stages]
        if unknown:
            raise PipelineError(f"unknown stage {', '.join(unknown)}; stages: {', '.join(self.order)}")
        sel = set(chosen)
        between = (self.descendants(sel) & self.ancestors(sel)) - sel
        if between:
            missing = [s for s in self.order if s in between]
            raise PipelineError(
                "selection is not closed under paths: also select "
                + ", ".join(missing)
                + " (they lie between selected stages)"
            )
        return [s for s in self.order if s in sel]
