"""The timeline index says how far it is within a rank, not only between ranks: on a one-rank
trace of 5M events the bar sat at 5% ("indexing x33 rank 1") for 14.5 s, then jumped to 95%.
On the shared df_index trace (one rank), the fractions said while indexing the rank rise through
its share of the bar, in steps."""

from __future__ import annotations

from profui.analysis.lod_open import build_lod
from profui.capture.ingest import import_trace

from realdata import shared_trace


def test_one_rank_moves_the_bar_while_it_is_indexed(tmp_path) -> None:
    out = tmp_path / "dfi"
    import_trace([shared_trace("hta-df_index_resolver-df_index_resolver.json.gz")], out)
    said: list[tuple[float, str]] = []
    build_lod(out, progress=lambda f, m: said.append((f, m)))
    rank = [f for f, m in said if m.startswith("indexing ") and " rank " in m]
    assert rank == sorted(rank)
    assert len(set(rank)) >= 6  # steps within the rank, not only its start
    assert min(rank) <= 0.06 and max(rank) >= 0.85
    assert said[-1][0] >= 0.95 or any(m.startswith("writing") for _, m in said)
