"""The one loop that runs stages of the graph, for both stores.

:func:`run_stages` starts each stage of a list as soon as the stages it reads are done, up to a
number at once, and the stage heading the costliest chain still to run first; after a failure
only the stages before the failed one in the graph's order still start, so the first failing
stage in that order is the run's error, as when the stages run one after another. The in-memory
store (:func:`.store.compute`) runs it on threads sized by the trace; the recorded run
(:func:`.engine.execute`) runs it one stage at a time in the graph's order, in the calling
thread (Ctrl-C then stops the running stage, which a worker thread would finish first).
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Sequence
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait

from .dag import TRACE, Registry


def run_stages(
    registry: Registry,
    todo: Sequence[str],
    run: Callable[[str], object],
    *,
    threads: int | None = None,
    first: Collection[str] = (),
    by_cost: bool = True,
    available: Callable[[str], bool] | None = None,
    on_done: Callable[[str], None] | None = None,
    between: Callable[[bool], None] | None = None,
    together: Callable[[str, Collection[str]], bool] | None = None,
) -> dict[str, BaseException]:
    """Run every stage of ``todo`` (in the graph's order) with ``run(name)``; the stages that
    failed, with their errors (only the first in the graph's order is certain: the stages after
    it are not started once it failed).

    A stage of ``todo`` starts once each stage it reads is done or not in ``todo`` (its outputs
    are there already), or, given ``available``, once ``available(stage)`` says so of each (a
    store that holds a stage's outputs the moment its thread ends them, before this loop sees
    the thread done). ``threads``: how many run at once, each in a worker thread; None runs
    them one at a time in the calling thread, where an exception that is not an ``Exception``
    (KeyboardInterrupt) ends the loop at once. Of the stages ready, those of ``first`` start
    first, then (``by_cost``) the one heading the costliest chain of stages still to run
    (:attr:`~.dag.Stage.cost`), then the graph's order. ``on_done(name)`` follows each stage's
    success (its error counts as the stage's); ``between(waiting)`` follows each finished
    batch, ``waiting`` saying whether stages have yet to start. ``together(stage, running)``,
    given, says whether a ready stage may start beside the stages running (a stage always starts
    when none is); one it refuses waits, and a later one in the order may start instead.
    """
    rank = {name: i for i, name in enumerate(todo)}
    priority = _priorities(registry, todo) if by_cost else dict.fromkeys(todo, 0.0)
    waiting, done = list(todo), set()
    failed: dict[str, BaseException] = {}

    def there(stage: str) -> bool:
        return stage == TRACE or (
            available(stage) if available is not None else stage not in rank or stage in done
        )

    def ready() -> list[str]:
        # after a failure only the stages before it in the graph's order still start
        bar = min((rank[n] for n in failed), default=len(todo))
        found = [n for n in waiting if rank[n] < bar and all(there(i) for i in registry.stages[n].inputs)]
        return sorted(found, key=lambda n: (n not in first, -priority[n], rank[n]))

    def finished(name: str, error: BaseException | None) -> None:
        if error is None and on_done is not None and not failed:
            try:
                on_done(name)
            except BaseException as exc:  # the caller's error ends the run like a stage's
                error = exc
        if error is None:
            done.add(name)
        else:
            failed[name] = error

    if threads is None:
        while waiting:
            order = ready()
            if not order:
                break
            name = order[0]
            waiting.remove(name)
            try:
                run(name)
            except Exception as exc:
                finished(name, exc)
            else:
                finished(name, None)
            if between is not None:
                between(bool(waiting))
        return failed

    running: dict[Future[object], str] = {}
    with ThreadPoolExecutor(max_workers=threads, thread_name_prefix="profui-stage") as pool:
        while waiting or running:
            for name in ready():
                if len(running) >= threads:
                    break
                if running and together is not None and not together(name, list(running.values())):
                    continue
                waiting.remove(name)
                running[pool.submit(run, name)] = name
            if not running:
                break
            finished_now, _ = wait(list(running), return_when=FIRST_COMPLETED)
            for fut in sorted(finished_now, key=lambda f: rank[running[f]]):
                finished(running.pop(fut), fut.exception())
            if between is not None:
                between(bool(waiting))
    return failed


def _priorities(registry: Registry, todo: Sequence[str]) -> dict[str, float]:
    """Per stage to run: its :attr:`~.dag.Stage.cost` plus the costliest chain of the stages
    to run that read it, directly or through others (its "upward rank")."""
    priority: dict[str, float] = {}
    for name in reversed(todo):  # readers come after what they read
        chain = max((priority[r] for r in registry.children(name) if r in priority), default=0)
        priority[name] = registry.stages[name].cost + chain
    return priority
