"""On a huge trace the events' ``args`` column is let go once the stages reading it are done
(``store.ARGS_READERS``, ``Trace.without_cached_columns``): which stages read it, found by
running each without it, and a run that lets it go gives every output of a run that keeps it."""

from __future__ import annotations

import polars as pl
import pytest
from polars.testing import assert_frame_equal

from profui.analysis.pipeline import REGISTRY, store
from profui.analysis.pipeline.store import compute
from profui.analysis.trace import open_trace


def test_the_args_readers_are_the_stages_that_cannot_run_without_args(imported_trace) -> None:
    trace = open_trace(imported_trace("df_index_resolver-df_index_resolver").path)
    full = compute(trace, ["summary"])
    fail = set()
    for name in REGISTRY.order:
        inputs = {n: full[n] for n in REGISTRY.ancestors([name])}
        trace.forget_cached_events()
        trace.cached_events()  # read whole, then narrowed
        trace.without_cached_columns(["args"])
        assert "args" not in trace.cached_events().collect_schema().names()
        try:
            compute(trace, [name], store=inputs)
        except pl.exceptions.ColumnNotFoundError as exc:
            assert '"args"' in str(exc).splitlines()[0], exc
            fail.add(name)
    assert fail == store.ARGS_READERS


def _same_outputs(got: dict, want: dict) -> None:
    assert set(got) == set(want)
    for stage, outputs in want.items():
        assert set(got[stage]) == set(outputs), stage
        for file, value in outputs.items():
            if isinstance(value, pl.DataFrame):
                assert_frame_equal(got[stage][file], value, check_exact=True)
            elif hasattr(value, "to_json_dict"):  # the summary, which holds frames
                assert got[stage][file].to_json_dict() == value.to_json_dict()
            else:
                assert got[stage][file] == value, (stage, file)


@pytest.mark.parametrize(
    "name",
    [
        "df_index_resolver-df_index_resolver",  # largest CUDA trace
        "nccl_parser_config-nccl_data",  # NCCL kernels, read by comm and the critical path
        "mtia_trace_single_rank-mtia_rank_0",  # host collectives as the rank's communication
    ],
)
def test_a_huge_run_lets_args_go_after_its_readers_and_gives_every_output(
    imported_trace, monkeypatch, name
) -> None:
    path = imported_trace(name).path
    kept = compute(open_trace(path), ["summary"])
    # this real trace counts as huge when the bar is 1
    monkeypatch.setattr(store, "HUGE_TRACE_EVENTS", 1)
    trace = open_trace(path)
    had_args: dict[str, bool] = {}

    def seen(stage: str, outputs: dict) -> None:
        had_args[stage] = "args" in trace.cached_events().collect_schema().names()

    huge = compute(trace, ["summary"], on_stage=seen)
    _same_outputs(huge, kept)
    without = {s for s, has in had_args.items() if not has}
    # the readers and what they read ran first, with args; every stage after them without, but
    # a light one that ran beside the critical path (a reader) and ended while args was held
    first = store.ARGS_READERS | REGISTRY.ancestors(store.ARGS_READERS)
    after = set(REGISTRY.with_ancestors(["summary"])) - first
    assert after - store.LIGHT_STAGES <= without <= after
    # once the run is over the trace's events are whole again
    assert "args" in trace.cached_events().collect_schema().names()


def test_with_hta_compat_args_stays(imported_trace, monkeypatch) -> None:
    monkeypatch.setattr(store, "HUGE_TRACE_EVENTS", 1)
    trace = open_trace(imported_trace("df_index_resolver-df_index_resolver").path)
    had_args = []
    compute(
        trace,
        ["summary"],
        {"hta_compat": True},
        on_stage=lambda s, o: had_args.append("args" in trace.cached_events().collect_schema().names()),
    )
    assert all(had_args) and len(had_args) == len(REGISTRY.with_ancestors(["summary"]))
