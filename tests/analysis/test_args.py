"""Members of an event's args read by key (:mod:`profui.analysis.args`) against ``json.loads``
of the same text: every member of the real NCCL trace's communication kernels, and hand-made
objects where a key's text also appears inside a string, nested, or with another type."""

from __future__ import annotations

import json

import polars as pl
import pytest

from profui.analysis.args import int_member, str_member


def _expected(text: str, key: str, kind: type) -> object:
    value = json.loads(text).get(key)
    if kind is int:
        return value if type(value) is int and -(2**63) <= value < 2**63 else None
    return value if isinstance(value, str) else None


CASES = [
    '{"dtype": "Float", "In msg nelems": 1024}',
    '{"name": "x \\"dtype\\": \\"Half\\"", "dtype":"Half"}',  # the key's text inside a string
    '{"inner": {"dtype": "Long", "In msg nelems": 3}, "In msg nelems": 7}',  # nested first
    '{"In msg nelems": 1.5, "dtype": 4}',  # another type: not read
    '{"In msg nelems": -12,"dtype":"Quote \\" in it"}',
    '{"In msg nelems": 99999999999999999999}',  # beyond int64
    '{"In msg nelems": true}',
    "{}",
]


@pytest.mark.parametrize("text", CASES)
def test_hand_made_objects(text) -> None:
    frame = pl.DataFrame({"args": [text]})
    got = frame.select(int_member("In msg nelems").alias("n"), str_member("dtype").alias("d")).row(
        0, named=True
    )
    assert got["n"] == _expected(text, "In msg nelems", int)
    want = _expected(text, "dtype", str)
    # escapes stay as written: compare with the JSON text of the decoded string, unquoted
    assert got["d"] == (json.dumps(want)[1:-1] if want is not None else None)


def test_every_member_of_real_communication_kernels(imported_trace) -> None:
    trace = imported_trace("nccl_parser_config-nccl_data")
    args = (
        trace.cached_events()
        .filter(pl.col("kind") == "kernel", pl.col("name").str.starts_with("nccl"))
        .select("args")
        .collect()
    )
    assert args.height == 21  # the trace's NCCL kernels
    keys = {k for text in args["args"] for k in json.loads(text)}
    assert {"Collective name", "dtype", "In msg nelems", "Group size"} <= keys
    for key in sorted(keys):
        got = args.select(int_member(key).alias("i"), str_member(key).alias("s"))
        for text, i, s in zip(args["args"], got["i"], got["s"], strict=True):
            assert i == _expected(text, key, int), (key, text)
            assert s == _expected(text, key, str), (key, text)
