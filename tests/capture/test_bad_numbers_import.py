"""Numbers no trace can hold are refused, never wrapped: times beyond int64 nanoseconds, ids and
pids beyond 64 bits, a rank beyond int32, a base time that is not an integer, JSON nested a
thousand deep. One line naming the file, exit 2, nothing written, and the C scan and the pure
Python path agree. Each bad file is a real trace with one value changed here."""

from __future__ import annotations

import copy
import gzip
import json
import subprocess
from pathlib import Path

import pytest
from test_bad_input_import import PROFUI, SMALL, assert_refused, refused_both_ways

from realdata import shared_trace


@pytest.fixture(scope="module")
def doc() -> dict:
    return json.loads(gzip.decompress(shared_trace(SMALL).read_bytes()))


def _first_complete(d: dict) -> dict:
    return next(e for e in d["traceEvents"] if e.get("ph") == "X" and isinstance(e.get("ts"), (int, float)))


def _set_ts(d: dict) -> None:
    _first_complete(d)["ts"] = int("9" * 130)


def _set_dur(d: dict) -> None:
    _first_complete(d)["dur"] = -int("9" * 40)


def _set_ts_16_digits(d: dict) -> None:  # fits a decimal, not int64 nanoseconds
    _first_complete(d)["ts"] = 9_999_999_999_999_999


def _set_end_beyond(d: dict) -> None:  # ts and dur each fit; their sum does not
    e = _first_complete(d)
    e["ts"], e["dur"] = 9_000_000_000_000_000, 900_000_000_000_000


def _set_correlation(d: dict) -> None:
    _first_complete(d).setdefault("args", {})["correlation"] = 2**64


def _set_external_id(d: dict) -> None:
    _first_complete(d).setdefault("args", {})["External id"] = 2**63


def _set_pid(d: dict) -> None:
    _first_complete(d)["pid"] = 2**64


def _set_rank(d: dict) -> None:
    d.setdefault("distributedInfo", {})["rank"] = 10**30


def _set_base(d: dict) -> None:
    d["baseTimeNanoseconds"] = "abc"


CASES = {
    "ts of 130 digits": (_set_ts, ("beyond the int64 nanosecond range",)),
    "negative dur of 40 digits": (_set_dur, ("beyond the int64 nanosecond range",)),
    "ts of 16 digits": (_set_ts_16_digits, ("bad event time",)),
    "end beyond int64": (_set_end_beyond, ("ts + dur overflows",)),
    "correlation 2**64": (_set_correlation, ("18446744073709551616", "64-bit")),
    "External id 2**63": (_set_external_id, ("9223372036854775808", "64-bit")),
    "pid 2**64": (_set_pid, ("pid", "64-bit")),
    "rank 10**30": (_set_rank, ("distributedinfo.rank", "ranks")),
    "base time not a number": (_set_base, ("basetimenanoseconds", "not an integer")),
}


@pytest.mark.parametrize("pure", ["0", "1"], ids=["c-scan", "pure-python"])
@pytest.mark.parametrize("case", sorted(CASES))
def test_a_number_no_trace_can_hold_is_refused(tmp_path: Path, doc: dict, case: str, pure: str) -> None:
    mutate, words = CASES[case]
    bad_doc = copy.deepcopy(doc)
    mutate(bad_doc)
    refused_both_ways(tmp_path, json.dumps(bad_doc).encode(), pure, *words)


def test_json_nested_a_thousand_deep_is_one_line(tmp_path: Path, doc: dict) -> None:
    bad_doc = copy.deepcopy(doc)
    _first_complete(bad_doc).setdefault("args", {})["deep"] = "__DEEP__"
    bad = tmp_path / "deep.json"
    bad.write_text(json.dumps(bad_doc).replace('"__DEEP__"', "[" * 1000 + "]" * 1000))
    proc = subprocess.run(
        [PROFUI, "import", str(bad), "-o", str(tmp_path / "out")], capture_output=True, text=True, timeout=120
    )
    assert_refused(proc, bad, "nested too deeply")
