"""The annotation API for training scripts; works with or without torch, with or without profcap.

With torch imported, annotations are ``torch.profiler.record_function`` ranges (they land in the
Kineto trace as user annotations). Without torch, profui's own cheap recorder keeps them and
profcap's daemon writes them as ``annotation``/``step`` events. Outside profcap, the torch path
still works (your own torch.profiler sees the ranges) and the recorder path does nothing.
"""

from __future__ import annotations

import functools
import sys
from collections.abc import Callable
from typing import Any, TypeVar

from . import recorder as _recorder

F = TypeVar("F", bound=Callable[..., Any])
_open_torch: dict[str, list[Any]] = {}


def _torch():
    return sys.modules.get("torch")


class annotate:  # noqa: N801 - used like a function: ``with annotate("x")`` / ``@annotate("x")``
    """Mark a named range: ``with annotate("forward"): ...`` or ``@annotate("load")``."""

    __slots__ = ("name", "_rf")

    def __init__(self, name: str) -> None:
        self.name = str(name)
        self._rf: Any = None

    def __enter__(self) -> annotate:
        torch = _torch()
        if torch is not None:
            self._rf = torch.autograd.profiler.record_function(self.name)
            self._rf.__enter__()
        else:
            rec = _recorder.get()
            if rec is not None:
                rec.begin(self.name)
        return self

    def __exit__(self, *exc: object) -> None:
        if self._rf is not None:
            rf, self._rf = self._rf, None
            rf.__exit__(None, None, None)
            return
        rec = _recorder.get()
        if rec is not None:
            rec.end(self.name)

    def __call__(self, func: F) -> F:
        name = self.name

        @functools.wraps(func)
        def wrapper(*args: Any, **kwargs: Any) -> Any:
            with annotate(name):
                return func(*args, **kwargs)

        return wrapper  # type: ignore[return-value]


def annotation_begin(name: str) -> None:
    """Open a range ``name`` (close it with :func:`annotation_end` on the same thread)."""
    a = annotate(name)
    a.__enter__()
    _open_torch.setdefault(a.name, []).append(a)


def annotation_end(name: str) -> None:
    """Close the innermost range ``name`` opened by :func:`annotation_begin`."""
    stack = _open_torch.get(str(name))
    if stack:
        stack.pop().__exit__(None, None, None)


def step() -> None:
    """Mark the end of a training step, for loops without a torch optimizer.

    Once called, profcap counts steps from these calls instead of from optimizer steps.
    """
    if _torch() is not None:
        from . import tracer

        t = tracer.get()
        if t is not None:
            t.on_user_step()
        return
    rec = _recorder.get()
    if rec is not None:
        rec.step()


def start_profiling() -> None:
    """Start tracing now (until :func:`stop_profiling`), whatever windows profcap was given."""
    if _torch() is not None:
        from . import tracer

        t = tracer.get()
        if t is not None:
            t.start_manual()
        return
    rec = _recorder.get()
    if rec is not None:
        rec.set_enabled(True)


def stop_profiling() -> None:
    """Stop tracing now; the window is handed to profcap for conversion."""
    if _torch() is not None:
        from . import tracer

        t = tracer.get()
        if t is not None:
            t.stop_manual()
        return
    rec = _recorder.get()
    if rec is not None:
        rec.set_enabled(False)
