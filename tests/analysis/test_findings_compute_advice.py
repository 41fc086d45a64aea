"""A compute finding says which ops to shorten by what its critical path spends the time in: on
df_index the path holds host ops and no kernel at all (every stretch of compute is a host op's),
and the finding used to say "Shorten the longest kernels listed" beside a list of host ops; on
ns_resolution the path is mostly kernels, and it still says kernels. The rule: host ops where the
path holds no kernel (every op listed is a host op)."""

from __future__ import annotations

import polars as pl

from profui.analysis.pipeline.store import compute


def _compute_finding(trace) -> tuple[dict[str, int], dict]:
    store = compute(trace, ["findings"])
    by_kind = store["critical_path"]["by_kind.parquet"].group_by("kind").agg(pl.col("ns").sum())
    kinds = dict(zip(by_kind["kind"].to_list(), by_kind["ns"].to_list(), strict=True))
    found = store["findings"]["findings.parquet"].filter(pl.col("category") == "compute")
    assert found.height == 1
    return kinds, found.row(0, named=True)


def test_host_op_paths_are_told_to_shorten_host_ops(imported_trace) -> None:
    kinds, finding = _compute_finding(imported_trace("df_index_resolver-df_index_resolver"))
    assert kinds.get("host_compute", 0) > 0 and "device_compute" not in kinds
    assert finding["next_step"].startswith("Shorten the longest host ops listed")
    assert "kernel" not in finding["next_step"]


def test_kernel_paths_are_told_to_shorten_kernels(imported_trace) -> None:
    kinds, finding = _compute_finding(
        imported_trace("ns_resolution_trace-rank-0.Apr_03_18_51_38.1102.pt.trace")
    )
    assert kinds["device_compute"] > 10 * kinds["host_compute"]
    assert finding["next_step"].startswith("Shorten the longest kernels listed")
