"""Members of an event's ``args``, the JSON object text the importer keeps, read by key.

Kineto writes ``args`` as one flat object (numbers, strings, arrays). In such text a member is
found by its key at a member boundary (``{`` or ``,``): a quote inside a JSON string is escaped,
so no string value can hold one. That regex is an order of magnitude cheaper than a JSON path,
which parses the whole object once per path (``$.dtype`` on df_index's 2,020 NCCL kernels:
2.3 ms; by key: 0.2 ms). Text holding another object (a ``{`` past the first character) is read
by JSON path instead, where the member named is the top-level one.
"""

from __future__ import annotations

import json
import re

import polars as pl

#: JSON's whitespace. The regex crate's ``\s`` (and ``\d``) are Unicode's classes, which only
#: make each pattern's first use in a process slower: JSON has no other.
_WS = r"[ \t\n\r]*"


def _member(key: str, value: str) -> pl.Expr:
    args = pl.col("args")
    member = rf'(?:^\{{|,){_WS}"{re.escape(key)}"{_WS}:{_WS}{value}{_WS}[,}}]'
    nested = args.str.slice(1).str.contains("{", literal=True)
    # the JSON path parses only the nested rows' text (null elsewhere): both branches run on all
    by_path = pl.when(nested).then(args).str.json_path_match(f"$[{json.dumps(key)}]")
    return pl.when(nested).then(by_path).otherwise(args.str.extract(member, 1))


def int_member(key: str) -> pl.Expr:
    """The integer member ``key`` (Int64), null when it is anything else (text, a float, true,
    absent, beyond int64) — never read as a number it is not."""
    return _member(key, r"(-?[0-9]+)").cast(pl.Int64, strict=False)


def str_member(key: str) -> pl.Expr:
    """The string member ``key`` as its JSON text between the quotes (escapes left as written),
    null when it is not a string or absent (in flat text; see the module docstring)."""
    return _member(key, r'"((?:[^"\\]|\\.)*)"')
