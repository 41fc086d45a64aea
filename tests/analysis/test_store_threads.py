"""The in-memory store runs stages in threads as their inputs are ready.

The oracle for its outputs is the same graph run one stage per call (each call computes a
single stage, so nothing runs beside it): on real traces the two stores hold equal frames and
values. Failures are the graph's first failing stage, as when stages run in turn, and no stage
thread outlives the call.
"""

from __future__ import annotations

import sys
import threading
from pathlib import Path

import polars as pl
import pytest
from polars.testing import assert_frame_equal

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from profui.analysis.pipeline import REGISTRY  # noqa: E402
from profui.analysis.pipeline.store import compute  # noqa: E402

from pipeline_knobs import KNOBBED  # noqa: E402

TRACES = (
    ("df_index_resolver-df_index_resolver",),  # largest CUDA trace
    ("nccl_parser_config-nccl_data",),  # NCCL kernels
    ("mtia_trace_single_rank-mtia_rank_0",),  # host collectives as the rank's communication
)


def _one_stage_at_a_time(trace, params=None) -> dict:
    store: dict = {}
    for name in REGISTRY.order:
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
    assert sorted(seen) == sorted(REGISTRY.order)  # every stage reported once
    assert set(together) == set(in_turn) == set(REGISTRY.order)
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
