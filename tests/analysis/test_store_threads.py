"""The in-memory store runs stages in threads as their inputs are ready.

The oracle for its outputs is the same graph run one stage per call (each call computes a
single stage, so nothing runs beside it): on real traces the two stores hold equal frames and
values. Failures are the graph's first failing stage, as when stages run in turn, and no stage
thread outlives the call. How many stages run at once is observed from the stage bodies
themselves: on a huge trace one, or the critical path beside a light stage; two on a large one,
more on a small one.
"""

from __future__ import annotations

import functools
import sys
import threading
import time
from dataclasses import replace
from pathlib import Path

import polars as pl
import pytest
from polars.testing import assert_frame_equal

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from profui.analysis.pipeline import (  # noqa: E402
    REGISTRY,
    Registry,
    Stage,
    store,  # noqa: E402
)
from profui.analysis.pipeline.store import compute  # noqa: E402

from pipeline_knobs import KNOBBED  # noqa: E402

#: The stages a summary runs: all but the on-demand timeline index.
SUMMARY = REGISTRY.with_ancestors(["summary"])
assert SUMMARY == REGISTRY.default_order

TRACES = (
    ("df_index_resolver-df_index_resolver",),  # largest CUDA trace
    ("nccl_parser_config-nccl_data",),  # NCCL kernels
    ("mtia_trace_single_rank-mtia_rank_0",),  # host collectives as the rank's communication
)


def _one_stage_at_a_time(trace, params=None) -> dict:
    store: dict = {}
    for name in SUMMARY:
        compute(trace, [name], params, store=store)
    return store


@pytest.mark.parametrize("names", TRACES, ids=lambda n: n[0])
@pytest.mark.parametrize("hta", [False, True], ids=["exact", "hta"])
def test_threaded_store_equals_stages_run_in_turn(imported_trace, names, hta) -> None:
    trace = imported_trace(*names)
    params = {"hta_compat": hta}
    seen: list[str] = []
    together = compute(trace, ["summary"], params, on_stage=lambda name, out: seen.append(name))
    in_turn = _one_stage_at_a_time(trace, params)
    assert sorted(seen) == sorted(SUMMARY)  # every stage reported once
    assert set(together) == set(in_turn) == set(SUMMARY)
    for stage, outputs in in_turn.items():
        assert set(together[stage]) == set(outputs)
        for file, value in outputs.items():
            got = together[stage][file]
            if isinstance(value, pl.DataFrame):
                assert_frame_equal(got, value, check_exact=True)
            elif hasattr(value, "to_json_dict"):  # the summary, which holds frames
                assert got.to_json_dict() == value.to_json_dict()
            else:
                assert got == value, (stage, file)


def test_first_failing_stage_is_raised_and_no_thread_is_left(imported_trace) -> None:
    trace = imported_trace("nccl_parser_config-nccl_data")
    before = {t.ident for t in threading.enumerate()}
    # kernels comes before idle in the graph's order: its error is the one raised
    with pytest.raises(RuntimeError, match="stage kernels made to fail"):
        compute(trace, ["summary"], {"debug_fail": "idle,kernels"}, registry=KNOBBED)
    left = [t for t in threading.enumerate() if t.ident not in before and t.name.startswith("profui-stage")]
    assert left == []
    # no stage downstream of the failed one is stored; what ran before it is
    store: dict = {}
    with pytest.raises(RuntimeError, match="stage steps made to fail"):
        compute(trace, ["summary"], {"debug_fail": "steps"}, registry=KNOBBED, store=store)
    assert "ingest" in store
    assert not {"steps", "comm", "annotations", "summary"} & set(store)


def _counting(registry: Registry, seen: list[int], beside: list[frozenset[str]] | None = None) -> Registry:
    """``registry`` with each stage counted as running from its start to its body's end, the
    body held back 50 ms first; ``beside`` gets the stages running (itself included) as each
    starts."""
    lock, running = threading.Lock(), [0]
    names: set[str] = set()

    def wrap(stage: Stage) -> Stage:
        body = stage.run

        @functools.wraps(body)
        def run(ctx):
            with lock:
                running[0] += 1
                seen.append(running[0])
                names.add(stage.name)
                if beside is not None:
                    beside.append(frozenset(names))
            time.sleep(0.05)
            try:
                return body(ctx)
            finally:
                with lock:
                    running[0] -= 1
                    names.discard(stage.name)

        return replace(stage, run=run)

    return Registry([wrap(s) for s in registry.stages.values()], registry.params.values())


