"""Linking CUDA calls and their device work to the PyTorch op around them, as Kineto links ops to
kernels: a call gets as ``external_id`` the op id of the innermost op range around it on its
thread, and the device work it launched (same process and correlation) the same.

Column-wise with numpy: "innermost" is the op range that a stack swept along time would hold on
top (NVTX push/pop ranges on one thread nest): of the ranges on the call's thread that started
at or before it and end after it, the last in the order (start, longest first, the export's
order). A sparse table of the ranges' running maximum end finds it for every call at once.
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc


def _thread(pid: np.ndarray, tid: np.ndarray) -> np.ndarray:
    # pid and tid are 24-bit fields of a globalTid: one int64 names the thread
    return (pid.astype(np.int64) << 24) | tid.astype(np.int64)


def enclosing_ops(calls: dict[str, np.ndarray], ops: dict[str, np.ndarray]) -> tuple[np.ndarray, np.ndarray]:
    """For each call (``pid``, ``tid``, ``start``), the ``ext`` of the innermost op range
    (``pid``, ``tid``, ``start``, ``end``, ``ext``, in the export's order) around it:
    ``(ids, found)``, ``ids`` meaningful where ``found``."""
    n = len(calls["start"])
    if n == 0 or len(ops["start"]) == 0:
        return np.zeros(n, np.int64), np.zeros(n, bool)
    op_thread = _thread(ops["pid"], ops["tid"])
    order = np.lexsort((np.arange(len(op_thread)), ~ops["end"], ops["start"], op_thread))
    thread, start, end = op_thread[order], ops["start"][order], ops["end"][order]
    ext = ops["ext"][order]
    call_thread = _thread(calls["pid"], calls["tid"])
    # position of the last range of the call's thread starting at or before it, in range order:
    # ranges sort before calls of the same thread and time
    keys_thread = np.concatenate([thread, call_thread])
    keys_start = np.concatenate([start, calls["start"]])
    is_call = np.concatenate([np.zeros(len(thread), bool), np.ones(n, bool)])
    merged = np.lexsort((is_call, keys_start, keys_thread))
    ranges_before = np.cumsum(~is_call[merged]) - 1
    last = np.empty(n, np.int64)
    last[merged[is_call[merged]] - len(thread)] = ranges_before[is_call[merged]]
    # walk back from it past the ranges that ended at or before the call, 2**k at a time
    table = [end]
    while (1 << len(table)) <= len(end):
        prev, step = table[-1], 1 << (len(table) - 1)
        table.append(np.concatenate([prev[:step], np.maximum(prev[step:], prev[:-step])]))
    at, ts = last, calls["start"]
    for k in range(len(table) - 1, -1, -1):
        live = at >= 0
        skip = live.copy()
        skip[live] = table[k][at[live]] <= ts[live]
        at = np.where(skip, np.maximum(at - (1 << k), -1), at)
    found = at >= 0
    found[found] = thread[at[found]] == call_thread[found]
    return np.where(found, ext[np.maximum(at, 0)], 0), found


def launched_by(calls: dict[str, np.ndarray], work: dict[str, pa.Array]) -> tuple[np.ndarray, np.ndarray]:
    """For each row of device work (``pid``, ``corr``: a nullable Arrow array), the ``ext`` of
    the call of its process with its correlation (calls: ``pid``, ``tid``, ``corr``, ``ext``, in
    the export's order; where several have it, the one met last walking the process's threads in
    the order they first call, each thread's calls in order): ``(ids, found)``."""
    n = len(work["pid"])
    if n == 0 or len(calls["pid"]) == 0:
        return np.zeros(n, np.int64), np.zeros(n, bool)
    has_corr = pc.is_valid(work["corr"]).to_numpy(zero_copy_only=False)
    work_pid = np.asarray(work["pid"].to_numpy(zero_copy_only=False), np.int64)
    work_corr = pc.fill_null(work["corr"], pa.scalar(0, pa.int64())).to_numpy()
    # (pid, correlation) as one int64: each of the two numbered densely
    m = len(calls["pid"])
    _, pid_code = np.unique(np.concatenate([calls["pid"], work_pid]), return_inverse=True)
    corrs, corr_code = np.unique(np.concatenate([calls["corr"], work_corr]), return_inverse=True)
    key = pid_code.astype(np.int64) * len(corrs) + corr_code
    call_key, work_key = key[:m], key[m:]
    thread = _thread(calls["pid"], calls["tid"])
    _, first, inverse = np.unique(thread, return_index=True, return_inverse=True)
    walk = np.lexsort((np.arange(m), first[inverse]))[::-1]  # the walk's order, last first
    keys, at = np.unique(call_key[walk], return_index=True)
    ext = calls["ext"][walk][at]
    pos = np.minimum(np.searchsorted(keys, work_key), len(keys) - 1)
    found = has_corr & (keys[pos] == work_key)
    return np.where(found, ext[pos], 0), found
