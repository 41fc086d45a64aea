"""Where a surface's answers come from: one choice, made here, for the dashboard and its views.

:func:`answers` returns the outputs of the stages a surface shows, taking them from the cheapest
place that holds them for this trace: the pipeline's newest outputs when every one is there
(warm), else a recorded ``profui analyze`` run of those stages and everything upstream (cold, so
the next open is warm), else — for a running capture, or a folder the pipeline cannot write —
the run in memory, which records nothing (:func:`.run.recorded` and :func:`.run.in_memory`, the
two whole-trace runs of :func:`profui.analysis.run.run`). Each is a :class:`~.result.Result`.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from profui.capture.format import TraceFormatError, open_trace_dir

from .artifacts import ArtifactMeta, trace_key, verify
from .context import StageProgress
from .dag import TRACE
from .outputs import latest_outputs, list_runs
from .params import typed_params
from .registry import REGISTRY
from .result import Result
from .run import OnStage, Say, in_memory, load_stages, recorded

if TYPE_CHECKING:
    from profui.analysis.trace import Trace


def _running(path: Path) -> bool:
    return open_trace_dir(path, require_data=False).manifest.status == "running"


def stage_params(stage: str, params: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """The parameters ``stage``'s outputs depend on, at ``params`` (typed values; those not
    given at their defaults), as a run records them with its outputs."""
    values = typed_params(REGISTRY.params, params)
    return {p: values[p] for p in REGISTRY.stages[stage].params if REGISTRY.params[p].affects_output}


def cached(
    path: str | Path,
    stages: Iterable[str],
    max_bytes: int | None = None,
    params: Mapping[str, Any] | None = None,
) -> Result | None:
    """The pipeline's newest outputs of ``stages`` when every one is there and was made by this
    code, with ``params`` where given (typed values, those not given at their defaults: ``{}``
    asks for the defaults, so a ``--set hta_compat=true`` run's outputs are not served as such;
    None: whatever parameters the newest run had, as ``profui analyze --set`` chose them), else
    None; a running capture has none (its outputs would be stale). With ``max_bytes``, also None when their files are larger than that in all
    (a caller that reads them where it must not wait long, like the UI thread, says how much it
    can afford)."""
    path = Path(path)
    return None if _running(path) else _from_cache(path, tuple(stages), max_bytes, params)


def _from_cache(
    path: Path, stages: tuple[str, ...], max_bytes: int | None, params: Mapping[str, Any] | None
) -> Result | None:
    have = latest_outputs(path)
    found: dict[str, tuple[Path, ArtifactMeta]] = {}
    made_now = _of_trace_now(path, have)
    for s in stages:
        # outputs made by other analysis code (profui upgraded since) are not reused as they are
        meta = verify(have[s]) if s in have and s in REGISTRY.stages else None
        if meta is None or meta.code_version != REGISTRY.stages[s].code_version:
            return None
        if params is not None and meta.params != stage_params(s, params):
            return None
        if not made_now(s, meta):
            return None
        found[s] = (have[s], meta)
    size = sum(sum(meta.sizes.values()) for _, meta in found.values())
    if max_bytes is not None and size > max_bytes:
        return None
    return Result(load_stages(found), "cache")


def _of_trace_now(path: Path, have: Mapping[str, Path]) -> Callable[[str, ArtifactMeta], bool]:
    """Whether a stage's newest outputs (their meta) were made from the trace's files as they
    are now (their names, sizes, times and row counts, and the manifest: what a run keys them
    by), through the newest outputs of every stage upstream of it: outputs of files since
    rewritten, or of inputs since replaced, are not served."""
    now: list[str] = []  # the trace's key, taken when first compared (a miss never pays it)
    fresh: dict[str, bool] = {}

    def made_now(stage: str, meta: ArtifactMeta) -> bool:
        if stage not in fresh:
            fresh[stage] = all(_input_now(i, h) for i, h in meta.inputs.items())
        return fresh[stage]

    def _input_now(name: str, output_hash: str) -> bool:
        if name == TRACE:
            if not now:
                now.append(trace_key(open_trace_dir(path, require_data=False)))
            return output_hash == now[0]
        meta = verify(have[name]) if name in have else None
        return meta is not None and meta.output_hash == output_hash and made_now(name, meta)

    return made_now


def _newest_params(path: Path) -> dict[str, Any]:
    """The parameters of the newest run of the trace that did not fail (those still declared),
    or none (the defaults) when it has none."""
    runs = [r for r in list_runs(path) if r.status == "succeeded"]
    return {k: v for k, v in runs[-1].params.items() if k in REGISTRY.params} if runs else {}


def answers(
    path: str | Path,
    stages: Iterable[str],
    trace: Callable[[], Trace],
    on_stage: OnStage | None = None,
    say: Say | None = None,
    params: Mapping[str, Any] | None = None,
    on_progress: StageProgress | None = None,
) -> Result:
    """The outputs of ``stages`` for the trace folder ``path`` (see the module docstring), with
    ``params`` where given (as :func:`cached` reads them; computed with them, the defaults for
    those not given), else the newest outputs whatever their parameters, or computed with the
    newest successful run's parameters (what the user last analysed with; the defaults when
    none), never recording a run with others.

    ``trace()`` gives the opened analysis Trace (only called when something is computed in
    memory). ``on_stage`` receives each stage's outputs as soon as they are computed (not for
    cached outputs, which come back all at once); ``say`` receives progress lines,
    ``on_progress(stage, fraction, message)`` how far a long stage is.
    """
    path = Path(path)
    stages = tuple(stages)
    tell = say or (lambda _line: None)
    running = _running(path)
    got = None if running else _from_cache(path, stages, None, params)
    if got is not None:
        tell("reading cached analysis outputs")
        return got
    if not running:
        try:
            # every parameter given: the defaults for those ``params`` leaves out, or with none
            # the newest run's (what the user last analysed with): a recorded run would take
            # them from whichever run it reuses outputs of, or the defaults where it reuses none
            given = typed_params(REGISTRY.params, _newest_params(path) if params is None else params)
            return recorded(path, stages, given, on_stage=on_stage, say=say, on_progress=on_progress)
        except TraceFormatError:
            raise
        except Exception as exc:  # the pipeline refused (read-only folder, lock, ...): compute here
            first = (str(exc).strip().splitlines() or [""])[0]
            tell(f"analysis pipeline unavailable ({first}); computing in memory")

    def done(name: str, outputs: dict[str, Any]) -> None:
        tell(f"{name} ✓")
        if on_stage is not None:
            on_stage(name, outputs)

    return in_memory(
        trace(), stages, params, on_stage=done if say or on_stage else None, on_progress=on_progress
    )