@pytest.mark.parametrize("size", ["small", "large", "huge"])
def test_stages_at_once_follow_the_trace_size(imported_trace, monkeypatch, size) -> None:
    trace = imported_trace("nccl_parser_config-nccl_data")
    # the rule reads the trace's event count: this real trace counts as large (or huge) when
    # that bar is 1, and as neither when the bars are out of reach
    monkeypatch.setattr(store, "LARGE_TRACE_EVENTS", 1 if size == "large" else 10**12)
    monkeypatch.setattr(store, "HUGE_TRACE_EVENTS", 1 if size == "huge" else 10**12)
    seen: list[int] = []
    beside: list[frozenset[str]] = []
    out = compute(trace, ["summary"], registry=_counting(REGISTRY, seen, beside))
    assert set(out) == set(SUMMARY)
    if size == "huge":
        # two at once only as the critical path (Python, holding the GIL) and a light stage
        pairs = {b for b in beside if len(b) > 1}
        assert max(seen) == 2 and pairs
        for pair in pairs:
            assert len(pair) == 2, pair
            assert pair & store.PYTHON_STAGES == {"critical_path"}, pair
            assert pair - store.PYTHON_STAGES <= store.LIGHT_STAGES, pair
    elif size == "large":
        assert max(seen) == 2
    else:  # one more than the cores (at least 3 here), where the graph has that many ready
        assert max(seen) >= 3


def test_a_huge_trace_with_hta_compat_runs_one_stage_at_a_time(imported_trace, monkeypatch) -> None:
    # the light stages' memory beside the critical path was measured without hta_compat
    trace = imported_trace("nccl_parser_config-nccl_data")
    monkeypatch.setattr(store, "HUGE_TRACE_EVENTS", 1)
    seen: list[int] = []
    out = compute(trace, ["summary"], {"hta_compat": True}, registry=_counting(REGISTRY, seen))
    assert set(out) == set(SUMMARY)
    assert max(seen) == 1


def test_of_the_ready_stages_the_costliest_chain_starts_first(tmp_path, monkeypatch) -> None:
    """Hand-checked order on one thread: after ``a``, ``d`` heads the chain d -> e (cost 11),
    ahead of ``c`` (5) and ``b`` (1); once ``d`` is done, ``e`` (10) goes before ``c`` and ``b``
    although it was declared last."""
    from profui.analysis.pipeline.dag import TRACE

    started: list[str] = []

    def stage(name: str, inputs: tuple[str, ...], cost: float) -> Stage:
        def run(ctx):
            started.append(name)
            return {f"{name}.json": {}}

        return Stage(name, inputs, (), (f"{name}.json",), run, cost=cost)

    graph = Registry(
        [
            stage("a", (TRACE,), 1),
            stage("b", ("a",), 1),
            stage("c", ("a",), 5),
            stage("d", ("a",), 1),
            stage("e", ("d",), 10),
        ],
        [],
    )

    class Opened:  # what compute reads of an opened trace
        path = tmp_path

        class dir:  # noqa: N801
            num_events = 0

    monkeypatch.setattr(store, "_workers", lambda stages, events=0: 1)
    out = compute(Opened(), ["b", "c", "e"], registry=graph)
    assert set(out) == set("abcde")
    assert started == list("adecb")


def test_together_lets_only_the_pairs_it_names_run_at_once() -> None:
    """Hand-checked on two threads: after ``a``, ``b``, ``d`` and ``c`` are ready in that order;
    ``b`` starts, ``together`` refuses ``d`` beside it and lets ``c`` (after ``d``) start, and
    ``d`` runs alone once both are done."""
    from profui.analysis.pipeline.dag import TRACE
    from profui.analysis.pipeline.schedule import run_stages

    lock, running, beside = threading.Lock(), set(), []

    def stage(name: str, inputs: tuple[str, ...]) -> Stage:
        return Stage(name, inputs, (), (f"{name}.json",), lambda ctx: {}, cost=1)

    graph = Registry([stage("a", (TRACE,)), *(stage(n, ("a",)) for n in "bdc")], [])

    def run(name: str) -> None:
        with lock:
            running.add(name)
            beside.append(frozenset(running))
        time.sleep(0.1)
        with lock:
            running.discard(name)

    failed = run_stages(
        graph, graph.order, run, threads=2, by_cost=False, together=lambda s, r: {s, *r} == {"b", "c"}
    )
    assert failed == {}
    # b's and c's threads may record in either order; d only after both
    assert len(beside) == 4 and beside[0] == {"a"} and beside[-1] == {"d"}
    assert frozenset("bc") in beside
