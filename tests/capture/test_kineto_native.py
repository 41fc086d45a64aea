"""The native tokenizer (``_scan``, C) against the pure-Python path: both build the same
intermediate columns, to which convert.py applies every rule once.

Both paths must give the same table (``args`` as the same text: the native path copies only
what msgspec would write back as it is, and leaves other events to the Python path) and the
same source metadata: on every shared real
trace, and on generated events (hypothesis; synthetic, for the shapes the corpus lacks: escaped
names, named pids, odd args values, sub-ns digits, repeated metadata, ...).
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import msgspec
import pyarrow as pa
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from profui.capture.conversion.errors import KinetoFormatError
from profui.capture.kineto import native
from profui.capture.kineto.convert import convert_events
from profui.capture.kineto.reader import decode, read_bytes

from realdata import require_shared_traces

if not native.available():
    if os.environ.get("PROFUI_REQUIRE_NATIVE") == "1":
        pytest.fail("the _scan C extension is not built (PROFUI_REQUIRE_NATIVE=1 makes this a failure)")
    pytest.skip("the _scan C extension is not built (no C compiler at install time)", allow_module_level=True)


def _convert(path: Path, data: bytes, use_native: bool):
    try:
        return convert_events(decode(path, bytearray(data)), native=use_native)
    except KinetoFormatError as exc:
        return str(exc)


def assert_same(path: Path, data: bytes) -> int:
    """Convert ``data`` both ways and compare everything; returns the number of rows."""
    fast, slow = _convert(path, data, True), _convert(path, data, False)
    if isinstance(slow, str) or isinstance(fast, str):
        assert fast == slow
        return 0
    a, b = fast.table, slow.table
    assert a.schema == b.schema
    for name in b.column_names:
        assert a[name].to_pylist() == b[name].to_pylist(), name
    assert fast.source == slow.source
    assert (fast.counts, fast.devices, fast.first_ts_ns, fast.last_end_ns) == (
        slow.counts,
        slow.devices,
        slow.first_ts_ns,
        slow.last_end_ns,
    )
    return b.num_rows


def test_every_shared_trace_converts_the_same_both_ways() -> None:
    d = require_shared_traces()
    rows = {}
    for p in sorted(d.glob("hta-*.json*")):
        try:
            data = bytes(read_bytes(p))
        except KinetoFormatError:
            continue
        rows[p.name] = assert_same(p, data)
    assert rows["hta-df_index_resolver-df_index_resolver.json.gz"] == 151_388
    assert rows["hta-mtia_trace_single_rank-mtia_rank_0.json.gz"] == 138_370
    assert sum(1 for n in rows.values() if n) >= 18


def test_native_scan_takes_the_common_events_and_leaves_the_rest() -> None:
    d = require_shared_traces()
    p = d / "hta-df_index_resolver-df_index_resolver.json.gz"
    doc = decode(p, read_bytes(p))
    from profui.capture.kineto.convert import _CHUNK_SCHEMA

    scan = native.scan_events(doc.events_text, _CHUNK_SCHEMA)
    assert scan is not None and scan.events == 216_092
    assert scan.table.num_rows == 151_388  # every row: cpu ops, runtime, kernels, copies, instants
    assert scan.flows == {"ac2g:f": 42_373, "ac2g:s": 22_290}
    # left to Python: the 36 distinct metadata events (of 38), 2 global markers, 1 profiler span
    phases = sorted(
        (msgspec.json.decode(bytes(t))["ph"], msgspec.json.decode(bytes(t)).get("cat"))
        for _, t in scan.specials
    )
    assert phases == [("M", None)] * 36 + [("X", "Trace")] + [("i", None)] * 2
    assert [i for i, _ in scan.specials] == sorted(i for i, _ in scan.specials)


def test_text_that_is_not_utf8_gets_the_same_one_line_error_both_ways() -> None:
    # made here: a name with a byte that is not UTF-8
    doc = b'{"traceEvents": [{"ph": "X", "cat": "cpu_op", "name": "bad\xff", "pid": 1, "tid": 1, "ts": 1}]}'
    fast, slow = _convert(Path("bad.json"), doc, True), _convert(Path("bad.json"), doc, False)
    assert fast == slow
    assert fast.startswith("bad.json: trace event 0 is malformed") and "utf-8" in fast.lower(), fast


def test_the_extension_spells_no_kineto_name() -> None:
    """Every name the scan matches on comes from mapping.py (through native._policy): no string
    literal of the C source is a category, prefix, direction or flow category, and every args
    key it looks up is one handed in (the event fields ph/cat/name/... are the JSON format's,
    and the result's keys are profui's column names)."""
    import re

    from profui.capture.kineto import mapping

    source = (Path(native.__file__).parent / "_scan.c").read_text()
    literals = set(re.findall(r'"((?:[^"\\\n]|\\.)*)"', source))
    names = {*mapping.KIND_BY_CAT, *mapping.CANONICAL_CAT.values(), *mapping.CORRELATION_FLOWS}
    names |= {*mapping.DIRECTIONS, *mapping.DIRECTIONS.values(), mapping.STEP_PREFIX, mapping.DMA_CATEGORY}
    names |= {mapping.EXTERNAL_ID, mapping.EXTERNAL_ID_ALT, "Memcpy", "Memcpy ", "ProfilerStep", "Trace"}
    assert not literals & names, sorted(literals & names)
    # args keys are only ever compared with the ones handed in (the policy's)
    assert "pol->keys[k]" in source and "K_EXT" not in source
    # and no args value is interpreted there: integers are read only for pid/tid
    assert source.count("span_int(") == 3, "span_int is for pid/tid only"


def test_pure_python_switch(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PROFUI_PURE_PYTHON", "1")
    assert not native.available()
    assert native.scan_events(b"[]", None) is None


# ---- generated events (synthetic) ------------------------------------------------------------

_names = st.sampled_from(
    [
        "aten::mm",
        "cudaLaunchKernel",
        "ProfilerStep#3",
        "Memcpy HtoD (Pageable -> Device)",
        "Memcpy",
        "Memset (Device)",
        'void gemm<"t">',
        "na\u00efve",
        "",
        "ProfilerStep",
    ]
)
_cats = st.sampled_from(
    [
        "cpu_op",
        "kernel",
        "Kernel",
        "gpu_memcpy",
        "Memcpy",
        "gpu_memset",
        "cuda_runtime",
        "mtia_ccp_events",
        "mtia_runtime",
        "user_annotation",
        "gpu_user_annotation",
        "cuda_sync",
        "python_function",
        "cpu_instant_event",
        "Trace",
        "unknown_thing",
        "my_runtime",
        None,
    ]
)
_ints = st.one_of(st.integers(-5, 5), st.integers(2**31 - 2, 2**31 + 2), st.integers(-(2**63), 2**63 - 1))
_values = st.one_of(
    _ints,
    st.none(),
    st.booleans(),
    st.sampled_from(["", "7", "0x1f", "HtoD", 'x"y', "\u00b2"]),
    st.floats(allow_nan=False, allow_infinity=False, width=32),
    st.lists(st.integers(0, 3), max_size=3),
    st.dictionaries(st.sampled_from(["a", "correlation"]), st.integers(0, 3), max_size=2),
)
_arg_keys = st.sampled_from(
    [
        "External id",
        "external id",
        "correlation",
        "device",
        "stream",
        "bytes",
        "kind",
        "size",
        "direction",
        "cat",
        "Input Dims",
        "name",
        "Ext\\u0065rnal id",
    ]
)
_times = st.one_of(
    st.integers(0, 2**50).map(str),
    st.tuples(st.integers(0, 2**40), st.text("0123456789", min_size=1, max_size=6)).map(
        lambda t: f"{t[0]}.{t[1]}"
    ),
    st.sampled_from(["-1.5", "-0.0005", "1e3", "12.0015", "12.0025", '"12"', "null"]),
)


_clean_values = {
    "External id": st.integers(0, 2**40),
    "correlation": st.one_of(st.integers(0, 2**40), st.none()),
    "device": st.one_of(st.integers(-1, 8), st.integers(2**31 - 1, 2**31 + 1), st.none()),
    "stream": st.one_of(st.integers(-1, 30), st.integers(-(2**31) - 1, -(2**31)), st.none()),
    "bytes": st.one_of(st.integers(0, 2**40), st.none()),
    "kind": st.one_of(st.sampled_from(["HtoD", "DtoD", "", "1", "42"]), st.integers(0, 9), st.none()),
    "size": st.one_of(st.integers(0, 2**30), st.none()),
    "direction": st.sampled_from(["HOST_TO_DEVICE", "DEVICE_TO_HOST", "PEER_TO_PEER", "SIDEWAYS"]),
    "Input Dims": st.lists(st.lists(st.integers(0, 64), max_size=3), max_size=3),
    "Concrete Inputs": st.lists(st.sampled_from(["", "1", "{x}", "a,b}"]), max_size=3),
    "grid": st.lists(st.integers(1, 9), min_size=3, max_size=3),
    "est. achieved occupancy %": st.floats(0, 100, width=32),
    "meta": st.dictionaries(st.sampled_from(["correlation", "device"]), st.integers(0, 3), max_size=2),
}


@st.composite
def _clean_event(draw) -> str:
    """An event of the kinds real traces are made of (the native path's own ground)."""
    ph = draw(st.sampled_from(["X"] * 6 + ["i", "M", "s", "f"]))
    cats = (
        ["ac2g"]
        if ph in "sf"
        else [
            "cpu_op",
            "kernel",
            "Kernel",
            "gpu_memcpy",
            "Memcpy",
            "gpu_memset",
            "cuda_runtime",
            "mtia_ccp_events",
            "mtia_runtime",
            "user_annotation",
            "gpu_user_annotation",
            "cuda_sync",
            "cpu_instant_event",
            "cuda_driver",
        ]
    )
    fields = {"ph": json.dumps(ph), "cat": json.dumps(draw(st.sampled_from(cats)))}
    fields["name"] = json.dumps(draw(_names))
    fields["pid"] = str(draw(st.sampled_from([0, 1, 7, -1, 4294967296])))
    fields["tid"] = str(draw(st.sampled_from([0, 1, 7, -1, 2**31])))
    whole = draw(st.integers(-(10**6), 2**52))
    digits = draw(st.text("0123456789", max_size=6))
    fields["ts"] = f"{whole}.{digits}" if digits else str(whole)
    if draw(st.booleans()):
        fields["dur"] = draw(st.sampled_from(["0", "1.5", "2.25", "1000", "3.0005", "0.0015"]))
    if ph == "M":
        fields["args"] = json.dumps({"name": draw(st.sampled_from(["a", "b"]))})
    elif ph in "sf":
        fields["id"] = str(draw(st.integers(0, 3)))
    elif draw(st.integers(0, 5)):
        keys = draw(st.lists(st.sampled_from(sorted(_clean_values)), max_size=7, unique=True))
        args = {k: draw(_clean_values[k]) for k in keys}
        fields["args"] = json.dumps(args, indent=draw(st.sampled_from([None, 2])))
    order = draw(st.permutations(list(fields)))
    return "{" + ", ".join(f'"{k}": {fields[k]}' for k in order) + "}"


@st.composite
def _wild_event(draw) -> str:
    """Anything goes: the shapes the native path must leave to Python, and bad input."""
    ph = draw(st.sampled_from(["X", "X", "X", "i", "I", "M", "s", "f", "t", "B", ""]))
    fields = {"ph": json.dumps(ph)}
    cat = draw(_cats)
    if cat is not None or draw(st.booleans()):
        fields["cat"] = json.dumps(cat)
    fields["name"] = json.dumps(draw(_names)) if draw(st.integers(0, 9)) else '"esc\\u0061ped"'
    for key in ("pid", "tid"):
        fields[key] = draw(st.sampled_from(["0", "1", "7", "-1", "4294967296", '"Spans"', '"12"']))
    if draw(st.integers(0, 19)):
        fields["ts"] = draw(_times)
    if draw(st.booleans()):
        fields["dur"] = draw(_times)
    if ph in ("s", "f", "t"):
        fields["id"] = str(draw(st.integers(0, 9)))
        fields["cat"] = json.dumps(draw(st.sampled_from(["ac2g", "async_gpu", "fwdbwd", None])))
    if draw(st.integers(0, 5)):
        pairs = draw(st.lists(st.tuples(_arg_keys, _values), max_size=6))
        if ph in ("X", "i") and draw(st.booleans()):
            pairs.append(("External id", draw(st.integers(0, 99))))
            pairs.append(("correlation", draw(st.integers(0, 99))))
        sep = draw(st.sampled_from([", ", ",", ",\n      "]))
        body = sep.join(f'"{k}": {json.dumps(v)}' if "\\" not in k else f'"{k}": 1' for k, v in pairs)
        fields["args"] = "{" + body + "}" if draw(st.integers(0, 9)) else "[1, 2]"
    order = draw(st.permutations(list(fields)))
    return "{" + ", ".join(f'"{k}": {fields[k]}' for k in order) + "}"


_event = st.one_of(_clean_event(), _clean_event(), _clean_event(), _wild_event())


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(events=st.lists(_event, min_size=1, max_size=40), repeat=st.booleans(), pretty=st.booleans())
def test_generated_events_convert_the_same_both_ways(events: list[str], repeat: bool, pretty: bool) -> None:
    if repeat:  # metadata repeated verbatim, as MTIA traces do
        events = events + [e for e in events if '"ph": "M"' in e] * 3
    sep = ",\n  " if pretty else ","
    text = '{"schemaVersion": 1, "traceEvents": [' + sep.join(events) + "]}"
    assert_same(Path("generated.json"), text.encode())
    array = ("[" + sep.join(events) + "]").encode()
    for parts in (2, 7):
        assert_same_in_parts(array, parts)


@settings(max_examples=400, deadline=None)
@given(data=st.data())
def test_native_scan_survives_any_bytes(data) -> None:
    """Mutated and cut real events (made here: the corpus is valid JSON) must give a result or
    a ValueError, never a crash: the extension reads untrusted text without the GIL."""
    from profui.capture.kineto import _scan

    p = require_shared_traces() / "hta-trace_filter-sampled_rank-0.json.gz"
    events = _sample_events(p)
    k = data.draw(st.integers(1, 5))
    i = data.draw(st.integers(0, len(events) - k))
    text = bytearray(b"[" + b",".join(events[i : i + k]) + b"]")
    for _ in range(data.draw(st.integers(0, 4))):
        j = data.draw(st.integers(0, len(text) - 1))
        c = data.draw(st.sampled_from(b'{}[]",:\\ 0123456789.-eEtrufalsnXMi'))
        op = data.draw(st.sampled_from(["set", "delete", "insert", "cut"]))
        if op == "set":
            text[j] = c
        elif op == "delete":
            del text[j]
        elif op == "insert":
            text.insert(j, c)
        else:
            del text[j:]
        if not text:
            break
    assert_same_in_parts(bytes(text), data.draw(st.integers(2, 6)))  # and cut into parts: the same
    try:
        out = _scan.scan(bytes(text), *native._policy())
    except ValueError:
        return
    assert out["rows"] + len(out["special"]) // 24 <= out["events"]


_SAMPLE: dict[Path, list[bytes]] = {}


def _sample_events(p: Path) -> list[bytes]:
    if p not in _SAMPLE:
        _SAMPLE[p] = [bytes(r) for r in decode(p, read_bytes(p)).event_list()]
    return _SAMPLE[p]


def test_both_paths_build_the_same_intermediate() -> None:
    """The tokenizer's columns for an event are the ones the pure path builds for it (the rules
    then run on either): on a shared trace's rows, every column but the args spelling."""
    from profui.capture.kineto import convert

    p = require_shared_traces() / "hta-trace_filter-sampled_rank-0.json.gz"
    doc = decode(p, read_bytes(p))
    scan = native.scan_events(doc.events_text, convert._CHUNK_SCHEMA)
    assert scan is not None and scan.table.num_rows
    events = doc.event_list()
    src = convert._Source()
    keep, kinds, kept = convert._select_rows(
        convert.batch_decoder.decode(b"[" + b",".join(events) + b"]"), events, src
    )
    pure = convert._columns_to_chunk(convert._build_columns(keep, kinds, src))
    rows = pure.take(pa.array([kept.index(i) for i in scan.table["ord"].to_pylist()]))
    for name in convert._CHUNK_SCHEMA.names:
        assert scan.table[name].to_pylist() == rows[name].to_pylist(), name


# ---- the scan in parts, at once ----------------------------------------------------------------


def _scan_in(text: bytes, parts: int) -> dict | str:
    """The extension's whole result as plain values (its buffers as bytes), or the error's text."""
    from profui.capture.kineto import _scan

    try:
        res = _scan.scan(text, *native._policy(), False, parts)
    except ValueError as exc:
        return str(exc)

    def plain(v):
        if isinstance(v, (tuple, list)):
            return [plain(x) for x in v]
        return v if isinstance(v, int) else bytes(v)

    return {k: plain(v) for k, v in res.items()}


def assert_same_in_parts(text: bytes, parts: int) -> int:
    """The scan in ``parts`` parts against the scan in one (the oracle, itself held equal to the
    Python path above): every column, byte for byte; returns how many parts' starts held."""
    one, many = _scan_in(text, 1), _scan_in(text, parts)
    if isinstance(one, str) or isinstance(many, str):
        assert many == one
        return 0
    assert one.pop("parts") == 1
    held = many.pop("parts")
    assert 1 <= held <= parts
    assert many == one
    return held


def test_every_shared_trace_scans_the_same_in_parts() -> None:
    d = require_shared_traces()
    held = {}
    for p in sorted(d.glob("hta-*.json*")):
        try:
            doc = decode(p, read_bytes(p))
        except KinetoFormatError:
            continue
        if doc.events_text is None:
            continue
        text = bytes(doc.events_text)
        for parts in (2, 3, 16):
            held[p.name, parts] = assert_same_in_parts(text, parts)
    # Kineto writes "},\n  {" between events only: on a large trace every guess holds
    assert held["hta-df_index_resolver-df_index_resolver.json.gz", 16] == 16
    assert held["hta-mtia_trace_single_rank-mtia_rank_0.json.gz", 3] == 3


def _event_text(i: int, name: str, args: str) -> str:
    return (
        f'{{"ph": "X", "cat": "kernel", "name": {json.dumps(name)}, "pid": 0, "tid": 7, '
        f'"ts": {1000 + i}, "dur": 2, "args": {args}}}'
    )


def test_a_guess_inside_a_string_or_a_nested_array_is_not_trusted() -> None:
    """Made here: events whose every "}, {" but the ones between events lies inside a name
    (long, so every cut falls in one) or in an args array of objects. A guess there must be
    found wrong, and the scan go on from where the part before stopped: the same columns."""
    filler = "x" * 5000
    events = [
        _event_text(
            i, f'{filler}}}, {{"ph": "X", "cat": "kernel"}}, {{{filler}', '{"a": [{"b": 1}, {"c": 2}]}'
        )
        for i in range(20)
    ]
    text = ("[" + ", ".join(events) + "]").encode()
    held = assert_same_in_parts(text, 8)
    assert held < 8  # some guesses fell in a name and were dropped
    nested = [_event_text(i, "k", '{"a": [' + ", ".join(['{"b": 1}'] * 3000) + "]}") for i in range(10)]
    text = ("[" + ", ".join(nested) + "]").encode()
    assert assert_same_in_parts(text, 8) < 8  # and in an args array of objects


def test_parts_join_metadata_flows_errors_and_the_end_as_one_scan() -> None:
    """Made here: metadata repeated in every part (kept once, where first seen), flows and
    specials numbered across parts, and the errors the one-part scan finds wherever they lie."""
    meta = '{"ph": "M", "name": "process_name", "pid": 0, "args": {"name": "p"}}'
    flow = '{"ph": "s", "cat": "ac2g", "id": 1, "pid": 0, "tid": 7, "ts": 5}'
    events = []
    for i in range(400):
        events += [_event_text(i, f"k{i % 7}", '{"x": 1}'), meta, flow]
    good = "[\n  " + ",\n  ".join(events) + "\n]"
    res = _scan_in(good.encode(), 6)
    assert not isinstance(res, str) and res["parts"] == 6
    assert assert_same_in_parts(good.encode(), 6) == 6
    assert len(res["special"]) // 24 == 1  # the metadata event, once
    for bad in (
        good[:-2] + ", {]",  # a broken last event
        good + " x",  # text after the array
        good + " ,",  # a comma after the array's end
        good[: len(good) // 2],  # cut in the middle
        good.replace('"ts": 1300', '"ts": 13-00', 1),  # a number that is not one, in a late part
        "[]",
        "  [  ]  ",
    ):
        for parts in (2, 5, 16):
            assert_same_in_parts(bad.encode(), parts)
    assert _scan_in(b"[]", 4)["events"] == 0


def test_the_import_scans_in_parts_and_writes_the_same_trace(monkeypatch: pytest.MonkeyPatch) -> None:
    """Through convert_events, as `profui import` runs it (threads = the usable CPUs; the least
    part size lowered so that a shared trace is cut in 4): the same table and source as the
    Python path."""
    p = require_shared_traces() / "hta-trace_filter-sampled_rank-0.json.gz"
    data = bytes(read_bytes(p))
    monkeypatch.setattr(native, "MIN_PART_BYTES", 1)
    assert native.parts_for(len(data), 4) == 4
    fast = convert_events(decode(p, bytearray(data)), threads=4)
    slow = convert_events(decode(p, bytearray(data)), native=False)
    assert fast.table.equals(slow.table)
    assert fast.source == slow.source and fast.counts == slow.counts


def test_parts_for_gives_each_thread_enough_text(monkeypatch: pytest.MonkeyPatch) -> None:
    mb = 1 << 20
    assert native.parts_for(42 * mb, 8) == 1  # df_index's text: one part, no joining copies
    assert native.parts_for(130 * mb, 8) == 2
    assert native.parts_for(1400 * mb, 2) == 2
    assert native.parts_for(1400 * mb, 1) == 1  # the daemon's conversion, beside the training
    # ... which starts no thread of its own either: one thread decodes, then scans
    import inspect

    from profui.capture.daemon import spool
    from profui.capture.kineto.file_import import convert_kineto_file

    monkeypatch.setattr(native, "MIN_PART_BYTES", 1)
    assert native.scan_ahead(b'{"traceEvents": []}', 1, False) is None
    ahead = native.scan_ahead(b'{"traceEvents": []}', 2, False)
    assert ahead is not None
    ahead.close()
    assert inspect.signature(convert_kineto_file).parameters["threads"].default == 1
    assert "threads=" not in inspect.getsource(spool)


# ---- the scan started before the document is decoded ---------------------------------------


def test_the_scan_ahead_is_the_scan_of_the_array_the_decoder_finds(monkeypatch: pytest.MonkeyPatch) -> None:
    """On every shared Kineto trace: the scan started on the whole document before msgspec
    decodes it gives, for the array msgspec then finds, the very columns the scan of that array
    gives (the least size lowered so that every trace has one)."""
    monkeypatch.setattr(native, "MIN_PART_BYTES", 1)
    taken = 0
    for p in sorted(require_shared_traces().glob("hta-*.json*")):
        try:
            data = bytes(read_bytes(p))
            doc = decode(p, data)
        except KinetoFormatError:
            continue
        ahead = native.scan_ahead(data, 3, False)
        assert ahead is not None, p.name
        got = ahead.take(doc.events_text)
        assert got is not None, p.name
        want = _scan_in(bytes(doc.events_text), 1)
        got = {k: [bytes(x) for x in v] if isinstance(v, tuple) else v for k, v in got.items()}
        assert got.pop("end") == len(doc.events_text) == want.pop("end")
        got.pop("parts"), want.pop("parts")
        assert _plain(got) == want, p.name
        taken += 1
    assert taken >= 18


def _plain(v):
    if isinstance(v, dict):
        return {k: _plain(x) for k, x in v.items()}
    if isinstance(v, (tuple, list)):
        return [_plain(x) for x in v]
    return v if isinstance(v, int) else bytes(v)


_ONE = '{"ph": "X", "cat": "kernel", "name": "k", "pid": 0, "tid": 7, "ts": 1, "dur": 2, "args": {}}'


@pytest.mark.parametrize(
    ("text", "scanned", "taken"),
    [
        ('{"a": {"traceEvents": []}, "traceEvents": [' + _ONE + '], "z": [1]}', True, True),
        # msgspec keeps the last of a key given twice: the scan of the first is not taken
        ('{"traceEvents": [' + _ONE + '], "traceEvents": [' + _ONE + "," + _ONE + "]}", True, False),
        (
            '{"traceEvents": [' + _ONE + '], "traceEvents": [' + _ONE.replace('"ts": 1', '"ts": 9') + "]}",
            True,
            False,
        ),
        ('{"trace\\u0045vents": [' + _ONE + "]}", False, False),  # an escaped key: not looked for
        ('{"traceEvents": 5}', False, False),
        ("[" + _ONE + "]", False, False),  # the array format: no key
        ('\ufeff{"traceEvents": [' + _ONE + "]}", True, True),  # after a byte-order mark
    ],
    ids=[
        "nested-key-first",
        "key-twice",
        "key-twice-same-length",
        "escaped-key",
        "not-an-array",
        "array-format",
        "bom",
    ],
)
def test_the_scan_ahead_is_taken_only_for_that_array(
    text: str, scanned: bool, taken: bool, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """Made here: where the quick walk finds another array than msgspec, or none, the array is
    scanned as without it, and the import's table is the one a single thread makes."""
    monkeypatch.setattr(native, "MIN_PART_BYTES", 1)
    data = text.encode()
    ahead = native.scan_ahead(data, 2, False)
    assert (ahead is not None) == scanned
    if ahead is not None:
        assert (ahead.take(decode(Path("t.json"), data).events_text) is not None) == taken

    def converted(**how):
        try:
            conv = convert_events(decode(Path("t.json"), data), **how)
        except KinetoFormatError as exc:
            return str(exc)
        return conv.table.to_pylist(), conv.source

    ahead = native.scan_ahead(data, 2, False)
    try:
        assert converted(threads=2, ahead=ahead) == converted(native=False)
    finally:
        if ahead is not None:
            ahead.close()


def test_a_file_imported_with_threads_is_the_file_imported_without(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """Through convert_kineto_file (the scan ahead, in parts): the events file of a real trace
    equals the one-thread import's, and a document broken after its events array gets the same
    one-line error either way."""
    import pyarrow.parquet as pq

    from profui.capture.kineto.file_import import convert_kineto_file

    monkeypatch.setattr(native, "MIN_PART_BYTES", 1)
    src = require_shared_traces() / "hta-trace_filter-sampled_rank-0.json.gz"
    plain = tmp_path / "plain.json"
    plain.write_bytes(bytes(read_bytes(src)))
    tables = []
    for threads in (1, 3):
        r = convert_kineto_file(plain, tmp_path / f"t{threads}", node="n", rank=0, threads=threads)
        tables.append(pq.read_table(r.path))
    assert tables[0].equals(tables[1]) and tables[0].num_rows == 4810
    broken = tmp_path / "broken.json"
    broken.write_bytes(plain.read_bytes().rstrip()[:-1] + b', "x": }')
    errors = []
    for threads in (1, 3):
        with pytest.raises(KinetoFormatError) as err:
            convert_kineto_file(broken, tmp_path / f"b{threads}", node="n", rank=0, threads=threads)
        errors.append(str(err.value))
    assert errors[0] == errors[1] and "not valid JSON" in errors[0]
