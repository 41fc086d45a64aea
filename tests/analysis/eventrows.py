"""Small synthetic events frames for hand-checked analysis cases.

Synthetic on purpose: each test isolates one rule that the real traces cannot show alone.
"""

from __future__ import annotations

import polars as pl

from profui.analysis.trace import EVENTS_POLARS_SCHEMA


def events_frame(rows: list[dict], node: str = "n0") -> pl.LazyFrame:
    """An events frame (EVENTS columns + node/rank) from rows giving at least ts, dur and kind;
    the rest default to a host event of rank 0 on ``node``."""
    defaults = {
        "name": "x",
        "pid": 1,
        "tid": 1,
        "device": -1,
        "stream": -1,
        "correlation": None,
        "external_id": None,
        "bytes": None,
        "memcpy_kind": None,
        "args": None,
        "node": node,
        "rank": 0,
    }
    return pl.DataFrame([{**defaults, **r} for r in rows], schema=EVENTS_POLARS_SCHEMA).lazy()


def kernel(ts: int, dur: int, corr: int | None, name: str = "k", stream: int = 7) -> dict:
    """A kernel row on device 0 (stream 7 unless given), launched by correlation ``corr``."""
    return {
        "ts": ts,
        "dur": dur,
        "kind": "kernel",
        "name": name,
        "device": 0,
        "stream": stream,
        "correlation": corr,
    }
