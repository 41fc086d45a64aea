"""A step's ``n_launches`` counts the launch calls started in its CPU window whose kernel, copy or
memset is traced (the launch stage's rule), not every runtime call with a correlation id: on
df_index each step makes 8,475 such calls and launches 4,458 kernels, copies and memsets, and the
Steps view read 8,475 "launches" beside the Launch view's 4,458 a step.

The oracle reads the raw Kineto JSON with the standard library: each ``ProfilerStep#N`` marker's
window (its µs), the ``cuda_runtime``/``cuda_driver`` call of each correlation id, and the
correlation ids of the ``kernel``/``gpu_memcpy``/``gpu_memset`` events."""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import pytest

from profui.analysis.steps import step_windows

from realdata import shared_trace

DEVICE_CATS = ("kernel", "gpu_memcpy", "gpu_memset")
CALL_CATS = ("cuda_runtime", "cuda_driver")


def _raw_launches(path: Path) -> tuple[dict[int, int], dict[int, int]]:
    """Per step number: the calls in its window whose device work is traced, and every call
    with a correlation id in its window."""
    with gzip.open(path, "rb") as f:
        events = [e for e in json.load(f)["traceEvents"] if e.get("ph") == "X"]
    call_ts = {
        e["args"]["correlation"]: float(e["ts"])
        for e in events
        if e.get("cat") in CALL_CATS and "correlation" in e.get("args", {})
    }
    launched = {
        e["args"]["correlation"]
        for e in events
        if e.get("cat") in DEVICE_CATS and "correlation" in e.get("args", {})
    }
    launches, calls = {}, {}
    for m in events:
        if m.get("cat") != "user_annotation" or not str(m.get("name", "")).startswith("ProfilerStep#"):
            continue
        step, lo = int(m["name"].split("#")[1]), float(m["ts"])
        hi = lo + float(m["dur"])
        inside = {c for c, ts in call_ts.items() if lo <= ts < hi}
        launches[step], calls[step] = len(inside & launched), len(inside)
    return launches, calls


@pytest.mark.parametrize("name", ["df_index_resolver-df_index_resolver", "nccl_parser_config-nccl_data"])
def test_step_launches_are_the_calls_whose_device_work_is_traced(imported_trace, name: str) -> None:
    want, calls = _raw_launches(shared_trace(f"hta-{name}.json.gz"))
    assert want and all(calls[s] > want[s] for s in want)  # the traces make other calls too
    windows = step_windows(imported_trace(name).events()).windows
    got = {r["step"]: r["n_launches"] for r in windows.iter_rows(named=True)}
    assert got == want
