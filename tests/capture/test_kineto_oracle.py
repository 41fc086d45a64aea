"""Times of the converted rows against an independent oracle: stdlib ``json`` with exact
``Decimal`` arithmetic, on every shared trace.

``timeparse.us_to_ns`` is the one µs -> ns conversion; this checks what it produces in the
events table (native scan and pure Python alike) without going through it, msgspec or Arrow.
"""

from __future__ import annotations

import json
from decimal import ROUND_HALF_EVEN, Decimal

import pytest

from profui.capture.conversion.errors import KinetoFormatError
from profui.capture.kineto.convert import convert_events
from profui.capture.kineto.reader import decode, read_bytes

from realdata import require_shared_traces

_SAMPLE = 5_000  # rows checked per trace (spread over the whole file)
#: The pure path on the two largest traces (50-90 MB) is left to test_kineto_native's
#: comparison of both paths: the oracle's Decimal parse of them is the slow part.
_PURE_MAX_BYTES = 30 << 20


def _ns(value: Decimal | int) -> int:
    return int((Decimal(value) * 1000).quantize(Decimal(1), rounding=ROUND_HALF_EVEN))


def _oracle_rows(top: dict | list) -> tuple[list[tuple[str, int, int]], int | None]:
    """(name, ts_ns, dur_ns) of the events that become rows, in order, times relative; and
    the trace's baseTimeNanoseconds."""
    events = top if isinstance(top, list) else top["traceEvents"]
    base = None if isinstance(top, list) else top.get("baseTimeNanoseconds")
    rows = []
    for ev in events:
        ph, cat = ev.get("ph"), ev.get("cat")
        if "ts" not in ev:
            continue
        if ph == "X" and cat != "Trace":
            rows.append((ev.get("name", ""), _ns(ev["ts"]), _ns(ev.get("dur", 0))))
        elif ph in ("i", "I") and cat is not None:
            rows.append((ev.get("name", ""), _ns(ev["ts"]), 0))  # an instant lasts 0
    return rows, None if base is None else int(base)


def _traces():
    d = require_shared_traces()
    return sorted(d.glob("hta-*.json*"))


@pytest.mark.parametrize("native", [True, False], ids=["default", "pure"])
def test_row_times_match_exact_decimal_arithmetic(native: bool) -> None:
    checked = 0
    for p in _traces():
        try:
            data = read_bytes(p)
            if not native and len(data) > _PURE_MAX_BYTES:
                continue
            conv = convert_events(decode(p, bytearray(data)), native=native)
        except KinetoFormatError:
            continue
        top = json.loads(bytes(data), parse_float=Decimal)
        expected, base = _oracle_rows(top)
        table = conv.table
        assert table.num_rows == len(expected), p.name
        if not expected:
            continue
        if base is not None and min(ts for _, ts, _ in expected) < 10**17:
            expected = [(n, ts + base, d) for n, ts, d in expected]
        step = max(1, len(expected) // _SAMPLE)
        picks = list(range(0, len(expected), step))
        names, ts, dur = (table[c].to_pylist() for c in ("name", "ts", "dur"))
        got = [(names[i], ts[i], dur[i]) for i in picks]
        assert got == [expected[i] for i in picks], p.name
        checked += len(picks)
    assert checked > (20_000 if native else 5_000)
