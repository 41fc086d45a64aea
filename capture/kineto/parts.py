"""The converter's intermediate rows as columns (:class:`ScanRows`), cut into parts of
consecutive rows (:func:`split_rows`) whose rules run at once on threads (:func:`run_parts`).

The args rules and the rows' finishing rules are row-local: each part's output is the output
of its rows, and the parts, one after another, are the whole's. They are NumPy and Arrow work
that lets go of the GIL, so an import that may use several cores runs them in parts.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from concurrent.futures import ThreadPoolExecutor
from functools import cache
from itertools import pairwise
from typing import Any, TypeVar

import numpy as np
import pyarrow as pa

from .native import absent_columns, spread

#: One args key's listed form: the rows that have it (ascending), its entry's spans, its value texts.
Listing = tuple[np.ndarray, np.ndarray, np.ndarray, pa.Array]

T = TypeVar("T")


class ScanRows(dict):
    """The intermediate columns of a native scan's rows, by name; an args key's dense columns
    (``v{k}``, ``s{k}``, ``e{k}``) are made from its listing when one of them is first read (or
    popped), so that only the keys being read are held dense at once (each is ~16 bytes a row,
    present or not)."""

    def __init__(
        self, columns: Iterable[tuple[str, pa.Array]], keys: dict[int, Listing], num_rows: int
    ) -> None:
        super().__init__(columns)
        self._keys = keys
        self._n = num_rows
        self._absent = cache(absent_columns)  # the absent keys of these rows share one pair

    def _make(self, name: str) -> bool:
        if name[:1] not in ("v", "s", "e") or not name[1:].isdigit():
            return False
        listing = self._keys.pop(int(name[1:]), None)
        if listing is None:
            return False
        dense = spread(self._n, *listing, self._absent)
        self.update(zip((f"v{name[1:]}", f"s{name[1:]}", f"e{name[1:]}"), dense, strict=True))
        return True

    def __missing__(self, name: str) -> pa.Array:
        if self._make(name):
            return self[name]
        raise KeyError(name)

    def pop(self, name: str, *default: Any) -> Any:
        """As ``dict.pop``; an args key's column is made first if it is not yet."""
        if name not in self:
            self._make(name)
        return super().pop(name, *default)

    def split(self, bounds: list[int]) -> list[ScanRows]:
        """These rows cut at ``bounds`` (ascending row numbers, from 0 to the number of rows),
        each part's columns slices of these and its keys' listings the part's rows of theirs;
        this one is left empty, so that a column goes as soon as every part has let go of it."""
        parts = []
        for (lo, hi), columns in zip(pairwise(bounds), _sliced(self, bounds), strict=True):
            keys = {}
            for k, (at, start, end, values) in self._keys.items():
                i, j = (int(x) for x in np.searchsorted(at, [lo, hi]))
                keys[k] = (at[i:j] - lo if lo else at[i:j], start[i:j], end[i:j], values.slice(i, j - i))
            parts.append(ScanRows(columns.items(), keys, hi - lo))
        self.clear()
        self._keys.clear()
        return parts


def split_rows(rows: dict[str, pa.Array], parts: int) -> list[dict[str, pa.Array]]:
    """``rows`` (columns of equal length, by name) cut into ``parts`` parts of consecutive
    rows, as even as can be; ``rows`` is left empty."""
    n = len(rows["ts"])
    bounds = [n * i // parts for i in range(parts + 1)]
    if isinstance(rows, ScanRows):
        return list(rows.split(bounds))
    out = _sliced(rows, bounds)
    rows.clear()
    return out


def _sliced(rows: dict[str, pa.Array], bounds: list[int]) -> list[dict[str, pa.Array]]:
    """The columns of ``rows`` sliced at ``bounds`` (not copied), a dict a part."""
    return [{name: a.slice(lo, hi - lo) for name, a in rows.items()} for lo, hi in pairwise(bounds)]


class PartsFailed(Exception):
    """Several parts failed (:attr:`errors`, in the parts' order): which error a one-part run
    would raise first is not known here (it may be any part's: a later part's error in an
    earlier rule comes first), so the caller runs the rows again in one part."""

    def __init__(self, errors: list[Exception]) -> None:
        super().__init__(str(errors[0]))
        self.errors = errors


def run_parts(work: Callable[[dict[str, pa.Array]], T], parts: list[dict[str, pa.Array]]) -> list[T]:
    """``work`` of each part, on a thread each; their results in the parts' order.

    Where one part fails, its error is raised: it is the error the rows would raise in one run
    (the rules are row-local: the other parts' rows fail no rule, so the first rule to fail is
    this part's first, at this part's first row that fails it). Where several fail,
    :class:`PartsFailed`. ``parts`` is left empty: each part's columns go as its work lets go of
    them."""
    with ThreadPoolExecutor(len(parts), thread_name_prefix="profui-rules") as pool:
        futures = [pool.submit(work, part) for part in parts]
        parts.clear()
        results: list[T] = []
        errors: list[Exception] = []
        for future in futures:
            try:
                results.append(future.result())
            except Exception as exc:  # noqa: BLE001  (re-raised below)
                errors.append(exc)
    if len(errors) == 1:
        raise errors[0]
    if errors:
        raise PartsFailed(errors)
    return results
