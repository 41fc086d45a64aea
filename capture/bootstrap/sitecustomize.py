"""profcap's bootstrap: runs at start-up of every Python process of a profcap job.

1. Chains to the ``sitecustomize`` this one shadows (the next one on ``sys.path``), so a
   site's or user's customisation still runs.
2. Under profcap (``PROFUI_CAPTURE`` set), watches for ``import torch`` with a tiny import hook;
   when torch finishes importing, arms ``profui.capture.tracer``. Processes that never import
   torch pay one dictionary lookup per new module and nothing else.
Everything is best effort: a failure here must never stop the job.
"""

import os
import sys

_HERE = os.path.dirname(os.path.abspath(__file__))


def _chain() -> None:
    import importlib.machinery
    import importlib.util

    rest = [p for p in sys.path if os.path.abspath(p or os.curdir) != _HERE]
    spec = importlib.machinery.PathFinder.find_spec("sitecustomize", rest)
    if spec is None or spec.loader is None:
        return
    module = importlib.util.module_from_spec(spec)
    sys.modules["_profui_chained_sitecustomize"] = module
    spec.loader.exec_module(module)


class _TorchWatcher:
    """A meta-path finder that only reacts to the top-level ``torch`` import."""

    def find_spec(self, name, path=None, target=None):
        if name != "torch":
            return None
        try:
            sys.meta_path.remove(self)
        except ValueError:
            pass
        import importlib.util

        spec = importlib.util.find_spec(name)
        if spec is None or spec.loader is None or not hasattr(spec.loader, "exec_module"):
            return spec
        spec.loader = _ArmAfter(spec.loader)
        return spec


class _ArmAfter:
    """Loader wrapper: run torch's own loader, then arm the tracer."""

    def __init__(self, loader) -> None:
        self._loader = loader

    def __getattr__(self, attr):
        return getattr(self._loader, attr)

    def create_module(self, spec):
        return self._loader.create_module(spec)

    def exec_module(self, module) -> None:
        self._loader.exec_module(module)
        try:
            from profui.capture import tracer

            tracer.arm(module)
        except Exception as exc:  # never break the job's import of torch
            try:
                from profui.capture import session

                sess = session.current()
                if sess is not None:
                    sess.note(f"pid {os.getpid()}: tracing not armed: {exc!r}")
            except Exception:
                pass


try:
    _chain()
except Exception as _exc:  # the chained customisation failing is its own business
    sys.stderr.write(f"profcap: the existing sitecustomize failed: {_exc!r}\n")

if os.environ.get("PROFUI_CAPTURE") and "torch" not in sys.modules:
    sys.meta_path.insert(0, _TorchWatcher())
