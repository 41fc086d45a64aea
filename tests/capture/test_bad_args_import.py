"""Args the importer cannot read are refused in one line naming the event; args it can read are
written as the same text by the C scan and the pure-Python path.

The bad files are a real trace (HTA's small simple_add trace) with one args value replaced by
raw bytes here: text that is not UTF-8 (in a CPU op, a metadata event, an annotation, the
profiler's span) and a number beyond the range of a double. Before, these gave a msgspec traceback
(exit 1), or, for the number, a table from one path and a traceback from the other.
"""

from __future__ import annotations

import copy
import gzip
import json
from pathlib import Path

import pytest
from test_bad_input_import import SMALL, refused_both_ways

from profui.capture.kineto import native
from profui.capture.kineto.convert import convert_events
from profui.capture.kineto.reader import decode

from realdata import shared_trace

MARK = '"__RAW__"'


@pytest.fixture(scope="module")
def doc() -> dict:
    return json.loads(gzip.decompress(shared_trace(SMALL).read_bytes()))


def _index(d: dict, where: str) -> int:
    evs = d["traceEvents"]
    if where == "cpu_op":
        return next(i for i, e in enumerate(evs) if e.get("ph") == "X" and e.get("cat") == "cpu_op")
    if where == "kernel":
        return next(i for i, e in enumerate(evs) if e.get("cat") == "kernel")
    if where == "metadata":
        return next(i for i, e in enumerate(evs) if e.get("ph") == "M" and e.get("name") == "process_name")
    if where == "annotation":
        return next(i for i, e in enumerate(evs) if e.get("cat") == "user_annotation")
    if where == "span":
        return next(i for i, e in enumerate(evs) if e.get("cat") == "Trace")
    raise AssertionError(where)


def _with_raw_arg(d: dict, where: str, raw: bytes) -> tuple[bytes, int]:
    d = copy.deepcopy(d)
    i = _index(d, where)
    d["traceEvents"][i].setdefault("args", {})["odd"] = "__RAW__"
    return json.dumps(d).encode().replace(MARK.encode(), raw), i


BAD = {
    "not UTF-8 in a CPU op": ("cpu_op", b'"\xff\xfe"', "text that is not utf-8"),
    "not UTF-8 in a process name's event": ("metadata", b'"\xc3"', "text that is not utf-8"),
    "not UTF-8 in an annotation": ("annotation", b'["ok", "\xed\xa0\x80"]', "text that is not utf-8"),
    "not UTF-8 in the profiler's span": ("span", b'"\xff"', "text that is not utf-8"),
    "1e400 in a kernel": ("kernel", b"1e400", "beyond the range of a double"),
    "-1e400 deep in a kernel": ("kernel", b'{"x": [1, -1e400]}', "beyond the range of a double"),
}


@pytest.mark.parametrize("pure", ["0", "1"], ids=["c-scan", "pure-python"])
@pytest.mark.parametrize("case", sorted(BAD))
def test_args_that_cannot_be_read_are_one_line_naming_the_event(
    tmp_path: Path, doc: dict, case: str, pure: str
):
    where, raw, words = BAD[case]
    data, index = _with_raw_arg(doc, where, raw)
    refused_both_ways(tmp_path, data, pure, f"trace event {index} has malformed args", words)


#: A value's text in the source -> its text in the events table, as msgspec writes the value
#: back (hand-checked: shortest round trip, no exponent in fixed range, escapes decoded).
SPELLED = {
    b"5.300000": b"5.3",  # Kineto's "blocks per SM"
    b"1.000000": b"1.0",
    b"464.592590": b"464.59259",
    b"0.08888888888888889": b"0.08888888888888889",  # Kineto's bandwidth, 16 digits
    b"0.30000000000000004": b"0.30000000000000004",
    b"0.1000000000000000055511": b"0.1",
    b"1E5": b"100000.0",
    b"1.0e2": b"100.0",
    b"1e-7": b"1e-7",
    b"1e-400": b"0.0",
    b"-0": b"0",
    b"-0.0": b"-0.0",
    b"18446744073709551616": b"18446744073709551616",
    b"1234567890123456.0": b"1234567890123456.0",
    b'"\\u00e9\\/"': '"é/"'.encode(),
    b'"\\u0041\\u0001"': b'"A\\u0001"',
    b'"a\\"b\\\\c\\n\\t\\b\\f\\r"': b'"a\\"b\\\\c\\n\\t\\b\\f\\r"',
    b'{"k": 1, "k": 2}': b'{"k":2}',
    b"[ 1.50 , 2 ]": b"[1.5,2]",
}


@pytest.mark.parametrize("raw", sorted(SPELLED), ids=lambda r: r.decode("ascii", "replace"))
def test_args_text_is_spelled_the_same_both_ways(doc: dict, raw: bytes) -> None:
    data, index = _with_raw_arg(doc, "kernel", raw)
    texts = []
    for use_native in (False, True) if native.available() else (False,):
        conv = convert_events(decode(Path("t.json"), bytearray(data)), native=use_native)
        args = [a for a in conv.table["args"].to_pylist() if a and '"odd":' in a]
        assert len(args) == 1
        texts.append(args[0].encode())
    want = b'"odd":' + SPELLED[raw]
    assert all(want in t for t in texts), (texts, want)
    assert len(set(texts)) == 1


TOP = {
    "not UTF-8 in deviceProperties": ("deviceProperties", b'[{"name": "\xff"}]', "text that is not utf-8"),
    "not UTF-8 in distributedInfo": (
        "distributedInfo",
        b'{"backend": "\xc3", "rank": 0}',
        "text that is not utf-8",
    ),
    "1e400 as baseTimeNanoseconds": ("baseTimeNanoseconds", b"1e400", "beyond the range of a double"),
}


@pytest.mark.parametrize("pure", ["0", "1"], ids=["c-scan", "pure-python"])
@pytest.mark.parametrize("case", sorted(TOP))
def test_top_level_fields_that_cannot_be_read_are_one_line(tmp_path: Path, doc: dict, case: str, pure: str):
    key, raw, words = TOP[case]
    d = copy.deepcopy(doc)
    d[key] = "__RAW__"
    data = json.dumps(d).encode().replace(MARK.encode(), raw)
    refused_both_ways(tmp_path, data, pure, f"'{key.lower()}' holds", words)
