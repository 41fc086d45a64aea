"""The args rules and the rows' finishing rules run in parts of consecutive rows on threads
(``profui import``, threads = the usable CPUs; a large trace only). The oracle is the same
conversion in one part (``threads=1``): every shared trace gives the same columns and the same
events file byte for byte, and a file with bad values in several parts is refused with the
error the one-part run names, whichever part's rows hold it. The least part size is lowered
here so that the shared traces, all far below it, are cut."""

from __future__ import annotations

import copy
import gzip
import json
from pathlib import Path

import pytest
from test_bad_input_import import SMALL

from profui.capture.conversion.errors import KinetoFormatError
from profui.capture.kineto import convert as kineto_convert
from profui.capture.kineto.convert import FailedInParts, convert_events
from profui.capture.kineto.file_import import convert_kineto_file
from profui.capture.kineto.reader import decode, read_bytes

from realdata import require_shared_traces, shared_trace


@pytest.fixture()
def small_parts(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """Parts of one row and up; returns the number of parts of each conversion that was cut."""
    cuts: list[int] = []
    real = kineto_convert.split_rows

    def split_rows(rows: dict, parts: int) -> list[dict]:
        cuts.append(parts)
        return real(rows, parts)

    monkeypatch.setattr(kineto_convert, "_PART_ROWS", 1)
    monkeypatch.setattr(kineto_convert, "split_rows", split_rows)
    return cuts


def _converted(path: Path, data: bytes, threads: int, native: bool) -> object:
    try:
        return convert_events(decode(path, bytearray(data)), threads=threads, native=native)
    except KinetoFormatError as exc:
        return str(exc)


@pytest.mark.parametrize("native", [True, False], ids=["c-scan", "pure-python"])
def test_every_shared_trace_converts_the_same_in_parts(small_parts: list[int], native: bool) -> None:
    rows = {}
    for p in sorted(require_shared_traces().glob("hta-*.json*")):
        try:
            data = bytes(read_bytes(p))
        except KinetoFormatError:
            continue
        whole = _converted(p, data, 1, native)
        cut_before = len(small_parts)
        parts = _converted(p, data, 3, native)
        if isinstance(whole, str) or isinstance(parts, str):
            assert parts == whole, p.name
            continue
        assert small_parts[cut_before:] == [3], p.name
        a, b = parts.table, whole.table
        assert a.schema == b.schema
        assert a.column("args").num_chunks == 3  # a chunk a part: it was cut
        for name in b.column_names:
            assert a[name].to_pylist() == b[name].to_pylist(), (p.name, name)
        assert (parts.source, parts.counts, parts.devices, parts.first_ts_ns, parts.last_end_ns) == (
            whole.source,
            whole.counts,
            whole.devices,
            whole.first_ts_ns,
            whole.last_end_ns,
        )
        rows[p.name] = b.num_rows
    assert rows["hta-df_index_resolver-df_index_resolver.json.gz"] == 151_388
    assert len(rows) >= 18


@pytest.mark.parametrize(
    "name",
    [
        "hta-df_index_resolver-df_index_resolver.json.gz",
        "hta-amd_trace-mi250_minitoy_train_ROCm6_2_kineto.json.gz",  # copy sizes from runtime calls
        "hta-mtia_trace_single_rank-mtia_rank_0.json.gz",  # DMA copies, named pids
    ],
)
def test_the_events_file_is_the_one_part_file_byte_for_byte(
    small_parts: list[int], tmp_path: Path, name: str
) -> None:
    src = tmp_path / "trace.json"
    src.write_bytes(bytes(read_bytes(require_shared_traces() / name)))
    files = [
        convert_kineto_file(
            src, tmp_path / f"t{threads}", node="n", rank=0, threads=threads
        ).path.read_bytes()
        for threads in (1, 2)
    ]
    assert small_parts == [2]
    assert files[0] == files[1]


@pytest.fixture(scope="module")
def doc() -> dict:
    return json.loads(gzip.decompress(shared_trace(SMALL).read_bytes()))


def _rows(d: dict) -> list[dict]:
    """The complete events that become rows (a ``Trace`` span is the profiler's, kept aside)."""
    return [
        e
        for e in d["traceEvents"]
        if e.get("ph") == "X" and isinstance(e.get("ts"), (int, float)) and e.get("cat") != "Trace"
    ]


def _bad_id(key: str, value: int):
    def set_value(e: dict) -> None:
        e.setdefault("args", {})[key] = value

    return set_value


def _bad_time(key: str, value: int):
    def set_value(e: dict) -> None:
        e[key] = value

    return set_value


#: (what the first row's event gets, what the last row's gets, words of the one-part run's
#: error): the rules run over every row in turn, so a rule's error in the last part comes before
#: a later rule's error in the first, and the first part's before the last's within one rule.
CASES = {
    "a time first, an external id last": (
        _bad_time("dur", -int("9" * 40)),
        _bad_id("External id", 2**63),
        "9223372036854775808",
    ),
    "a correlation first, an external id last": (
        _bad_id("correlation", 2**64),
        _bad_id("External id", 2**63),
        "9223372036854775808",
    ),
    "external ids in both": (
        _bad_id("External id", 2**64 + 1),
        _bad_id("External id", 2**63),
        "18446744073709551617",
    ),
    "a dur first, a ts last": (
        _bad_time("dur", -int("9" * 40)),
        _bad_time("ts", int("8" * 40)),
        "8888888888",
    ),
    "a ts first, a dur last": (
        _bad_time("ts", int("8" * 40)),
        _bad_time("dur", -int("9" * 40)),
        "8888888888",
    ),
    # one time rule, two checks over every row: a time beyond int64 ns (any row) comes before a
    # number that is not a time in µs (1e30: beyond a decimal's precision)
    "a ts not a time first, a ts too large last": (
        _bad_time("ts", 1e30),
        _bad_time("ts", int("8" * 40)),
        "8888888888",
    ),
    # only one part fails: its error is raised as it is, no second run
    "a ts too large last only": (
        lambda e: None,
        _bad_time("ts", int("8" * 40)),
        "8888888888",
    ),
}


@pytest.mark.parametrize("pure", ["0", "1"], ids=["c-scan", "pure-python"])
@pytest.mark.parametrize("case", sorted(CASES))
def test_bad_values_in_several_parts_get_the_one_part_error(
    small_parts: list[int], monkeypatch: pytest.MonkeyPatch, tmp_path: Path, doc: dict, case: str, pure: str
) -> None:
    """Through convert_kineto_file, as `profui import` runs it: the same one-line error with 3
    threads (rows in 3 parts) as with one. Where several parts fail, which error comes first is
    found by converting the file again in one part."""
    monkeypatch.setenv("PROFUI_PURE_PYTHON", pure)
    first, last, words = CASES[case]
    bad = copy.deepcopy(doc)
    events = _rows(bad)
    assert len(events) >= 9
    first(events[0])
    last(events[-1])
    src = tmp_path / "bad.json"
    src.write_text(json.dumps(bad))
    errors = []
    for threads in (1, 3):
        with pytest.raises(KinetoFormatError) as err:
            convert_kineto_file(src, tmp_path / f"t{threads}", node="n", rank=0, threads=threads)
        errors.append(str(err.value))
        assert not list((tmp_path / f"t{threads}").rglob("*.parquet"))
    assert words in errors[0], errors[0]
    assert errors[1] == errors[0]
    several = "only" not in case
    # cut in 3 once, and where several parts failed, converted again in one part (not cut)
    assert small_parts == [3], small_parts
    if several:
        with pytest.raises(FailedInParts):
            convert_events(decode(src, bytearray(src.read_bytes())), threads=3)
