"""Which op counts when two ops of :data:`profui.analysis.flops.FLOP_OPS` start and end together
on a thread (a trace in whole µs: ``aten::matmul`` and the ``aten::mm`` it calls, 55 µs each on
HTA's sampled rank): the outer one, whatever order the trace lists them in. It was the sort's tie
order, so a run by ranks and the whole-trace run of the same job named different ops."""

from __future__ import annotations

import pytest
from test_flops import _kineto, _x

from profui.analysis import open_trace

A, B = [[8, 32]], [[32, 16]]


@pytest.mark.parametrize("mm_first", [True, False])
def test_composite_op_counts_on_a_tie(tmp_path, mm_first: bool) -> None:
    matmul = _x("aten::matmul", "cpu_op", 1000, 55, **{"Input Dims": [A[0], B[0]]})
    mm = _x("aten::mm", "cpu_op", 1000, 55, **{"Input Dims": [A[0], B[0]]})
    events = [mm, matmul] if mm_first else [matmul, mm]
    out = open_trace(_kineto(tmp_path, "tie", events, None)).result("flops")
    ops = out["ops.parquet"]
    # one op counted, 2·8·32·16 FLOPs (by hand), and it is the matmul holding the mm
    assert ops.select("name", "flops", "count").rows() == [("aten::matmul", 2.0 * 8 * 32 * 16, 1)]
    t = out["totals.parquet"].row(0, named=True)
    assert (t["counted_ops"], t["ops_without_flops"]) == (1, 0)
