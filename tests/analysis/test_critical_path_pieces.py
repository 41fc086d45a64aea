"""The path's stretches cut by class and joined, on hand-made cases computed by hand: a thread's
stretches cut where its class changes, all at once (``ThreadTime.pieces_of``) as one at a time
(``pieces``), and the walk's stretches joined where a row repeats and touches the one after it."""

from __future__ import annotations

import numpy as np

from profui.analysis import critical_path as cp
from profui.analysis.critical_path_inputs import HOST_COMPUTE, HOST_OVERHEAD, INPUT, _thread_time

I64 = np.int64


def _thread():
    """A thread with ops at [10, 20) and [30, 40) and a DataLoader fetch at [50, 60): overhead
    [.., 10), compute [10, 20), overhead [20, 30), compute [30, 40), overhead [40, 50), input
    [50, 60), overhead [60, ..)."""
    starts = np.array([10, 30, 50], dtype=I64)
    ends = np.array([20, 40, 60], dtype=I64)
    is_input = np.array([False, False, True])
    names = (starts, ends, ["op_a", "op_b", "enumerate(DataLoader)#_next_data"])
    return _thread_time(starts, ends, is_input, names, (0, 100))


def test_pieces_of_cuts_each_stretch_where_its_class_changes() -> None:
    tt = _thread()
    a = np.array([5, 15, 20, 45], dtype=I64)
    b = np.array([35, 18, 20, 70], dtype=I64)
    count, s, e, c = tt.pieces_of(a, b)
    # by hand: [5, 35) crosses four runs, [15, 18) lies in one op, [20, 20) is empty, [45, 70)
    # crosses overhead, the fetch and overhead again
    want = [
        [(5, 10, HOST_OVERHEAD), (10, 20, HOST_COMPUTE), (20, 30, HOST_OVERHEAD), (30, 35, HOST_COMPUTE)],
        [(15, 18, HOST_COMPUTE)],
        [],
        [(45, 50, HOST_OVERHEAD), (50, 60, INPUT), (60, 70, HOST_OVERHEAD)],
    ]
    assert count.tolist() == [len(w) for w in want]
    assert list(zip(s.tolist(), e.tolist(), c.tolist(), strict=True)) == [p for w in want for p in w]
    # the same as one stretch at a time
    for x, y, w in zip(a.tolist(), b.tolist(), want, strict=True):
        assert tt.pieces(x, y) == w


def test_joined_keeps_a_row_whole_while_it_repeats_and_touches() -> None:
    host = ("host_overhead", "host", 1, None, None, None)
    kernel = ("device_compute", "device", None, 0, 7, "k")
    table = [host, kernel]
    # latest first, as the walk goes: [30, 40) and [20, 30) of the host row touch (one
    # stretch), then the kernel's [12, 20), then the host row again at [5, 10): a gap of 2 ns
    # to the kernel, and [0, 5) touching it
    code = np.array([0, 0, 1, 0, 0], dtype=I64)
    a = np.array([30, 20, 12, 5, 0], dtype=I64)
    b = np.array([40, 30, 20, 10, 5], dtype=I64)
    got = cp._joined(table, code, a, b, 3, 35)  # cut to [3, 35]
    assert got == [(*host, 20, 35), (*kernel, 12, 20), (*host, 3, 10)]
    # nothing inside the bounds: no stretch
    assert cp._joined(table, code, a, b, 50, 60) == []


def test_an_empty_walk_has_no_stretch() -> None:
    assert cp._joined(*cp._cut([]), 0, 10) == []


def test_launch_instants_stay_whole_ns_beside_an_op_without_a_launch():
    """By hand: a window holding an op without a launch (MTIA's DMA requests) and one launched at
    epoch ns 1,796,477,756,530,075,402 (a walk's trace): the launch instant is that ns, int64.
    As float64 (what a null made it before) it was 1,796,477,756,530,075,392: 10 ns off, and up
    to 256 ns off at such instants."""
    import numpy as np

    from profui.analysis.critical_path_graph import _NO_TIME, Window

    at = 1_796_477_756_530_075_402
    assert int(np.float64(at)) == at - 10  # the premise: float64 cannot hold it
    win = Window({"launch_ts": np.array([_NO_TIME, at]), "no_launch": np.array([True, False])}, 2)
    got = win.launch_ts_numpy()
    assert got.dtype == np.int64 and int(got[1]) == at
