"""Stages and the DAG they form: declaration checks, order, ancestry, selection closure."""

from __future__ import annotations

import functools
import hashlib
import inspect
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
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

    @functools.cached_property
    def code_version(self) -> str:
        """``<version>+<hash of the body's code and of its modules' code version>``.

        The modules, with the conforming of every output (:data:`_CONFORM`), by
        :func:`~profui.capture.format.code_version.code_version`, the one rule of every cache; the
        body by its own bytecode, not its module's source: an edit of one body then recomputes
        that stage only, not every stage :mod:`.bodies` holds."""
        h = hashlib.sha256()
        code = getattr(inspect.unwrap(self.run), "__code__", None)
        if code is not None:
            _hash_code(h, code)
        else:
            h.update(self.run.__qualname__.encode())
        h.update(code_version((*self.modules, _CONFORM), opaque=_FACADES).encode())
        return f"{self.version}+{h.hexdigest()[:12]}"


def _hash_code(h: Any, code: Any) -> None:
    """Feed what ``code`` does into ``h``: its bytecode, names and constants, nested code
    included. Reading the body's source instead (``inspect.getsource``) tokenizes the whole
    module once per stage, which a warm dashboard open pays before it draws anything."""
    h.update(code.co_code)
    h.update("\0".join(code.co_names).encode())
    for const in code.co_consts:
        if hasattr(const, "co_code"):
            _hash_code(h, const)
        else:
            h.update(repr(const).encode())


#: What every stage's outputs pass through before they are kept (the declared schemas' casts and
#: checks): a change there changes what is kept, whichever stage made it.
_CONFORM = "profui.analysis.pipeline.conform"
#: The notebook's facade: it imports every analysis inside its methods, so its own code counts
#: and what it imports only where a stage's modules import it themselves.
_FACADES = ("profui.analysis.trace", "profui.analysis.notebook")


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
