"""The args-text cut and the per-key spread of the Kineto converter, against per-row Python.

Both work on whole columns at once (numpy over the text's bytes); the cut goes block by block so
that its byte mask stays small. The oracle here is the plain per-row rule: slice each row's text,
drop the marked spans and append the row's suffix; list each key's value at its rows and null
elsewhere.
"""

from __future__ import annotations

import random

import numpy as np
import pyarrow as pa
import pytest

from profui.capture.kineto import convert
from profui.capture.kineto.native import spread


def _rows(rng: random.Random, n: int) -> tuple[list[str], list[list[tuple[int, int]]]]:
    """``n`` texts (some with non-ASCII bytes) and, per row, non-overlapping byte spans in them."""
    texts, spans = [], []
    for _ in range(n):
        parts = [rng.choice(["ab", "é", '"k":1,', "xyz", "€€"]) for _ in range(rng.randint(0, 8))]
        text = "".join(parts)
        raw = text.encode()
        bounds, at = [], 0
        for p in parts:  # spans on whole parts, so what is left stays UTF-8
            size = len(p.encode())
            if rng.random() < 0.4:
                bounds.append((at, at + size))
            at += size
        texts.append(text)
        spans.append(bounds)
        assert at == len(raw)
    return texts, spans


def _spans(body: pa.Array, cuts: list[tuple[pa.Array, pa.Array, pa.Array]]) -> convert._CutSpans:
    spans = convert._CutSpans(body)
    for cut in cuts:
        spans.add(*cut)
    return spans


@pytest.mark.parametrize("suffixed", [False, True], ids=["cut", "cut+suffix"])
@pytest.mark.parametrize("block", [1, 7, 64, 1 << 24])
def test_cut_equals_per_row_slicing(monkeypatch: pytest.MonkeyPatch, block: int, suffixed: bool) -> None:
    rng = random.Random(block)
    texts, spans = _rows(rng, 600)
    # spread each row's spans over "keys": key j holds the j-th span of a row, if it has one
    # a real slice (offsets not from 0): the first rows of the array are not the body's
    texts, spans = ["zz,", "y"] + texts, [[], []] + spans
    keys = max(len(s) for s in spans)
    cuts, kept = [], [[] for _ in spans]
    for j in range(keys):
        start = [s[j][0] if len(s) > j else -1 for s in spans]
        end = [s[j][1] if len(s) > j else -1 for s in spans]
        # a real span is cut or, masked off (false or null), kept; rows without one never cut
        mask = [
            rng.choice([True, True, False, None]) if len(s) > j else rng.choice([False, None]) for s in spans
        ]
        for row, (s_, m) in enumerate(zip(spans, mask, strict=True)):
            if len(s_) > j and m:
                kept[row].append(s_[j])
        cuts.append((pa.array(start, pa.int32()), pa.array(end, pa.int32()), pa.array(mask, pa.bool_())))
    monkeypatch.setattr(convert, "_CUT_BLOCK_BYTES", block)
    body = pa.array(texts, pa.large_string()).slice(2)
    cuts = [tuple(a.slice(2) for a in cut) for cut in cuts]
    # what each row gets after its cut text: mostly nothing, as the converter's added args are
    suffixes = [rng.choice(["", "", "", '"cat":"x",', "é,"]) for _ in texts]
    suffix = pa.array(suffixes, pa.large_string()).slice(2) if suffixed else None
    got = convert._cut(body, _spans(body, cuts), suffix).to_pylist()
    want = []
    for text, bounds, extra in zip(texts[2:], kept[2:], suffixes[2:], strict=True):
        raw = text.encode()
        keep = bytearray()
        at = 0
        for a, b in bounds:
            keep += raw[at:a]
            at = b
        keep += raw[at:]
        want.append(keep.decode() + (extra if suffixed else ""))
    assert got == want


def test_cut_of_a_sliced_body_keeps_its_rows(monkeypatch: pytest.MonkeyPatch) -> None:
    """A body that is a slice of a larger array (offsets not starting at 0) is cut in place."""
    monkeypatch.setattr(convert, "_CUT_BLOCK_BYTES", 5)
    whole = pa.array(["zzzz", "a,b,", "cd,e,", "f,"], pa.large_string())
    body = whole.slice(1)
    cut = (pa.array([0, 3, 0], pa.int32()), pa.array([2, 5, 1], pa.int32()), pa.array([True, True, False]))
    assert convert._cut(body, _spans(body, [cut])).to_pylist() == ["b,", "cd,", "f,"]


def test_spread_equals_listing_by_row() -> None:
    rng = random.Random(3)
    n = 500
    at = sorted(rng.sample(range(n), 120))
    values = [rng.choice(["1", '"x"', "null", "é1"]) for _ in at]
    start = [rng.randint(0, 50) for _ in at]
    end = [s + rng.randint(1, 9) for s in start]
    text, s, e = spread(
        n,
        np.array(at, np.int64),
        np.array(start, np.int32),
        np.array(end, np.int32),
        pa.array([v.encode() for v in values], pa.large_binary()),
    )
    by_row = dict(zip(at, zip(values, start, end, strict=True), strict=True))
    assert text.to_pylist() == [by_row[i][0] if i in by_row else None for i in range(n)]
    assert s.to_pylist() == [by_row[i][1] if i in by_row else -1 for i in range(n)]
    assert e.to_pylist() == [by_row[i][2] if i in by_row else -1 for i in range(n)]
    text.validate(full=True)


def test_spread_of_a_key_no_row_has() -> None:
    text, s, e = spread(
        4,
        np.array([], np.int64),
        np.array([], np.int32),
        np.array([], np.int32),
        pa.array([], pa.large_binary()),
    )
    assert text.to_pylist() == [None] * 4 and s.to_pylist() == e.to_pylist() == [-1] * 4


def test_spread_refuses_text_that_is_not_utf8() -> None:
    with pytest.raises(pa.ArrowInvalid):
        spread(
            2,
            np.array([1], np.int64),
            np.array([0], np.int32),
            np.array([1], np.int32),
            pa.array([b"\xff"], pa.large_binary()),
        )


def test_spread_refuses_rows_out_of_order() -> None:
    """The values' bytes become the column's bytes as they lie, so rows must come in order."""
    with pytest.raises(ValueError, match="ascending"):
        spread(
            3,
            np.array([2, 0], np.int64),
            np.array([0, 0], np.int32),
            np.array([1, 1], np.int32),
            pa.array([b"1", b"2"], pa.large_binary()),
        )


def test_a_null_suffix_is_refused() -> None:
    body = pa.array(["ab,", "cd,"], pa.large_string())
    with pytest.raises(ValueError, match="null"):
        convert._cut(body, _spans(body, []), pa.array(["x,", None], pa.large_string()))
