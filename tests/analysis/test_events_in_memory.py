"""A trace's events as analysis holds them in memory (``Trace.cached_events``).

Oracles: the same files read by Polars with a plain cast of every column (``Trace.events()``,
the lazy scan), and the text of the distinct names counted in plain Python — the in-memory
frame holds each distinct name's text once, not once per event, and its kinds as the format's
enumeration.
"""

from __future__ import annotations

import polars as pl
import pytest
from polars.testing import assert_frame_equal

from profui.capture.format import EVENT_KINDS

TRACES = (
    "df_index_resolver-df_index_resolver",  # the largest CUDA trace: 151k events, 215 names
    "mtia_trace_single_rank-mtia_rank_0",
    "nccl_parser_config-nccl_data",
    "amd_trace-mi250_minitoy_train_ROCm6_2_kineto",
)
#: Text of this many bytes or fewer sits inside a string view itself, in no data buffer.
INLINE = 12


def _data_bytes(column: pl.Series) -> int:
    """Bytes of the data buffers behind a string column's views, each buffer counted once."""
    arrays = column.to_arrow(compat_level=pl.CompatLevel.newest())
    chunks = arrays.chunks if hasattr(arrays, "chunks") else [arrays]
    seen: dict[int, int] = {}
    for chunk in chunks:
        for buf in chunk.buffers()[2:]:
            if buf is not None:
                seen[buf.address] = buf.size
    return sum(seen.values())


@pytest.mark.parametrize("name", TRACES)
def test_the_events_in_memory_are_the_files_events(imported_trace, name) -> None:
    trace = imported_trace(name)
    held = trace.cached_events().collect()
    read = trace.events().collect()
    # the kind is the format's enumeration (a comparison of kinds compares small integers)
    assert held.schema["kind"] == pl.Enum(EVENT_KINDS)
    assert_frame_equal(held.with_columns(pl.col("kind").cast(pl.String)), read, check_exact=True)


@pytest.mark.parametrize("name", TRACES)
def test_each_distinct_name_is_held_once(imported_trace, name) -> None:
    trace = imported_trace(name)
    held = trace.cached_events().collect()
    for column in ("kind", "name", "memcpy_kind"):
        texts = {t for t in held[column].to_list() if t is not None}
        distinct = sum(len(t.encode()) for t in texts if len(t.encode()) > INLINE)
        assert _data_bytes(held[column]) <= 2 * distinct + 64, column


def test_a_plain_read_holds_a_name_per_event(imported_trace) -> None:
    # what the test above tells apart: a cast copies each event's name (df_index: 21x the text)
    read = imported_trace(TRACES[0]).events().collect()["name"]
    distinct = sum(len(t.encode()) for t in set(read.to_list()) if len(t.encode()) > INLINE)
    assert _data_bytes(read) > 20 * distinct


@pytest.mark.parametrize("name", TRACES[:3])
@pytest.mark.parametrize("hta", [False, True], ids=["exact", "hta"])
def test_every_output_is_the_one_the_files_events_give(imported_trace, name, hta) -> None:
    # the oracle: the same stage graph over the events read with a plain cast (text kinds, a
    # copy of each name per event); every table and value must come out the same, rows in order
    from profui.analysis import Trace
    from profui.analysis.pipeline.store import compute

    trace = imported_trace(name)
    plain = Trace(trace.dir)
    plain.__dict__["_collected_events"] = trace.events().collect()
    held = compute(Trace(trace.dir), ["summary"], {"hta_compat": hta})
    read = compute(plain, ["summary"], {"hta_compat": hta})
    for stage, outputs in read.items():
        for file, value in outputs.items():
            got = held[stage][file]
            if isinstance(value, pl.DataFrame):
                assert_frame_equal(got, value, check_exact=True), (stage, file)
            elif hasattr(value, "to_json_dict"):
                assert got.to_json_dict() == value.to_json_dict()
            else:
                assert got == value, (stage, file)
