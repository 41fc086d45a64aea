"""A compute finding's next step names what its list of names holds: host ops, kernels, or both.
On df_index the critical path holds host ops and no kernel, and the finding said "Shorten the
longest kernels listed" beside a list of host ops.

The oracle is the raw Kineto JSON: which of the finding's listed names are kernels (``kernel``
events) and which are host ops (``cpu_op`` and ``user_annotation`` events), read with the
standard library."""

from __future__ import annotations

import gzip
import json

import polars as pl
import pytest

from profui.analysis.pipeline.store import compute

from realdata import shared_trace

HOST_CATS = ("cpu_op", "user_annotation", "python_function")


def _raw_names(name: str) -> tuple[set[str], set[str]]:
    with gzip.open(shared_trace(f"hta-{name}.json.gz"), "rb") as f:
        events = [e for e in json.load(f)["traceEvents"] if e.get("ph") == "X"]
    kernels = {e["name"] for e in events if e.get("cat") == "kernel"}
    host = {e["name"] for e in events if e.get("cat") in HOST_CATS}
    return kernels, host


@pytest.mark.parametrize(
    ("name", "holds", "advice"),
    [
        ("df_index_resolver-df_index_resolver", "host", "Shorten the longest host ops listed:"),
        (
            "ns_resolution_trace-rank-0.Apr_03_18_51_38.1102.pt.trace",
            "kernels",
            "Shorten the longest kernels listed:",
        ),
        (
            "critical_path-cuda_event_sync_multi_stream-event_sync_trace",
            "both",
            "Shorten the longest host ops and kernels listed:",
        ),
    ],
)
def test_the_advice_names_what_the_list_holds(imported_trace, name: str, holds: str, advice: str) -> None:
    kernels, host = _raw_names(name)
    store = compute(imported_trace(name), ["findings"])
    found = store["findings"]["findings.parquet"].filter(pl.col("category") == "compute")
    assert found.height == 1
    row = found.row(0, named=True)
    listed = row["look_at"]
    is_kernel = [n in kernels for n in listed]
    is_host = [n in host for n in listed]
    assert all(k or h for k, h in zip(is_kernel, is_host, strict=True)), listed  # every name is one
    held = "both" if any(is_kernel) and any(is_host) else "kernels" if any(is_kernel) else "host"
    assert held == holds, listed
    assert row["next_step"].startswith(advice)
