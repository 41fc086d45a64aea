"""The Nsight converter's column-wise rules against the row-by-row definitions they replaced
(the previous converter, kept as the oracle in ``nsys_rowwise.py``):
PyTorch's op range read by RE2 (pyarrow.compute) as Python's ``re`` read it, the innermost op
range found by a sparse table as a stack swept along time found it, the device work linked to
the last call of its correlation as a dict filled call by call linked it, and args written as
JSON as msgspec wrote the dict without its None values."""

from __future__ import annotations

import re

import msgspec
import nsys_rowwise as rowwise
import numpy as np
import pyarrow as pa
from hypothesis import given
from hypothesis import strategies as st

from profui.capture.nsys import names
from profui.capture.nsys.arrays import json_numbers, json_objects, json_strings
from profui.capture.nsys.link import enclosing_ops, launched_by

from anyjson import FUZZ

STEP = re.compile(names.DEFAULT_STEP_PATTERN)


_pieces = st.sampled_from(
    ["aten::mm", ", seq = ", ", op_id = ", ", ", ",", " ", "1", "12", "9" * 18, "9" * 19, "0", "\n", "x",
     "é", "ProfilerStep#", "٣", "sizes = [[1, 2]]", '"', "\\", "\x01"]
)  # fmt: skip
_texts = st.lists(_pieces, max_size=8).map("".join) | st.text(max_size=30)


@FUZZ
@given(st.lists(_texts, min_size=1, max_size=30))
def test_op_ranges_read_as_pythons_re_read_them(texts: list[str]) -> None:
    got = names.nvtx_ranges(pa.array(texts, pa.string()), STEP)
    for i, text in enumerate(texts):
        kind, name, args = rowwise.nvtx_range(text, STEP)
        assert got["kind"][i].as_py() == kind, text
        assert got["name"][i].as_py() == name, text
        assert got["op_id"][i].as_py() == args.get("op_id"), text
        assert got["seq"][i].as_py() == args.get("Sequence number"), text
        assert got["rest"][i].as_py() == args.get("nvtx"), text


_time = st.integers(0, 40)
_thread = st.tuples(st.integers(0, 2), st.integers(0, 2))
_op = st.tuples(_thread, _time, st.integers(0, 15), st.integers(0, 10**6))
_call = st.tuples(_thread, _time)


@FUZZ
@given(st.lists(_op, max_size=40), st.lists(_call, max_size=40))
def test_innermost_op_is_the_sweeps(ops, calls) -> None:
    def arr(values):
        return np.array(values, np.int64)

    got, found = enclosing_ops(
        {"pid": arr([c[0][0] for c in calls]), "tid": arr([c[0][1] for c in calls]), "start": arr([c[1] for c in calls])},
        {"pid": arr([o[0][0] for o in ops]), "tid": arr([o[0][1] for o in ops]), "start": arr([o[1] for o in ops]),
         "end": arr([o[1] + o[2] for o in ops]), "ext": arr([o[3] for o in ops])},
    )  # fmt: skip
    for i, (thread, ts) in enumerate(calls):
        mine = [(s, s + d, e) for t, s, d, e in ops if t == thread]
        want = rowwise._enclosing(mine, [(ts,)])[0]
        assert (got[i] if found[i] else None) == want


_linked = st.tuples(st.integers(0, 2), st.integers(0, 3), st.integers(0, 5), st.integers(0, 10**6))


@FUZZ
@given(
    st.lists(_linked, max_size=30),
    st.lists(st.tuples(st.integers(0, 2), st.none() | st.integers(0, 6)), max_size=30),
)
def test_device_work_gets_the_last_calls_op(calls, work) -> None:
    by_corr: dict[int, dict[int, int]] = {}
    threads: dict[int, dict[int, list[tuple[int, int]]]] = {}
    for pid, tid, corr, ext in calls:  # the row-by-row converter's walk: threads in first-call order
        threads.setdefault(pid, {}).setdefault(tid, []).append((corr, ext))
    for pid, per_thread in threads.items():
        for tcalls in per_thread.values():
            for corr, ext in tcalls:
                by_corr.setdefault(pid, {})[corr] = ext

    def arr(values):
        return np.array(values, np.int64)

    got, found = launched_by(
        {"pid": arr([c[0] for c in calls]), "tid": arr([c[1] for c in calls]), "corr": arr([c[2] for c in calls]),
         "ext": arr([c[3] for c in calls])},
        {"pid": pa.array([w[0] for w in work], pa.int64()), "corr": pa.array([w[1] for w in work], pa.int64())},
    )  # fmt: skip
    for i, (pid, corr) in enumerate(work):
        assert (got[i] if found[i] else None) == by_corr.get(pid, {}).get(corr)


_value = st.none() | st.integers(-(2**63), 2**63 - 1)


@FUZZ
@given(
    st.lists(
        st.tuples(st.none() | st.text(max_size=8), _value, st.none() | st.floats() | st.text(max_size=4)),
        max_size=20,
    )
)
def test_args_are_msgspecs_json_of_the_dict(rows) -> None:
    encode = msgspec.json.Encoder().encode
    texts, numbers, odd = (list(c) for c in zip(*rows, strict=True)) if rows else ([], [], [])
    got = json_objects(
        [("nsys name", json_strings(pa.array(texts, pa.string()))), ("return", json_numbers(numbers, drop_falsy=True)),
         ("odd", json_numbers(odd))],
        len(rows),
    ).to_pylist()  # fmt: skip
    for i, (t, n, o) in enumerate(rows):
        kept = {
            k: v for k, v in {"nsys name": t, "return": n if n else None, "odd": o}.items() if v is not None
        }
        assert got[i] == (encode(kept).decode() if kept else None)
