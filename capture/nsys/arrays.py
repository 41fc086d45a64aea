"""Arrow column helpers of the Nsight converter: cells as SQLite hands them over, strings looked up
by id, values named through a rule applied once per distinct value, args as JSON text.

The args are the JSON text msgspec writes for a dict without its None values (compact, keys in
order); they are assembled here from literals instead, column-wise, and msgspec encodes only the
few strings that need escaping.
"""

from __future__ import annotations

import operator
from collections.abc import Callable, Sequence
from typing import Any

import msgspec
import pyarrow as pa
import pyarrow.compute as pc

from .cell_text import text

_encode = msgspec.json.Encoder().encode
#: A character JSON escapes in a string (RE2 syntax, as pyarrow.compute reads it).
_NEEDS_ESCAPE = r'[\x00-\x1f"\\]'


def text_scalar(value: str | None) -> pa.Scalar:
    """``value`` as an Arrow string scalar: typed, so that pyarrow infers nothing (its inference
    tries an import of dateutil each time, a path search where dateutil is not installed)."""
    return pa.scalar(value, pa.string())


def int_scalar(value: int | None) -> pa.Scalar:
    """``value`` as an Arrow int64 scalar (see :func:`text_scalar`)."""
    return pa.scalar(value, pa.int64())


_EMPTY = text_scalar("")


def cells(values: Sequence[Any]) -> Sequence[Any]:
    """A column of cells with its BLOBs read as text (:func:`text`)."""
    return [text(v) for v in values] if bytes in map(type, values) else values


def strings(values: Sequence[Any]) -> pa.Array:
    """A column of text cells (or None) as an Arrow string array."""
    return pa.array(cells(values), pa.string())


def lookup(ids: pa.Array, keys: pa.Array, values: pa.Array) -> pa.Array:
    """``values[i]`` of the last ``keys[i]`` equal to each id (null where none), as a dict built
    from ``zip(keys, values)`` would answer."""
    last = pc.index_in(ids, value_set=keys[::-1])
    return pc.take(values[::-1], last)


def exact(op: str, a: pa.Array, b: pa.Array | int) -> pa.Array | list[int | None]:
    """``a + b`` (``op`` "add") or ``a - b`` ("subtract") of int64 values (``b`` an array or
    one int), exactly: an int64 array, or where a value is beyond int64, a list of Python ints
    (None where either is null) for the caller to refuse or to write as text."""
    try:
        return pc.call_function(f"{op}_checked", [a, int_scalar(b) if isinstance(b, int) else b])
    except (pa.ArrowInvalid, OverflowError):
        py = {"add": operator.add, "subtract": operator.sub}[op]
        right = [b] * len(a) if isinstance(b, int) else b.to_pylist()
        return [
            None if x is None or y is None else py(x, y) for x, y in zip(a.to_pylist(), right, strict=True)
        ]


def map_distinct(values: pa.Array, rule: Callable[[Any], Any], type: pa.DataType) -> pa.Array:
    """``rule(v)`` of each value (None included), computed once per distinct value."""
    distinct = pc.unique(values)
    named = pa.array([rule(v) for v in distinct.to_pylist()], type)
    return pc.take(named, pc.index_in(values, value_set=distinct, skip_nulls=False))


def blank_null(values: pa.Array) -> pa.Array:
    """``values`` with its empty strings null: what Python's ``a or b`` passes over."""
    return pc.if_else(pc.equal(values, _EMPTY), pa.scalar(None, values.type), values)


def json_strings(values: pa.Array) -> pa.Array:
    """Each string as a JSON string literal (null stays null)."""
    quote = text_scalar('"')
    quoted = pc.binary_join_element_wise(quote, values, quote, _EMPTY)
    escape = pc.fill_null(pc.match_substring_regex(values, _NEEDS_ESCAPE), False)
    if not pc.any(escape).as_py():
        return quoted
    odd = pc.filter(values, escape).to_pylist()
    return pc.replace_with_mask(quoted, escape, pa.array([_encode(v).decode() for v in odd], pa.string()))


def json_numbers(values: Sequence[Any], *, drop_falsy: bool = False) -> pa.Array:
    """Each cell as a JSON literal, null for None (and for a falsy cell with ``drop_falsy``).

    Nsight writes integers; any other cell of a damaged export is written as msgspec writes it.
    """
    values = cells(values)
    if set(map(type, values)) <= {int, type(None)}:
        numbers = pa.array(values, pa.int64())
        if drop_falsy:
            numbers = pc.if_else(pc.equal(numbers, int_scalar(0)), int_scalar(None), numbers)
        return numbers.cast(pa.string())
    return pa.array(
        [None if v is None or (drop_falsy and not v) else _encode(v).decode() for v in values], pa.string()
    )


def json_objects(fields: Sequence[tuple[str, pa.Array]], length: int) -> pa.Array:
    """Per row, the JSON object of ``fields`` (key, JSON literal or null) without its null
    values, keys in order; null where every value is null."""
    if not fields:
        return pa.nulls(length, pa.string())
    pieces = [
        pc.fill_null(
            pc.binary_join_element_wise(text_scalar(f",{_encode(key).decode()}:"), literal, _EMPTY), _EMPTY
        )
        for key, literal in fields
    ]
    body = pc.binary_join_element_wise(*pieces, _EMPTY)
    wrapped = pc.binary_join_element_wise(
        text_scalar("{"), pc.utf8_slice_codeunits(body, 1), text_scalar("}"), _EMPTY
    )
    return pc.if_else(pc.equal(body, _EMPTY), text_scalar(None), wrapped)
